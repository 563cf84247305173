"""The equal-token table: runs made under ``eval.token_cap=N``, one row per method, one column group per N.

Every cell is measured on the context the method actually handed over at that budget (recall and hit from the
dia_ids in it; F1 / BLEU-1 when the runs answered), and each method is compared with a reference method
(default ``rag_hybrid``) at the same budget by a paired per-item 95 % interval
(:func:`memcore.eval.bootstrap.paired_delta_ci`). A second table gives the same per headline category of the runs'
dataset (LoCoMo's 1-4), and
:func:`plot_recall_vs_context_tokens` draws recall against the budget, one line per method. An ``oracle`` run
(:mod:`memcore.eval.oracle`: the gold turns packed smallest first) is the first row and a dashed black line: the
recall each budget allows. The metrics are the runs' own (:mod:`memcore.metrics`) plus session hit, read from the same
items.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.config_aliases import tokens_used
from memcore.datasets.registry import dataset_of
from memcore.datasets.spec import DatasetCategories
from memcore.eval.aggregate import metrics_of_run
from memcore.eval.bootstrap import metric_value, paired_delta_ci
from memcore.itemlog import LoggedItem
from memcore.metrics import resolve_metrics
from memcore.report.collect import RunData, display_path
from memcore.report.figures import pyplot, save_figure
from memcore.report.tables import Table

REFERENCE = "rag_hybrid"
ORACLE = "oracle"


def token_cap_of(run: RunData) -> int | None:
    """The run's ``eval.token_cap`` (None: the run had no context-token cap)."""
    value = (run.config.get("eval") or {}).get("token_cap")
    return None if value is None else int(value)


def row_label(run: RunData) -> str:
    """``method [ablation]``, plus how the run filled the budget as its method's spec says it
    (``MethodSpec.packing_label``: e.g. MemCoRe's ``, packed, session frame + cues + windows, links``)."""
    return run.label() + run.packing_label


def runs_categories(runs: Sequence[RunData]) -> DatasetCategories:
    """The categories of the capped runs' dataset, whose headline categories the tables cover; ValueError when
    those runs are of several datasets (equal-token comparisons are made on one)."""
    capped = [r for r in runs if token_cap_of(r) is not None]
    found = {id(c): c for c in (dataset_of(r.config.get("dataset") or {}).categories for r in capped)}
    if len(found) > 1:
        raise ValueError("the equal-token tables compare runs of one dataset; these runs are of several")
    return next(iter(found.values())) if found else dataset_of({}).categories


def _mean(items: Sequence[LoggedItem], metric: str, cats: Sequence[int]) -> float | None:
    vals = [metric_value(it, metric) for it in items if it.category in cats]
    got = [v for v in vals if v is not None]
    return 100.0 * sum(got) / len(got) if got else None


def _mean_tokens(items: Sequence[dict[str, Any]], cats: Sequence[int]) -> float | None:
    toks = [tokens_used(it) for it in items if int(it["category"]) in cats]
    return sum(toks) / len(toks) if toks else None


def grid(runs: Sequence[RunData]) -> tuple[list[str], list[int], dict[tuple[str, int], RunData]]:
    """(row labels in first-seen order, budgets ascending, (label, budget) → run) over the runs with a cap."""
    cells: dict[tuple[str, int], RunData] = {}
    labels: list[str] = []
    for r in runs:
        n = token_cap_of(r)
        if n is None:
            continue
        label = row_label(r)
        if label not in labels:
            labels.append(label)
        cells[(label, n)] = r
    budgets = sorted({n for _, n in cells})
    labels.sort(key=lambda label: label != ORACLE)  # the ceiling first; the others keep their order
    return labels, budgets, cells


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.1f}"


def _delta(ci: tuple[float, float, float, int] | None) -> str:
    if ci is None:
        return "–"
    d, lo, hi, _ = (100.0 * ci[0], 100.0 * ci[1], 100.0 * ci[2], ci[3])
    star = "*" if lo > 0 or hi < 0 else ""
    return f"{d:+.1f} [{lo:+.1f}, {hi:+.1f}]{star}"


#: Reported beside the runs' own evidence metrics: the session-level hit public systems claim.
ALSO_REPORTED: tuple[str, ...] = ("session_hit",)


def _metrics(runs: Sequence[RunData]) -> list[str]:
    """The runs' evidence metrics and :data:`ALSO_REPORTED`, then, when any run answered, their answer metrics
    that need no LLM: ``recall, hit, session_hit, f1, bleu1`` for the shipped protocols."""
    scored = [m for r in runs for m in metrics_of_run(r.metrics) if not m.needs_llm]
    evidence = [m.name for m in (*scored, *resolve_metrics(ALSO_REPORTED)) if m.target == "evidence"]
    answer = [m.name for m in scored if m.target == "answer"] if any(r.answered for r in runs) else []
    return list(dict.fromkeys([*evidence, *answer]))


def equal_token_table(
    runs: Sequence[RunData], *, reference: str = REFERENCE, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Table | None:
    """Overall (the dataset's headline categories: LoCoMo's 1-4) table: per budget, recall / hit (F1 / BLEU-1 when
    answered) and the paired
    change of recall (F1 when answered) against ``reference`` at that budget. None when no run has a cap."""
    labels, budgets, cells = grid(runs)
    if not cells:
        return None
    metrics = _metrics(runs)
    cats = runs_categories(runs)
    headline = cats.headline_ids
    key = "f1" if "f1" in metrics else "recall"
    level = f"{100 * (1 - alpha):.0f}%"
    columns = ["method"]
    for n in budgets:
        columns += [f"{n:,} tok: " + " / ".join(metrics), f"{n:,} tok: Δ{key} vs {reference} [{level}]"]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    missing_ref: set[int] = set()
    for label in labels:
        row = [label]
        for n in budgets:
            run = cells.get((label, n))
            ref = cells.get((reference, n))
            if run is None:
                row += ["–", "–"]
                continue
            if ref is None:
                missing_ref.add(n)
            vals = [_mean(run.items, m, headline) for m in metrics]
            ci = None
            if ref is not None and ref is not run:
                ci = paired_delta_ci(
                    run.items, ref.items, key, n_boot=n_boot, seed=seed, alpha=alpha, categories=headline
                )
            row += [" / ".join(_fmt(v) for v in vals), "ref." if ref is run else _delta(ci)]
            rec: dict[str, Any] = {"method": label, "token_cap": n, "run_dir": display_path(run.path)}
            rec.update({m: v for m, v in zip(metrics, vals, strict=True)})
            rec["mean_tokens_used"] = _mean_tokens(run.items, headline)
            if ci is not None:
                rec.update(
                    {f"delta_{key}": 100 * ci[0], "ci_low": 100 * ci[1], "ci_high": 100 * ci[2], "n_paired": ci[3]}
                )
            records.append(rec)
        rows.append(row)
    notes = [
        f"Each cell is a run under eval.token_cap=N: the context every method handed over is at most N tokens"
        f" (memcore.text.count_tokens), and recall / hit count the dia_ids in it. Categories {cats.span(headline)},"
        f" items with gold"
        f" evidence. session_hit: a gold turn's session among the first 5 distinct sessions of the context."
        f" Δ: paired per-item change against {reference} at the same budget, percentile interval over"
        f" {n_boot} item resamples; * = the interval excludes 0. {ORACLE}: the gold turns themselves, packed"
        f" smallest first in the same [date] Speaker: text lines (what the budget allows).",
    ]
    if missing_ref:
        notes.append(
            f"Δ '–' at {', '.join(f'{n:,}' for n in sorted(missing_ref))} tokens: it needs a {reference} run at the same"
            f" budget (memcore-run method={reference} eval.token_cap=N, same data) in this report."
        )
    return Table(f"Equal context tokens: {' / '.join(metrics)} %", columns, rows, notes, records, text_columns=1)


def category_table(
    runs: Sequence[RunData], *, reference: str = REFERENCE, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05
) -> Table | None:
    """Per headline category (LoCoMo's 1-4) and budget: recall / hit and the paired recall change against
    ``reference``."""
    labels, budgets, cells = grid(runs)
    if not cells:
        return None
    cats = runs_categories(runs)
    columns = ["method", "token cap"]
    for c in cats.headline_ids:
        columns += [f"{c} {cats.get(c).title}: recall / hit", f"{c}: Δrecall [CI]"]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    missing_ref: set[int] = set()
    for label in labels:
        first = True
        for n in budgets:
            run = cells.get((label, n))
            if run is None:
                continue
            ref = cells.get((reference, n))
            if ref is None:
                missing_ref.add(n)
            row = [label if first else "", f"{n:,}"]
            first = False
            rec: dict[str, Any] = {"method": label, "token_cap": n}
            for c in cats.headline_ids:
                rec_r, rec_h = _mean(run.items, "recall", (c,)), _mean(run.items, "hit", (c,))
                ci = None
                if ref is not None and ref is not run:
                    ci = paired_delta_ci(
                        run.items, ref.items, "recall", n_boot=n_boot, seed=seed, alpha=alpha, categories=(c,)
                    )
                row += [f"{_fmt(rec_r)} / {_fmt(rec_h)}", "ref." if ref is run else _delta(ci)]
                rec.update({f"cat{c}_recall": rec_r, f"cat{c}_hit": rec_h})
                if ci is not None:
                    rec.update(
                        {
                            f"cat{c}_delta_recall": 100 * ci[0],
                            f"cat{c}_ci_low": 100 * ci[1],
                            f"cat{c}_ci_high": 100 * ci[2],
                        }
                    )
            rows.append(row)
            records.append(rec)
    notes = [f"Δ: paired per-item recall change against {reference} at the same budget (* = interval excludes 0)."]
    if missing_ref:
        notes.append(
            f"Δ '–' at {', '.join(f'{n:,}' for n in sorted(missing_ref))} tokens: it needs a {reference} run at the same"
            " budget in this report."
        )
    return Table("Equal context tokens per category: recall / hit %", columns, rows, notes, records, text_columns=2)


def plot_recall_vs_context_tokens(
    runs: Sequence[RunData], out_dir: Path, stem: str = "recall_vs_context_tokens", omitted: list[str] | None = None
) -> list[Path]:
    """Recall (the headline categories: LoCoMo's 1-4) against ``eval.token_cap``, one line per method; also
    ``<stem>.csv``. With
    fewer than two budgets there is no curve: only the CSV is written, and ``omitted`` says why."""
    labels, budgets, cells = grid(runs)
    if not cells:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    cats = runs_categories(runs)
    curves = {
        label: {n: _mean(cells[(label, n)].items, "recall", cats.headline_ids) for n in budgets if (label, n) in cells}
        for label in labels
    }
    csv_path = out_dir / f"{stem}.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["method", *[f"recall_at_{n}" for n in budgets]])
        for label in labels:
            w.writerow([label, *["" if curves[label].get(n) is None else f"{curves[label][n]:.4f}" for n in budgets]])
    if len(budgets) < 2:
        if omitted is not None:
            omitted.append(
                f"{stem}: not drawn, every run has the one cap eval.token_cap={budgets[0]} (one point per "
                f"method, see {stem}.csv and equal_tokens.md); runs at a second cap make it a curve."
            )
        return [csv_path]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 4.8))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    for i, label in enumerate(labels):
        xs = [n for n in budgets if curves[label].get(n) is not None]
        style: dict[str, Any] = {
            "marker": "osD^vP*X"[i % 8],
            "linewidth": 2.4 if label.startswith("memcore") and "packed" in label and "[" not in label else 1.2,
            "linestyle": "-" if i < 10 else "--",
            "color": cmap(i % cmap.N),
        }
        if label == ORACLE:
            style = {"marker": "_", "linewidth": 1.6, "linestyle": ":", "color": "black"}
        ax.plot(xs, [curves[label][n] for n in xs], label=label, **style)
    ax.set_xscale("log", base=2)
    ax.set_xticks(budgets)
    ax.set_xticklabels([str(n) for n in budgets])
    ax.set_xlabel("eval.token_cap (tokens handed to the answerer, log scale)")
    ax.set_ylabel(f"evidence recall, categories {cats.span(cats.headline_ids)} (%)")
    ax.set_ylim(0, 102)  # the oracle runs along 100
    ax.grid(alpha=0.3, which="both")
    ax.set_title("Evidence recall at equal context tokens")
    legend = ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="method")
    fig.tight_layout()
    return [*save_figure(fig, out_dir, stem, extra_artists=[legend]), csv_path]

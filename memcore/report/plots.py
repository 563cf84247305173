"""Report figures (matplotlib, Agg backend), each saved as PNG and PDF:

- ``category_f1``: F1 per category (and weighted overall), grouped bars per method, one panel per backbone;
- ``ablation_deltas``: each ablation's change in F1 and evidence recall against the full model, ours beside the paper's;
- ``cost_vs_f1``: LLM tokens per conversation against weighted F1 (not drawn when no run answered);
- ``recall_vs_budget``: evidence recall when only the leading retrieved notes that fit a context-token budget are
  kept (a capped run's line ends at its cap; a run with one point is left out).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memcore.config_aliases import evidence_token_cap
from memcore.datasets.registry import dataset_of
from memcore.eval.aggregate import budget_recall, category_name
from memcore.report.ablation_table import full_model_of
from memcore.report.collect import RunData, display_path
from memcore.report.equal_tokens import row_label
from memcore.report.figures import pyplot, save_figure
from memcore.report.reference import PaperNumbers
from memcore.report.summary import RunSummary
from memcore.report.table_rows import paper_ablation_row
from memcore.report.tables import CATEGORIES

DEFAULT_BUDGETS: tuple[int, ...] = (250, 500, 1000, 2000, 4000)


def _run_label(run: RunData, with_backbone: bool = False) -> str:
    label = run.label() + (f" (variant of {run.variant_of})" if run.is_variant else "")
    return f"{label} @ {run.backbone}" if with_backbone else label


def _capped_label(run: RunData) -> str:
    """The legend label of a run in a recall curve: a capped run names its cap and how it filled it (packed
    turns or whole notes), so runs of one method under different caps or fills stay apart."""
    cap = run_cap(run)
    if cap is None:
        return _run_label(run)
    variant = f" (variant of {run.variant_of})" if run.is_variant else ""
    return f"{row_label(run)}{variant}, eval.token_cap={cap}"


def plot_category_bars(summaries: Sequence[RunSummary], out_dir: Path, stem: str = "category_f1") -> list[Path]:
    """Grouped bars: categories 1-5 and the weighted overall on x, one bar per method, a panel per backbone.
    Ablated runs are left to the ablation figure (unless there is nothing else)."""
    answered = [s for s in summaries if s.values.get("f1") is not None]
    full = [s for s in answered if s.run.ablation == "none"]
    answered = full or answered
    if not answered:
        return []
    plt = pyplot()
    backbones = list(dict.fromkeys(s.run.backbone for s in answered))
    groups = [f"{c}\n{category_name(c)}" for c in CATEGORIES] + ["weighted\noverall"]
    keys = [f"cat{c}" for c in CATEGORIES] + ["f1"]
    most = max(sum(1 for s in answered if s.run.backbone == b) for b in backbones)
    width_in = min(15.0, 6.0 + 0.22 * len(groups) * most)
    fig, axes = plt.subplots(len(backbones), 1, figsize=(width_in, 3.4 * len(backbones)), squeeze=False)
    cmap = plt.get_cmap("tab20" if most > 10 else "tab10")
    for ax, backbone in zip(axes[:, 0], backbones):
        runs = [s for s in answered if s.run.backbone == backbone]
        width = 0.8 / len(runs)
        x = np.arange(len(groups))
        for i, s in enumerate(runs):
            vals = [s.values.get(k) if s.values.get(k) is not None else np.nan for k in keys]
            ax.bar(x - 0.4 + width * (i + 0.5), vals, width, label=_run_label(s.run), color=cmap(i % cmap.N))
        ax.set_xticks(x)
        ax.set_xticklabels(groups)
        ax.set_ylabel("F1 (%)")
        ax.set_ylim(0, 100)
        ax.set_title(f"F1 by LoCoMo question category — backbone {backbone}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="method")
    fig.tight_layout()
    return save_figure(fig, out_dir, stem)


def plot_ablation_deltas(
    summaries: Sequence[RunSummary],
    paper: PaperNumbers | None,
    out_dir: Path,
    *,
    reference_backbone: str | None = None,
    stem: str = "ablation_deltas",
) -> list[Path]:
    """Horizontal bars per ablation: ΔF1 and Δrecall (percentage points) against the full model, ours and paper."""
    rows: list[tuple[str, dict[str, float | None], dict[str, float | None]]] = []
    for s in summaries:
        if s.run.ablation == "none":
            continue
        full = full_model_of(s, summaries)
        if full is None:
            continue
        ours = {k: _d(s.values.get(k), full.values.get(k)) for k in ("f1", "recall")}
        p_row = paper_ablation_row(s, paper, reference_backbone)
        p_full = (
            paper.ablation_row(reference_backbone or s.run.backbone, "none") if paper is not None and p_row else None
        )
        theirs = {k: _d(p_row.get(k), p_full.get(k)) if p_row and p_full else None for k in ("f1", "recall")}
        several = len({x.run.backbone for x in summaries if x.run.ablation != "none"}) > 1
        label = _run_label(s.run, with_backbone=several)
        rows.append((label, ours, theirs))
    if not rows:
        return []
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, max(3.5, 0.55 * len(rows) + 2.2)), sharey=True)
    y = np.arange(len(rows))
    for ax, key, name in zip(axes, ("f1", "recall"), ("F1", "evidence recall")):
        ours = [r[1][key] if r[1][key] is not None else np.nan for r in rows]
        theirs = [r[2][key] if r[2][key] is not None else np.nan for r in rows]
        with_paper = not np.all(np.isnan(theirs))
        offset = 0.2 if with_paper else 0.0
        bars = [ax.barh(y - offset, ours, 0.4, label="ours", color="#1f77b4")]
        if with_paper:
            bars.append(ax.barh(y + offset, theirs, 0.4, label="paper", color="#ff7f0e"))
        for group in bars:  # the value beside each bar, so a zero change is visible too
            ax.bar_label(
                group, labels=[f"{v:+.2f}" if not np.isnan(v) else "" for v in group.datavalues], padding=3, fontsize=8
            )
        ax.axvline(0, color="black", linewidth=0.8)
        finite = [v for v in (*ours, *theirs) if not np.isnan(v)]
        span = max([abs(v) for v in finite] + [2.0])
        ax.set_xlim(min([*finite, 0.0]) - 0.25 * span, max([*finite, 0.0]) + 0.25 * span)
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set_xlabel(f"Δ {name} vs full model (percentage points)")
        ax.set_title(f"Ablation effect on {name}")
        ax.grid(axis="x", alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="upper center", ncol=2, fontsize=9, bbox_to_anchor=(0.5, 1.0))
    axes[0].set_yticks(y)
    axes[0].set_yticklabels([r[0] for r in rows])
    ablated = {x.run.backbone for x in summaries if x.run.ablation != "none"}
    backbone = next(iter(ablated)) if len(ablated) == 1 else "several backbones"
    fig.suptitle(f"Ablations of the full model ({backbone})", y=1.04)
    fig.tight_layout()
    return save_figure(fig, out_dir, stem)


def _d(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def plot_cost_vs_f1(
    summaries: Sequence[RunSummary], out_dir: Path, stem: str = "cost_vs_f1", omitted: list[str] | None = None
) -> list[Path]:
    """Scatter of LLM tokens per conversation against weighted F1 of the runs that answered: colour = method,
    marker = backbone. x is symlog (linear below 1,000 tokens), so runs without LLM calls sit at 0. Ablated runs
    are left out unless there is nothing else. Not drawn (and said in ``omitted``) when no run answered: recall
    against LLM tokens would put every retrieval-only run at x = 0."""
    points = [s for s in summaries if s.cost.get("tokens_per_conv") is not None]
    metric = "f1"
    points = [s for s in points if s.values.get(metric) is not None]
    points = [s for s in points if s.run.ablation == "none"] or points
    if not points:
        if omitted is not None and summaries:
            omitted.append(
                f"{stem}: not drawn, no run answered (eval.answer=false): F1 needs answers, and these runs' LLM "
                "cost is that of retrieval alone; see recall_vs_budget."
            )
        return []
    plt = pyplot()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(9, 5.5))
    markers = "osD^vP*X"
    labels = list(dict.fromkeys(_run_label(s.run) for s in points))
    backbones = list(dict.fromkeys(s.run.backbone for s in points))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    for s in points:
        ax.scatter(
            float(s.cost["tokens_per_conv"] or 0.0),
            float(s.values[metric] or 0.0),
            marker=markers[backbones.index(s.run.backbone) % len(markers)],
            color=cmap(labels.index(_run_label(s.run)) % cmap.N),
            s=70,
            edgecolors="black",
            linewidths=0.5,
        )
    top = max(float(s.cost["tokens_per_conv"] or 0.0) for s in points)
    decades = [10**k for k in range(3, max(4, int(np.ceil(np.log10(max(top, 1.0)))) + 1))]
    ax.set_xscale("symlog", linthresh=1000)
    ax.set_xticks([0, *decades])
    ax.set_xticklabels(["0"] + [f"$10^{{{int(np.log10(d))}}}$" for d in decades])
    ax.set_xlim(-200, decades[-1] * 1.5)
    ax.set_ylim(0, min(100.0, max(float(s.values[metric] or 0.0) for s in points) + 15.0))
    ax.set_xlabel("LLM tokens per conversation (prompt + completion; log scale above 1,000)")
    ax.set_ylabel("weighted F1 (%)")
    ax.set_title("Cost against quality (runs that answered)")
    ax.grid(alpha=0.3, which="both")
    method_handles = [
        Line2D([], [], marker="o", linestyle="", color=cmap(i % cmap.N), markeredgecolor="black", label=lab)
        for i, lab in enumerate(labels)
    ]
    backbone_handles = [
        Line2D([], [], marker=markers[i % len(markers)], linestyle="", color="grey", label=b)
        for i, b in enumerate(backbones)
    ]
    first = ax.legend(handles=method_handles, title="method", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    ax.add_artist(first)
    second = ax.legend(
        handles=backbone_handles, title="backbone", loc="lower left", bbox_to_anchor=(1.01, 0.0), fontsize=8
    )
    fig.tight_layout()
    return save_figure(fig, out_dir, stem, extra_artists=[first, second])


def run_cap(run: RunData) -> int | None:
    """The run's ``eval.token_cap`` (None: uncapped)."""
    value = (run.config.get("eval") or {}).get("token_cap")
    if value is None:
        return evidence_token_cap((run.metrics.get("run") or {}).get("evidence") or {})
    return int(value)


def recall_budget_curve(run: RunData, budgets: Sequence[int] = DEFAULT_BUDGETS) -> dict[int, float | None]:
    """Mean evidence recall (%) over items of the run's dataset's headline categories (LoCoMo's 1-4) with gold
    evidence, keeping the leading notes that fit each budget (the same numbers as ``metrics.json →
    recall_at_budget``). None above the run's context-token cap: no question had more than the cap, so the curve
    would only repeat its value there."""
    cap = run_cap(run)
    headline = dataset_of(run.config.get("dataset") or {}).categories.headline_ids
    curve = budget_recall(run.items, [int(b) for b in budgets], headline)
    return {
        int(b): None
        if curve[str(int(b))]["recall"] is None or (cap is not None and int(b) > cap)
        else 100.0 * curve[str(int(b))]["recall"]
        for b in budgets
    }


def plot_recall_vs_budget(
    runs: Sequence[RunData],
    out_dir: Path,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    stem: str = "recall_vs_budget",
    omitted: list[str] | None = None,
) -> list[Path]:
    """One line per run (up to the run's cap); also writes ``<stem>.csv`` with the numbers. A run with fewer than
    two points on the curve is left out of the figure (still in the CSV) and named in ``omitted``."""
    curves = [(r, recall_budget_curve(r, budgets)) for r in runs]
    curves = [(r, c) for r, c in curves if any(v is not None for v in c.values())]
    if not curves:
        return []
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / f"{stem}.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(["backbone", "method", "ablation", "dataset", *[f"recall_at_{b}" for b in budgets], "run_dir"])
        for r, c in curves:
            w.writerow(
                [
                    r.backbone,
                    r.method_label,
                    r.ablation,
                    r.dataset,
                    *["" if c[b] is None else f"{c[b]:.4f}" for b in budgets],
                    display_path(r.path),
                ]
            )
    short = [(r, c) for r, c in curves if sum(v is not None for v in c.values()) < 2]
    if short and omitted is not None:
        omitted.append(
            f"{stem}: left out (one point, no curve; see {stem}.csv): "
            + ", ".join(f"{_run_label(r)} (cap {run_cap(r)})" if run_cap(r) else _run_label(r) for r, _ in short)
        )
    curves = [(r, c) for r, c in curves if (r, c) not in short]
    if not curves:
        return [csv_path]
    plt = pyplot()
    backbones = list(dict.fromkeys(r.backbone for r, _ in curves))
    fig, axes = plt.subplots(len(backbones), 1, figsize=(8.5, 4.4 * len(backbones)), squeeze=False)
    extra = []
    for ax, backbone in zip(axes[:, 0], backbones):
        group = [(r, c) for r, c in curves if r.backbone == backbone]
        cmap = plt.get_cmap("tab10" if len(group) <= 10 else "tab20")
        labels = [_capped_label(r) for r, _ in group]
        labels = [  # runs that would share a label are told apart by their experiment
            f"{lab} [{r.experiment}]" if labels.count(lab) > 1 else lab
            for lab, (r, _c) in zip(labels, group, strict=True)
        ]
        for i, (_r, c) in enumerate(group):
            xs = [b for b in budgets if c[b] is not None]
            # Distinct markers, earlier series drawn larger, so identical curves stay visible on top of each other.
            ax.plot(
                xs,
                [c[b] for b in xs],
                marker="osD^vP*X"[i % 8],
                markersize=max(4.0, 11.0 - 1.5 * i),
                linewidth=max(1.0, 3.0 - 0.4 * i),
                linestyle="-" if i < 10 else "--",
                color=cmap(i % cmap.N),
                alpha=0.85,
                label=labels[i],
            )
        ax.set_xscale("log", base=2)
        drawn = [b for b in budgets if any(c[b] is not None for _, c in group)]  # not out to budgets no run reached
        ax.set_xticks(drawn)
        ax.set_xticklabels([str(b) for b in drawn])
        ax.set_xlabel("context budget (tokens of retrieved notes, log scale)")
        ax.set_ylim(0, 105)
        ax.set_yticks(range(0, 101, 20))
        capped = [r for r, _ in group if run_cap(r) is not None]
        ax.set_title(
            "Evidence recall at equal context budgets — "
            + ("retrieval only, no LLM" if backbone == "none" else f"backbone {backbone}")
            + ("\n(a run under eval.token_cap ends at its cap)" if capped else "")
        )
        ax.grid(alpha=0.3, which="both")
        ax.set_ylabel("evidence recall (%)")
        extra.append(ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="method"))
    fig.tight_layout()
    return [*save_figure(fig, out_dir, stem, extra_artists=extra), csv_path]


def make_plots(
    summaries: Sequence[RunSummary],
    paper: PaperNumbers | None,
    out_dir: Path,
    *,
    reference_backbone: str | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    omitted: list[str] | None = None,
) -> list[Path]:
    """All four figures that have data; returns the files written. Why a figure (or a run in it) was left out
    is appended to ``omitted``."""
    out_dir = Path(out_dir)
    written: list[Path] = []
    written += plot_category_bars(summaries, out_dir)
    written += plot_ablation_deltas(summaries, paper, out_dir, reference_backbone=reference_backbone)
    written += plot_cost_vs_f1(summaries, out_dir, omitted=omitted)
    written += plot_recall_vs_budget([s.run for s in summaries], out_dir, budgets, omitted=omitted)
    return written

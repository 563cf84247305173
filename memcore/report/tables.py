"""The paper's two table layouts over any set of runs, beside the paper's numbers.

Main layout: per-category F1 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial),
weighted F1 and BLEU-1 (+ J when judged). Ablation layout: F1, BLEU-1, evidence recall, hit rate and
each one's change against the full model. Every run gets an ``ours`` row (95% bootstrap CIs that
resample conversations, cost per conversation), and when the paper has that cell a ``paper`` row and
a ``Δ ours−paper`` row; runs with an ``audited`` block get an ``ours, audited gold`` row. All
numbers are percentages.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memcore.eval.aggregate import RECALL_KS, budgets_within_cap, category_name, k_recall
from memcore.eval.bootstrap import bootstrap_ci, paired_delta_ci
from memcore.eval.disclosure import evidence_cell
from memcore.report.collect import RunData, display_path, qa_stage_usage, qa_time_ingest
from memcore.report.reference import PAPER_DATASET, PAPER_PROTOCOL, REIMPLEMENTED, PaperNumbers

CATEGORIES: tuple[int, ...] = (1, 2, 3, 4, 5)
CATEGORY_KEYS: tuple[str, ...] = tuple(f"cat{c}" for c in CATEGORIES)
MAIN_KEYS: tuple[str, ...] = (*CATEGORY_KEYS, "f1", "f1_no_adv", "bleu1")
ABLATION_KEYS: tuple[str, ...] = ("f1", "bleu1", "recall", "hit_rate")
KEY_LABELS: dict[str, str] = {
    "f1": "F1 cat. 1-5 (paper's overall)",
    "f1_no_adv": "F1 cat. 1-4",
    "bleu1": "BLEU-1",
    "judge": "J",
    "judge_no_adv": "J cat. 1-4",
    "recall": "Recall",
    "hit_rate": "Hit rate",
}
NO_ADV_SUFFIX = "_no_adv"
COST_KEYS: tuple[str, ...] = ("llm_calls_per_conv", "tokens_per_conv", "wall_s_per_conv")
COST_LABELS: dict[str, str] = {
    "llm_calls_per_conv": "LLM calls/conv",
    "tokens_per_conv": "tokens/conv",
    "wall_s_per_conv": "wall s/conv",
}
NOT_COMPARABLE = "†"


# ------------------------------------------------------------------------------------ numbers
def metric_values(block: Mapping[str, Any]) -> dict[str, float | None]:
    """Percentages of one ``aggregate`` result (``metrics.json`` or its ``audited`` block)."""
    by_cat = block.get("by_category", {})
    overall = block.get("overall", {})
    out: dict[str, float | None] = {}
    for c in CATEGORIES:
        v = by_cat.get(str(c), {}).get("f1")
        out[f"cat{c}"] = None if v is None else 100.0 * float(v)
    for key in ("f1", "bleu1", "judge", "recall", "hit_rate"):
        v = overall.get(key)
        out[key] = None if v is None else 100.0 * float(v)
    no_adv = block.get("overall_no_adv", {})
    for key in ("f1", "judge"):
        v = no_adv.get(key)
        out[key + NO_ADV_SUFFIX] = None if v is None else 100.0 * float(v)
    return out


def category_counts(block: Mapping[str, Any]) -> dict[int, int]:
    return {int(c): int(b.get("n", 0)) for c, b in block.get("by_category", {}).items()}


def metric_cis(
    items: Sequence[Mapping[str, Any]],
    values: Mapping[str, float | None],
    *,
    n_boot: int,
    seed: int,
    alpha: float,
) -> dict[str, tuple[float, float] | None]:
    """Bootstrap CIs (percent) resampling conversations, for every key of ``values`` that has a value."""
    out: dict[str, tuple[float, float] | None] = {}
    for key, value in values.items():
        if value is None or not items:
            out[key] = None
            continue
        if key.startswith("cat"):
            metric, cats = "f1", (int(key[3:]),)
        elif key.endswith(NO_ADV_SUFFIX):
            metric, cats = key[: -len(NO_ADV_SUFFIX)], CATEGORIES[:4]
        else:
            metric, cats = key, CATEGORIES
        try:
            low, high = bootstrap_ci(items, metric, n_boot=n_boot, seed=seed, alpha=alpha, categories=cats)
        except ValueError:  # no item carries this metric (e.g. judge off)
            out[key] = None
            continue
        out[key] = (100.0 * low, 100.0 * high)
    return out


def usage_totals(run: RunData) -> dict[str, int]:
    """Memory-build and QA calls, tokens and parse fallbacks of one run, cached calls included, plus the
    ingested turns. QA = every stage but ``ingest`` (:func:`qa_stage_usage`: the whole run's, from the item
    records; ``qa_questions`` is how many questions they cover), plus the ingest-stage calls made while answering
    (memory updates, :func:`qa_time_ingest`; also given alone as ``update_*``). Build figures come from
    ``stats.json`` (a reused snapshot keeps its original build's usage), else from ``cost.json → memory_build``."""
    convs = run.stats.get("conversations") or {}
    stages, covered = qa_stage_usage(run)
    if convs:
        totals = [(c.get("ingest_usage") or {}).get("total") or {} for c in convs.values()]
        build_calls = sum(int(t.get("calls", 0)) for t in totals)
        build_tokens = sum(int(t.get("prompt_tokens", 0)) + int(t.get("completion_tokens", 0)) for t in totals)
        build_fallbacks = sum(int(t.get("parse_failures", 0)) for t in totals)
    else:
        mb = run.cost.get("memory_build") or {}
        build_calls = int(mb.get("llm_calls") or 0)
        build_tokens = int(mb.get("prompt_tokens") or 0) + int(mb.get("completion_tokens") or 0)
        build_fallbacks = 0
    update = qa_time_ingest(run)
    qa = [*stages.values(), update]
    return {
        "turns": sum(int(c.get("turns", 0)) for c in convs.values()),
        "build_calls": build_calls,
        "build_tokens": build_tokens,
        "qa_calls": sum(int(st.get("calls", 0)) for st in qa),
        "qa_tokens": sum(_tokens(st) for st in qa),
        "qa_questions": covered,
        "update_calls": int(update.get("calls", 0)),
        "update_tokens": _tokens(update),
        "parse_fallbacks": build_fallbacks + sum(int(st.get("parse_failures", 0)) for st in qa),
    }


def _tokens(stage: dict[str, Any]) -> int:
    return int(stage.get("prompt_tokens", 0)) + int(stage.get("completion_tokens", 0))


def cost_summary(run: RunData) -> dict[str, float | None]:
    """LLM calls and tokens (memory build + retrieval/answer/judge; cached calls included, since they
    are what the method needs) and wall seconds of this run, per conversation, plus the run's USD estimate."""
    n = max(1, run.n_conversations)
    u = usage_totals(run)
    wall = (run.cost.get("wall_s") or {}).get("total")
    return {
        "llm_calls_per_conv": (u["build_calls"] + u["qa_calls"]) / n if run.cost else None,
        "tokens_per_conv": (u["build_tokens"] + u["qa_tokens"]) / n if run.cost else None,
        "wall_s_per_conv": None if wall is None else float(wall) / n,
        "build_calls_per_conv": u["build_calls"] / n if run.cost else None,
        "qa_calls_per_conv": u["qa_calls"] / n if run.cost else None,
        "usd_this_run": run.cost.get("usd_estimate_this_run"),
    }


@dataclass
class RunSummary:
    """Everything the tables and plots need from one run, computed once."""

    run: RunData
    values: dict[str, float | None]
    ci: dict[str, tuple[float, float] | None]
    counts: dict[int, int]
    cost: dict[str, float | None]
    audited: dict[str, float | None] | None = None
    audited_ci: dict[str, tuple[float, float] | None] | None = None
    n_audited_changed: int = 0
    n_boot: int = 1000
    alpha: float = 0.05

    @property
    def comparable(self) -> bool:
        """Same setting as the paper's numbers (full LoCoMo, A-MEM protocol)."""
        return self.run.dataset == PAPER_DATASET and self.run.protocol == PAPER_PROTOCOL


def summarize_run(run: RunData, *, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05) -> RunSummary:
    values = metric_values(run.metrics)
    items = run.items
    summary = RunSummary(
        run=run,
        values=values,
        ci=metric_cis(items, values, n_boot=n_boot, seed=seed, alpha=alpha),
        counts=category_counts(run.metrics),
        cost=cost_summary(run),
        n_boot=n_boot,
        alpha=alpha,
    )
    if run.has_audited:
        a_values = metric_values(run.metrics["audited"])
        summary.audited = a_values
        summary.audited_ci = metric_cis(run.audited_items(), a_values, n_boot=n_boot, seed=seed, alpha=alpha)
        summary.n_audited_changed = sum(1 for r in items if r.get("audited"))
    return summary


# ------------------------------------------------------------------------------------ formatting
def fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_delta(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f}"


def fmt_ci(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "–"
    return fmt(value) if ci is None else f"{value:.2f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def embeddings_state(run: RunData) -> str | None:
    """``"computed"`` when the run's last invocation embedded texts with the model, ``"cached"`` when the caches
    served every text, None when the run did not record it (made before the count existed) or embedded nothing."""
    counts = (run.cost.get("resources") or {}).get("embeddings") or {}
    if counts.get("computed"):
        return "computed"
    return "cached" if counts.get("from_cache") else None


def cost_cells(s: RunSummary) -> list[str]:
    """The :data:`COST_KEYS` cells of a run; the wall time says whether its embeddings were computed or cached
    (a warm embedding cache makes a run several times faster than a cold one)."""
    cells = []
    for k in COST_KEYS:
        cell = fmt_cost(k, s.cost.get(k))
        state = embeddings_state(s.run)
        if k == "wall_s_per_conv" and state is not None and cell != "–":
            cell += f" (emb. {state})"
        cells.append(cell)
    return cells


def fmt_cost(key: str, value: float | None) -> str:
    if value is None:
        return "–"
    if key == "tokens_per_conv":
        return f"{value:,.0f}"
    return f"{value:,.1f}"


#: The changes against the full model the ablation table prints, with a paired interval.
DELTA_KEYS: tuple[str, ...] = ("f1", "f1_no_adv", "recall")


def paired_deltas(s: RunSummary, full: RunSummary) -> dict[str, tuple[float, float, float, int] | None]:
    """Per :data:`DELTA_KEYS`: (delta, low, high, n) in percent points of ``s`` minus ``full``, paired per item
    (:func:`~memcore.eval.bootstrap.paired_delta_ci`), or None when the runs share no item with a value."""
    out: dict[str, tuple[float, float, float, int] | None] = {}
    for key in DELTA_KEYS:
        metric, cats = (
            (key[: -len(NO_ADV_SUFFIX)], CATEGORIES[:4]) if key.endswith(NO_ADV_SUFFIX) else (key, CATEGORIES)
        )
        ci = paired_delta_ci(s.run.items, full.run.items, metric, n_boot=s.n_boot, alpha=s.alpha, categories=cats)
        out[key] = None if ci is None else (100.0 * ci[0], 100.0 * ci[1], 100.0 * ci[2], ci[3])
    return out


def fmt_delta_ci(value: float | None, ci: tuple[float, float, float, int] | None) -> str:
    """``+2.80 [-3.10, +8.90]``: a change and its paired interval (the change alone without one)."""
    if value is None or ci is None:
        return fmt_delta(value)
    return f"{value:+.2f} [{ci[1]:+.2f}, {ci[2]:+.2f}]"


def delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def category_header(c: int, counts: Sequence[Mapping[int, int]]) -> str:
    ns = sorted({m.get(c, 0) for m in counts})
    n = "/".join(str(v) for v in ns) if ns else "0"
    return f"{c} {category_name(c)} (n={n})"


@dataclass
class Table:
    """A rendered table: display ``columns``/``rows`` (Markdown, LaTeX), ``records`` (CSV, one per run)."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    text_columns: int = 3  # leading left-aligned columns (setting + source); the rest are numbers

    def to_markdown(self) -> str:
        lines = [f"### {self.title}", "", "| " + " | ".join(self.columns) + " |"]
        lines.append("|" + "|".join("---" if i < self.text_columns else "---:" for i in range(len(self.columns))) + "|")
        for row in self.rows:
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        if self.notes:
            lines += [""] + [f"- {n}" for n in self.notes]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        buf = io.StringIO()
        fieldnames: list[str] = []
        for rec in self.records:
            fieldnames += [k for k in rec if k not in fieldnames]
        writer = csv.DictWriter(buf, fieldnames=fieldnames, lineterminator="\n")
        writer.writeheader()
        for rec in self.records:
            writer.writerow({k: _csv_value(rec.get(k)) for k in fieldnames})
        return buf.getvalue()

    def to_latex(self) -> str:
        spec = "l" * self.text_columns + "r" * (len(self.columns) - self.text_columns)
        out = [
            f"% {self.title}",
            "% needs \\usepackage{booktabs}",
            "\\begin{table}[t]",
            "\\centering",
            "\\scriptsize",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(latex_escape(c) for c in self.columns) + " \\\\",
            "\\midrule",
        ]
        for i, row in enumerate(self.rows):
            if i and row[0]:
                out.append("\\midrule")
            out.append(" & ".join(latex_escape(cell) for cell in row) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{latex_escape(self.title)}}}", "\\end{table}"]
        if self.notes:
            out += [f"% {latex_escape(n)}" for n in self.notes]
        return "\n".join(out) + "\n"


def _csv_value(value: Any) -> Any:
    if isinstance(value, float):
        return f"{value:.4f}"
    return "" if value is None else value


_LATEX_ESCAPES = {
    "\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#", "_": "\\_",
    "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}", "^": "\\textasciicircum{}",
    "Δ": "$\\Delta$", "–": "--", "−": "$-$", "†": "$^\\dagger$",
}  # fmt: skip


def latex_escape(text: str) -> str:
    return "".join(_LATEX_ESCAPES.get(ch, ch) for ch in text)


# ------------------------------------------------------------------------------------ layouts
def _method_cell(s: RunSummary) -> str:
    label = s.run.label()
    if (s.run.variant_of or s.run.method_label) in REIMPLEMENTED:
        label += " (reimplementation)"
    return f"{label} (variant of {s.run.variant_of})" if s.run.is_variant else label


def paper_main_row(
    s: RunSummary, paper: PaperNumbers | None, reference_backbone: str | None
) -> dict[str, float] | None:
    """The paper's main-table row for this run: only for the paper's own methods, full model."""
    if paper is None or not s.run.is_paper_method or s.run.ablation != "none":
        return None
    return paper.main_row(reference_backbone or s.run.backbone, s.run.method_label)


def paper_ablation_row(
    s: RunSummary, paper: PaperNumbers | None, reference_backbone: str | None
) -> dict[str, float] | None:
    if paper is None or not s.run.is_paper_method or s.run.method_label != "memcore":
        return None
    return paper.ablation_row(reference_backbone or s.run.backbone, s.run.ablation)


def _base_record(s: RunSummary) -> dict[str, Any]:
    r = s.run
    return {
        "experiment": r.experiment,
        "backbone": r.backbone,
        "method": r.method_label,
        "registered_method": r.method,
        "variant_of": r.variant_of or "",
        "ablation": r.ablation,
        "dataset": r.dataset,
        "protocol": r.protocol,
        "embedder": r.embedder,
        "n_conversations": r.n_conversations,
        "n_items": r.metrics.get("n_items"),
        "comparable_to_paper": s.comparable,
    }


def _metric_record(
    rec: dict[str, Any],
    s: RunSummary,
    keys: Sequence[str],
    paper_row: Mapping[str, float] | None,
    extra: Mapping[str, Mapping[str, float | None]] | None = None,
) -> None:
    for k in keys:
        v = s.values.get(k)
        ci = s.ci.get(k)
        rec[k] = v
        rec[f"{k}_ci_low"] = None if ci is None else ci[0]
        rec[f"{k}_ci_high"] = None if ci is None else ci[1]
        p = None if paper_row is None else paper_row.get(k)
        rec[f"{k}_paper"] = p
        rec[f"{k}_delta"] = delta(v, p)
        if s.audited is not None:
            a = s.audited.get(k)
            rec[f"{k}_audited"] = a
            rec[f"{k}_audited_minus_original"] = delta(a, v)
        for suffix, values in (extra or {}).items():
            rec[f"{k}_{suffix}"] = values.get(k)
    for k in (*COST_KEYS, "build_calls_per_conv", "qa_calls_per_conv", "usd_this_run"):
        rec[k] = s.cost.get(k)
    if s.audited is not None:
        rec["n_items_audited_changed"] = s.n_audited_changed
    rec["run_dir"] = display_path(s.run.path)


def _source_rows(
    s: RunSummary,
    keys: Sequence[str],
    paper_row: Mapping[str, float] | None,
    paper_label: str,
    lead: list[str],
    tail_ours: list[str],
    tail_other: list[str],
    ci_keys: Sequence[str],
) -> list[list[str]]:
    """The ``ours`` / ``paper`` / ``Δ`` / ``audited`` display rows of one run."""
    blank = [""] * len(lead)

    def cells(values: Mapping[str, float | None], cis: Mapping[str, tuple[float, float] | None] | None) -> list[str]:
        return [fmt_ci(values.get(k), (cis or {}).get(k)) if k in ci_keys else fmt(values.get(k)) for k in keys]

    rows = [[*lead, "ours", *cells(s.values, s.ci), *tail_ours]]
    if s.audited is not None:
        rows.append(
            [
                *blank,
                f"ours, audited gold ({s.n_audited_changed} item{'' if s.n_audited_changed == 1 else 's'} changed)",
                *cells(s.audited, s.audited_ci),
                *tail_other,
            ]
        )
    if paper_row is not None:
        mark = "" if s.comparable else f" {NOT_COMPARABLE}"
        rows.append(blank + [paper_label] + [fmt(paper_row.get(k)) for k in keys] + tail_other)
        rows.append(
            blank
            + [f"Δ ours−paper{mark}"]
            + [fmt_delta(delta(s.values.get(k), paper_row.get(k))) for k in keys]
            + tail_other
        )
    return rows


def _common_notes(
    summaries: Sequence[RunSummary], reference_backbone: str | None, flagged: bool, any_paper: bool
) -> list[str]:
    n_boot, alpha = (summaries[0].n_boot, summaries[0].alpha) if summaries else (1000, 0.05)
    notes = [
        f"Percentages. [low, high] = {100 * (1 - alpha):.0f}% bootstrap CI ({n_boot} resamples of whole conversations); "
        "with one conversation it collapses to the point.",
    ]
    if flagged:
        notes.append(
            f"{NOT_COMPARABLE} not comparable: the paper's numbers are on all of LoCoMo ({PAPER_DATASET}) with the "
            f"{PAPER_PROTOCOL} protocol; these runs use "
            + ", ".join(sorted({f"{s.run.dataset}/{s.run.protocol}" for s in summaries if not s.comparable}))
            + "."
        )
    if reference_backbone and any_paper:
        notes.append(f"Paper rows are the paper's {reference_backbone} numbers, whatever backbone our run used.")
    if any(s.run.is_variant for s in summaries):
        notes.append(
            "(variant of X): our own configuration of X (e.g. memcore-cheap: no LLM calls), not the paper's method; "
            "never compared with the paper's numbers."
        )
    reimplemented = sorted({m for s in summaries if (m := s.run.variant_of or s.run.method_label) in REIMPLEMENTED})
    if reimplemented:
        notes.append(
            "(reimplementation): this harness's reimplementation, not the authors' code: "
            + "; ".join(f"{m}: {REIMPLEMENTED[m]}" for m in reimplemented)
            + "."
        )
    if any(not s.run.answered for s in summaries):
        notes.append(
            "Runs with eval.answer=false have no answers: F1/BLEU-1 are '–', recall and hit rate are measured."
        )
    wall = "wall time of this run (cache hits shorten it)."
    if any(embeddings_state(s.run) for s in summaries):
        wall = (
            "wall time of this run's last invocation (cache hits shorten it; '(emb. cached)': the embedding cache "
            "served every text, '(emb. computed)': the model embedded some; compare wall times only between runs "
            "with the same mark)."
        )
    notes.append(
        "Cost per conversation: LLM calls and tokens of memory build (from the snapshot manifest, also when reused) "
        "plus retrieval/answer/judge, cached calls included; " + wall
    )
    return notes


def _ci_label(summaries: Sequence[RunSummary]) -> str:
    return f"{_level(summaries)}% CI"


def _level(summaries: Sequence[RunSummary]) -> str:
    alpha = summaries[0].alpha if summaries else 0.05
    return f"{100 * (1 - alpha):.0f}"


def _setting_lead(s: RunSummary, vary: Sequence[str]) -> list[str]:
    r = s.run
    lead = [r.backbone, _method_cell(s)]
    for attr in vary:
        lead.append(getattr(r, attr))
    return lead


def _varying(summaries: Sequence[RunSummary]) -> list[str]:
    return [
        a for a in ("dataset", "protocol", "embedder", "experiment") if len({getattr(s.run, a) for s in summaries}) > 1
    ]


def main_table(
    summaries: Sequence[RunSummary],
    paper: PaperNumbers | None,
    *,
    reference_backbone: str | None = None,
    title: str = "LoCoMo main table (F1 per category, weighted F1 and BLEU-1)",
) -> Table:
    """The paper's main-table layout."""
    judged = any(s.values.get("judge_no_adv") is not None for s in summaries)
    keys = list(MAIN_KEYS) + (["judge_no_adv"] if judged else [])
    vary = _varying(summaries)
    counts = [s.counts for s in summaries]
    columns = ["Backbone", "Method", *[a.capitalize() for a in vary], "Source"]
    columns += [category_header(c, counts) for c in CATEGORIES]
    columns += [f"{KEY_LABELS[k]} ({_ci_label(summaries)})" for k in keys[len(CATEGORIES) :]]
    extra_cols = (["Judge (preset, model, runs: ± std, majority J)"] if judged else []) + [
        "Answers (prompt, T, words)",
        "Evidence (budget; notes, tokens per question)",
    ]
    columns += extra_cols + [COST_LABELS[k] for k in COST_KEYS]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    flagged = any_paper = False
    for s in summaries:
        paper_row = paper_main_row(s, paper, reference_backbone)
        flagged |= paper_row is not None and not s.comparable
        any_paper |= paper_row is not None
        lead = _setting_lead(s, vary)
        extra = ([judge_cell(s.run)] if judged else []) + [answer_cell(s.run), evidence_cell(evidence_info(s.run))]
        tail_ours = extra + cost_cells(s)
        tail_other = [""] * (len(extra) + len(COST_KEYS))
        paper_label = f"paper ({reference_backbone})" if reference_backbone else "paper"
        rows += _source_rows(s, keys, paper_row, paper_label, lead, tail_ours, tail_other, keys[len(CATEGORIES) :])
        ceiling = ceiling_values(s.run.metrics)
        if ceiling is not None:
            rows.append(
                [""] * len(lead)
                + ["ceiling: perfect system vs original gold"]
                + [fmt(ceiling.get(k)) for k in keys]
                + tail_other
            )
        rec = _base_record(s)
        _metric_record(rec, s, keys, paper_row)
        rec.update(run_disclosure(s.run))
        if ceiling is not None:
            rec.update({f"{k}_ceiling": ceiling.get(k) for k in keys})
        records.append(rec)
    notes = _common_notes(summaries, reference_backbone, flagged, any_paper)
    notes += headline_notes(summaries)
    return Table(title, columns, rows, notes, records, text_columns=3 + len(vary))


def ceiling_values(metrics: Mapping[str, Any]) -> dict[str, float | None] | None:
    """The gold-error ceiling (percent) in main-table keys: per-category F1, F1 and J over categories 1-4."""
    ceiling = metrics.get("gold_ceiling")
    if not ceiling:
        return None
    by_cat = ceiling.get("by_category") or {}
    out: dict[str, float | None] = {}
    for c in CATEGORIES:
        v = (by_cat.get(str(c)) or {}).get("f1")
        out[f"cat{c}"] = None if v is None else 100.0 * float(v)
    overall = ceiling.get("overall_no_adv") or {}
    for key, src in (("f1_no_adv", "f1"), ("judge_no_adv", "judge")):
        v = overall.get(src)
        out[key] = None if v is None else 100.0 * float(v)
    return out


def judge_cell(run: RunData) -> str:
    """``mem0-judge, <model>, 3 runs ± 0.00, maj 52.00`` for a judged run (categories 1-4)."""
    info = run.info.get("judge") or {}
    if not info:
        return "–"
    block = run.metrics.get("overall_no_adv") or {}
    text = f"{info.get('judge_preset', 'judge-v1')}, {info.get('model')}"
    n_runs = int(block.get("judge_n_runs") or info.get("runs") or 1)
    if n_runs > 1 and block.get("judge_std") is not None:
        text += f", {n_runs} runs ± {100.0 * float(block['judge_std']):.2f}"
        if block.get("judge_majority") is not None:
            text += f", maj {100.0 * float(block['judge_majority']):.2f}"
    else:
        text += ", 1 run"
    return text


def answer_cell(run: RunData) -> str:
    """``answer-v1/amem, T 0.7/0.5, 3.2 words`` (prompt, temperature cat. 1-4 / cat. 5, mean answer length)."""
    info = run.info.get("answer") or {}
    if not info:
        return "–"
    words = info.get("mean_words")
    length = "–" if words is None else f"{float(words):.1f} words"
    return f"{_prompt_label(info)}, T {info.get('temperature')}/{info.get('temperature_adversarial')}, {length}"


def _prompt_label(info: Mapping[str, Any]) -> str:
    """The answer prompt's version, marked ``[upstream]`` (the method's own) or ``[harness; no upstream]`` when the
    run asked for ``eval.answer_prompt=upstream``; unmarked under the default ``harness``."""
    prompt = str(info.get("prompt", ""))
    if info.get("prompt_source"):
        return f"{prompt} [upstream]"
    if info.get("answer_prompt_note"):
        return f"{prompt} [harness; no upstream]"
    return prompt


def evidence_info(run: RunData) -> dict[str, Any]:
    """``run.evidence`` of ``metrics.json``; for runs written before it existed, computed from ``items.jsonl``
    (the budget read from the run's config, what it counts from the method's spec)."""
    info = run.info.get("evidence")
    if info:
        return dict(info)
    from memcore.eval.disclosure import evidence_disclosure
    from memcore.methods import METHODS

    budget = (run.config.get("eval") or {}).get("budget")
    counts = METHODS.get(run.method).budget_counts if run.method in METHODS else "notes"
    return evidence_disclosure(None if budget is None else int(budget), counts, run.items)


def run_disclosure(run: RunData) -> dict[str, Any]:
    """CSV fields: judge preset, model, runs, std, majority; answer prompt, temperatures, mean words."""
    judge = run.info.get("judge") or {}
    answer = run.info.get("answer") or {}
    block = run.metrics.get("overall_no_adv") or {}
    return {
        "judge_preset": judge.get("judge_preset", "judge-v1" if judge else ""),
        "judge_model": judge.get("model", ""),
        "judge_runs": block.get("judge_n_runs", judge.get("runs")),
        "judge_std_no_adv": None if block.get("judge_std") is None else 100.0 * float(block["judge_std"]),
        "judge_majority_no_adv": None
        if block.get("judge_majority") is None
        else 100.0 * float(block["judge_majority"]),
        "answer_prompt": _prompt_label(answer) if answer else "",
        "answer_temperature": answer.get("temperature"),
        "answer_temperature_adversarial": answer.get("temperature_adversarial"),
        "answer_mean_words": answer.get("mean_words"),
        **{f"evidence_{k}": v for k, v in evidence_info(run).items() if k != "n_items"},
    }


def headline_notes(summaries: Sequence[RunSummary]) -> list[str]:
    """Footnotes that say what the headline numbers are: category 5 under protocol=amem, the category names
    Mem0's harness uses, what J covers, the ceiling row."""
    from memcore.eval.aggregate import CATEGORY_NAME_NOTE
    from memcore.eval.protocols import protocol_cat5_note

    notes = list(dict.fromkeys(n for s in summaries if (n := protocol_cat5_note(s.run.protocol))))
    notes.append(CATEGORY_NAME_NOTE)
    if any(s.run.method_label == "mem0" for s in summaries):
        notes.append(
            "mem0: mem0ai 2.2.1's add-only pipeline (one extraction call per add), not the algorithm behind Mem0's"
            " published numbers; the paper's Mem0 row is mem0-two-phase (extraction, then ADD/UPDATE/DELETE/NONE)."
        )
    if any(s.values.get("judge_no_adv") is not None for s in summaries):
        notes.append(
            "J cat. 1-4: share of answers the judge labels CORRECT over categories 1-4 (as published LoCoMo J numbers;"
            " n = 1,540 on all of LoCoMo); with repeated runs the mean over runs, ± the std of the runs' J; per-category J"
            " is in the detail table. The Judge column names the judge preset and the model that actually judged."
        )
    if any(s.run.method.startswith("fluxmem") for s in summaries):
        notes.append(
            "FluxMem: its paper reports LoCoMo over categories 1-4 (adversarial left out); its headline here is the"
            " cat. 1-4 column (F1 cat. 1-4, and J cat. 1-4 when judged), not the paper's overall over categories 1-5."
        )
    notes.append(
        "Answers: the answer prompt, its temperature (categories 1-4 / category 5) and the mean answer length in words;"
        " the answer prompt moves J more than the memory does (full context with GPT-4.1-mini: 81.95 with a short-answer"
        " prompt, 92.62 with chain of thought)."
    )
    if any(_prompt_label(s.run.info.get("answer") or {}).endswith("]") for s in summaries):
        notes.append(
            "[upstream]: the row was answered with its method's own upstream answer prompt, layout and sampling"
            " (eval.answer_prompt=upstream; sources in baselines/FIDELITY.md); [harness; no upstream]: asked for, but"
            " the method has none, so the harness's prompt. Unmarked rows use the harness's prompt."
        )
    notes.append(
        "Evidence: eval.budget (when set, at most that many notes per question for every method: A-MEM's linked"
        " neighbours, both of Mem0's speaker searches, MemGPT's hits and core lines, FluxMem's episodes and skills"
        " count; full_context keeps that many most recent turns) or the method's own default, and the notes and"
        " context tokens each question actually got."
    )
    if any(s.run.metrics.get("gold_ceiling") for s in summaries):
        notes.append(
            "ceiling: the best a perfect system reaches against the original gold (it gives the audited answer; items whose"
            " gold answer the audit found wrong score 0 in J, their corrected answer's F1 in F1); categories 1-4."
        )
    return notes


def run_switches(run: RunData) -> dict[str, bool]:
    """The run's ablation switches (``config.yaml`` → ``ablation``, every boolean key)."""
    abl = run.config.get("ablation") or {}
    return {k: v for k, v in abl.items() if isinstance(v, bool)} if isinstance(abl, dict) else {}


def run_k(run: RunData) -> Any:
    """The run's retrieval budget K: ``eval.budget`` when set, else the method's ``k_final`` (None if neither)."""
    budget = (run.config.get("eval") or {}).get("budget")
    return budget if budget is not None else (run.config.get("method") or {}).get("k_final")


def full_model_key(run: RunData) -> tuple[Any, ...]:
    """What a row and its full model share: experiment, backbone, method, data, protocol, embedder, K, and every
    switch but the one the row's ablation turns off (``wo_ier`` → ``ier``), which the full model has on."""
    switches = run_switches(run)
    if run.ablation.startswith("wo_") and run.ablation[3:] in switches:
        switches[run.ablation[3:]] = True
    return (
        run.experiment,
        run.backbone,
        run.method_label,
        run.dataset,
        run.protocol,
        run.embedder,
        run_k(run),
        tuple(sorted(switches.items())),
    )


def full_model_of(s: RunSummary, summaries: Sequence[RunSummary]) -> RunSummary | None:
    """The full model (ablation ``none``) a row is compared with: same :func:`full_model_key` (so an IER-off
    ablation is paired with the IER-off full model of its experiment and K), or None when there is none."""
    key = full_model_key(s.run)
    for other in summaries:
        if other.run.ablation == "none" and full_model_key(other.run) == key:
            return other
    return None


def differing(summaries: Sequence[RunSummary]) -> list[str]:
    """What the runs differ in, among method, ablation and backbone (in that order)."""
    attrs = (("method", "method_label"), ("ablation", "ablation"), ("backbone", "backbone"))
    return [name for name, attr in attrs if len({getattr(s.run, attr) for s in summaries}) > 1]


def comparison_title(summaries: Sequence[RunSummary], metrics: str) -> str:
    """A retrieval or ablation table's title from what its runs differ in: "Ablations (…)" only when they differ
    in ablation, else "Methods compared", "Backbones compared", or one run's name."""
    diff = differing(summaries)
    if "ablation" in diff:
        head = "Ablations"
    elif diff:
        head = " and ".join(d.capitalize() + "s" if i == 0 else d + "s" for i, d in enumerate(diff)) + " compared"
    else:
        head = summaries[0].run.label() if summaries else "Runs"
    return f"{head} ({metrics})"


def ablation_table(
    summaries: Sequence[RunSummary],
    paper: PaperNumbers | None,
    *,
    reference_backbone: str | None = None,
    title: str | None = None,
    deltas: bool = True,
) -> Table:
    """The paper's ablation layout (plus F1 over categories 1-4), and the change of F1, F1 1-4 and recall against
    the full model (ablation ``none``) with a paired per-item interval (:func:`paired_deltas`). Without
    ``deltas`` (runs that differ in method or backbone, not in ablation) the same metrics with no change columns.
    The title says what the runs differ in (:func:`comparison_title`) unless given."""
    keys = ["f1", "f1_no_adv", *ABLATION_KEYS[1:]]
    vary = _varying(summaries)
    title = title or comparison_title(summaries, "F1, BLEU-1, evidence recall, hit rate")
    delta_keys = DELTA_KEYS if deltas else ()
    columns = ["Backbone", "Method", *[a.capitalize() for a in vary], "Source"]
    columns += [f"{KEY_LABELS[k]} ({_ci_label(summaries)})" for k in keys]
    columns += [f"Δ{KEY_LABELS[k]} vs full (paired {_level(summaries)}% CI)" for k in delta_keys]
    columns += [COST_LABELS[k] for k in COST_KEYS]
    compared = {id(full) for x in summaries if x.run.ablation != "none" and (full := full_model_of(x, summaries))}
    lonely_full = missing_full = False
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    flagged = any_paper = False
    for s in summaries:
        paper_row = paper_ablation_row(s, paper, reference_backbone)
        flagged |= paper_row is not None and not s.comparable
        any_paper |= paper_row is not None
        full = full_model_of(s, summaries)
        ours_vs_full = {k: (delta(s.values.get(k), full.values.get(k)) if full else None) for k in keys}
        paper_full = paper_ablation_row(full, paper, reference_backbone) if full else None
        if paper_full is None and paper_row is not None and paper is not None:
            paper_full = paper.ablation_row(reference_backbone or s.run.backbone, "none")
        paper_vs_full = {
            k: delta(paper_row.get(k), paper_full.get(k)) if paper_row and paper_full else None for k in keys
        }
        is_full = full is s
        paired = paired_deltas(s, full) if full is not None and not is_full else {}
        if is_full and id(s) not in compared:  # no ablation here is compared with it: nothing to mark
            tail_ours = ["–"] * len(delta_keys)
            lonely_full = True
        else:
            missing_full |= full is None
            tail_ours = ["(full)" if is_full else fmt_delta_ci(ours_vs_full[k], paired.get(k)) for k in delta_keys]
        tail_ours += cost_cells(s)
        lead = _setting_lead(s, vary)
        paper_label = f"paper ({reference_backbone})" if reference_backbone else "paper"
        blank_tail = [""] * (len(delta_keys) + len(COST_KEYS))
        block = _source_rows(s, keys, paper_row, paper_label, lead, tail_ours, blank_tail, keys)
        if paper_row is not None and deltas:  # the paper row's own change against the paper's full model
            paper_idx = next(i for i, row in enumerate(block) if row[len(lead)] == paper_label)
            for j, k in ((DELTA_KEYS.index(k), k) for k in ("f1", "recall")):
                block[paper_idx][len(lead) + 1 + len(keys) + j] = (
                    "(full)" if s.run.ablation == "none" else fmt_delta(paper_vs_full[k])
                )
        rows += block
        rec = _base_record(s)
        changes = {"vs_full": ours_vs_full, "paper_vs_full": paper_vs_full} if deltas else None
        _metric_record(rec, s, keys, paper_row, changes)
        for k in delta_keys:
            ci = paired.get(k)
            rec[f"{k}_vs_full_ci_low"], rec[f"{k}_vs_full_ci_high"] = (None, None) if ci is None else ci[1:3]
            rec[f"{k}_vs_full_n_paired"] = None if ci is None else ci[3]
        records.append(rec)
    notes = _common_notes(summaries, reference_backbone, flagged, any_paper)
    if not deltas:
        return Table(title, columns, rows, notes, records, text_columns=3 + len(vary))
    if missing_full:
        notes.append(
            "Δ vs full '–' on an ablation row: it needs the full model, a run with ablation=none of the same "
            "experiment, backbone, method, data, K and switches, in this report."
        )
    if lonely_full:
        notes.append(
            "Δ vs full '–' on an ablation-none row: no ablation of it is in this report; it needs a run of an "
            "ablation (ablation=wo_…) with the same experiment, backbone, method, data and K."
        )
    notes.append(
        "Δ vs full: the ablation minus the full model (ablation none) of the same experiment, backbone, method, data, "
        "K and switches (the ablated one on: an IER-off ablation is compared with the IER-off full model); "
        f"[low, high] = {_level(summaries)}% percentile bootstrap of the mean per-item difference over the items both "
        "runs answered (items resampled, paired by item id; items of one conversation share a memory, so this is "
        "narrower than a conversation-level interval). An interval that contains 0 does not show a difference."
    )
    return Table(title, columns, rows, notes, records, text_columns=3 + len(vary))


# ------------------------------------------------------------------------------------ detail layout
DETAIL_METRICS: tuple[tuple[str, str], ...] = (
    ("f1", "F1"),
    ("bleu1", "BLEU-1"),
    ("recall", "Recall"),
    ("hit_rate", "Hit"),
)
DETAIL_JUDGE: tuple[str, str] = ("judge", "J")


def unit_costs(run: RunData) -> dict[str, float | None]:
    """LLM calls and tokens per ingested turn (memory build) and per question (retrieval + answer +
    judge), cached calls included, and the JSON-parse fallbacks counted in both."""
    u = usage_totals(run)
    turns, questions = u["turns"], int(run.metrics.get("n_items") or 0)

    def per_question(kind: str) -> float | None:
        # the QA stages over the questions whose usage is known (all of them but in a run resumed across the
        # change that added item usage); memory updates made while answering over every question
        if not questions:
            return None
        stage_total = u[f"qa_{kind}"] - u[f"update_{kind}"]
        return (stage_total / u["qa_questions"] if u["qa_questions"] else 0.0) + u[f"update_{kind}"] / questions

    return {
        "calls_per_turn": u["build_calls"] / turns if turns else None,
        "tokens_per_turn": u["build_tokens"] / turns if turns else None,
        "calls_per_question": per_question("calls"),
        "tokens_per_question": per_question("tokens"),
        "parse_fallbacks": float(u["parse_fallbacks"]),
        "wall_s": (run.cost.get("wall_s") or {}).get("total"),
    }


def _detail_method_cell(s: RunSummary) -> str:
    """The method cell, plus the judge preset when the run was judged (runs of one method may differ only there)."""
    judge = s.run.info.get("judge") or {}
    cell = _method_cell(s)
    return f"{cell} [J: {judge.get('judge_preset', 'judge-v1')}]" if judge else cell


def detail_table(summaries: Sequence[RunSummary], *, title: str | None = None) -> Table:
    """Methods side by side on one slice: per category and overall, F1 / BLEU-1 / recall / hit rate (%),
    then what each method spent per ingested turn and per question. No paper numbers (any slice)."""
    judged = any(s.values.get("judge") is not None for s in summaries)
    metrics_list = (*DETAIL_METRICS, DETAIL_JUDGE) if judged else DETAIL_METRICS
    columns = ["Method", "Category", "n", *[label + " %" for _, label in metrics_list]]
    budgets = sorted({int(b) for s in summaries for b in (s.run.metrics.get("recall_at_budget") or {})})
    columns += [f"Recall @{b} tok %" for b in budgets]
    columns += [f"Recall @{k} notes %" for k in RECALL_KS]
    columns += ["calls/turn", "tokens/turn", "calls/question", "tokens/question", "parse fallbacks", "wall s"]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    for s in summaries:
        m = s.run.metrics
        blocks = [
            (f"{c} {category_name(c)}", m["by_category"][str(c)])
            for c in CATEGORIES
            if str(c) in m.get("by_category", {})
        ]
        blocks.append(("overall", m.get("overall", {})))
        if m.get("overall_no_adv"):
            blocks.append(("overall 1-4", m["overall_no_adv"]))
        costs = unit_costs(s.run)
        cost_cells = [
            fmt(costs["calls_per_turn"], 2),
            fmt(costs["tokens_per_turn"], 0),
            fmt(costs["calls_per_question"], 2),
            fmt(costs["tokens_per_question"], 0),
            fmt(costs["parse_fallbacks"], 0),
            fmt(costs["wall_s"], 0) + (f" (emb. {state})" if (state := embeddings_state(s.run)) else ""),
        ]
        at_budget = budgets_within_cap(m)  # a budget above the run's cap only repeats the cap's recall
        budget_vals = {
            f"recall_at_{b}": None
            if (at_budget.get(str(b)) or {}).get("recall") is None
            else 100.0 * float(at_budget[str(b)]["recall"])
            for b in budgets
        }
        at_k = m.get("recall_at_k") or k_recall(s.run.items)  # runs made before metrics.json carried it
        k_vals = {
            f"recall_at_{k}_notes": None
            if (at_k.get(str(k)) or {}).get("recall") is None
            else 100.0 * float(at_k[str(k)]["recall"])
            for k in RECALL_KS
        }
        for i, (cat, block) in enumerate(blocks):
            vals = {k: None if block.get(k) is None else 100.0 * float(block[k]) for k, _ in metrics_list}
            last = cat == "overall"  # budgets and costs go on the overall row
            rows.append(
                [_detail_method_cell(s) if i == 0 else "", cat, str(block.get("n", 0))]
                + [fmt(vals[k]) for k, _ in metrics_list]
                + ([fmt(v) for v in budget_vals.values()] if last else [""] * len(budgets))
                + ([fmt(v) for v in k_vals.values()] if last else [""] * len(RECALL_KS))
                + (cost_cells if last else [""] * len(cost_cells))
            )
            extra = {**budget_vals, **k_vals, **costs} if last else {}
            records.append({**_base_record(s), "category": cat, "n": block.get("n"), **vals, **extra})
    capped = any(((s.run.metrics.get("run") or {}).get("evidence") or {}).get("context_tokens") for s in summaries)
    settings = sorted({(s.run.backbone, s.run.dataset, s.run.protocol) for s in summaries})
    lead = "; ".join(f"backbone {b}, dataset {d}, protocol {p}" for b, d, p in settings)
    notes = [
        "Recall and hit rate: items with gold evidence only. Recall @N tok: the leading retrieved notes that fit"
        " N context tokens, categories 1-4 (metrics.json recall_at_budget)"
        + ("; '–' above a run's eval.context_tokens cap" if capped else "")
        + ". Recall @k notes: the first k retrieved"
        " notes only, categories 1-4 (recall_at_k); when a memory holds about K_final notes or fewer, recall at"
        " K_final is 100 % by construction and only these say how well notes are ranked. calls/turn and tokens/turn: memory"
        " build per ingested turn; calls/question: retrieval + answer (+ judge) + memory updates made while"
        " answering (FluxMem's consolidation) per question; cached calls count.",
    ]
    return Table(title or f"Methods side by side ({lead})", columns, rows, notes, records, text_columns=2)

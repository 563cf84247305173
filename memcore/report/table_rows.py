"""The rows the paper's layouts share (:mod:`memcore.report.main_table`, :mod:`memcore.report.ablation_table`):
each run's ``ours`` row with bootstrap intervals and its cost, the paper's row and ``Δ ours−paper`` when the paper
has the cell, the ``ours, audited gold`` row, the CSV record of a run, and the notes every such table carries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcore.methods import find_method
from memcore.report.collect import display_path
from memcore.report.reference import PAPER_DATASET, PAPER_PROTOCOL, REIMPLEMENTED, PaperNumbers
from memcore.report.summary import COST_KEYS, RunSummary, embeddings_state
from memcore.report.tables import NOT_COMPARABLE, delta, fmt, fmt_ci, fmt_cost, fmt_delta

KEY_LABELS: dict[str, str] = {
    "f1": "F1 cat. 1-5 (paper's overall)",
    "f1_no_adv": "F1 cat. 1-4",
    "bleu1": "BLEU-1",
    "judge": "J",
    "judge_no_adv": "J cat. 1-4",
    "recall": "Recall",
    "hit_rate": "Hit rate",
}


def method_cell(s: RunSummary) -> str:
    label = s.run.label()
    if s.run.imported:
        return f"{label} (published answers)"
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
    spec = find_method(s.run.method_label)
    if paper is None or not s.run.is_paper_method or spec is None or spec.ablation_schema is None:
        return None
    return paper.ablation_row(reference_backbone or s.run.backbone, s.run.ablation)


def base_record(s: RunSummary) -> dict[str, Any]:
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


def metric_record(
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


def source_rows(
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


def common_notes(
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


def ci_label(summaries: Sequence[RunSummary]) -> str:
    return f"{ci_level(summaries)}% CI"


def ci_level(summaries: Sequence[RunSummary]) -> str:
    alpha = summaries[0].alpha if summaries else 0.05
    return f"{100 * (1 - alpha):.0f}"


def setting_lead(s: RunSummary, vary: Sequence[str]) -> list[str]:
    r = s.run
    lead = [r.backbone, method_cell(s)]
    for attr in vary:
        lead.append(getattr(r, attr))
    return lead


def varying(summaries: Sequence[RunSummary]) -> list[str]:
    return [
        a for a in ("dataset", "protocol", "embedder", "experiment") if len({getattr(s.run, a) for s in summaries}) > 1
    ]


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

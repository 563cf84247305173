"""The paper's ablation layout (F1, BLEU-1, evidence recall, hit rate) and each ablation's change against its full
model with a paired per-item interval; without the change columns it compares methods or backbones (the retrieval
table)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcore.eval.bootstrap import paired_delta_ci
from memcore.report.collect import RunData
from memcore.report.reference import PaperNumbers
from memcore.report.summary import COST_KEYS, COST_LABELS, NO_ADV_SUFFIX, RunSummary
from memcore.report.table_rows import (
    KEY_LABELS,
    base_record,
    ci_label,
    ci_level,
    common_notes,
    cost_cells,
    metric_record,
    paper_ablation_row,
    setting_lead,
    source_rows,
    varying,
)
from memcore.report.tables import CATEGORIES, Table, delta, fmt_delta, fmt_delta_ci

ABLATION_KEYS: tuple[str, ...] = ("f1", "bleu1", "recall", "hit_rate")


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


def run_switches(run: RunData) -> dict[str, bool]:
    """The run's ablation switches (``config.yaml`` → ``ablation``, every boolean key)."""
    abl = run.config.get("ablation") or {}
    return {k: v for k, v in abl.items() if isinstance(v, bool)} if isinstance(abl, dict) else {}


def run_k(run: RunData) -> Any:
    """The run's retrieval budget K: ``eval.note_cap`` when set, else the method's ``k_final`` (None if neither)."""
    budget = (run.config.get("eval") or {}).get("note_cap")
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
    vary = varying(summaries)
    title = title or comparison_title(summaries, "F1, BLEU-1, evidence recall, hit rate")
    delta_keys = DELTA_KEYS if deltas else ()
    columns = ["Backbone", "Method", *[a.capitalize() for a in vary], "Source"]
    columns += [f"{KEY_LABELS[k]} ({ci_label(summaries)})" for k in keys]
    columns += [f"Δ{KEY_LABELS[k]} vs full (paired {ci_level(summaries)}% CI)" for k in delta_keys]
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
        lead = setting_lead(s, vary)
        paper_label = f"paper ({reference_backbone})" if reference_backbone else "paper"
        blank_tail = [""] * (len(delta_keys) + len(COST_KEYS))
        block = source_rows(s, keys, paper_row, paper_label, lead, tail_ours, blank_tail, keys)
        if paper_row is not None and deltas:  # the paper row's own change against the paper's full model
            paper_idx = next(i for i, row in enumerate(block) if row[len(lead)] == paper_label)
            for j, k in ((DELTA_KEYS.index(k), k) for k in ("f1", "recall")):
                block[paper_idx][len(lead) + 1 + len(keys) + j] = (
                    "(full)" if s.run.ablation == "none" else fmt_delta(paper_vs_full[k])
                )
        rows += block
        rec = base_record(s)
        changes = {"vs_full": ours_vs_full, "paper_vs_full": paper_vs_full} if deltas else None
        metric_record(rec, s, keys, paper_row, changes)
        for k in delta_keys:
            ci = paired.get(k)
            rec[f"{k}_vs_full_ci_low"], rec[f"{k}_vs_full_ci_high"] = (None, None) if ci is None else ci[1:3]
            rec[f"{k}_vs_full_n_paired"] = None if ci is None else ci[3]
        records.append(rec)
    notes = common_notes(summaries, reference_backbone, flagged, any_paper)
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
        f"[low, high] = {ci_level(summaries)}% percentile bootstrap of the mean per-item difference over the items both "
        "runs answered (items resampled, paired by item id; items of one conversation share a memory, so this is "
        "narrower than a conversation-level interval). An interval that contains 0 does not show a difference."
    )
    return Table(title, columns, rows, notes, records, text_columns=3 + len(vary))

"""The paper's main-table layout: per-category F1 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
5 adversarial), weighted F1 and BLEU-1 (+ J when judged), beside the paper's numbers, with what each run's answers,
evidence and judge were (the disclosure columns) and its headline footnotes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcore.eval.aggregate import dataset_notes
from memcore.eval.disclosure import evidence_cell, evidence_disclosure
from memcore.eval.protocols import protocol_notes
from memcore.eval.published import published_cell, published_record
from memcore.methods import METHODS, find_method
from memcore.report.collect import RunData
from memcore.report.reference import PaperNumbers
from memcore.report.summary import CATEGORY_KEYS, COST_KEYS, COST_LABELS, RunSummary
from memcore.report.table_rows import (
    KEY_LABELS,
    base_record,
    ci_label,
    common_notes,
    cost_cells,
    metric_record,
    paper_main_row,
    setting_lead,
    source_rows,
    varying,
)
from memcore.report.tables import CATEGORIES, Table, category_header, fmt

MAIN_KEYS: tuple[str, ...] = (*CATEGORY_KEYS, "f1", "f1_no_adv", "bleu1")


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
    vary = varying(summaries)
    counts = [s.counts for s in summaries]
    columns = ["Backbone", "Method", *[a.capitalize() for a in vary], "Source"]
    columns += [category_header(c, counts) for c in CATEGORIES]
    columns += [f"{KEY_LABELS[k]} ({ci_label(summaries)})" for k in keys[len(CATEGORIES) :]]
    published = any(s.run.imported for s in summaries)
    extra_cols = (
        (["J as published cat. 1-4 (vendor's judge; not the harness's J)"] if published else [])
        + (["Judge (preset, model, runs: ± std, majority J)"] if judged else [])
        + [
            "Answers (prompt, T, words)",
            "Evidence (budget; notes, tokens per question)",
        ]
    )
    columns += extra_cols + [COST_LABELS[k] for k in COST_KEYS]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    flagged = any_paper = False
    for s in summaries:
        paper_row = paper_main_row(s, paper, reference_backbone)
        flagged |= paper_row is not None and not s.comparable
        any_paper |= paper_row is not None
        lead = setting_lead(s, vary)
        extra = ([published_cell(s.run.metrics)] if published else []) + ([judge_cell(s.run)] if judged else [])
        extra += [answer_cell(s.run), evidence_cell(evidence_info(s.run))]
        tail_ours = extra + cost_cells(s)
        tail_other = [""] * (len(extra) + len(COST_KEYS))
        paper_label = f"paper ({reference_backbone})" if reference_backbone else "paper"
        rows += source_rows(s, keys, paper_row, paper_label, lead, tail_ours, tail_other, keys[len(CATEGORIES) :])
        ceiling = ceiling_values(s.run.metrics)
        if ceiling is not None:
            rows.append(
                [""] * len(lead)
                + ["ceiling: perfect system vs original gold"]
                + [fmt(ceiling.get(k)) for k in keys]
                + tail_other
            )
        rec = base_record(s)
        metric_record(rec, s, keys, paper_row)
        rec.update(run_disclosure(s.run))
        rec.update(published_record(s.run.metrics))
        if ceiling is not None:
            rec.update({f"{k}_ceiling": ceiling.get(k) for k in keys})
        records.append(rec)
    notes = common_notes(summaries, reference_backbone, flagged, any_paper)
    notes += headline_notes(summaries)
    if published:
        notes.append(PUBLISHED_NOTE)
    return Table(title, columns, rows, notes, records, text_columns=3 + len(vary))


PUBLISHED_NOTE = (
    "(published answers): a system's answers imported from the file its authors published (memcore-import), scored"
    " here like any run; it answers categories 1-4 only, so its 'cat. 1-5' overall is over categories 1-4 and its"
    " category 5 is '–'. J as published: the share its own vendor's judge marked correct (the judge named), never"
    " mixed with the harness's J; its answer prompt and length (Answers column) differ from the harness's runs."
)


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
    if info.get("median_words") is not None:
        length += f" (median {float(info['median_words']):.0f})"
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

    budget = (run.config.get("eval") or {}).get("note_cap")
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

    notes = list(dict.fromkeys(n for s in summaries for n in protocol_notes(s.run.protocol)))
    notes.extend(n for kind in dict.fromkeys(s.run.dataset_kind for s in summaries) for n in dataset_notes(kind))
    for method in dict.fromkeys(s.run.method for s in summaries):
        spec = find_method(method)
        notes.extend(n for n in (spec.table_notes if spec is not None else ()) if n not in notes)
    if any(s.values.get("judge_no_adv") is not None for s in summaries):
        notes.append(
            "J cat. 1-4: share of answers the judge labels CORRECT over categories 1-4 (as published LoCoMo J numbers;"
            " n = 1,540 on all of LoCoMo); with repeated runs the mean over runs, ± the std of the runs' J; per-category J"
            " is in the detail table. The Judge column names the judge preset and the model that actually judged."
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
        "Evidence: eval.note_cap (when set, at most that many notes per question for every method: A-MEM's linked"
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

"""Methods side by side on one slice (any slice, no paper numbers): per category and overall, every metric the runs
scored (their protocols' and ``eval.metrics``), recall at equal token budgets and at the first notes, and what each
method spent per ingested turn and per question."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcore.config_aliases import evidence_token_cap
from memcore.datasets.registry import dataset_of
from memcore.eval.aggregate import RECALL_KS, budgets_within_cap, category_name, k_recall, metric_header, metrics_of_run
from memcore.metrics import Metric
from memcore.report.summary import RunSummary, embeddings_state, headline_words, unit_costs
from memcore.report.table_rows import base_record, method_cell
from memcore.report.tables import Table, fmt


def detail_metrics(summaries: Sequence[RunSummary]) -> list[Metric]:
    """The columns: every metric the runs scored that needs no LLM (their protocols' and ``eval.metrics``, in first
    seen order), then the LLM-scored ones any run carries (J)."""
    scored: dict[str, Metric] = {}
    for s in summaries:
        for metric in metrics_of_run(s.run.metrics):
            if metric.stored != "derived":
                scored.setdefault(metric.name, metric)
    plain = [m for m in scored.values() if not m.needs_llm]
    judged = [m for m in scored.values() if m.needs_llm and any(s.values.get(m.key) is not None for s in summaries)]
    return plain + judged


def _detail_method_cell(s: RunSummary) -> str:
    """The method cell, plus the judge preset when the run was judged (runs of one method may differ only there)."""
    judge = s.run.info.get("judge") or {}
    cell = method_cell(s)
    return f"{cell} [J: {judge.get('judge_preset', 'judge-v1')}]" if judge else cell


def detail_table(summaries: Sequence[RunSummary], *, title: str | None = None) -> Table:
    """Methods side by side on one slice: per category and overall, each metric the runs scored
    (:func:`detail_metrics`: F1 / BLEU-1 / recall / hit rate, J when judged, and any ``eval.metrics``), then what
    each method spent per ingested turn and per question. No paper numbers (any slice)."""
    metrics_list = detail_metrics(summaries)
    columns = ["Method", "Category", "n", *[metric_header(m) for m in metrics_list]]
    budgets = sorted({int(b) for s in summaries for b in (s.run.metrics.get("recall_at_budget") or {})})
    columns += [f"Recall @{b} tok %" for b in budgets]
    columns += [f"Recall @{k} notes %" for k in RECALL_KS]
    columns += ["calls/turn", "tokens/turn", "calls/question", "tokens/question", "parse fallbacks", "wall s"]
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    for s in summaries:
        m = s.run.metrics
        cats = dataset_of(s.run.config.get("dataset") or {}).categories
        headline = cats.headline_ids
        by_category = m.get("by_category", {})
        blocks = [
            (f"{c} {by_category[c].get('name') or category_name(int(c))}", by_category[c])
            for c in sorted(by_category, key=int)
        ]
        blocks.append(("overall", m.get("overall", {})))
        if m.get("overall_no_adv") and headline != cats.ids:  # one overall when the headline is every category
            blocks.append((f"overall {cats.span(headline)}", m["overall_no_adv"]))
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
        at_k = m.get("recall_at_k") or k_recall(
            s.run.items, categories=headline
        )  # runs made before metrics.json carried it
        k_vals = {
            f"recall_at_{k}_notes": None
            if (at_k.get(str(k)) or {}).get("recall") is None
            else 100.0 * float(at_k[str(k)]["recall"])
            for k in RECALL_KS
        }
        for i, (cat, block) in enumerate(blocks):
            vals = {
                m.key: None if block.get(m.key) is None else (100.0 if m.percent else 1.0) * float(block[m.key])
                for m in metrics_list
            }
            last = cat == "overall"  # budgets and costs go on the overall row
            rows.append(
                [_detail_method_cell(s) if i == 0 else "", cat, str(block.get("n", 0))]
                + [fmt(vals[m.key]) for m in metrics_list]
                + ([fmt(v) for v in budget_vals.values()] if last else [""] * len(budgets))
                + ([fmt(v) for v in k_vals.values()] if last else [""] * len(RECALL_KS))
                + (cost_cells if last else [""] * len(cost_cells))
            )
            extra = {**budget_vals, **k_vals, **costs} if last else {}
            records.append({**base_record(s), "category": cat, "n": block.get("n"), **vals, **extra})
    capped = any(evidence_token_cap((s.run.metrics.get("run") or {}).get("evidence") or {}) for s in summaries)
    settings = sorted({(s.run.backbone, s.run.dataset, s.run.protocol) for s in summaries})
    lead = "; ".join(f"backbone {b}, dataset {d}, protocol {p}" for b, d, p in settings)
    cuts = headline_words(summaries)
    notes = [
        "Recall and hit rate: items with gold evidence only. Recall @N tok: the leading retrieved notes that fit"
        f" N context tokens, {cuts} (metrics.json recall_at_budget)"
        + ("; '–' above a run's token cap (eval.token_cap)" if capped else "")
        + ". Recall @k notes: the first k retrieved"
        f" notes only, {cuts} (recall_at_k); when a memory holds about K_final notes or fewer, recall at"
        " K_final is 100 % by construction and only these say how well notes are ranked. calls/turn and tokens/turn: memory"
        " build per ingested turn; calls/question: retrieval + answer (+ judge) + memory updates made while"
        " answering (FluxMem's consolidation) per question; cached calls count.",
    ]
    return Table(title or f"Methods side by side ({lead})", columns, rows, notes, records, text_columns=2)

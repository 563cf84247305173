"""Per-category and weighted aggregation of per-item scores into the ``metrics.json`` body, over the run's
metrics (:mod:`memcore.metrics`; the protocol's, plus ``eval.metrics``).

An item is a line of the run's item log, read through its typed accessors
(:class:`~memcore.itemlog.LoggedItem`): its ``category`` (one of the run's dataset's category ids), ``scores``
(``{"f1", "bleu1"}`` and optionally ``"judge"`` or a run's extra metrics; empty for retrieval-only runs), and
``recall`` / ``hit`` (``None`` when the item has no gold evidence). Each metric's aggregate is the mean of the items that carry
a value unless the metric declares its own. All shipped outputs are fractions in [0, 1] (``None`` when nothing was
measured). "Weighted" overall = the mean over items, i.e. categories weighted by item count, as A-MEM and the paper
report it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memcore.config_aliases import evidence_token_cap
from memcore.datasets.registry import DATASETS, DEFAULT_DATASET_KIND, get_dataset
from memcore.datasets.spec import DatasetCategories
from memcore.eval.disclosure import disclosure_line, evidence_line
from memcore.eval.protocols import protocol_notes, recorded_protocol, run_metrics_of
from memcore.itemlog import LoggedItem
from memcore.methods import method_run_summary
from memcore.metrics import Metric, mean
from memcore.metrics.scorers.evidence import evidence_scores, recall_at_budget


def declared_categories(categories: DatasetCategories | None = None) -> DatasetCategories:
    """``categories`` (the run's dataset's), or the default dataset's when a caller reading runs of it passes none."""
    return categories if categories is not None else get_dataset(DEFAULT_DATASET_KIND).categories


def category_name(category: int, categories: DatasetCategories | None = None) -> str:
    """The title of a category id (``"multi-hop"``, ``"temporal"``, …) among ``categories`` (see
    :func:`declared_categories`)."""
    return declared_categories(categories).get(int(category)).title


def headline_categories(categories: DatasetCategories | None = None) -> tuple[int, ...]:
    """The category ids the headline overall (``overall_no_adv``) and the recall cuts cover."""
    return declared_categories(categories).headline_ids


def _mean(values: Any) -> float | None:
    return mean([float(v) for v in values if v is not None])


def measured(items: Sequence[LoggedItem], metrics: Sequence[Metric]) -> tuple[Metric, ...]:
    """``metrics`` without the LLM-scored ones no item carries (the judge of a run that was not judged)."""
    return tuple(m for m in metrics if not m.needs_llm or any(m.value(it) is not None for it in items))


def summarize(items: Sequence[LoggedItem], metrics: Sequence[Metric] | None = None) -> dict[str, Any]:
    """One ``metrics.json`` block over ``items``: ``n``, each metric's aggregate that needs no LLM (``f1``,
    ``bleu1``, ``recall``, ``hit_rate``, ...), ``n_with_evidence``, then the LLM-scored ones (``judge``, ...).
    ``metrics`` default: the standard ones (:func:`run_metrics_of` without a protocol)."""
    metrics = run_metrics_of(None) if metrics is None else metrics
    out: dict[str, Any] = {"n": len(items)}
    for metric in metrics:
        if not metric.needs_llm:
            out.update(metric.summary(items))
    out["n_with_evidence"] = sum(1 for it in items if it.recall is not None)
    for metric in metrics:
        if metric.needs_llm:
            out.update(metric.summary(items))
    return out


def metrics_of_run(metrics_json: Mapping[str, Any]) -> tuple[Metric, ...]:
    """The metrics a stored run scored: its recorded protocol's and the extra ones it names (``run.metrics``)."""
    run = metrics_json.get("run") or {}
    return run_metrics_of(recorded_protocol(str(run.get("protocol", ""))), run.get("metrics") or ())


def aggregate(
    items: Sequence[LoggedItem],
    metrics: Sequence[Metric] | None = None,
    categories: DatasetCategories | None = None,
) -> dict[str, Any]:
    """The ``metrics.json`` body over the run's ``metrics`` (default: the standard ones) and its dataset's
    ``categories`` (:func:`declared_categories`): ``by_category`` (keys the category ids, present categories only,
    each with its title as ``name``), ``overall`` (every item), ``overall_no_adv`` (the headline categories: LoCoMo's
    1-4), ``n_items``, ``n_without_evidence``. An LLM-scored metric appears in every block when any item carries
    it."""
    declared = declared_categories(categories)
    for it in items:
        if it.category not in declared:
            raise ValueError(f"item has category {it.category!r}; the dataset's categories are {declared.describe()}.")
    shown = measured(items, run_metrics_of(None) if metrics is None else metrics)
    by_category: dict[str, Any] = {}
    for cat in declared:
        group = [it for it in items if it.category == cat.id]
        if group:
            by_category[str(cat.id)] = {"name": cat.title, **summarize(group, shown)}
    headline = set(declared.headline_ids)
    return {
        "by_category": by_category,
        "overall": summarize(items, shown),
        "overall_no_adv": summarize([it for it in items if it.category in headline], shown),
        "n_items": len(items),
        "n_without_evidence": sum(1 for it in items if it.recall is None),
    }


def _evidence_items(items: Sequence[LoggedItem], categories: Sequence[int] | None) -> list[LoggedItem]:
    """The items of ``categories`` (None: the default dataset's headline categories) with gold evidence: the ones
    the recall cuts below are averaged over."""
    wanted = set(headline_categories() if categories is None else categories)
    return [it for it in items if it.category in wanted and it.evidence]


def _scored_cut(scored: Sequence[LoggedItem], score: Callable[[LoggedItem], dict[str, Any]]) -> list[dict[str, Any]]:
    """``score(item)`` for every item, keeping those with a recall (``None``: no gold evidence)."""
    return [res for res in (score(it) for it in scored) if res["recall"] is not None]


def budget_recall(
    items: Sequence[LoggedItem],
    budgets: Sequence[int],
    categories: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Evidence recall and hit rate at equal context-token budgets: for each budget, each item keeps the
    leading retrieved notes that fit (``notes[i]["tokens"]``, ``notes[i]["dia_ids"]``) and is scored on
    them. Items of ``categories`` with gold evidence only. Returns ``{"<budget>": {"recall", "hit_rate",
    "mean_tokens_used", "n"}}``; a method with longer notes fits fewer of them in the same budget."""

    def notes(it: LoggedItem) -> list[tuple[list[str], int]]:
        return [(n.get("dia_ids") or [], int(n.get("tokens") or 0)) for n in it.notes]

    scored = _evidence_items(items, categories)
    out: dict[str, Any] = {}
    for budget in budgets:
        results = _scored_cut(scored, lambda it, b=int(budget): recall_at_budget(it.evidence, notes(it), b))
        out[str(int(budget))] = {
            "recall": _mean(r["recall"] for r in results),
            "hit_rate": _mean(r["hit"] for r in results),
            "mean_tokens_used": _mean(r["tokens_used"] for r in results),
            "n": len(results),
        }
    return out


#: Retrieval depths (notes) at which ``metrics.json`` reports evidence recall beside K_final: on a slice whose
#: memory holds about K_final notes or fewer (an LLM gate that merges heavily, a short conversation), recall at
#: K_final is 100 % by construction and only a shallower cut says how well the notes are ranked.
RECALL_KS: tuple[int, ...] = (5, 10)


def k_recall(
    items: Sequence[LoggedItem],
    ks: Sequence[int] = RECALL_KS,
    categories: Sequence[int] | None = None,
) -> dict[str, Any]:
    """Evidence recall and hit rate using only each item's first ``k`` retrieved notes (``notes[i]["dia_ids"]``
    in retrieval order), for items of ``categories`` with gold evidence. Returns ``{"<k>": {"recall",
    "hit_rate", "mean_notes_retrieved", "n"}}``; ``mean_notes_retrieved`` is over all of the item's notes, so a
    value at or below ``k`` says the cut kept everything."""

    def first(it: LoggedItem, k: int) -> list[str]:
        return [d for n in it.notes[:k] for d in (n.get("dia_ids") or [])]

    scored = _evidence_items(items, categories)
    out: dict[str, Any] = {}
    for k in ks:
        results = _scored_cut(scored, lambda it, k=int(k): evidence_scores(it.evidence, first(it, k)))
        out[str(int(k))] = {
            "recall": _mean(r["recall"] for r in results),
            "hit_rate": _mean(r["hit"] for r in results),
            "mean_notes_retrieved": _mean(float(len(it.notes)) for it in scored),
            "n": len(results),
        }
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.2f}"


def method_table_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The lines the run's method adds to its table from its own summary (``MethodSpec.run_summary``)."""
    hook = method_run_summary(str((metrics.get("run") or {}).get("method") or ""))
    return [] if hook is None else list(hook.table_lines(metrics))


def run_dataset_kind(metrics: Mapping[str, Any]) -> str:
    """The dataset kind a run's ``metrics.json`` names (``run.dataset_kind``; LoCoMo's runs carry none)."""
    return str((metrics.get("run") or {}).get("dataset_kind") or DEFAULT_DATASET_KIND)


def dataset_notes(kind: str) -> tuple[str, ...]:
    """The table notes of dataset ``kind`` (none for a kind no longer registered)."""
    return get_dataset(kind).table_notes if kind in DATASETS else ()


def metric_header(metric: Metric) -> str:
    """A metric's column header: its label, with ``%`` when its values are fractions shown as percentages."""
    return f"{metric.label} %" if metric.percent else metric.label


def metric_cell(metric: Metric, value: float | None) -> str:
    """One aggregate as a table cell: a percentage for a fraction metric, else the value itself."""
    if not metric.percent:
        return "–" if value is None else f"{float(value):.2f}"
    return _pct(value)


def _judge_cell(block: Mapping[str, Any]) -> str:
    value = block.get("judge")
    if value is None:
        return "–"
    if block.get("judge_n_runs", 1) > 1:
        return f"{100.0 * value:.2f} ± {100.0 * float(block.get('judge_std') or 0.0):.2f}"
    return f"{100.0 * value:.2f}"


def slice_line(name: str, info: Mapping[str, Any]) -> str:
    """``Slice: locomo-llm = conv-26 (first 4 sessions), 18 QA items; only the 18 named in dataset.item_ids.``"""
    convs = list(info.get("conversations") or [])
    shown = ", ".join(convs[:4]) + (f" and {len(convs) - 4} more" if len(convs) > 4 else "")
    n_sessions = info.get("max_sessions")
    cut = "" if not n_sessions else (" (session 1)" if n_sessions == 1 else f" (first {n_sessions} sessions)")
    text = f"Slice: {name} = {shown}{cut}, {int(info.get('n_items') or 0):,} QA items"
    if info.get("categories"):
        text += f"; only categories {', '.join(str(c) for c in info['categories'])}"
    if info.get("item_ids"):
        text += f"; only the {info['item_ids']} named in dataset.item_ids"
    return text + "."


def budgets_within_cap(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """``recall_at_budget`` without the budgets above the run's context-token cap (``eval.token_cap``): no
    question had more than the cap, so recall there only repeats the cap's."""
    budgets = metrics.get("recall_at_budget") or {}
    cap = evidence_token_cap((metrics.get("run") or {}).get("evidence") or {})
    return {b: v for b, v in budgets.items() if cap is None or int(b) <= int(cap)}


def format_table(metrics: Mapping[str, Any], title: str) -> str:
    """Markdown table of an :func:`aggregate` result: one row per category ("1 multi-hop (n=282)"), then the
    overall of every category and the headline overall (the dataset's labels); one column per metric the run
    scored (its protocol's and
    ``eval.metrics``, :func:`metrics_of_run`), in percent. With a judge: J (mean ± std over
    runs when repeated, majority-label J); with ``gold_ceiling`` the perfect system's J and F1 against the
    original gold. Notes: the dataset's and the protocol's, answer and judge disclosure."""
    rows: list[tuple[str, str, Mapping[str, Any]]] = [
        (f"{key} {block.get('name') or key} (n={block['n']})", key, block)
        for key, block in sorted(metrics["by_category"].items(), key=lambda kv: int(kv[0]))
    ]
    kind = run_dataset_kind(metrics)
    cats = get_dataset(kind).categories
    rows.append((f"{cats.overall_label} (n={metrics['overall']['n']})", "overall", metrics["overall"]))
    if cats.headline_ids != cats.ids:  # a dataset whose headline is every category has one overall
        rows.append(
            (f"{cats.headline_label} (n={metrics['overall_no_adv']['n']})", "overall_no_adv", metrics["overall_no_adv"])
        )
    columns = [(metric_header(m), m) for m in metrics_of_run(metrics) if not m.needs_llm and m.stored != "derived"]
    header_cells = [name for name, _ in columns]
    has_judge = any("judge" in block for _, _, block in rows)
    repeated = any(int(block.get("judge_n_runs") or 1) > 1 for _, _, block in rows)
    if has_judge:
        header_cells.append("J % (mean ± std over runs)" if repeated else "J %")
        if repeated:
            header_cells.append("J majority %")
    ceiling = metrics.get("gold_ceiling") or {}
    if ceiling:
        header_cells += ["Ceiling J %", "Ceiling F1 %"]
    header = "| Category | " + " | ".join(header_cells) + " |"
    rule = "|---|" + "---:|" * len(header_cells)
    lines = [f"### {title}", "", header, rule]
    for label, key, block in rows:
        cells = [metric_cell(m, block.get(m.key)) for _, m in columns]
        if has_judge:
            cells.append(_judge_cell(block))
            if repeated:
                cells.append(_pct(block.get("judge_majority")))
        if ceiling:
            cblock = (ceiling.get("by_category") or {}).get(key) if key[0].isdigit() else ceiling.get(key)
            cells += [_pct((cblock or {}).get("judge")), _pct((cblock or {}).get("f1"))]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    budgets = budgets_within_cap(metrics)
    if budgets:
        parts = [f"{int(b):,} tok {_pct(v['recall'])}" for b, v in budgets.items()]
        span = cats.span(cats.headline_ids)
        lines += ["", f"Recall % at equal context-token budgets (categories {span}): " + ", ".join(parts) + "."]
    n_missing = metrics.get("n_without_evidence")
    if n_missing:
        lines += ["", f"Recall and hit rate exclude {n_missing} item(s) without gold evidence."]
    run = metrics.get("run") or {}
    for note in (*dataset_notes(kind), *protocol_notes(run.get("protocol", "amem"), tuple(metrics["by_category"]))):
        lines += ["", note]
    if run.get("answer"):
        lines += ["", disclosure_line(run["answer"], cats)]
    if run.get("slice"):
        lines += ["", slice_line(run.get("dataset", ""), run["slice"])]
    for line in method_table_lines(metrics):
        lines += ["", line]
    if run.get("evidence"):
        lines += ["", evidence_line(run["evidence"])]
    if run.get("memory_backbone"):
        lines += [
            "",
            f"Memory: built by {run['memory_backbone']} (memory_backbone); backbone {run.get('backbone')} retrieved "
            "and answered over it.",
        ]
    if has_judge and run.get("judge"):
        lines += ["", judge_line(run["judge"], metrics["overall"])]
    if ceiling:
        n_wrong = int((ceiling.get("overall_no_adv") or {}).get("n_gold_errors", 0))
        lines += [
            "",
            "Ceiling: the best a perfect system reaches against the original gold (it answers the audited gold; "
            f"{n_wrong} gold answer{'' if n_wrong == 1 else 's'} in categories {cats.span(cats.headline_ids)} "
            f"{'is' if n_wrong == 1 else 'are'} wrong).",
        ]
    return "\n".join(lines) + "\n"


def judge_line(info: Mapping[str, Any], overall: Mapping[str, Any]) -> str:
    """One line naming the judge preset, prompt source, model and runs (and how often runs agreed)."""
    text = (
        f"J: judge preset {info.get('judge_preset', 'judge-v1')} ({info.get('prompt_source', '')}), "
        f"model {info.get('model')} (backbone preset {info.get('preset')}), temperature {info.get('temperature', 0.0)}"
        f", categories {','.join(str(c) for c in info.get('categories', (1, 2, 3, 4, 5)))}, n judged {overall.get('n_judged')}"
    )
    n_runs = int(overall.get("judge_n_runs") or info.get("runs") or 1)
    if n_runs > 1:
        agree = overall.get("judge_agreement")
        text += f", {n_runs} runs (each its own cache entry)"
        if agree is not None:
            text += f"; all runs agreed on {100.0 * agree:.1f}% of items"
            if agree == 1.0:
                text += (
                    " (expected from a deterministic judge server at temperature 0, e.g. llama.cpp: there the"
                    " std measures nothing; an API judge such as gpt-4o-mini varies between runs)"
                )
    return text + "."

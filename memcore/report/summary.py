"""What the report tables and plots need from one run, computed once (:class:`RunSummary`): each metric's value
in percent (per category and overall, from ``metrics.json``), its bootstrap interval over conversations, the
audited-gold values, and the run's cost per conversation, per turn and per question."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memcore.datasets.registry import dataset_of
from memcore.eval.aggregate import metrics_of_run
from memcore.eval.bootstrap import bootstrap_ci
from memcore.itemlog import LoggedItem
from memcore.metrics import Metric
from memcore.report.collect import RunData, qa_stage_usage, qa_time_ingest
from memcore.report.reference import PAPER_DATASET, PAPER_PROTOCOL
from memcore.report.tables import CATEGORIES

CATEGORY_KEYS: tuple[str, ...] = tuple(f"cat{c}" for c in CATEGORIES)


NO_ADV_SUFFIX = "_no_adv"


COST_KEYS: tuple[str, ...] = ("llm_calls_per_conv", "tokens_per_conv", "wall_s_per_conv")


COST_LABELS: dict[str, str] = {
    "llm_calls_per_conv": "LLM calls/conv",
    "tokens_per_conv": "tokens/conv",
    "wall_s_per_conv": "wall s/conv",
}


#: The metrics whose per-category values (``cat<c>``) and categories 1-4 value (``<key>_no_adv``) the paper's
#: layouts show; every other metric gets its overall value only.
PER_CATEGORY_METRIC = "f1"
NO_ADV_METRICS: tuple[str, ...] = ("f1", "judge")


def metric_values(block: Mapping[str, Any], metrics: Sequence[Metric]) -> dict[str, float | None]:
    """Percentages (the value itself for a metric that is not a fraction) of one ``aggregate`` result
    (``metrics.json`` or its ``audited`` block): per category F1, each of the run's ``metrics`` overall, and
    F1 and J over categories 1-4."""
    by_cat = block.get("by_category", {})
    overall = block.get("overall", {})
    out: dict[str, float | None] = {}
    for c in CATEGORIES:
        out[f"cat{c}"] = _shown(by_cat.get(str(c), {}).get(PER_CATEGORY_METRIC))
    for metric in metrics:
        if metric.stored != "derived":
            out[metric.key] = _shown(overall.get(metric.key), metric.percent)
    no_adv = block.get("overall_no_adv", {})
    for key in NO_ADV_METRICS:
        out[key + NO_ADV_SUFFIX] = _shown(no_adv.get(key))
    return out


def _shown(value: Any, percent: bool = True) -> float | None:
    if value is None:
        return None
    return 100.0 * float(value) if percent else float(value)


def category_counts(block: Mapping[str, Any]) -> dict[int, int]:
    return {int(c): int(b.get("n", 0)) for c, b in block.get("by_category", {}).items()}


def metric_cis(
    items: Sequence[LoggedItem],
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
    scored = metrics_of_run(run.metrics)
    values = metric_values(run.metrics, scored)
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
        a_values = metric_values(run.metrics["audited"], scored)
        summary.audited = a_values
        summary.audited_ci = metric_cis(run.audited_items(), a_values, n_boot=n_boot, seed=seed, alpha=alpha)
        summary.n_audited_changed = sum(1 for r in items if r.audited)
    return summary


def embeddings_state(run: RunData) -> str | None:
    """``"computed"`` when the run's last invocation embedded texts with the model, ``"cached"`` when the caches
    served every text, None when the run did not record it (made before the count existed) or embedded nothing."""
    counts = (run.cost.get("resources") or {}).get("embeddings") or {}
    if counts.get("computed"):
        return "computed"
    return "cached" if counts.get("from_cache") else None


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


def headline_words(summaries: Sequence[RunSummary]) -> str:
    """``"categories 1-4"``: the headline categories of the runs' datasets (what the recall cuts and the headline
    overall cover)."""
    spans = sorted(
        {
            cats.span(cats.headline_ids)
            for s in summaries
            for cats in [dataset_of(s.run.config.get("dataset") or {}).categories]
        }
    )
    return f"categories {spans[0]}" if len(spans) == 1 else "each run's dataset's headline categories"

"""MemCoRe's own summary of a run: what iterative evidence refinement (IER) changed. The method's spec names it
(``MethodSpec.run_summary``); the harness stores what :meth:`IERSummary.summarize` returns in ``metrics.json``
(``ier_refinement``, and ``ier_refinement_same_cap`` under a context-token cap) and prints
:meth:`IERSummary.table_lines` under the run's table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcore.config_aliases import evidence_token_cap
from memcore.datasets.registry import DEFAULT_DATASET_KIND, get_dataset
from memcore.itemlog import LoggedItem, as_logged
from memcore.metrics import mean
from memcore.metrics.scorers.evidence import evidence_scores
from memcore.packing.budget import BUDGET_KEY


def _mean(values: Any) -> float | None:
    return mean([float(v) for v in values if v is not None])


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.2f}"


def _evidence_items(items: Sequence[LoggedItem], categories: Sequence[int] | None) -> list[LoggedItem]:
    """The items of ``categories`` (None: the default dataset's headline categories) with gold evidence."""
    wanted = set(get_dataset(DEFAULT_DATASET_KIND).categories.headline_ids if categories is None else categories)
    return [it for it in items if it.category in wanted and it.evidence]


def ier_refinement(
    items: Sequence[Mapping[str, Any]], categories: Sequence[int] | None = None, *, same_cap: bool = False
) -> dict[str, Any] | None:
    """What iterative refinement changed, for items of ``categories`` with gold evidence: how many were refined
    (more than one round) and, over those, recall and hit of round 1's pool (``extra.round1_dia_ids``) against
    the final one. None when refinement was off for every item (``extra.ier_stop`` "off") or the method has none
    (neither ``extra.rounds_log`` nor ``extra.ier_stop``; a slim archive keeps only the second).

    Round 1's pool is the top K before any context-token cap. ``same_cap`` (for a run under
    ``eval.token_cap``) compares it with the final pool before the cap too (``extra.final_pool_dia_ids``),
    not with the capped context; a refined item that lacks it (a run made before it was recorded) is left out
    and counted in ``n_unpaired``. Without ``same_cap`` the final pool is what the item retrieved."""
    logged = [as_logged(it) for it in items]
    extras = [it.extra for it in logged]
    if not any(("rounds_log" in x or "ier_stop" in x) and x.get("ier_stop") != "off" for x in extras):
        return None
    scored = _evidence_items(logged, categories)
    refined = [it for it in scored if "round1_dia_ids" in it.extra]

    def final_ids(it: LoggedItem) -> list[str] | None:
        extra = it.extra
        if not same_cap:
            return it.retrieved_dia_ids
        if "final_pool_dia_ids" in extra:
            return list(extra["final_pool_dia_ids"])
        return None if BUDGET_KEY in extra else it.retrieved_dia_ids

    paired = [(it, ids) for it in refined if (ids := final_ids(it)) is not None]
    before = [evidence_scores(it.evidence, it.extra["round1_dia_ids"]) for it, _ in paired]
    after = [evidence_scores(it.evidence, ids) for it, ids in paired]
    out = {
        "n": len(scored),
        "n_refined": len(refined),
        "recall_round1": _mean(r["recall"] for r in before),
        "recall_final": _mean(r["recall"] for r in after),
        "hit_round1": _mean(r["hit"] for r in before),
        "hit_final": _mean(r["hit"] for r in after),
    }
    if same_cap:
        out["n_unpaired"] = len(refined) - len(paired)
    return out


def ier_shown(metrics: Mapping[str, Any]) -> tuple[dict[str, Any] | None, int | None]:
    """The IER comparison a table shows for a run, and the run's context-token cap (None: uncapped). Under a cap
    it is ``ier_refinement_same_cap`` (both rounds before the cap; None when the run did not record it), never
    the round-1 pool against the capped context."""
    cap = evidence_token_cap((metrics.get("run") or {}).get("evidence") or {})
    plain = metrics.get("ier_refinement")
    if cap is None:
        return plain, None
    if metrics.get("ier_refinement_same_cap") is None and plain is not None and not plain.get("n_refined"):
        return plain, int(cap)  # nothing was refined: there is no comparison to get wrong
    return metrics.get("ier_refinement_same_cap"), int(cap)


def headline_span(metrics: Mapping[str, Any]) -> str:
    """``"1-4"``: the headline categories of the dataset a run's ``metrics.json`` names (LoCoMo's when it names
    none), which :meth:`IERSummary.summarize` is given."""
    kind = str((metrics.get("run") or {}).get("dataset_kind") or DEFAULT_DATASET_KIND)
    cats = get_dataset(kind).categories
    return cats.span(cats.headline_ids)


def ier_line(info: Mapping[str, Any] | None, cap: int | None = None, categories: str | None = None) -> str:
    """``IER: refined 5 of 35 questions (categories 1-4 with gold evidence); on them recall 40.00 → 60.00 …``;
    under a ``cap`` the comparison is made before the cap (:func:`ier_refinement` with ``same_cap``), and said so.
    ``categories``: the headline categories it covers (:func:`headline_span`; default the default dataset's)."""
    if categories is None:
        categories = headline_span({})
    if info is None:
        return (
            f"IER: under the {int(cap or 0):,}-token cap, round 1's pool (before the cap) and the final context (after "
            "it) are not comparable, and this run did not record its final pool before the cap: no change shown."
        )
    text = f"IER: refined {info['n_refined']} of {info['n']} questions (categories {categories} with gold evidence)"
    if not info["n_refined"]:
        return text + "; every question stopped after round 1."
    unpaired = int(info.get("n_unpaired") or 0)
    if unpaired == info["n_refined"]:
        return ier_line(None, cap, categories)
    where = "" if cap is None else f" (both rounds' top K before the {int(cap):,}-token cap)"
    tail = "" if not unpaired else f"; {unpaired} of them lack the final pool before the cap and are left out"
    return (
        f"{text}; on them recall {_pct(info['recall_round1'])} at round 1 → {_pct(info['recall_final'])} after "
        f"refinement{where}, hit rate {_pct(info['hit_round1'])} → {_pct(info['hit_final'])}{tail}."
    )


class IERSummary:
    """The :class:`~memcore.interfaces.RunSummary` of MemCoRe's methods."""

    def summarize(self, items: Sequence[Mapping[str, Any]], categories: Sequence[int], capped: bool) -> dict[str, Any]:
        refinement = ier_refinement(items, categories)
        if refinement is None:
            return {}
        out = {"ier_refinement": refinement}
        if capped:  # round 1 against the final pool, both before the cap
            out["ier_refinement_same_cap"] = ier_refinement(items, categories, same_cap=True)
        return out

    def table_lines(self, metrics: Mapping[str, Any]) -> list[str]:
        return [ier_line(*ier_shown(metrics), headline_span(metrics))] if metrics.get("ier_refinement") else []


IER_SUMMARY = IERSummary()

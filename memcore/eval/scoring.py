"""Scoring one item under a run's protocol object and metrics: the answer against the protocol's gold, the
retrieved evidence ids against the gold evidence ids. The LLM judge scores its metric in its own stage
(:mod:`memcore.eval.judge`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memcore.eval.protocols import EvalProtocol
from memcore.metrics import Metric


def score_answer(
    prediction: str | None,
    gold: str | None,
    category: int,
    protocol: EvalProtocol,
    extra: Sequence[Metric] = (),
) -> dict[str, float]:
    """The answer scores of one item: the protocol's answer metrics (``{"f1": ..., "bleu1": ...}``), then the
    ``extra`` answer metrics that need no LLM (``eval.metrics``), fractions in [0, 1] for the shipped ones.

    ``gold`` is the protocol's gold string (``protocol.gold(item)``); non-strings (LoCoMo has int answers) are
    converted with ``str`` as both original evaluations do. ``None`` counts as empty."""
    cat = int(category)
    pred = "" if prediction is None else str(prediction)
    ref = "" if gold is None else str(gold)
    scores = protocol.score(pred, ref, cat)
    for metric in extra:
        if metric.target == "answer" and not metric.needs_llm and metric.name not in scores:
            scores[metric.name] = protocol.scorer(metric)(pred, ref, cat)
    return scores


def score_evidence(
    gold_ids: Iterable[str], retrieved_ids: Iterable[str], metrics: Sequence[Metric]
) -> dict[str, float | None]:
    """The values of the stored evidence metrics among ``metrics`` for one item (``None`` where the item cannot
    be scored, e.g. without gold evidence), in order; derived metrics are computed when read, not here."""
    gold, retrieved = list(gold_ids), list(retrieved_ids)
    out: dict[str, float | None] = {}
    for metric in metrics:
        if metric.target == "evidence" and metric.stored != "derived" and metric.score is not None:
            out[metric.name] = metric.score(gold, retrieved)
    return out

"""Evidence hit: 1 when any gold evidence turn was retrieved, else 0; ``None`` (left out of the mean) for an
item without gold evidence. Kept as the record's top-level ``hit``; its mean is ``hit_rate`` in ``metrics.json``."""

from collections.abc import Sequence

from memcore.metrics import Metric
from memcore.metrics.scorers.evidence import evidence_scores


def hit(gold_ids: Sequence[str], retrieved_ids: Sequence[str]) -> float | None:
    return evidence_scores(gold_ids, retrieved_ids)["hit"]


METRIC = Metric(
    name="hit",
    label="Hit",
    target="evidence",
    score=hit,
    stored="item",
    key="hit_rate",
    description="whether any gold evidence turn was retrieved",
)

"""Evidence recall: the share of the gold evidence turns among the retrieved ones, |E∩R|/|E| over id sets;
``None`` (left out of the mean) for an item without gold evidence. Kept as the record's top-level ``recall``."""

from collections.abc import Sequence

from memcore.metrics import Metric
from memcore.metrics.scorers.evidence import evidence_scores


def recall(gold_ids: Sequence[str], retrieved_ids: Sequence[str]) -> float | None:
    return evidence_scores(gold_ids, retrieved_ids)["recall"]


METRIC = Metric(
    name="recall",
    label="Recall",
    target="evidence",
    score=recall,
    stored="item",
    description="share of the gold evidence turns retrieved",
)

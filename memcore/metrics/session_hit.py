"""Session-level hit (:func:`memcore.metrics.scorers.evidence.session_hit`): a gold turn's session among the first five
distinct sessions of the retrieved turns. Not stored in the record: computed from its ``evidence`` and
``retrieved_dia_ids`` when read (the equal-token tables report it)."""

from collections.abc import Sequence

from memcore.metrics import Metric
from memcore.metrics.scorers.evidence import session_hit as session_hit_of


def session_hit(gold_ids: Sequence[str], retrieved_ids: Sequence[str]) -> float | None:
    return session_hit_of(gold_ids, retrieved_ids)


METRIC = Metric(
    name="session_hit",
    label="Session hit",
    target="evidence",
    score=session_hit,
    stored="derived",
    description="a gold turn's session among the first 5 distinct retrieved sessions",
)

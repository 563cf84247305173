"""F1 of the answer's tokens against the gold. How tokens are formed and matched is the protocol's: A-MEM's
token-set F1 (:func:`memcore.metrics.scorers.answer.amem_f1`) or LoCoMo's per-category F1 over stemmed tokens
(:func:`memcore.metrics.scorers.answer.locomo_f1`); each protocol maps ``f1`` to its scorer."""

from memcore.metrics import Metric

METRIC = Metric(
    name="f1",
    label="F1",
    target="answer",
    description="token F1 of the answer against the gold (the protocol's tokens and matching)",
)

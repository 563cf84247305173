"""BLEU-1 of the answer against the gold: A-MEM's ``calculate_bleu_scores`` (nltk ``sentence_bleu``, unigram
weights, smoothing method 1). Both protocols score it the same way: the official LoCoMo code has no BLEU-1."""

from memcore.metrics import Metric
from memcore.metrics.scorers.answer import amem_bleu1


def bleu1(prediction: str, gold: str, category: int) -> float:
    """BLEU-1 of ``prediction`` against ``gold`` (the category plays no part)."""
    return amem_bleu1(prediction, gold)


METRIC = Metric(name="bleu1", label="BLEU-1", target="answer", score=bleu1, description="unigram BLEU with smoothing")

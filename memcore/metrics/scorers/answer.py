"""Answer scoring functions every protocol may use. Pure functions; which one a protocol applies is the protocol
object's business (:mod:`memcore.datasets.protocol`), what a metric is the registry's (:mod:`memcore.metrics`).

- :func:`amem_bleu1` = ``bleu1`` of A-MEM's ``calculate_bleu_scores`` (``utils.py`` of WujiangXu/AgenticMemory):
  nltk ``sentence_bleu`` with weights (1, 0, 0, 0) and ``SmoothingFunction().method1`` on ``nltk.word_tokenize``
  of the lower-cased, stripped strings (see :mod:`memcore.metrics.scorers.tokenize`); 0 for empty strings. A-MEM catches
  every exception and scores 0; we catch only the arithmetic errors nltk can raise. The ``bleu1`` metric scores
  it under every protocol.

A dataset's own answer scorers live in its folder (LoCoMo's: :mod:`memcore.datasets.locomo.scoring`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

from memcore.metrics.scorers.tokenize import word_tokenize

if TYPE_CHECKING:
    from nltk.translate.bleu_score import SmoothingFunction


def load_nltk() -> None:
    """Import the parts of nltk the answer scorers use. nltk costs about a second to import, so it loads when first
    needed; two threads importing it for the first time at once can see a half-initialised ``nltk.corpus``, so a
    caller that scores answers in threads calls this once before starting them."""
    import nltk.stem
    import nltk.tokenize.punkt
    import nltk.translate.bleu_score  # noqa: F401


@lru_cache(maxsize=1)
def _smoothing() -> SmoothingFunction:
    from nltk.translate.bleu_score import SmoothingFunction  # nltk costs ~1 s to import: only when answers are scored

    return SmoothingFunction()


def amem_bleu1(prediction: str, gold: str) -> float:
    """BLEU-1 of A-MEM's ``calculate_bleu_scores`` (nltk ``sentence_bleu``, weights (1,0,0,0), method1)."""
    if not prediction or not gold:
        return 0.0
    hyp = word_tokenize(str(prediction).strip().lower())
    ref = word_tokenize(str(gold).strip().lower())
    from nltk.translate.bleu_score import sentence_bleu  # see _smoothing

    try:
        score = sentence_bleu([ref], hyp, weights=(1, 0, 0, 0), smoothing_function=_smoothing().method1)
    except (ZeroDivisionError, ValueError):
        return 0.0
    score = float(score)
    return score if math.isfinite(score) else 0.0

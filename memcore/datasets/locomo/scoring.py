"""LoCoMo's answer scoring functions, one set per protocol. Pure functions; which one a protocol applies is the
protocol object's business (:mod:`memcore.datasets.locomo.protocols`).

``protocol="amem"`` mirrors A-MEM's evaluation (``utils.py`` of WujiangXu/AgenticMemory, as
used by ``test_advanced.py``):
- :func:`amem_f1` = the ``f1`` of ``calculate_metrics``: token *sets* from ``simple_tokenize``
  (``str``, lower-case, replace ``. , ! ?`` with spaces, split on whitespace); 0 when either
  string is empty (checked before stripping, as there) or either token set is empty.
- BLEU-1 is :func:`memcore.metrics.scorers.answer.amem_bleu1`, the ``bleu1`` metric's scorer.
- Every category is scored the same way; category 5 is scored against the adversarial answer
  (the caller passes the ``amem`` protocol's ``gold(item)``).

``protocol="locomo"`` mirrors the official ``task_eval/evaluation.py`` of snap-research/locomo:
- :func:`locomo_normalize` = ``normalize_answer`` (drop commas, lower-case, drop ASCII
  punctuation, replace the words a/an/the/and by a space, collapse white space).
- :func:`locomo_f1_single` = ``f1_score`` (Porter-stemmed tokens, multiset overlap F1).
- :func:`locomo_f1_multi` = ``f1`` (prediction and gold split on commas; mean over gold parts of
  the best-matching prediction part) -- used for category 1.
- :func:`locomo_f1` = the per-category dispatch of ``eval_question_answering``: gold is
  ``str(answer)``; category 3 gold cut at the first ``;``; categories 2-4 use ``f1_score``;
  category 5 scores 1 iff the lower-cased prediction contains ``"no information available"`` or
  ``"not mentioned"``.
- BLEU-1 is not part of the official code; the ``bleu1`` metric scores the (uncut) gold under both
  protocols, so both protocols' tables carry the same BLEU-1.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from memcore.datasets.locomo.categories import Category

# The two refusal markers of the official category-5 rule (checked on the lower-cased answer).
LOCOMO_REFUSAL_MARKERS: tuple[str, ...] = ("no information available", "not mentioned")

_AMEM_SEPARATORS = str.maketrans({".": " ", ",": " ", "!": " ", "?": " "})
_ASCII_PUNCT = frozenset(string.punctuation)
_ARTICLES_RE = re.compile(r"\b(a|an|the|and)\b")

if TYPE_CHECKING:
    from nltk.stem import PorterStemmer


# ---------------------------------------------------------------------------------------------
# A-MEM protocol
# ---------------------------------------------------------------------------------------------
def amem_tokens(text: str) -> list[str]:
    """A-MEM's ``simple_tokenize``: lower-case, ``. , ! ?`` → space, split on white space."""
    return str(text).lower().translate(_AMEM_SEPARATORS).split()


def amem_f1(prediction: str, gold: str) -> float:
    """Token-set F1 of A-MEM's ``calculate_metrics``."""
    if not prediction or not gold:
        return 0.0
    pred = set(amem_tokens(str(prediction).strip()))
    ref = set(amem_tokens(str(gold).strip()))
    if not pred or not ref:
        return 0.0
    common = len(pred & ref)
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# Official LoCoMo protocol
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _stemmer() -> PorterStemmer:
    from nltk.stem import PorterStemmer  # nltk costs ~1 s to import: only when answers are scored

    return PorterStemmer()


def locomo_normalize(text: str) -> str:
    """The official ``normalize_answer``."""
    s = str(text).replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _ASCII_PUNCT)
    s = _ARTICLES_RE.sub(" ", s)
    return " ".join(s.split())


def locomo_tokens(text: str) -> list[str]:
    """Porter-stemmed tokens of the normalised text, as ``f1_score`` uses them."""
    stem = _stemmer().stem
    return [stem(w) for w in locomo_normalize(text).split()]


def locomo_f1_single(prediction: str, gold: str) -> float:
    """The official ``f1_score``: multiset F1 over stemmed, normalised tokens (0 without overlap)."""
    pred = locomo_tokens(prediction)
    ref = locomo_tokens(gold)
    num_same = sum((Counter(pred) & Counter(ref)).values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(pred)
    recall = num_same / len(ref)
    return 2 * precision * recall / (precision + recall)


def locomo_f1_multi(prediction: str, gold: str) -> float:
    """The official multi-answer ``f1``: mean over comma-separated gold parts of the best prediction part."""
    predictions = [p.strip() for p in str(prediction).split(",")]
    golds = [g.strip() for g in str(gold).split(",")]
    return sum(max(locomo_f1_single(p, g) for p in predictions) for g in golds) / len(golds)


def locomo_refusal(prediction: str) -> bool:
    """The official category-5 rule: the answer says it has no information."""
    low = str(prediction).lower()
    return any(marker in low for marker in LOCOMO_REFUSAL_MARKERS)


def locomo_f1(prediction: str, gold: str, category: int | Category) -> float:
    """Per-category F1 of the official ``eval_question_answering``."""
    cat = as_category(category)
    gold = str(gold)
    if cat is Category.ADVERSARIAL:
        return 1.0 if locomo_refusal(prediction) else 0.0
    if cat is Category.OPEN_DOMAIN:
        gold = gold.split(";")[0].strip()
    if cat is Category.MULTI_HOP:
        return locomo_f1_multi(prediction, gold)
    return locomo_f1_single(prediction, gold)


def as_category(category: int | Category) -> Category:
    """``category`` as a :class:`Category`; ValueError for anything but the ints 1-5."""
    try:
        return Category(int(category))
    except (ValueError, TypeError):
        raise ValueError(
            f"unknown LoCoMo category {category!r}; use an int 1-5 or a memcore.datasets.locomo.categories.Category."
        ) from None

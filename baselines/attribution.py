"""Turn attribution for memories written from several turns at once (Mem0's 2-message batches, updates).

The provenance rule every method follows: an answer's evidence is the turns whose content the retrieved text
carries. A method whose LLM writes one memory from a batch of turns, without saying which turn it used, is
attributed here by content-word overlap (lower-cased, Porter-stemmed words, stop words and the speakers' names
left out):

- :func:`source_turn`: the single turn of the batch the memory came from -- the turn sharing the most content
  words with it. No shared word, or a tie between turns, is *unattributed* (``None``): the caller counts it and
  credits no turn, rather than crediting every turn of the batch.
- :func:`kept_turns`: the turns an UPDATE's new text keeps -- every candidate turn (the memory's previous turns
  and the batch's) sharing at least :data:`MIN_SHARED` content words with the new text; when none does, the
  single best turn by :func:`source_turn`'s rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from bm25s.stopwords import STOPWORDS_EN
from nltk.stem.porter import PorterStemmer

#: Content words an UPDATE's new text must share with a turn for the turn to stay credited.
MIN_SHARED = 2

_WORD = re.compile(r"[a-z0-9]+")
_EXTRA_STOP = frozenset(
    [
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "him",
        "his",
        "she",
        "her",
        "they",
        "them",
        "their",
        "its",
        "was",
        "were",
        "been",
        "be",
        "have",
        "has",
        "had",
        "do",
        "did",
        "does",
        "so",
        "just",
        "really",
        "also",
        "very",
        "too",
        "much",
        "more",
        "most",
        "some",
        "any",
        "all",
        "can",
        "could",
        "would",
        "should",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "about",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "how",
        "why",
        "there",
        "here",
        "then",
        "than",
        "into",
        "from",
        "over",
        "out",
        "up",
        "down",
        "off",
        "again",
        "yes",
        "no",
        "not",
        "oh",
        "hey",
        "hi",
        "yeah",
        "wow",
        "thanks",
        "thank",
        "great",
        "good",
        "nice",
        "cool",
        "awesome",
    ]
)
_STOP = frozenset(STOPWORDS_EN) | _EXTRA_STOP


@lru_cache(maxsize=1)
def _stemmer() -> PorterStemmer:
    return PorterStemmer()


def content_words(text: str, exclude: Iterable[str] = ()) -> frozenset[str]:
    """Stemmed lower-case words of ``text`` minus stop words, one-letter words and the words of ``exclude``
    (e.g. the speakers' names, which every memory and every turn of a speaker carry)."""
    stem = _stemmer().stem
    drop = _STOP | {w for name in exclude for w in _WORD.findall(name.lower())}
    return frozenset(stem(w) for w in _WORD.findall(text.lower()) if len(w) > 1 and w not in drop)


def source_turn(text: str, turns: Sequence[tuple[str, str]], exclude: Iterable[str] = ()) -> str | None:
    """The dia_id of the one turn in ``turns`` (``(dia_id, text)``) sharing the most content words with
    ``text``; ``None`` when no turn shares a word or two turns share the most (unattributed)."""
    words = content_words(text, exclude)
    shared = [(len(words & content_words(t, exclude)), d) for d, t in turns]
    if not shared:
        return None
    best = max(n for n, _ in shared)
    winners = [d for n, d in shared if n == best]
    return winners[0] if best > 0 and len(winners) == 1 else None


def kept_turns(text: str, turns: Sequence[tuple[str, str]], exclude: Iterable[str] = ()) -> list[str]:
    """The dia_ids of ``turns`` whose content ``text`` keeps: each sharing at least :data:`MIN_SHARED` content
    words with it, in the given order; when none does, :func:`source_turn`'s single turn, or none."""
    words = content_words(text, exclude)
    kept = [d for d, t in turns if len(words & content_words(t, exclude)) >= MIN_SHARED]
    if kept:
        return list(dict.fromkeys(kept))
    one = source_turn(text, turns, exclude)
    return [] if one is None else [one]


__all__ = ["MIN_SHARED", "content_words", "kept_turns", "source_turn"]

"""A small incremental Okapi BM25 (Lucene idf) that scores every document.

FluxMem fuses BM25 with dense similarity per node, so it needs the full score vector (not a top-k
list) and it adds nodes while answering (reshaped units); a postings dict does both in a few lines.
"""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np
from bm25s.stopwords import STOPWORDS_EN

_WORD_RE = re.compile(r"[a-z0-9]+")
_STOP = frozenset(STOPWORDS_EN)


def tokenize(text: str) -> list[str]:
    """Lower-cased alphanumeric words minus English stop words (bm25s's list)."""
    return [w for w in _WORD_RE.findall(text.lower()) if w not in _STOP]


class BM25:
    """score(q, d) = Σ_{t ∈ q} idf(t) · tf·(k1+1) / (tf + k1·(1 − b + b·|d|/avgdl)),
    idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5)). Query terms count once each (set semantics)."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._postings: dict[str, dict[int, int]] = {}
        self._lengths: list[int] = []

    def __len__(self) -> int:
        return len(self._lengths)

    def add(self, text: str) -> int:
        """Index one document; returns its row (documents are numbered in insertion order)."""
        doc = len(self._lengths)
        toks = tokenize(text)
        self._lengths.append(len(toks))
        for term, tf in Counter(toks).items():
            self._postings.setdefault(term, {})[doc] = tf
        return doc

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (float64, length = number of documents)."""
        n = len(self._lengths)
        out = np.zeros(n, dtype=np.float64)
        if n == 0:
            return out
        lengths = np.asarray(self._lengths, dtype=np.float64)
        avgdl = float(lengths.mean()) or 1.0
        for term in dict.fromkeys(tokenize(query)):
            posting = self._postings.get(term)
            if not posting:
                continue
            df = len(posting)
            idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
            docs = np.fromiter(posting.keys(), dtype=np.int64, count=df)
            tf = np.fromiter(posting.values(), dtype=np.float64, count=df)
            norm = self.k1 * (1.0 - self.b + self.b * lengths[docs] / avgdl)
            out[docs] += idf * tf * (self.k1 + 1.0) / (tf + norm)
        return out

"""The keyword layer: normalised keyword ↔ note index, IDF weights, and the co-occurrence graph."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable

import numpy as np

_PUNCT_RE = re.compile(r"[^\w\s\-]+", re.UNICODE)
_SPACE_RE = re.compile(r"\s+")
_POSSESSIVE_RE = re.compile(r"(\w)['’]s\b")
_ARTICLE_RE = re.compile(r"^(?:the|a|an|my|his|her|their|our|your)\s+")


def normalise_keyword(text: str) -> str:
    """Lower-case, drop possessive ``'s``, punctuation and a leading article/possessive pronoun, and
    collapse spaces: "Caroline's  LGBTQ-group!" → "caroline lgbtq-group". Empty when nothing is left."""
    s = _POSSESSIVE_RE.sub(r"\1", text.strip().lower())
    s = _PUNCT_RE.sub(" ", s)
    s = _SPACE_RE.sub(" ", s).strip(" -")
    s = _ARTICLE_RE.sub("", s)
    return s


def normalise_keywords(items: Iterable[str], limit: int | None = None) -> list[str]:
    """Normalise, drop empties and one-character tokens, de-duplicate in order, keep at most ``limit``."""
    out: dict[str, None] = {}
    for item in items:
        k = normalise_keyword(str(item))
        if len(k) > 1 and k not in out:
            out[k] = None
            if limit is not None and len(out) >= limit:
                break
    return list(out)


class KeywordIndex:
    """Keyword ids in first-seen order, note → keyword ids and keyword → note postings."""

    def __init__(self) -> None:
        self.keywords: list[str] = []
        self.ids: dict[str, int] = {}
        self.postings: list[set[int]] = []
        self.note_keywords: dict[int, list[int]] = {}

    def __len__(self) -> int:
        return len(self.keywords)

    def intern(self, kw: str) -> int:
        """The id of ``kw`` (already normalised), creating it if new."""
        kid = self.ids.get(kw)
        if kid is None:
            kid = len(self.keywords)
            self.ids[kw] = kid
            self.keywords.append(kw)
            self.postings.append(set())
        return kid

    def set_note(self, nid: int, keywords: Iterable[str]) -> None:
        """(Re)assign a note's keywords (already normalised)."""
        for kid in self.note_keywords.get(nid, []):
            self.postings[kid].discard(nid)
        kids = list(dict.fromkeys(self.intern(k) for k in keywords))
        for kid in kids:
            self.postings[kid].add(nid)
        self.note_keywords[nid] = kids

    def df(self) -> np.ndarray:
        return np.array([len(p) for p in self.postings], dtype=np.int64)

    def idf(self, n_notes: int) -> np.ndarray:
        """Smoothed IDF, log(1 + N / df); keywords with no notes get 0."""
        df = self.df()
        out = np.zeros(len(df), dtype=np.float32)
        nz = df > 0
        out[nz] = np.log1p(n_notes / df[nz])
        return out

    def posting_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """CSR form of the postings: (indptr, note ids sorted within each keyword)."""
        lens = np.array([len(p) for p in self.postings], dtype=np.int64)
        indptr = np.zeros(len(lens) + 1, dtype=np.int64)
        np.cumsum(lens, out=indptr[1:])
        ids = np.fromiter((n for p in self.postings for n in sorted(p)), dtype=np.int64, count=int(lens.sum()))
        return indptr, ids

    def hubs(self, n_notes: int, max_fraction: float) -> set[int]:
        """Keywords in more than ``max_fraction`` of the notes (speaker names and the like): kept in the
        index, left out of the co-occurrence graph so they do not glue every topic together."""
        limit = max(2, math.ceil(max_fraction * n_notes))
        return {k for k, p in enumerate(self.postings) if len(p) > limit}

    def cooccurrence(self, exclude: set[int]) -> Counter[tuple[int, int]]:
        """Edge (a, b), a < b → number of notes holding both keywords."""
        counts: Counter[tuple[int, int]] = Counter()
        for kids in self.note_keywords.values():
            ks = sorted(k for k in set(kids) if k not in exclude)
            for i, a in enumerate(ks):
                for b in ks[i + 1 :]:
                    counts[(a, b)] += 1
        return counts

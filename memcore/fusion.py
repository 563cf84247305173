"""Reciprocal rank fusion (Cormack et al., 2009): a pure function over ranked lists."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from operator import itemgetter
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def rrf_fuse(
    rankings: Mapping[str, Sequence[K]], *, k: int = 60, weights: Mapping[str, float] | None = None
) -> list[tuple[K, float]]:
    """Fuse ranked lists: score(d) = Σ_lists w_l / (k + rank_l(d)), rank starting at 1.

    Returns (id, score) sorted by score descending; ties keep first-seen order (deterministic).
    A list may not repeat an id (only its first occurrence counts)."""
    scores: dict[K, float] = {}
    get = scores.get
    for name, ranked in rankings.items():
        w = 1.0 if weights is None else float(weights.get(name, 1.0))
        if len(set(ranked)) == len(ranked):  # no repeats (the usual case): no seen-set to keep
            for rank, doc in enumerate(ranked, start=k + 1):
                scores[doc] = get(doc, 0.0) + w / rank
            continue
        seen: set[K] = set()
        for rank, doc in enumerate(ranked, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            scores[doc] = get(doc, 0.0) + w / (k + rank)
    # a stable sort, reversed stably: ties stay in first-seen (insertion) order
    return sorted(scores.items(), key=itemgetter(1), reverse=True)

"""Topic boundary detection for the sensory buffer (LightMem's ``cut_with_segmenter``).

LightMem combines coarse boundaries from LLMLingua-2 attention (local peaks of each sentence's
attention to its predecessor) with fine boundaries where the cosine similarity of adjacent turns
falls below a threshold (0.2, raised by 0.05 up to 0.5 until some boundary appears); fine
boundaries within 3 turns of a coarse one are kept, or all fine ones if none is; without any coarse
boundary the whole buffer is one segment. Without the
LLMLingua-2 model the coarse proposals here are the local minima of the adjacent-turn similarity.
"""

from __future__ import annotations

import numpy as np


def adjacent_similarities(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of each row with the next (rows are L2-normalised): length n-1."""
    if len(vectors) < 2:
        return np.zeros(0, dtype=np.float32)
    return np.sum(vectors[:-1] * vectors[1:], axis=1)


def coarse_boundaries(sims: np.ndarray) -> list[int]:
    """Boundary b (a cut before turn b) at each strict local minimum of the adjacent similarity."""
    return [k + 1 for k in range(1, len(sims) - 1) if sims[k] < sims[k - 1] and sims[k] < sims[k + 1]]


def fine_boundaries(sims: np.ndarray, start: float, maximum: float, step: float) -> list[int]:
    """Cuts where similarity < threshold, for the lowest threshold in start, start+step, … ≤ maximum
    that yields any cut; empty when none does."""
    threshold = start
    while threshold <= maximum + 1e-9:
        cuts = [i + 1 for i, s in enumerate(sims) if s < threshold]
        if cuts:
            return cuts
        threshold += step
    return []


def propose_boundaries(sims: np.ndarray, *, start: float, maximum: float, step: float, tolerance: int) -> list[int]:
    """LightMem's two-stage rule: no cut without a coarse proposal (upstream's ``cut_with_segmenter`` then emits
    the whole buffer as one segment); else fine cuts near a coarse one, else all fine cuts (sorted, unique)."""
    coarse = coarse_boundaries(sims)
    if not coarse:
        return []
    fine = fine_boundaries(sims, start, maximum, step)
    if not fine:
        return []
    near = [f for f in fine if any(abs(f - c) <= tolerance for c in coarse)]
    return sorted(set(near or fine))

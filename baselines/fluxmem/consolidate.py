"""Stage 3 pieces without LLM calls: trajectory clustering, the PEMS score and the test-score-refine
loop (the LLM parts come in as callables, so the loop is testable on its own).

PEMS(v) = w_s · S(v) − w_l · min(1, L(v) / L_ref) − w_d · D(v), with S the mean self-judged success of
the re-run source episodes, L the skill length in tokens and D = 1 − cos(e_v, e_{v−1}) the embedding
drift from the version it rewrites (0 for the first version). Higher is more mature: it works, it
is short, and it has stopped moving.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def cluster_by_similarity(vecs: np.ndarray, min_sim: float) -> list[list[int]]:
    """Greedy leader clustering in input order: a row joins the cluster whose (normalised) centroid
    it is most similar to if that cosine is ≥ ``min_sim``, else it starts a new cluster."""
    clusters: list[list[int]] = []
    sums: list[np.ndarray] = []
    for i, v in enumerate(np.asarray(vecs, dtype=np.float64)):
        best, best_sim = -1, -np.inf
        for c, s in enumerate(sums):
            norm = float(np.linalg.norm(s))
            sim = float(s @ v / norm) if norm > 0 else 0.0
            if sim > best_sim:
                best, best_sim = c, sim
        if best >= 0 and best_sim >= min_sim:
            clusters[best].append(i)
            sums[best] = sums[best] + v
        else:
            clusters.append([i])
            sums.append(v.copy())
    return clusters


@dataclass(frozen=True)
class PEMSWeights:
    success: float
    length: float
    drift: float
    length_ref: int


def pems(success: float, tokens: int, drift: float, w: PEMSWeights) -> float:
    """The procedure evolution maturity score of one skill version (see module docstring)."""
    return w.success * success - w.length * min(1.0, tokens / w.length_ref) - w.drift * drift


@dataclass(frozen=True)
class VersionScore:
    """One skill version with its PEMS components; ``results`` are (question, answer, success)."""

    text: str
    vec: np.ndarray
    success: float
    tokens: int
    drift: float
    score: float
    results: tuple[tuple[str, str, bool | None], ...] = ()

    def record(self, version: int, accepted: bool) -> dict[str, object]:
        return {
            "version": version,
            "pems": round(self.score, 6),
            "success": round(self.success, 6),
            "tokens": self.tokens,
            "drift": round(self.drift, 6),
            "accepted": accepted,
        }


@dataclass
class RefineOutcome:
    best: VersionScore
    version: int
    history: list[dict[str, object]]
    rewrites: int


def refine_skill(
    first: VersionScore,
    rewrite: Callable[[VersionScore], str | None],
    evaluate: Callable[[str, np.ndarray | None], VersionScore],
    *,
    threshold: float,
    target: float,
    max_iters: int,
) -> RefineOutcome:
    """Test-score-refine: while the current version scores below ``target``, let the LLM rewrite it
    (``rewrite`` → new text or None when it produced nothing usable), re-score (``evaluate(text,
    previous vector)``), keep the rewrite if it scores higher, and stop once the improvement is below
    ``threshold`` or after ``max_iters`` rewrites."""
    best, version = first, 0
    history = [first.record(0, True)]
    rewrites = 0
    while rewrites < max_iters and best.score < target:
        text = rewrite(best)
        rewrites += 1
        if text is None:
            break
        cand = evaluate(text, best.vec)
        gain = cand.score - best.score
        history.append(cand.record(version + 1, gain > 0))
        if gain > 0:
            best, version = cand, version + 1
        if gain < threshold:
            break
    return RefineOutcome(best, version, history, rewrites)

"""Stage 3 pieces without LLM calls: trajectory clustering, the PEMS score and the test-score-refine
loop (the LLM parts come in as callables, so the loop is testable on its own).

Two PEMS formulas. ``upstream`` (default) is zjunlp/LightMem ``src/fluxmem/metrics/pems.py``:
PEMS(v) = S(v) / (|V_proc| · ln L(v)) · (1 − D(v)), with S the mean success of the re-run source episodes,
|V_proc| the number of skills, L the skill length in words (``split()``) and D = 1 − cos(e_v, e_{v−1}) the
embedding drift from the previous version (0 for the first); the loop (``stage3_consolidation.py``
``iterative_consolidation``) rewrites the skill until |PEMS_k − PEMS_{k−1}| < ε or ``rounds`` evaluations,
and every rewrite replaces the current version. ``linear`` is this package's earlier score,
PEMS(v) = w_s · S − w_l · min(1, L / L_ref) − w_d · D with L in tokens, in a loop that keeps a rewrite only
if it scores higher.
"""

from __future__ import annotations

import math
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
    """The ``linear`` maturity score of one skill version (see module docstring)."""
    return w.success * success - w.length * min(1.0, tokens / w.length_ref) - w.drift * drift


def pems_upstream(success: float, n_skills: int, words: int, drift: float) -> float:
    """Upstream PEMS: success / (max(n_skills, 1) · ln(max(words, 1))) · (1 − drift); 0 for a one-word skill."""
    log_length = math.log(max(words, 1))
    if log_length == 0:
        return 0.0
    return success / (max(n_skills, 1) * log_length) * (1.0 - drift)


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


def refine_until_converged(
    first: VersionScore,
    rewrite: Callable[[VersionScore], str | None],
    evaluate: Callable[[str, np.ndarray | None], VersionScore],
    *,
    threshold: float,
    rounds: int,
) -> RefineOutcome:
    """Upstream's test-score-refine loop: round k scores version k; it stops when |PEMS_k − PEMS_{k−1}| <
    ``threshold`` (needs two scores) or after ``rounds`` scores; otherwise the LLM rewrites the skill and the
    rewrite replaces it, better or not. ``rewrite`` returning None (no usable text) ends the loop early."""
    current, version, rewrites = first, 0, 0
    history = [first.record(0, True)]
    previous: float | None = None
    for round_k in range(1, rounds + 1):
        if previous is not None and abs(current.score - previous) < threshold:
            break
        if round_k == rounds:
            break
        text = rewrite(current)
        rewrites += 1
        if text is None:
            break
        previous = current.score
        current = evaluate(text, current.vec)
        version += 1
        history.append(current.record(version, True))
    return RefineOutcome(current, version, history, rewrites)

"""Stage 1 maths: the hybrid relevance score and the step subgraph it produces.

hybrid(n) = (w_d·dense'(n) + w_s·sparse'(n) + w_l·llm(n)) / (w_d + w_s + w_l), where dense' is the
cosine min-max normalised over the semantic layer, sparse' is BM25 divided by its maximum and llm(n)
∈ {0, 1} is the LLM's verification of the candidate. Only the ``verify_pool`` best candidates by the
first two terms are verified, and the top-k are taken from that pool; without verification (switched
off, or an unparseable reply) the LLM term and its weight drop out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


def minmax(x: np.ndarray) -> np.ndarray:
    """Scale to [0, 1]; a constant vector carries no ranking information and maps to zeros."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x
    lo, hi = float(x.min()), float(x.max())
    if hi - lo <= 1e-12:
        return np.zeros_like(x)
    return (x - lo) / (hi - lo)


def max_scale(x: np.ndarray) -> np.ndarray:
    """Divide non-negative scores (BM25) by their maximum; all zeros stay zeros."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return x
    hi = float(x.max())
    return x / hi if hi > 0 else np.zeros_like(x)


def fuse(
    dense_n: np.ndarray,
    sparse_n: np.ndarray,
    verified: np.ndarray | None,
    *,
    w_dense: float,
    w_sparse: float,
    w_llm: float,
) -> np.ndarray:
    """Weighted fusion of already-normalised signals; ``verified`` None (or w_llm 0) drops the LLM term."""
    num = w_dense * np.asarray(dense_n, dtype=np.float64) + w_sparse * np.asarray(sparse_n, dtype=np.float64)
    den = w_dense + w_sparse
    if verified is not None and w_llm > 0:
        num = num + w_llm * np.asarray(verified, dtype=np.float64)
        den += w_llm
    return num / den


def top_indices(scores: np.ndarray, k: int, among: np.ndarray | None = None) -> list[int]:
    """Indices of the ``k`` highest scores (ties: lower index first), optionally only ``among`` some rows."""
    idx = np.arange(len(scores)) if among is None else np.asarray(among, dtype=np.int64)
    if idx.size == 0 or k <= 0:
        return []
    order = np.lexsort((idx, -np.asarray(scores, dtype=np.float64)[idx]))
    return [int(i) for i in idx[order][:k]]


@dataclass
class StepSubgraph:
    """The step anchor (the question) with its edges: semantic node → anchor weight (hybrid score),
    the channels that found each node, past episodes and the skills reached from them, and the
    edits Stage 2 made."""

    question: str
    nodes: dict[str, float] = field(default_factory=dict)
    channels: dict[str, tuple[str, ...]] = field(default_factory=dict)
    episodes: list[str] = field(default_factory=list)
    skills: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    pruned: list[str] = field(default_factory=list)
    reshaped: dict[str, str] = field(default_factory=dict)
    verified: bool = False

    def ordered(self) -> list[str]:
        """Active semantic nodes, highest anchor weight first (ties: insertion order)."""
        pos = {nid: i for i, nid in enumerate(self.nodes)}
        return sorted(self.nodes, key=lambda n: (-self.nodes[n], pos[n]))

    def link(self, nid: str, weight: float, channels: tuple[str, ...]) -> None:
        self.nodes[nid] = float(weight)
        self.channels[nid] = channels

    def unlink(self, nid: str) -> None:
        self.nodes.pop(nid, None)
        self.channels.pop(nid, None)

    def replace(self, old: str, new: str) -> None:
        """Swap a node for its reshaped unit, keeping the anchor weight and position."""
        items = [(new if n == old else n, w) for n, w in self.nodes.items()]
        chans = self.channels.pop(old, ())
        self.nodes = dict(items)
        self.channels[new] = (*chans, "reshaped")
        self.reshaped[old] = new

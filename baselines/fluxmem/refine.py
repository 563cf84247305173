"""Stage 2 pieces without LLM calls: the support verdict, failure attribution, and the choice of
which links to add (expansion), drop (pruning) or which nodes to reshape."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.fluxmem.relevance import StepSubgraph, top_indices

UNDER = "under_connection"
OVER = "over_connection"
GRANULARITY = "granularity"
FAILURES = (UNDER, OVER, GRANULARITY)


@dataclass(frozen=True)
class Verdict:
    """The LLM's own check of the answer against the subgraph. ``supported`` None: no usable reply.
    Fact numbers are 1-based positions in the serialised subgraph."""

    supported: bool | None
    failure: str = "none"
    missing: str = ""
    distracting: tuple[int, ...] = ()
    reshape: tuple[int, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False)


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise ValueError(f"'supported' must be true or false, got {value!r}")


def _numbers(value: Any, n_facts: int) -> tuple[int, ...]:
    """Valid, distinct 1-based fact numbers from a list (strings like "3" or "[3]" accepted)."""
    if value is None:
        return ()
    if not isinstance(value, list):
        value = [value]
    out: list[int] = []
    for v in value:
        try:
            i = int(str(v).strip().strip("[]"))
        except ValueError:
            continue
        if 1 <= i <= n_facts and i not in out:
            out.append(i)
    return tuple(out)


def parse_verdict(obj: Any, n_facts: int) -> Verdict:
    """Validate a check reply. A missing/invalid cause of an unsupported answer is inferred from the
    lists given (distracting → over-connection, reshape → granularity, else under-connection)."""
    if not isinstance(obj, dict) or "supported" not in obj:
        raise ValueError("reply needs a 'supported' field")
    supported = _as_bool(obj["supported"])
    distracting = _numbers(obj.get("distracting"), n_facts)
    reshape = _numbers(obj.get("reshape"), n_facts)
    missing = str(obj.get("missing") or "").strip()
    if supported:
        return Verdict(True, "none", missing, distracting, reshape, obj)
    failure = str(obj.get("failure") or "").strip().lower().replace("-", "_").replace(" ", "_")
    if failure not in FAILURES:
        failure = OVER if distracting else GRANULARITY if reshape else UNDER
    return Verdict(False, failure, missing, distracting, reshape, obj)


def expansion_candidates(
    sub: StepSubgraph,
    node_ids: list[str],
    pre_scores: np.ndarray,
    neighbours: dict[str, dict[str, float]],
    *,
    n: int,
    assoc_bonus: float,
    excluded: set[str],
) -> list[tuple[str, float]]:
    """Link expansion: the ``n`` best unactivated nodes by pre-score (dense + BM25 on the expansion
    query) plus ``assoc_bonus`` × their strongest association weight to the active subgraph.
    ``node_ids[i]`` names row i of ``pre_scores``; ``neighbours`` maps active nodes to theirs."""
    bonus = np.zeros(len(node_ids), dtype=np.float64)
    row = {nid: i for i, nid in enumerate(node_ids)}
    for active in sub.nodes:
        for nb, w in neighbours.get(active, {}).items():
            if nb in row:
                bonus[row[nb]] = max(bonus[row[nb]], w)
    scores = np.asarray(pre_scores, dtype=np.float64) + assoc_bonus * bonus
    allowed = [i for i, nid in enumerate(node_ids) if nid not in sub.nodes and nid not in excluded]
    return [(node_ids[i], float(scores[i])) for i in top_indices(scores, n, np.asarray(allowed, dtype=np.int64))]


def prune_choice(
    sub: StepSubgraph, order: list[str], named: tuple[int, ...], *, prune_n: int, min_keep: int
) -> list[str]:
    """Link pruning: the named facts (1-based positions in ``order``), or else the ``prune_n``
    weakest links, never leaving fewer than ``min_keep`` semantic nodes."""
    room = max(0, len(sub.nodes) - min_keep)
    chosen = [order[i - 1] for i in named] if named else list(reversed(order))[:prune_n]
    return chosen[:room]


def reshape_choice(order: list[str], named: tuple[int, ...], *, reshape_n: int) -> list[str]:
    """Content reshaping targets: the named facts, else the strongest ones; at most ``reshape_n``."""
    chosen = [order[i - 1] for i in named] if named else list(order)
    return chosen[:reshape_n]

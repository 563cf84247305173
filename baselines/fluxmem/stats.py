"""A pure summary of a FluxMem memory for ``stats.json``: the size of each graph layer, its edges by kind and
label, the episodes by outcome, the skills' PEMS and the memory's counters."""

from __future__ import annotations

from collections import Counter
from typing import Any

from baselines.fluxmem.graph import ASSOCIATION, EXTRACTION, FluxGraph


def graph_stats(g: FluxGraph, attributions: Counter[str], counters: Counter[str]) -> dict[str, Any]:
    """The stats of graph ``g`` with the failure ``attributions`` of Stage 2 and the memory's ``counters``."""
    labels = Counter(f"{e.kind}:{e.label}" for e in g.edges)
    return {
        "semantic_nodes": len(g.semantic),
        "semantic_by_origin": dict(Counter(n.origin for n in g.semantic)),
        "turns": len(g.turns),
        "turns_without_nodes": len(set(g.turns) - {d for n in g.semantic for d in n.dia_ids}),
        "association_edges": sum(v for k, v in labels.items() if k.startswith(ASSOCIATION)),
        "extraction_edges": sum(v for k, v in labels.items() if k.startswith(EXTRACTION)),
        "edges_by_label": dict(labels),
        "episodes": len(g.episodes),
        "episodes_supported": sum(1 for e in g.episodes if e.supported is True),
        "episodes_unsupported": sum(1 for e in g.episodes if e.supported is False),
        "episodes_unjudged": sum(1 for e in g.episodes if e.supported is None),
        "skills": len(g.skills),
        "skill_pems": [s.pems for s in g.skills],
        "attributions": dict(attributions),
        "counters": dict(counters),
    }

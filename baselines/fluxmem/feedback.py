"""FluxMem Stage 2 over the graph (feedback-driven refinement): the LLM checks an answer against the step
subgraph, and the attributed failure is fixed by pruning links, reshaping nodes or expanding the subgraph.
The choices themselves (no LLM) are in ``refine.py``."""

from __future__ import annotations

from dataclasses import dataclass

from baselines.fluxmem import prompts as P
from baselines.fluxmem.calls import FluxCalls, validate_text
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.graph import ASSOCIATION, Edge, FluxGraph, SemanticNode
from baselines.fluxmem.refine import (
    GRANULARITY,
    OVER,
    Verdict,
    expansion_candidates,
    parse_verdict,
    prune_choice,
    reshape_choice,
)
from baselines.fluxmem.relevance import StepSubgraph
from baselines.fluxmem.retrieval import pre_scores, serialise


@dataclass(frozen=True)
class Refiner:
    """Stage 2 for one FluxMem; the subgraph is edited in place and reshaped units join ``graph``."""

    cfg: FluxMemConfig
    calls: FluxCalls

    def check(self, graph: FluxGraph, question: str, answer: str, sub: StepSubgraph) -> Verdict:
        """The LLM's verdict on ``answer`` given the serialised subgraph; ``Verdict(None)`` on an unusable reply."""
        context, order = serialise(graph, sub)
        facts, _, extra = context.partition("\n\n")
        res = self.calls.json(
            "check",
            "retrieve",
            P.CHECK_SYSTEM,
            P.CHECK_USER.format(question=question, answer=answer, facts=facts, extra=f"\n{extra}\n" if extra else ""),
            validate=lambda o: parse_verdict(o, len(order)),
            fallback=Verdict(None),
            fallback_kind="answer outcome unknown; stop refining",
            max_tokens=200,
        )
        return res.value

    def edit(self, graph: FluxGraph, sub: StepSubgraph, verdict: Verdict) -> bool:
        """Apply the edit for the attributed failure; False when it changed nothing."""
        cfg, counters = self.cfg, self.calls.counters
        order = sub.ordered()
        if verdict.failure == OVER:
            drop = prune_choice(sub, order, verdict.distracting, prune_n=cfg.prune_n, min_keep=cfg.min_keep)
            for nid in drop:
                sub.unlink(nid)
                sub.pruned.append(nid)
            counters["pruned_links"] += len(drop)
            return bool(drop)
        if verdict.failure == GRANULARITY:
            targets = reshape_choice(order, verdict.reshape, reshape_n=cfg.reshape_n)
            for nid in targets:
                sub.replace(nid, self._reshape(graph, sub.question, nid))
            return bool(targets)
        if not graph.semantic:
            return False
        query = f"{sub.question} {verdict.missing}".strip()
        q_vec = self.calls.embed([query])[0]
        pre, _, _ = pre_scores(graph, cfg, query, q_vec)
        ids = [s.nid for s in graph.semantic]
        active_nb = {nid: graph.neighbours(nid) for nid in sub.nodes}
        excluded = set(sub.pruned) | set(sub.reshaped)
        added = expansion_candidates(
            sub, ids, pre, active_nb, n=cfg.expand_n, assoc_bonus=cfg.expand_assoc_bonus, excluded=excluded
        )
        for nid, score in added:
            sub.link(nid, min(score, 1.0), ("expansion",))
            sub.added.append(nid)
        counters["expanded_links"] += len(added)
        return bool(added)

    def _reshape(self, graph: FluxGraph, question: str, nid: str) -> str:
        """Content reshaping: a refined unit (new semantic node, association 'refines' → old) that
        replaces ``nid`` in the step subgraph and stays in the semantic layer."""
        node = graph.node(nid)
        source = " / ".join(graph.turns[d].render() for d in node.dia_ids if d in graph.turns) or node.text
        fallback_text = node.text if node.origin in ("turn", "chunk") else f"{node.text} (original: {source})"
        res = self.calls.json(
            "reshape",
            "retrieve",
            P.RESHAPE_SYSTEM,
            P.RESHAPE_USER.format(question=question, fact=node.text, date=node.time, source=source),
            validate=validate_text("text"),
            fallback=fallback_text,
            fallback_kind="expand the node with its source turn verbatim",
            max_tokens=200,
        )
        new = SemanticNode(graph.new_semantic_id(), res.value, node.dia_ids, node.speaker, node.time, "reshaped", nid)
        graph.add_semantic(new, self.calls.embed([new.text])[0])
        graph.add_edge(Edge(new.nid, nid, ASSOCIATION, 1.0, "refines"))
        self.calls.counters["reshaped_nodes"] += 1
        return new.nid

"""FluxMem Stage 1 over the graph: link the top-k semantic nodes to the step anchor by hybrid relevance
(dense + BM25, optionally LLM-verified; the maths is in ``relevance.py``), add similar past episodes and
their skills, fit it all to a note budget, and render the step subgraph as answer context and evidence."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from baselines.fluxmem import prompts as P
from baselines.fluxmem.calls import FluxCalls, validate_relevant
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.graph import FluxGraph
from baselines.fluxmem.relevance import StepSubgraph, fuse, max_scale, minmax, top_indices
from memcore.types import Evidence, EvidenceNote


def pre_scores(
    graph: FluxGraph, cfg: FluxMemConfig, query: str, q_vec: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fused dense + BM25 score, normalised dense, normalised BM25) for every semantic node."""
    dense_n = minmax(graph.sem_vecs @ q_vec)
    sparse_n = max_scale(graph.bm25.scores(query))
    pre = fuse(dense_n, sparse_n, None, w_dense=cfg.w_dense, w_sparse=cfg.w_sparse, w_llm=0.0)
    return pre, dense_n, sparse_n


@dataclass(frozen=True)
class Connector:
    """Stage 1 for one FluxMem: builds a question's step subgraph on whatever graph it is given."""

    cfg: FluxMemConfig
    calls: FluxCalls

    def connect_within(self, graph: FluxGraph, question: str, budget: int | None) -> StepSubgraph:
        """Stage 1 with k semantic nodes, or with ``budget`` (``eval.note_cap``) notes in all: k = budget, then
        the lowest-ranked semantic nodes make room for the episodes and skills (at least one semantic node
        stays; episodes and skills beyond the budget are dropped, skills first). Stage 2's link expansion may
        add nodes beyond it later, by design."""
        if budget is None:
            return self.connect(graph, question, self.cfg.k)
        sub = self.connect(graph, question, budget)
        order = sub.ordered()
        while len(order) > 1 and len(order) + len(sub.episodes) + len(sub.skills) > budget:
            sub.unlink(order.pop())
        room = max(0, budget - len(order))
        sub.episodes = sub.episodes[:room]
        sub.skills = sub.skills[: max(0, room - len(sub.episodes))]
        return sub

    def connect(self, graph: FluxGraph, question: str, k: int) -> StepSubgraph:
        """The k best semantic nodes by hybrid relevance (by dense cosine alone when ``connect`` is off, which
        also leaves out episodes and skills), plus the similar past episodes and their skills."""
        cfg = self.cfg
        sub = StepSubgraph(question)
        n = len(graph.semantic)
        if n == 0:
            return sub
        q_vec = self.calls.embed([question])[0]
        ids = [s.nid for s in graph.semantic]
        if not cfg.connect:
            dense = graph.sem_vecs @ q_vec
            for i in top_indices(dense, k):
                sub.link(ids[i], float(dense[i]), ("dense",))
            return sub
        pre, dense_n, sparse_n = pre_scores(graph, cfg, question, q_vec)
        size = max(cfg.verify_pool, k)
        # upstream: the dense top candidates; hybrid: by dense + BM25
        pool = top_indices(graph.sem_vecs @ q_vec if cfg.pool_by == "dense" else pre, size)
        verified: np.ndarray | None = None
        if cfg.llm_verify and cfg.w_llm > 0:
            verified = self._verify(graph, question, [ids[i] for i in pool])
        pool_arr = np.asarray(pool, dtype=np.int64)
        if cfg.normalize_over == "pool":  # upstream: min-max of each signal over the candidates
            pool_dense = minmax((graph.sem_vecs @ q_vec)[pool_arr])
            pool_sparse = minmax(np.asarray(graph.bm25.scores(question), dtype=np.float64)[pool_arr])
        else:
            pool_dense, pool_sparse = dense_n[pool_arr], sparse_n[pool_arr]
        if verified is not None and cfg.verify_mode == "graded" and cfg.normalize_over == "pool":
            verified_n: np.ndarray | None = minmax(verified)  # upstream normalises all three signals over the pool
        else:
            verified_n = verified
        hybrid = fuse(pool_dense, pool_sparse, verified_n, w_dense=cfg.w_dense, w_sparse=cfg.w_sparse, w_llm=cfg.w_llm)
        sub.verified = verified is not None
        for j in top_indices(hybrid, k):
            i = pool[j]
            chans = ["dense"] if dense_n[i] > 0 else []
            if sparse_n[i] > 0:
                chans.append("bm25")
            if verified is not None and verified[j] > 0:
                chans.append("llm")
            sub.link(ids[i], float(hybrid[j]), tuple(chans))
        self._attach_episodes(graph, sub, q_vec)
        return sub

    def _verify(self, graph: FluxGraph, question: str, nids: list[str]) -> np.ndarray | None:
        """LLM verification of the candidates: upstream's graded 0–1 score per candidate, one call each
        (``verify_mode: graded``; an unusable reply scores 0, counted), or one call that names the relevant
        ones (``listed``: 1 for each named; None on an unusable reply)."""
        if self.cfg.verify_mode == "graded":
            scores = [self.calls.grade(question, graph.node(nid).text) for nid in nids]
            return np.asarray([0.0 if s is None else s for s in scores], dtype=np.float64)
        listing = "\n".join(f"[{j + 1}] {graph.node(nid).render()}" for j, nid in enumerate(nids))
        res = self.calls.json(
            "verify",
            "retrieve",
            P.VERIFY_SYSTEM,
            P.VERIFY_USER.format(question=question, candidates=listing),
            validate=lambda o: validate_relevant(o, len(nids)),
            fallback=None,
            fallback_kind="rank by dense + BM25 only",
            max_tokens=128,
        )
        if res.value is None:
            return None
        return np.asarray([1.0 if j + 1 in res.value else 0.0 for j in range(len(nids))])

    def _attach_episodes(self, graph: FluxGraph, sub: StepSubgraph, q_vec: np.ndarray) -> None:
        """The k most similar past episodes (supported ones only, if so configured) and the skills
        their extraction edges reach."""
        eps = graph.episodes
        if not eps or self.cfg.k_episodes == 0:
            return
        sims = graph.ep_q_vecs @ q_vec
        allowed = [
            i
            for i, ep in enumerate(eps)
            if sims[i] >= self.cfg.episode_min_sim and (ep.supported or not self.cfg.episodes_supported_only)
        ]
        for i in top_indices(sims, self.cfg.k_episodes, np.asarray(allowed, dtype=np.int64)):
            sub.episodes.append(eps[i].eid)
            for kid in graph.skills_of(eps[i].eid):
                if kid not in sub.skills:
                    sub.skills.append(kid)


def serialise(graph: FluxGraph, sub: StepSubgraph) -> tuple[str, list[str]]:
    """The answer context and the node order its fact numbers refer to."""
    order = sub.ordered()
    lines = [
        "Memory facts (date, fact):",
        *(f"[{i + 1}] {graph.node(n).render()}" for i, n in enumerate(order)),
    ]
    if sub.episodes:
        by_id = {e.eid: e for e in graph.episodes}
        lines += ["", "Similar questions answered earlier:", *(f"- {by_id[e].render()}" for e in sub.episodes)]
    if sub.skills:
        lines += [
            "",
            "Answering skills learned from earlier questions:",
            *(f"- {graph.skill(k).text}" for k in sub.skills),
        ]
    return "\n".join(lines), order


def evidence(graph: FluxGraph, sub: StepSubgraph, context: str) -> Evidence:
    """The step subgraph as evidence: its semantic nodes (in rank order), then its episodes and skills."""
    notes = []
    for nid in sub.ordered():
        node = graph.node(nid)
        notes.append(EvidenceNote(nid, node.text, node.dia_ids, sub.nodes[nid], sub.channels.get(nid, ()), node.time))
    by_id = {e.eid: e for e in graph.episodes}
    notes += [EvidenceNote(e, by_id[e].render(), (), 0.0, ("episode",)) for e in sub.episodes]
    notes += [EvidenceNote(k, graph.skill(k).text, (), 0.0, ("skill",)) for k in sub.skills]
    return Evidence(notes=notes, context=context)

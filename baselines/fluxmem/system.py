"""FluxMem on LoCoMo: an evolving three-layer memory graph that answers its own questions.

Construction: every turn → atomic facts (semantic nodes, one LLM call per turn), embedded at
``finalize`` and linked by association edges. QA (sequential, through ``answer``):
Stage 1 links the top-k nodes by hybrid relevance to the step anchor and adds similar past episodes
and their skills; Stage 2 checks the answer against that subgraph, attributes a failure and edits
the subgraph, at most T rounds; the episode is committed; Stage 3 clusters episodes into skills and
refines them by PEMS every N episodes and after the conversation's QA.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from baselines.fluxmem import consolidate as c3
from baselines.fluxmem import prompts as P
from baselines.fluxmem.calls import FluxCalls, validate_relevant, validate_rerun, validate_text
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.graph import ASSOCIATION, EXTRACTION, Edge, Episode, FluxGraph, SemanticNode, Skill
from baselines.fluxmem.ingestion import add_turn, embed_and_link
from baselines.fluxmem.refine import (
    GRANULARITY,
    OVER,
    Verdict,
    expansion_candidates,
    parse_verdict,
    prune_choice,
    reshape_choice,
)
from baselines.fluxmem.relevance import StepSubgraph, fuse, max_scale, minmax, top_indices
from memcore.interfaces import ChatBackbone, Embedder
from memcore.text import count_tokens
from memcore.types import Evidence, EvidenceNote, QAItem, Turn

AnswerFn = Callable[[str], str]


class FluxMem:
    """MemorySystem + SelfAnsweringMemory. ``backbone`` / ``embedder`` are providers, called only when
    needed (so a build without fact extraction starts no LLM server). All public methods hold one
    lock: QA is sequential by design (episodes accumulate), ``retrieve`` is safe from any thread."""

    def __init__(
        self,
        cfg: FluxMemConfig,
        backbone: Callable[[], ChatBackbone],
        embedder: Callable[[], Embedder],
        seed: int = 0,
    ) -> None:
        self.cfg = cfg
        self.seed = seed
        self.graph = FluxGraph(cfg.bm25_k1, cfg.bm25_b)
        self._lock = threading.RLock()
        self._since_consolidation = 0
        self.counters: Counter[str] = Counter()
        self.attributions: Counter[str] = Counter()
        self._calls = FluxCalls(cfg, backbone, embedder, seed, self.counters)

    @property
    def backbone(self) -> ChatBackbone:
        return self._calls.backbone

    @property
    def embedder(self) -> Embedder:
        return self._calls.embedder

    # ================================================================== construction
    def ingest(self, turn: Turn) -> None:
        """Record the turn and add its facts (or the turn itself) to the semantic layer."""
        with self._lock:
            add_turn(self.graph, self._calls, self.cfg, turn)

    def finalize(self) -> None:
        """Embed the semantic layer in one batch and build its association edges."""
        with self._lock:
            embed_and_link(self.graph, self._calls, self.cfg)

    # ================================================================== Stage 1
    def _pre_scores(self, query: str, q_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fused dense + BM25 score, normalised dense, normalised BM25) for every semantic node."""
        dense_n = minmax(self.graph.sem_vecs @ q_vec)
        sparse_n = max_scale(self.graph.bm25.scores(query))
        pre = fuse(dense_n, sparse_n, None, w_dense=self.cfg.w_dense, w_sparse=self.cfg.w_sparse, w_llm=0.0)
        return pre, dense_n, sparse_n

    def _connect(self, question: str, k: int) -> StepSubgraph:
        sub = StepSubgraph(question)
        n = len(self.graph.semantic)
        if n == 0:
            return sub
        q_vec = self._calls.embed([question])[0]
        ids = [s.nid for s in self.graph.semantic]
        if not self.cfg.connect:
            dense = self.graph.sem_vecs @ q_vec
            for i in top_indices(dense, k):
                sub.link(ids[i], float(dense[i]), ("dense",))
            return sub
        pre, dense_n, sparse_n = self._pre_scores(question, q_vec)
        size = max(self.cfg.verify_pool, k)
        # upstream: the dense top candidates; hybrid: by dense + BM25
        pool = top_indices(self.graph.sem_vecs @ q_vec if self.cfg.pool_by == "dense" else pre, size)
        verified: np.ndarray | None = None
        if self.cfg.llm_verify and self.cfg.w_llm > 0:
            verified = self._verify(question, [ids[i] for i in pool])
        pool_arr = np.asarray(pool, dtype=np.int64)
        if self.cfg.normalize_over == "pool":  # upstream: min-max of each signal over the candidates
            pool_dense = minmax((self.graph.sem_vecs @ q_vec)[pool_arr])
            pool_sparse = minmax(np.asarray(self.graph.bm25.scores(question), dtype=np.float64)[pool_arr])
        else:
            pool_dense, pool_sparse = dense_n[pool_arr], sparse_n[pool_arr]
        hybrid = fuse(
            pool_dense,
            pool_sparse,
            verified,
            w_dense=self.cfg.w_dense,
            w_sparse=self.cfg.w_sparse,
            w_llm=self.cfg.w_llm,
        )
        sub.verified = verified is not None
        for j in top_indices(hybrid, k):
            i = pool[j]
            chans = ["dense"] if dense_n[i] > 0 else []
            if sparse_n[i] > 0:
                chans.append("bm25")
            if verified is not None and verified[j] > 0:
                chans.append("llm")
            sub.link(ids[i], float(hybrid[j]), tuple(chans))
        self._attach_episodes(sub, q_vec)
        return sub

    def _verify(self, question: str, nids: list[str]) -> np.ndarray | None:
        """LLM verification of the candidates: 1 for each it names relevant; None on an unusable reply."""
        listing = "\n".join(f"[{j + 1}] {self.graph.node(nid).render()}" for j, nid in enumerate(nids))
        res = self._calls.json(
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

    def _attach_episodes(self, sub: StepSubgraph, q_vec: np.ndarray) -> None:
        """The k most similar past episodes (supported ones only, if so configured) and the skills
        their extraction edges reach."""
        eps = self.graph.episodes
        if not eps or self.cfg.k_episodes == 0:
            return
        sims = self.graph.ep_q_vecs @ q_vec
        allowed = [
            i
            for i, ep in enumerate(eps)
            if sims[i] >= self.cfg.episode_min_sim and (ep.supported or not self.cfg.episodes_supported_only)
        ]
        for i in top_indices(sims, self.cfg.k_episodes, np.asarray(allowed, dtype=np.int64)):
            sub.episodes.append(eps[i].eid)
            for kid in self.graph.skills_of(eps[i].eid):
                if kid not in sub.skills:
                    sub.skills.append(kid)

    def _serialise(self, sub: StepSubgraph) -> tuple[str, list[str]]:
        """The answer context and the node order its fact numbers refer to."""
        order = sub.ordered()
        lines = [
            "Memory facts (date, fact):",
            *(f"[{i + 1}] {self.graph.node(n).render()}" for i, n in enumerate(order)),
        ]
        if sub.episodes:
            by_id = {e.eid: e for e in self.graph.episodes}
            lines += ["", "Similar questions answered earlier:", *(f"- {by_id[e].render()}" for e in sub.episodes)]
        if sub.skills:
            lines += [
                "",
                "Answering skills learned from earlier questions:",
                *(f"- {self.graph.skill(k).text}" for k in sub.skills),
            ]
        return "\n".join(lines), order

    def _evidence(self, sub: StepSubgraph, context: str) -> Evidence:
        notes = []
        for nid in sub.ordered():
            node = self.graph.node(nid)
            notes.append(
                EvidenceNote(nid, node.text, node.dia_ids, sub.nodes[nid], sub.channels.get(nid, ()), node.time)
            )
        by_id = {e.eid: e for e in self.graph.episodes}
        notes += [EvidenceNote(e, by_id[e].render(), (), 0.0, ("episode",)) for e in sub.episodes]
        notes += [EvidenceNote(k, self.graph.skill(k).text, (), 0.0, ("skill",)) for k in sub.skills]
        return Evidence(notes=notes, context=context)

    def _connect_within(self, question: str, budget: int | None) -> StepSubgraph:
        """Stage 1 with k semantic nodes, or with ``budget`` (``eval.budget``) notes in all: k = budget, then
        the lowest-ranked semantic nodes make room for the episodes and skills (at least one semantic node
        stays; episodes and skills beyond the budget are dropped, skills first). Stage 2's link expansion may
        add nodes beyond it later, by design."""
        if budget is None:
            return self._connect(question, self.cfg.k)
        sub = self._connect(question, budget)
        order = sub.ordered()
        while len(order) > 1 and len(order) + len(sub.episodes) + len(sub.skills) > budget:
            sub.unlink(order.pop())
        room = max(0, budget - len(order))
        sub.episodes = sub.episodes[:room]
        sub.skills = sub.skills[: max(0, room - len(sub.episodes))]
        return sub

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Stage 1 only (no answer, no episode); ``budget`` (or the config's ``budget``) caps the notes."""
        with self._lock:
            sub = self._connect_within(query, budget if budget is not None else self.cfg.budget)
            context, _ = self._serialise(sub)
            return self._evidence(sub, context)

    # ================================================================== Stage 2
    def _check(self, question: str, answer: str, sub: StepSubgraph) -> Verdict:
        context, order = self._serialise(sub)
        facts, _, extra = context.partition("\n\n")
        res = self._calls.json(
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

    def _edit(self, sub: StepSubgraph, verdict: Verdict) -> bool:
        """Apply the edit for the attributed failure; False when it changed nothing."""
        order = sub.ordered()
        if verdict.failure == OVER:
            drop = prune_choice(sub, order, verdict.distracting, prune_n=self.cfg.prune_n, min_keep=self.cfg.min_keep)
            for nid in drop:
                sub.unlink(nid)
                sub.pruned.append(nid)
            self.counters["pruned_links"] += len(drop)
            return bool(drop)
        if verdict.failure == GRANULARITY:
            targets = reshape_choice(order, verdict.reshape, reshape_n=self.cfg.reshape_n)
            for nid in targets:
                sub.replace(nid, self._reshape(sub.question, nid))
            return bool(targets)
        if not self.graph.semantic:
            return False
        query = f"{sub.question} {verdict.missing}".strip()
        q_vec = self._calls.embed([query])[0]
        pre, _, _ = self._pre_scores(query, q_vec)
        ids = [s.nid for s in self.graph.semantic]
        active_nb = {nid: self.graph.neighbours(nid) for nid in sub.nodes}
        excluded = set(sub.pruned) | set(sub.reshaped)
        added = expansion_candidates(
            sub, ids, pre, active_nb, n=self.cfg.expand_n, assoc_bonus=self.cfg.expand_assoc_bonus, excluded=excluded
        )
        for nid, score in added:
            sub.link(nid, min(score, 1.0), ("expansion",))
            sub.added.append(nid)
        self.counters["expanded_links"] += len(added)
        return bool(added)

    def _reshape(self, question: str, nid: str) -> str:
        """Content reshaping: a refined unit (new semantic node, association 'refines' → old) that
        replaces ``nid`` in the step subgraph and stays in the semantic layer."""
        node = self.graph.node(nid)
        source = " / ".join(self.graph.turns[d].render() for d in node.dia_ids if d in self.graph.turns) or node.text
        fallback_text = node.text if node.origin == "turn" else f"{node.text} (original: {source})"
        res = self._calls.json(
            "reshape",
            "retrieve",
            P.RESHAPE_SYSTEM,
            P.RESHAPE_USER.format(question=question, fact=node.text, date=node.time, source=source),
            validate=validate_text("text"),
            fallback=fallback_text,
            fallback_kind="expand the node with its source turn verbatim",
            max_tokens=200,
        )
        new = SemanticNode(
            self.graph.new_semantic_id(), res.value, node.dia_ids, node.speaker, node.time, "reshaped", nid
        )
        self.graph.add_semantic(new, self._calls.embed([new.text])[0])
        self.graph.add_edge(Edge(new.nid, nid, ASSOCIATION, 1.0, "refines"))
        self.counters["reshaped_nodes"] += 1
        return new.nid

    # ================================================================== QA loop
    def answer(self, item: QAItem, answer_fn: AnswerFn) -> tuple[str, Evidence]:
        """Stage 1 → answer → (Stage 2: check, attribute, edit, re-answer; ≤ T rounds) → commit the
        episode → Stage 3 every N episodes. Uses only ``item.question`` (never the gold)."""
        with self._lock:
            question = item.question
            sub = self._connect_within(question, self.cfg.budget)
            initial = list(sub.ordered())
            context, _ = self._serialise(sub)
            answers = [answer_fn(context)]
            attributions: list[str] = []
            verdict: Verdict | None = None
            if self.cfg.refine:
                for round_ in range(self.cfg.T + 1):
                    verdict = self._check(question, answers[-1], sub)
                    if verdict.supported is not False or round_ == self.cfg.T:
                        break
                    attributions.append(verdict.failure)
                    self.attributions[verdict.failure] += 1
                    if not self._edit(sub, verdict):
                        self.counters["edits_without_change"] += 1
                        break
                    context, _ = self._serialise(sub)
                    answers.append(answer_fn(context))
            elif self.cfg.consolidate:
                verdict = self._check(question, answers[-1], sub)  # the outcome PEMS needs
            supported = None if verdict is None else verdict.supported
            self._commit(question, answers[-1], sub, supported, attributions, len(answers))
            evidence = self._evidence(sub, context)
            evidence.rounds = len(answers)
            evidence.extra = {
                "fluxmem": {
                    "answers": answers,
                    "attributions": attributions,
                    "supported": supported,
                    "initial_nodes": initial,
                    "added": list(sub.added),
                    "pruned": list(sub.pruned),
                    "reshaped": dict(sub.reshaped),
                    "episodes": list(sub.episodes),
                    "skills": list(sub.skills),
                    "llm_verified": sub.verified,
                }
            }
            if (
                self.cfg.consolidate
                and self.cfg.consolidate_every > 0
                and self._since_consolidation >= self.cfg.consolidate_every
            ):
                self.consolidate()
            return answers[-1], evidence

    def _commit(
        self,
        question: str,
        answer: str,
        sub: StepSubgraph,
        supported: bool | None,
        attributions: list[str],
        rounds: int,
    ) -> None:
        ep = Episode(
            f"e{len(self.graph.episodes)}",
            question,
            answer,
            sub.ordered(),
            list(sub.skills),
            supported,
            attributions,
            rounds,
        )
        q_vec, traj_vec = self._calls.embed([question, ep.trajectory()])
        self.graph.add_episode(ep, q_vec, traj_vec)
        self._since_consolidation += 1

    def after_qa(self) -> None:
        """End-of-conversation consolidation (when enabled)."""
        with self._lock:
            if self.cfg.consolidate and self.cfg.consolidate_after_qa:
                self.consolidate()

    # ================================================================== Stage 3
    def consolidate(self) -> list[str]:
        """Cluster the episodes no skill was extracted from by trajectory similarity; extract one skill
        per cluster of at least ``min_cluster_size`` and refine it by PEMS. Returns the new skill ids."""
        with self._lock:
            self._since_consolidation = 0
            pending = [i for i, ep in enumerate(self.graph.episodes) if not self.graph.consolidated(ep.eid)]
            self.counters["consolidations"] += 1
            if len(pending) < self.cfg.min_cluster_size:
                return []
            clusters = c3.cluster_by_similarity(self.graph.ep_traj_vecs[pending], self.cfg.cluster_min_sim)
            made: list[str] = []
            for cluster in clusters:
                if len(cluster) < self.cfg.min_cluster_size:
                    continue
                members = [self.graph.episodes[pending[j]] for j in cluster]
                kid = self._make_skill(members)
                if kid is not None:
                    made.append(kid)
            return made

    def _make_skill(self, members: list[Episode]) -> str | None:
        shown = members[: self.cfg.max_cluster_episodes]
        listing = "\n".join(
            f"- Q: {e.question} | refinement: {', '.join(e.attributions) or 'none'} | A: {e.answer} | "
            f"supported: {'unknown' if e.supported is None else 'yes' if e.supported else 'no'}"
            for e in shown
        )
        res = self._calls.json(
            "skill_extract",
            "ingest",
            P.SKILL_EXTRACT_SYSTEM,
            P.SKILL_EXTRACT_USER.format(episodes=listing, max_words=self.cfg.skill_max_words),
            validate=validate_text("skill"),
            fallback=None,
            fallback_kind="no skill for this cluster",
            max_tokens=320,
        )
        if res.value is None:
            return None
        rerun = shown[: self.cfg.rerun_episodes]
        weights = c3.PEMSWeights(
            self.cfg.pems_w_success, self.cfg.pems_w_length, self.cfg.pems_w_drift, self.cfg.pems_length_ref
        )

        n_skills = len(self.graph.skills) + 1  # upstream's |V_proc| counts the skill being consolidated

        def evaluate(text: str, prev_vec: np.ndarray | None) -> c3.VersionScore:
            vec = self._calls.embed([text])[0]
            drift = 0.0 if prev_vec is None else float(1.0 - np.clip(vec @ prev_vec, -1.0, 1.0))
            results = tuple(self._rerun(text, ep) for ep in rerun)
            judged = [r[2] for r in results if r[2] is not None]
            success = sum(judged) / len(judged) if judged else 0.0
            if self.cfg.pems_formula == "upstream":
                words = len(text.split())
                score = c3.pems_upstream(success, n_skills, words, drift)
                return c3.VersionScore(text, vec, success, words, drift, score, results)
            tokens = count_tokens(text)
            return c3.VersionScore(text, vec, success, tokens, drift, c3.pems(success, tokens, drift, weights), results)

        def rewrite(cur: c3.VersionScore) -> str | None:
            lines = "\n".join(
                f"- Q: {q} | A: {a} | {'supported' if ok else 'unknown' if ok is None else 'NOT supported'}"
                for q, a, ok in cur.results
            )
            out = self._calls.json(
                "skill_refine",
                "ingest",
                P.SKILL_REFINE_SYSTEM,
                P.SKILL_REFINE_USER.format(
                    score=cur.score,
                    success=cur.success,
                    tokens=cur.tokens,
                    skill=cur.text,
                    results=lines,
                    max_words=self.cfg.skill_max_words,
                ),
                validate=validate_text("skill"),
                fallback=None,
                fallback_kind="keep the current skill version",
                max_tokens=320,
            )
            return out.value

        if self.cfg.pems_formula == "upstream":
            outcome = c3.refine_until_converged(
                evaluate(res.value, None),
                rewrite,
                evaluate,
                threshold=self.cfg.pems_threshold,
                rounds=self.cfg.pems_rounds,
            )
        else:
            outcome = c3.refine_skill(
                evaluate(res.value, None),
                rewrite,
                evaluate,
                threshold=self.cfg.pems_threshold,
                target=self.cfg.pems_target,
                max_iters=self.cfg.pems_max_iters,
            )
        self.counters["skill_rewrites"] += outcome.rewrites
        skill = Skill(
            f"k{len(self.graph.skills)}",
            outcome.best.text,
            [e.eid for e in members],
            outcome.version,
            round(outcome.best.score, 6),
            outcome.history,
        )
        self.graph.add_skill(skill, outcome.best.vec)
        return skill.kid

    def _rerun(self, skill: str, ep: Episode) -> tuple[str, str, bool | None]:
        """Re-run a source episode with the skill: (question, answer, self-judged success or None)."""
        facts = "\n".join(
            f"[{i + 1}] {self.graph.node(n).render()}" for i, n in enumerate(ep.semantic_ids[: self.cfg.k])
        )
        res = self._calls.json(
            "skill_rerun",
            "ingest",
            P.SKILL_RERUN_SYSTEM,
            P.SKILL_RERUN_USER.format(skill=skill, facts=facts or "(none)", question=ep.question),
            validate=validate_rerun,
            fallback=None,
            fallback_kind="re-run outcome unknown (left out of the success rate)",
            max_tokens=128,
        )
        if res.value is None:
            return ep.question, "", None
        return ep.question, res.value[0], res.value[1]

    # ================================================================== persistence / stats
    def save(self, path: Path) -> None:
        with self._lock:
            self.graph.save(Path(path))

    def load(self, path: Path) -> None:
        with self._lock:
            self.graph = FluxGraph.load(Path(path), self.cfg.bm25_k1, self.cfg.bm25_b)
            self._since_consolidation = 0

    def stats(self) -> dict[str, Any]:
        with self._lock:
            g = self.graph
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
                "attributions": dict(self.attributions),
                "counters": dict(self.counters),
            }

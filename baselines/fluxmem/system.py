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
from baselines.fluxmem.calls import FluxCalls, validate_rerun, validate_text
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.feedback import Refiner
from baselines.fluxmem.graph import ASSOCIATION, EXTRACTION, Episode, FluxGraph, Skill
from baselines.fluxmem.ingestion import add_turn, embed_and_link
from baselines.fluxmem.refine import Verdict
from baselines.fluxmem.relevance import StepSubgraph
from baselines.fluxmem.retrieval import Connector, evidence, pre_scores, serialise
from memcore.interfaces import ChatBackbone, Embedder
from memcore.text import count_tokens
from memcore.types import Evidence, QAItem, Turn

AnswerFn = Callable[[str], str]


class FluxMem:
    """MemorySystem + SelfAnsweringMemory. ``backbone`` / ``embedder`` are providers, called only when
    needed (so a build without fact extraction starts no LLM server). All public methods hold one
    lock: QA is sequential by design (episodes accumulate), ``retrieve`` is safe from any thread.

    The stages live in their own modules and work on whatever ``self.graph`` is at the call (``load``
    replaces it): construction in ``ingestion``, Stage 1 in ``retrieval`` (:class:`Connector`), Stage 2 in
    ``feedback`` (:class:`Refiner`); this class runs the QA loop and Stage 3."""

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
        self._connector = Connector(cfg, self._calls)
        self._refiner = Refiner(cfg, self._calls)

    @property
    def backbone(self) -> ChatBackbone:
        return self._calls.backbone

    @property
    def embedder(self) -> Embedder:
        return self._calls.embedder

    def _pre_scores(self, query: str, q_vec: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(fused dense + BM25 score, normalised dense, normalised BM25) for every semantic node."""
        return pre_scores(self.graph, self.cfg, query, q_vec)

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
    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Stage 1 only (no answer, no episode); ``budget`` (or the config's ``budget``) caps the notes."""
        with self._lock:
            sub = self._connector.connect_within(self.graph, query, budget if budget is not None else self.cfg.budget)
            context, _ = serialise(self.graph, sub)
            return evidence(self.graph, sub, context)

    # ================================================================== QA loop
    def answer(self, item: QAItem, answer_fn: AnswerFn) -> tuple[str, Evidence]:
        """Stage 1 → answer → (Stage 2: check, attribute, edit, re-answer; ≤ T rounds) → commit the
        episode → Stage 3 every N episodes. Uses only ``item.question`` (never the gold)."""
        with self._lock:
            question = item.question
            sub = self._connector.connect_within(self.graph, question, self.cfg.budget)
            initial = list(sub.ordered())
            context, _ = serialise(self.graph, sub)
            answers = [answer_fn(context)]
            attributions: list[str] = []
            verdict: Verdict | None = None
            if self.cfg.refine:
                for round_ in range(self.cfg.T + 1):
                    verdict = self._refiner.check(self.graph, question, answers[-1], sub)
                    if verdict.supported is not False or round_ == self.cfg.T:
                        break
                    attributions.append(verdict.failure)
                    self.attributions[verdict.failure] += 1
                    if not self._refiner.edit(self.graph, sub, verdict):
                        self.counters["edits_without_change"] += 1
                        break
                    context, _ = serialise(self.graph, sub)
                    answers.append(answer_fn(context))
            elif self.cfg.consolidate:
                verdict = self._refiner.check(self.graph, question, answers[-1], sub)  # the outcome PEMS needs
            supported = None if verdict is None else verdict.supported
            self._commit(question, answers[-1], sub, supported, attributions, len(answers))
            result = evidence(self.graph, sub, context)
            result.rounds = len(answers)
            result.extra = {
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
            return answers[-1], result

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

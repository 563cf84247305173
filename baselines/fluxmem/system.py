"""FluxMem on LoCoMo: an evolving three-layer memory graph that answers its own questions.

Construction: each session's text → upstream's 512-character chunks (semantic nodes, no LLM call; or, with
``unit: fact``, each turn's atomic facts by one LLM call per turn), embedded at ``finalize`` and linked by
association edges. QA (sequential, through ``answer``):
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

from baselines.fluxmem.calls import FluxCalls
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.feedback import Refiner
from baselines.fluxmem.graph import Episode, FluxGraph
from baselines.fluxmem.ingestion import add_session_chunks, add_turn, embed_and_link
from baselines.fluxmem.refine import Verdict
from baselines.fluxmem.relevance import StepSubgraph
from baselines.fluxmem.retrieval import Connector, evidence, pre_scores, serialise
from baselines.fluxmem.skills import SkillBuilder
from baselines.fluxmem.stats import graph_stats
from memcore.interfaces import ChatBackbone, Embedder
from memcore.types import Evidence, QAItem, Turn

AnswerFn = Callable[[str], str]


class FluxMem:
    """MemorySystem + SelfAnsweringMemory. ``backbone`` / ``embedder`` are providers, called only when
    needed (so a build without fact extraction starts no LLM server). All public methods hold one
    lock: QA is sequential by design (episodes accumulate), ``retrieve`` is safe from any thread.

    The stages live in their own modules and work on whatever ``self.graph`` is at the call (``load``
    replaces it): construction in ``ingestion``, Stage 1 in ``retrieval`` (:class:`Connector`), Stage 2 in
    ``feedback`` (:class:`Refiner`), Stage 3 in ``skills`` (:class:`SkillBuilder`); this class runs the QA loop."""

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
        self._session: list[Turn] = []  # unit: chunk — the current session's turns, chunked when it is complete
        self.counters: Counter[str] = Counter()
        self.attributions: Counter[str] = Counter()
        self._calls = FluxCalls(cfg, backbone, embedder, seed, self.counters)
        self._connector = Connector(cfg, self._calls)
        self._refiner = Refiner(cfg, self._calls)
        self._skills = SkillBuilder(cfg, self._calls)

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
        """Record the turn; ``unit: chunk`` chunks a session once its last turn is in (the next session's first
        turn, or ``finalize``), the other units add the turn's nodes at once."""
        with self._lock:
            if self.cfg.unit != "chunk":
                add_turn(self.graph, self._calls, self.cfg, turn)
                return
            self.graph.turns[turn.dia_id] = turn
            if self._session and self._session[-1].session_index != turn.session_index:
                self._flush_session()
            self._session.append(turn)

    def _flush_session(self) -> None:
        add_session_chunks(self.graph, self.cfg, self._session)
        self._session = []

    def finalize(self) -> None:
        """Chunk the last session (``unit: chunk``), embed the semantic layer in one batch and build its
        association edges."""
        with self._lock:
            self._flush_session()
            embed_and_link(self.graph, self._calls, self.cfg)

    # ================================================================== Stage 1
    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Stage 1 only (no answer, no episode); ``budget`` (or the config's ``note_cap``) caps the notes."""
        with self._lock:
            sub = self._connector.connect_within(self.graph, query, budget if budget is not None else self.cfg.note_cap)
            context, _ = serialise(self.graph, sub)
            return evidence(self.graph, sub, context)

    # ================================================================== QA loop
    def answer(self, item: QAItem, answer_fn: AnswerFn) -> tuple[str, Evidence]:
        """Stage 1 → answer → (Stage 2: check, attribute, edit, re-answer; ≤ T rounds) → commit the
        episode → Stage 3 every N episodes. Uses only ``item.question`` (never the gold)."""
        with self._lock:
            question = item.question
            sub = self._connector.connect_within(self.graph, question, self.cfg.note_cap)
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
            return self._skills.consolidate(self.graph)

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
            return graph_stats(self.graph, self.attributions, self.counters)

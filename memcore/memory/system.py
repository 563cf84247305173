"""The ``MemCoRe`` memory system and its registered specs ``SPEC`` (memcore, LLM judge) and
``SPEC_CHEAP`` (memcore-cheap: cosine gate, YAKE keywords, rule-based decomposition and IER; zero LLM calls)."""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.cache import stable_hash
from memcore.memory.config import ABLATIONS, CONSTRUCTION_KEYS, ConfigError, MemCoReConfig, Switches
from memcore.memory.construction import ConstructionCounters, Constructor
from memcore.memory.ier import Refiner
from memcore.memory.ingestion import Ingestor, StatisticalKeywords
from memcore.memory.judge_view import note_view
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import Note, NoteStore, RawTurn, VectorMatrix
from memcore.memory.packing import (
    Hierarchy,
    HierarchyIndex,
    Packed,
    Packer,
    PackQuery,
    PackSettings,
    TurnIndex,
    packing_label,
)
from memcore.memory.persistence import MemoryFiles, load_memory, save_memory
from memcore.memory.retrieval import CHANNELS, Decomposer, RetrievalIndex, Retriever
from memcore.memory.stats import distribution, note_shape, retrieval_summary
from memcore.memory.topics import Topics, compute_topics
from memcore.packing.budget import BUDGET_KEY, budget_record, fit_evidence, rendered_tokens
from memcore.packing.knobs import TURN_KNOB_DEFAULTS
from memcore.schema import method_validator
from memcore.types import Evidence, EvidenceNote, Turn

NEAR_DUP_COSINE = 0.9
INGEST_BATCH = 32


class NotFinalizedError(RuntimeError):
    pass


def near_duplicate_rate(vecs: np.ndarray, threshold: float = NEAR_DUP_COSINE) -> float:
    """Share of retrieved items whose cosine with a higher-ranked item is ≥ ``threshold``."""
    n = len(vecs)
    if n < 2:
        return 0.0
    sims = vecs @ vecs.T
    upper = np.triu(sims >= threshold, k=1)  # [i, j] with i < j: j duplicates an earlier i
    return float(upper.any(axis=0).sum() / n)


class MemCoRe:
    """MemorySystem: ``ingest`` turns in order, ``finalize``, then ``retrieve`` (thread-safe), ``save``/``load``.

    ``backbone`` is a getter called only in LLM mode (cheap mode never touches it); ``embedder`` is used in
    both modes.
    """

    #: The gate/writer class; the batched variant swaps in one that judges a chunk per call.
    constructor_class: type[Constructor] = Constructor

    def __init__(
        self,
        cfg: MemCoReConfig,
        switches: Switches,
        *,
        embedder: Embedder,
        backbone: Callable[[], ChatBackbone] | None,
        seed: int = 0,
    ) -> None:
        if cfg.uses_llm and backbone is None:
            raise ConfigError("MemCoRe with judge=llm needs a chat backbone")
        self.cfg = cfg
        self.sw = switches
        self.embedder = embedder
        self._backbone_getter = backbone if cfg.uses_llm else None
        self.seed = seed
        self.store = NoteStore(dim=int(embedder.dim), ann_threshold=cfg.ann_threshold)
        self.kindex = KeywordIndex()
        self.topics = Topics.empty(int(embedder.dim))
        self.kw_embeddings = np.zeros((0, int(embedder.dim)), dtype=np.float32)
        self.extractor = StatisticalKeywords(ngram=cfg.cheap_keyword_ngram)
        self._constructor: Constructor | None = None
        self._counters = ConstructionCounters()
        self._ingestor: Ingestor | None = None
        self._recent: list[Turn] = []
        self._pending: list[Turn] = []
        self._turn_callback: Callable[[], None] | None = None
        self._ingest_callback: Callable[[int], None] | None = None  # StagedIngest: progress follows ingestion
        self._topics_at = 0
        self._topic_recomputes = 0
        self._refiner: Refiner | None = None
        self._stats_lock = threading.Lock()
        self._rounds: Counter[int] = Counter()
        self._ier_stops: Counter[str] = Counter()
        self._retrieve_fallbacks: Counter[str] = Counter()
        self._near_dup_sum = 0.0
        self._retrieves = 0
        self._channel_counts: Counter[str] = Counter()
        self._packer: Packer | None = None
        self._pack_counts: Counter[str] = Counter()

    # ------------------------------------------------------------------ helpers
    @property
    def backbone(self) -> ChatBackbone | None:
        return self._backbone_getter() if self._backbone_getter is not None else None

    def meta(self) -> dict[str, Any]:
        construction = {k: getattr(self.cfg, k) for k in CONSTRUCTION_KEYS}
        switches = self.sw.construction()
        return {
            "format_version": self.cfg.format_version,
            "construction_hash": stable_hash({"construction": construction, "switches": switches})[:20],
            "construction": construction,
            "switches": switches,
            "embedder": getattr(self.embedder, "name", type(self.embedder).__name__),
            "dim": int(self.embedder.dim),
        }

    def _construction(self) -> Constructor:
        if self._constructor is None:
            backbone = self.backbone
            self._ingestor = Ingestor(
                backbone=backbone,
                denoise=self.sw.denoise,
                max_keywords=self.cfg.max_keywords,
                context_turns=self.cfg.context_turns,
                ngram=self.cfg.cheap_keyword_ngram,
                unigrams=self.cfg.cheap_keyword_unigrams,
                temperature=self.cfg.temperature,
                max_tokens=self.cfg.max_tokens,
                seed=self.seed,
                resolve_dates=self.cfg.resolve_dates,
            )
            self._constructor = self.constructor_class(
                store=self.store,
                keywords=self.kindex,
                embedder=self.embedder,
                backbone=backbone,
                cfg=self.cfg,
                switches=self.sw,
                seed=self.seed,
                counters=self._counters,
            )
        return self._constructor

    def render(self, nid: int) -> str:
        """The text of note ``nid`` as the answerer sees it (``evidence_text``: raw | context | both)."""
        note = self.store.notes[nid]
        mode = self.cfg.evidence_text
        if mode == "raw" or (mode == "both" and not note.denoised):
            return note.raw_text()
        if mode == "context":
            return note.context
        dated = len(note.dates) > 1  # a note spanning several sessions shows each turn's own date
        raw = "\n".join(f"  > {r.render_dated() if dated else r.render()}" for r in note.raws)
        return f"{note.context}\n{raw}"

    def judge_view(self, nid: int, question: str, tokens: int) -> str:
        """Note ``nid`` as the IER judge sees it: dates, context and best-matching turns within ``tokens``."""
        return note_view(self.store.notes[nid], question, tokens, self.cfg.evidence_text)

    # ------------------------------------------------------------------ build
    def ingest(self, turn: Turn) -> None:
        """Ingest one turn (in conversation order). Turns are buffered: a turn's ingestion and context embedding
        do not depend on the memory, so they are batched; the gate then runs turn by turn in order, exactly as
        if each turn were processed on arrival. In LLM mode a batch is ``INGEST_BATCH`` turns; in cheap mode,
        whose ingestion is free, every turn waits for :meth:`finalize`, so the contexts are embedded in one
        call, sorted by length into batches with little padding (a batch of 32 turns in conversation order is
        one padded batch: 1.7x the encoding time)."""
        self._refiner = None  # memory changes: retrieval needs finalize() again
        self._pending.append(turn)
        if self.cfg.uses_llm and len(self._pending) >= INGEST_BATCH:
            self._flush()

    def set_turn_callback(self, callback: Callable[[], None] | None) -> None:
        """``BufferedIngest``: ``callback`` runs after each turn's gate decision is applied (it may raise to stop
        the build there)."""
        self._turn_callback = callback

    def _turn_built(self) -> None:
        if self._turn_callback is not None:
            self._turn_callback()

    def set_ingest_callback(self, callback: Callable[[int], None] | None) -> None:
        """``StagedIngest``: ``callback(n)`` runs after ``n`` buffered turns finished ingestion, before the gate
        (it may raise to stop the build there)."""
        self._ingest_callback = callback

    def _turns_ingested(self, n: int) -> None:
        if self._ingest_callback is not None:
            self._ingest_callback(n)

    def _flush(self) -> None:
        if not self._pending:
            return
        cons = self._construction()
        assert self._ingestor is not None
        batch, self._pending = self._pending, []
        results = []
        for turn in batch:
            results.append(self._ingestor.ingest(turn, self._recent))
            self._recent = [*self._recent, turn][-max(1, self.cfg.context_turns) :]
            self._turns_ingested(1)
        vecs = self.embedder.encode([r.context for r in results])
        for turn, ing, vec in zip(batch, results, vecs, strict=True):
            cons.add(RawTurn(turn.dia_id, turn.speaker, turn.text, turn.session_time_raw), ing, vec)
            self._turn_built()
        # No periodic topic recompute here: nothing reads topics before finalize() (the gate uses the
        # embedding pre-screen; retrieval needs finalize), and Leiden restarts from scratch each time, so a
        # recompute every topic_recompute_every notes was dead work (~25% of a cheap-mode LoCoMo run).

    def _recompute_topics(self) -> None:
        self.topics = compute_topics(
            self.kindex,
            self.store.vectors.matrix,
            topic_min=self.cfg.topic_min,
            topic_max=self.cfg.topic_max,
            resolution=self.cfg.leiden_resolution,
            hub_max_fraction=self.cfg.hub_max_fraction,
            seed=self.seed,
        )
        self._topics_at = len(self.store)
        self._topic_recomputes += 1

    def finalize(self) -> None:
        """Recompute topics, embed keywords, freeze indices; afterwards ``retrieve`` is thread-safe."""
        self._flush()
        self._recompute_topics()
        self.kw_embeddings = (
            self.embedder.encode(self.kindex.keywords)
            if len(self.kindex)
            else np.zeros((0, self.store.dim), dtype=np.float32)
        )
        self._freeze()

    def _freeze(self) -> None:
        self.store.freeze()
        kw_vectors = VectorMatrix(self.store.dim, ann_threshold=self.cfg.ann_threshold, index=self.cfg.index)
        kw_vectors.extend(self.kw_embeddings)
        kw_vectors.freeze()
        indptr, ids = self.kindex.posting_arrays()
        index = RetrievalIndex(
            self.store, self.kindex, self.topics, kw_vectors, self.kindex.idf(len(self.store)), indptr, ids
        )
        backbone = self.backbone
        retriever = Retriever(index, self.embedder, self.cfg, self.sw)
        self._refiner = Refiner(
            retriever=retriever,
            decomposer=Decomposer(backbone, self.extractor, self.cfg, self.seed),
            kindex=self.kindex,
            backbone=backbone,
            view=self.judge_view,
            cfg=self.cfg,
            switches=self.sw,
            seed=self.seed,
        )
        self._packer = None
        if self.cfg.pack:
            settings = PackSettings(
                notes=self.cfg.pack_notes,
                note_weight=self.cfg.pack_note_weight,
                subquery_weight=self.cfg.ier_subquery_weight,
                rrf_k=self.cfg.rrf_k,
                summary=self.cfg.pack_summary,
                frame=self.cfg.pack_frame,
                cues=self.cfg.cues_fused_with(self.cfg.rrf_k),
                hierarchy=self.pack_hierarchy(),
                windows=self.cfg.windows,
            )
            turns = TurnIndex(self.store, self.embedder)
            hx = None
            if settings.hierarchy.active:
                hx = HierarchyIndex(
                    turns,
                    self.kindex,
                    self.topics,
                    index.idf,
                    hub_max_fraction=self.cfg.hub_max_fraction,
                    graph=settings.hierarchy.keyword > 0 and settings.hierarchy.keyword_graph > 0,
                    link_text=settings.hierarchy.link_text > 0,
                )
            self._packer = Packer(turns, self.embedder, settings, hx)

    def pack_hierarchy(self) -> Hierarchy:
        """The packer's hierarchy lists as the config and the ablation switches leave them: a layer switched off
        (``wo_keyword``, ``wo_topic``, ``wo_neighbor``: the link lists follow the neighbour expansion's edges) has
        no list in the packer either."""
        c, sw = self.cfg, self.sw
        return Hierarchy(
            keyword=c.pack_keyword if sw.keyword else 0.0,
            keyword_graph=c.pack_keyword_graph,
            topic=c.pack_topic if sw.topic else 0.0,
            link=c.pack_link if sw.neighbor else 0.0,
            link_anchors=c.pack_link_anchors,
            link_text=c.pack_link_text if sw.neighbor else 0.0,
        )

    # ------------------------------------------------------------------ query
    def prefetch_queries(self, questions: Sequence[str]) -> None:
        """Cheap mode: embed in one batch the texts the first round embeds for each question (the rule-based plan's
        topic and entities; the packer's query is the question, the topic). LLM mode plans with the LLM, and IER's
        later rounds depend on the first, so nothing of them is prefetched."""
        if self.cfg.uses_llm or not questions:
            return
        if self._refiner is None:
            raise NotFinalizedError("MemCoRe.prefetch_queries() needs finalize() (or load()) after the last ingest()")
        texts: list[str] = []
        for question in questions:
            plan = self._refiner.decomposer.cheap(question)
            texts += [plan.topic or plan.query, *plan.entities]
        self.embedder.encode(texts)

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Tri-pathway retrieval with IER; ``budget`` overrides K_final (the number of notes). With ``pack`` the
        evidence is the packed raw turns within ``token_cap`` (None: the tokens of the top K_final whole
        notes, so packing spends what whole notes would)."""
        return self._retrieve(query, budget, None)

    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
        """``memcore.packing.budget.ContextBudgeted``: at most ``tokens`` context tokens. With ``pack`` the packed turns
        of the ranked notes fill them; without, the whole notes are filled by the shared rule (fit_evidence)."""
        if tokens < 1:
            raise ValueError(f"a context budget must be >= 1 token, got {tokens}")
        if not self.cfg.pack:
            return fit_evidence(self._retrieve(query, budget, None, capped=True), tokens)
        return self._retrieve(query, budget, tokens)

    def _retrieve(self, query: str, budget: int | None, tokens: int | None, capped: bool = False) -> Evidence:
        """The top-k evidence of ``query`` (packed to ``tokens`` with packing on). ``capped``: a context-token cap
        will cut this evidence, so a refined question also records its final pool before the cap."""
        refiner = self._refiner
        if refiner is None:
            raise NotFinalizedError("MemCoRe.retrieve() needs finalize() (or load()) after the last ingest()")
        k = int(budget) if budget is not None else self.cfg.k_final
        if k < 1:
            raise ValueError(f"retrieve budget must be >= 1, got {budget}")
        pool = refiner.retrieve(query, k)
        top = pool.ranked[:k]
        notes: list[EvidenceNote] = []
        for nid in top:
            note: Note = self.store.notes[nid]
            chans = tuple(c for c in CHANNELS if c in pool.channels.get(nid, set()))
            notes.append(
                EvidenceNote(
                    f"n{nid}", self.render(nid), note.source_ids, pool.scores.get(nid, 0.0), chans, note.timestamp
                )
            )
        vecs = self.store.vectors.matrix[np.asarray(top, dtype=np.int64)] if top else np.zeros((0, self.store.dim))
        dup = near_duplicate_rate(vecs)
        by_channel = Counter(c for n in notes for c in n.channels)
        with self._stats_lock:
            self._retrieves += 1
            self._rounds[pool.rounds] += 1
            self._ier_stops[pool.stop] += 1
            self._near_dup_sum += dup
            self._channel_counts.update(by_channel)
            self._retrieve_fallbacks.update(pool.fallbacks)
        extra = {
            "rounds_log": pool.log,
            "ier_stop": pool.stop,
            "near_dup_rate": round(dup, 4),
            "channel_counts": dict(by_channel),
            "fallbacks": pool.fallbacks,
        }
        if pool.rounds > 1:  # what refinement changed: the source turns of round 1's top k, beside the final ones
            extra["round1_dia_ids"] = sorted({d for nid in pool.first[:k] for d in self.store.notes[nid].source_ids})
            if capped or tokens is not None:  # round 1's pool is uncapped: compare it with the final one uncapped
                extra["final_pool_dia_ids"] = sorted({d for nid in top for d in self.store.notes[nid].source_ids})
        if self._packer is None:
            return Evidence(notes=notes, rounds=pool.rounds, extra=extra)
        whole = rendered_tokens(notes)
        target = tokens if tokens is not None else (self.cfg.token_cap or max(1, whole))
        queries = [query, *(sq["query"] for entry in pool.log for sq in entry.get("sub_queries", []))]
        packed = self._packer.pack(
            PackQuery(queries, pool.ranked, pool.channels, pool.first_keywords, pool.first_topics), target
        )
        self._count_pack(packed)
        extra["packing"] = {
            "tokens": target,
            "used": packed.tokens,
            "turns": len(packed.notes),
            "candidates": packed.candidates,
            "cut": packed.cut,
            "whole_note_tokens": whole,
            "notes": len({n.note_id.split(".")[0] for n in packed.notes}),
        }
        if tokens is not None:
            extra[BUDGET_KEY] = budget_record(
                tokens, kept=len(packed.notes), dropped=packed.skipped, cut=packed.cut, how="memcore_packing"
            )
        return Evidence(notes=packed.notes, context=packed.context, rounds=pool.rounds, extra=extra)

    def _count_pack(self, packed: Packed) -> None:
        with self._stats_lock:
            self._pack_counts["retrieves"] += 1
            self._pack_counts["turns"] += len(packed.notes)
            self._pack_counts["tokens"] += packed.tokens
            self._pack_counts["candidates"] += packed.candidates
            self._pack_counts["cut"] += int(packed.cut)

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        if self._refiner is None:
            raise NotFinalizedError("MemCoRe.save() needs finalize() after the last ingest()")
        extra = {"topic_recomputes": self._topic_recomputes}
        save_memory(
            Path(path),
            MemoryFiles(self.store, self.kindex, self.topics, self.kw_embeddings, self._counters, extra),
            self.meta(),
        )

    def load(self, path: Path) -> None:
        """Restore a saved memory (refused when built under another construction config or embedder)."""
        files = load_memory(Path(path), self.meta(), ann_threshold=self.cfg.ann_threshold)
        self.store, self.kindex, self.topics, self.kw_embeddings = (
            files.store,
            files.kindex,
            files.topics,
            files.kw_embeddings,
        )
        self._counters = files.counters
        self._constructor = None
        self._topic_recomputes = int(files.extra.get("topic_recomputes", 0))
        self._topics_at = len(self.store)
        self._freeze()

    # ------------------------------------------------------------------ stats
    def stats(self) -> dict[str, Any]:
        counters = self._counters
        shape = note_shape(self.store.notes)
        sizes = self.topics.sizes
        topic_notes = [len(t) for t in self.topics.notes]
        with self._stats_lock:
            rounds = dict(sorted(self._rounds.items()))
            ier_stops = dict(sorted(self._ier_stops.items()))
            retrieves = self._retrieves
            near_dup = self._near_dup_sum / retrieves if retrieves else None
            channel_counts = dict(self._channel_counts)
            r_fallbacks = dict(self._retrieve_fallbacks)
            pack_counts = dict(self._pack_counts)
        return {
            "mode": "llm" if self.cfg.uses_llm else "embedding (cheap variant)",
            "ablation": self.sw.name,
            **shape,
            "construction": counters.to_json(),
            "llm_calls_per_turn": round(counters.llm_calls / shape["turns"], 4) if shape["turns"] else 0.0,
            "edges": len(self.store.edges),
            "edge_types": dict(Counter(e.etype for e in self.store.edges.values())),
            "keywords": len(self.kindex),
            "topics": {
                "count": len(self.topics),
                "recomputes": self._topic_recomputes,
                "size_keywords": distribution(sizes),
                "size_notes": distribution(topic_notes),
                "bounds": [self.cfg.topic_min, self.cfg.topic_max],
                **self.topics.info,
            },
            "retrieval": retrieval_summary(retrieves, rounds, ier_stops, near_dup, channel_counts, r_fallbacks),
            **({"packing": pack_counts} if self.cfg.pack else {}),
            "fallbacks": {**counters.fallbacks, **{f"retrieve:{k}": v for k, v in r_fallbacks.items()}},
        }


# ---------------------------------------------------------------------- specs
def _check_name(cfg: MemCoReConfig, expected_cheap: bool) -> None:
    if expected_cheap and cfg.uses_llm:
        raise ConfigError(
            "method memcore-cheap is the no-LLM variant (judge: embedding); for the LLM judge use method=memcore"
        )
    if not expected_cheap and not cfg.uses_llm:
        raise ConfigError(
            "judge=embedding is the cheap variant; run it as method=memcore-cheap so tables label it as a variant"
        )


def _factory(expected_cheap: bool) -> Callable[[MethodContext], MemCoRe]:
    def make(ctx: MethodContext) -> MemCoRe:
        cfg = MemCoReConfig.from_dict(dict(ctx.config))
        _check_name(cfg, expected_cheap)
        switches = Switches.from_dict(dict(ctx.ablation))
        backbone = (lambda: ctx.backbone) if cfg.uses_llm else None
        return MemCoRe(cfg, switches, embedder=ctx.embedder, backbone=backbone, seed=ctx.seed)

    return make


#: MemCoRe knobs added after runs were recorded, with the value that reproduces those runs (see
#: ``MethodSpec.added_key_defaults``).
ADDED_KEY_DEFAULTS: dict[str, Any] = {
    "ier_prompt": "v2",
    "resolve_dates": False,
    "pack": False,
    "pack_notes": 50,
    "pack_note_weight": 1.0,
    "pack_summary": False,
    "token_cap": None,
    "pack_keyword": 0.0,
    "pack_keyword_graph": 0,
    "pack_topic": 0.0,
    "pack_link": 0.0,
    "pack_link_anchors": 10,
    "pack_link_text": 0.0,
    **{k: v for k, v in TURN_KNOB_DEFAULTS.items() if k.startswith("pack_window_")},
}


def _uses_llm(config: dict[str, Any], ablation: dict[str, Any]) -> bool:
    return config.get("judge", "llm") == "llm"


def _check_variant(name: str, cfg: dict[str, Any]) -> None:
    """The section builds (MemCoReConfig's own checks) and its judge matches the method name."""
    _check_name(MemCoReConfig.from_dict(cfg), expected_cheap=name == "memcore-cheap")


SPEC = MethodSpec(
    name="memcore",
    factory=_factory(expected_cheap=False),
    ingest_uses_llm=_uses_llm,
    config_schema=(MemCoReConfig,),
    validate_config=method_validator(
        MemCoReConfig, build=_check_variant, after=lambda name, cfg, ablation: Switches.from_dict(ablation)
    ),
    ablation_schema=Switches,
    ablations=ABLATIONS,
    retrieve_uses_llm=_uses_llm,
    staged_ingest=True,  # turns are ingested (LLM) in buffers of 32, then gated one by one
    description="MemCoRe: LLM-gated Merge/Link/Append notes, keyword graph + Leiden topics, tri-pathway retrieval, RRF, IER",
    added_key_defaults=ADDED_KEY_DEFAULTS,
    packing_label=packing_label,
    paper_row="memcore",
    report_rank=70,
    run_summary="memcore.memory.ier_summary:IER_SUMMARY",
    sim_replies="memcore.memory.sim:REPLIES",
    bad_configs=(
        (("method.tau_merge=2",), ("method.tau_merge=2", "in [0, 1]")),
        (("method.k_final=0",), ("method.k_final=0", ">= 1")),
        (("method.judge=gpt",), ("method.judge='gpt'", "llm, embedding")),
        (("method.evidence_text=all",), ("method.evidence_text='all'", "raw, context, both")),
        (("method.candidates=many",), ("method.candidates='many'", "an integer")),
        (("+method.tau_mrge=0.5",), ("method.tau_mrge=0.5", "unknown key", "tau_merge")),
        (("method.tau_mrge=0.5",), ("method.tau_mrge=0.5", "unknown key", "tau_merge")),
    ),
)

SPEC_CHEAP = dataclasses.replace(
    SPEC,
    name="memcore-cheap",
    factory=_factory(expected_cheap=True),
    build_cpu_bound=True,  # YAKE keywords per turn + Leiden: seconds of CPU per conversation
    description="MemCoRe cheap variant (not the paper's method): cosine gate, YAKE keywords, rule-based decomposition and IER; no LLM",
    paper_row="",
    report_rank=None,
    bad_configs=(
        (("method.tau_merge=2",), ("method.tau_merge=2", "memcore-cheap", "in [0, 1]")),
        (("method.judge=llm",), ("memcore-cheap", "method=memcore")),
        (("method.pack_keyword=-0.5",), ("method.pack_keyword=-0.5", ">= 0")),
        (("method.pack_window_width=0",), ("method.pack_window_width=0", ">= 1")),
        (("method.pack_lnk=1",), ("method.pack_lnk=1", "unknown key", "pack_link")),
    ),
)

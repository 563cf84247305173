"""LightMem (Fang et al. 2025, zjunlp/LightMem) behind memcore's MemorySystem.

Pipeline per turn: sensory pre-compression (``compress.py``) → sensory buffer of at most
``sensory_buffer_tokens``; when it would overflow, topic boundaries (``segment.py``) cut it into
segments (the tail after the last boundary stays buffered) → short-term memory collects segments
until ``stm_buffer_tokens`` would overflow, then ONE LLM call extracts standalone facts from the
whole batch ("--- Topic k ---" blocks) → long-term entries (fact, source turn, its segment's turns,
timestamp), embedded. ``finalize`` flushes both buffers and runs the offline ("sleep-time")
consolidation: each entry's update queue holds its most similar earlier entries; an entry that
appears in newer entries' queues with similarity ≥ ``update_threshold`` gets one LLM call that
updates (integrates the newer ones), deletes (contradicted) or keeps it. Retrieval is embedding
top-k over the long-term entries; it uses no LLM.

The buffers are in ``buffers.py``, extraction and the entry type in ``extraction.py``, the sleep-time
update in ``updates.py``; this module wires them into the MemorySystem.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lightmem.buffers import Batch, BufferedTurn, TopicBuffers
from baselines.lightmem.compress import IdentityCompressor, IdfCompressor
from baselines.lightmem.config import LightMemConfig, config_from_dict
from baselines.lightmem.extraction import FactExtractor, LightMemEntry, parse_facts
from baselines.lightmem.llmlingua import LlmLingua2Compressor, llmlingua_unavailable
from baselines.lightmem.updates import OfflineUpdater, parse_update
from memcore.errors import ConfigError
from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.schema import method_validator
from memcore.text import count_tokens
from memcore.types import Evidence, EvidenceNote, Turn

# LightMemEntry, parse_facts and parse_update are re-exported: this module is the method's public face.
__all__ = ["SPEC", "LightMem", "LightMemEntry", "parse_facts", "parse_update"]

SNAPSHOT_FILE = "lightmem.json"
VECTORS_FILE = "lightmem_vectors.npy"


class LightMem:
    """One conversation's LightMem. ``ingest`` in order, then ``finalize``; ``retrieve`` is
    read-only and thread-safe afterwards."""

    def __init__(
        self,
        config: LightMemConfig,
        backbone: Callable[[], ChatBackbone],
        embedder: Callable[[], Embedder],
        *,
        prompt_token_cap: int | None = None,
        seed: int = 0,
    ) -> None:
        """``backbone`` / ``embedder`` are zero-argument callables (the runner's lazy resources), so
        loading a snapshot never starts an LLM server. ``prompt_token_cap`` is the backbone's prompt token cap:
        an extraction call's reply budget is ``extract_max_tokens`` capped to what is left of it after the
        prompt. ``seed`` seeds the calls (temperature > 0). The LLMLingua-2 model is loaded at the first ingested turn."""
        self.cfg = config
        self._backbone = backbone
        self._embedder = embedder
        self._compressor: Any = None
        self._order = 0
        # What provenance is attributed against: each ingested turn's rendered text, and the speakers' names
        # (every turn carries them, so they are left out of the comparison).
        self._turn_text: dict[str, str] = {}
        self._speakers: dict[str, None] = {}
        self.entries: list[LightMemEntry] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._lock = threading.Lock()
        self._finalized = False
        self.counters: dict[str, int] = {
            "turns": 0,
            "raw_tokens": 0,
            "compressed_tokens": 0,
            "segments": 0,
            "extraction_calls": 0,
            "extraction_fallbacks": 0,
            "facts": 0,
            "facts_without_source": 0,
            "facts_unattributed": 0,
            "facts_source_clamped": 0,
            "facts_without_stamp": 0,
            "facts_dropped": 0,
            "update_calls": 0,
            "update_fallbacks": 0,
            "updated": 0,
            "updates_unattributed": 0,
            "deleted": 0,
        }
        self._buffers = TopicBuffers(config, embedder, self._extract, self.counters)
        self._extractor = FactExtractor(config, backbone, self.counters, prompt_token_cap=prompt_token_cap, seed=seed)
        self._updater = OfflineUpdater(config, backbone, embedder, self.counters, seed=seed)

    # ------------------------------------------------------------------ resources
    @property
    def backbone(self) -> ChatBackbone:
        return self._backbone()

    @property
    def embedder(self) -> Embedder:
        return self._embedder()

    # ------------------------------------------------------------------ ingestion
    def ingest(self, turn: Turn) -> None:
        if self._finalized:
            raise RuntimeError("lightmem: ingest() after finalize(); build a new memory for a new conversation")
        if self._compressor is None:
            self._compressor = make_compressor(self.cfg)
        compressed = self._compressor.compress(turn.text) or turn.text
        item = BufferedTurn(turn, self._order, compressed, count_tokens(compressed))
        self._order += 1
        self._turn_text[turn.dia_id] = turn.render()
        self._speakers.setdefault(turn.speaker)
        self.counters["turns"] += 1
        self.counters["raw_tokens"] += count_tokens(turn.text)
        self.counters["compressed_tokens"] += item.tokens
        self._extractor.begin_call()  # one ingested turn is one upstream add_memory call
        self._buffers.push(item)

    def _extract(self, batch: Batch) -> None:
        """Extract one short-term batch and add its entries, embedded, to long-term memory."""
        new = self._extractor.extract(batch, tuple(self._speakers))
        if new:
            vecs = np.asarray(self.embedder.encode([e.text for e in new]), dtype=np.float32)
            self._vectors = vecs if not self.entries else np.vstack([self._vectors, vecs])
            self.entries.extend(new)

    # ------------------------------------------------------------------ sleep-time consolidation
    def finalize(self) -> None:
        if self._finalized:
            return
        self._buffers.flush()
        if self.cfg.consolidate and len(self.entries) > 1:
            self.entries, self._vectors = self._updater.run(
                self.entries, self._vectors, self._turn_text, tuple(self._speakers)
            )
        self._finalized = True

    def update_queues(self) -> list[list[tuple[int, float]]]:
        """For each entry j: its ``queue_keep`` most similar entries i ≠ j stamped no later than j, chosen among
        the ``queue_top_k`` nearest (LightMem's construct_update_queue_all_entries)."""
        return self._updater.queues(self.entries, self._vectors)

    # ------------------------------------------------------------------ retrieval
    def prefetch_queries(self, questions: Sequence[str]) -> None:
        """Embed the questions in one batch: the search query is the question as asked."""
        if questions and self.entries:
            self.embedder.encode(list(questions))

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Embedding top-k (``top_k``, or ``budget``) over the long-term entries."""
        k = int(budget or self.cfg.top_k)
        with self._lock:
            entries, vectors = self.entries, self._vectors
        if not entries:
            return Evidence(notes=[], extra={"entries": 0})
        q = np.asarray(self.embedder.encode([query]), dtype=np.float32)[0]
        scores = vectors @ q
        top = sorted(range(len(entries)), key=lambda i: (-float(scores[i]), i))[:k]
        notes = []
        for i in top:
            e = entries[i]
            ids = e.segment_dia_ids if self.cfg.provenance == "segment" else e.source_dia_ids
            notes.append(EvidenceNote(e.entry_id, e.text, tuple(ids), float(scores[i]), ("embedding",), e.timestamp))
        layout = {"entries": [(entries[i].speaker, entries[i].timestamp, entries[i].text) for i in top]}
        return Evidence(notes=notes, extra={"entries": len(entries)}, layout=layout)

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        if not self._buffers.empty:
            raise RuntimeError("lightmem: call finalize() before save(); turns are still buffered")
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {"format": 1, "entries": [e.to_json() for e in self.entries], "counters": self.counters}
        (path / SNAPSHOT_FILE).write_text(json.dumps(state, ensure_ascii=False, indent=1))
        np.save(path / VECTORS_FILE, self._vectors)

    def load(self, path: Path) -> None:
        path = Path(path)
        state = json.loads((path / SNAPSHOT_FILE).read_text())
        with self._lock:
            self.entries = [LightMemEntry.from_json(d) for d in state["entries"]]
            self.counters.update(state["counters"])
            self._vectors = np.load(path / VECTORS_FILE)
            self._finalized = True

    def stats(self) -> dict[str, Any]:
        c = dict(self.counters)
        turns = c["turns"] or 1
        calls = c["extraction_calls"] + c["update_calls"]
        c.update(
            setting=self.cfg.setting(),
            entries=len(self.entries),
            llm_calls=calls,
            llm_calls_per_turn=round(calls / turns, 4),
            compression_ratio=round(c["compressed_tokens"] / c["raw_tokens"], 4) if c["raw_tokens"] else None,
            mean_segment_dia_ids=round(float(np.mean([len(e.segment_dia_ids) for e in self.entries])), 2)
            if self.entries
            else 0.0,
        )
        return c


def make_compressor(cfg: LightMemConfig) -> Any:
    """The sensory pre-compressor ``cfg.compressor`` names, at the rate in effect."""
    if cfg.compressor == "llmlingua2":
        return LlmLingua2Compressor(cfg.llmlingua_model, cfg.rate)
    if cfg.compressor == "idf":
        return IdfCompressor(cfg.rate)
    return IdentityCompressor()


def _factory(ctx: MethodContext) -> LightMem:
    cfg = config_from_dict(ctx.config)
    cap = ctx.extras.get("prompt_token_cap")
    return LightMem(
        cfg,
        backbone=lambda: ctx.backbone,
        embedder=lambda: ctx.embedder,
        prompt_token_cap=None if cap is None else int(cap),
        seed=ctx.seed,
    )


def _check_compressor(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    """``compressor: llmlingua2`` where the package or its model is missing: one line, before any work."""
    if cfg.get("compressor") == "llmlingua2":
        why = llmlingua_unavailable(str(cfg.get("llmlingua_model") or LightMemConfig.llmlingua_model))
        if why:
            raise ConfigError(why)


def _setting_note(method_cfg: dict[str, Any]) -> str:
    """LightMem's published setting and the compressor that ran (``768-0.8, idf``: the idf stand-in, not
    LLMLingua-2), which its table row names; "" for a recorded section this code no longer accepts (a run
    recorded under knobs since renamed), whose row then names no setting rather than a wrong one."""
    try:
        return config_from_dict(dict(method_cfg)).setting()
    except ValueError:
        return ""


SPEC = MethodSpec(
    name="lightmem",
    factory=_factory,
    ingest_uses_llm=lambda c, a: True,
    config_schema=(LightMemConfig,),
    validate_config=method_validator(
        LightMemConfig, build=lambda name, cfg: config_from_dict(cfg), after=_check_compressor
    ),
    description="LightMem: compressed sensory buffer → topic segments → batched fact extraction → sleep-time update",
    upstream_answer="baselines.lightmem.answer_prompt:UPSTREAM",
    paper_row="lightmem",
    report_rank=60,
    setting_note=_setting_note,
    sim_replies="baselines.lightmem.sim:REPLIES",
    sim_run_kinds=("lightmem_extract",),
    bad_configs=(
        (("method.compress_rate=0",), ("method.compress_rate=0", "(0, 1]")),
        (("method.compressor=llmlingua",), ("method.compressor='llmlingua'", "idf, llmlingua2, none")),
        (("method.compressor=llmlingua2",), ("llmlingua", "pip install", "method.compressor=idf")),
        (("method.preset=1024-0.8",), ("method.preset='1024-0.8'", "512-0.7, 768-0.7, 768-0.8")),
    ),
)

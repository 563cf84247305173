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
top-k over the long-term entries; it uses no LLM. The buffers are in ``buffers.py``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.lightmem import prompts as P
from baselines.lightmem.buffers import Batch, BufferedTurn, TopicBuffers
from baselines.lightmem.compress import IdentityCompressor, IdfCompressor
from baselines.lightmem.config import LightMemConfig, config_from_dict
from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.json_reply import complete_json
from memcore.schema import method_validator
from memcore.text import count_tokens
from memcore.types import Evidence, EvidenceNote, Turn

SNAPSHOT_FILE = "lightmem.json"
VECTORS_FILE = "lightmem_vectors.npy"


@dataclass
class LightMemEntry:
    """One long-term memory entry. ``source_dia_ids`` is the turn the fact was extracted from (the
    whole batch when the model gave no valid source id); ``segment_dia_ids`` every turn of its topic
    segment. Consolidation updates keep the union of both with the newer entries they integrate."""

    entry_id: str
    text: str
    source_dia_ids: tuple[str, ...]
    segment_dia_ids: tuple[str, ...]
    timestamp: str
    speaker: str
    order: int
    topic_id: int
    kind: str = "fact"  # fact | raw (extraction fallback) ; updated entries keep their kind

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["source_dia_ids"] = list(self.source_dia_ids)
        d["segment_dia_ids"] = list(self.segment_dia_ids)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> LightMemEntry:
        d = dict(d)
        d["source_dia_ids"] = tuple(d["source_dia_ids"])
        d["segment_dia_ids"] = tuple(d["segment_dia_ids"])
        return cls(**d)


@dataclass(frozen=True)
class UpdateDecision:
    action: str  # update | delete | ignore
    new_memory: str = ""


IGNORE = UpdateDecision("ignore")


def parse_facts(n_messages: int) -> Any:
    """Validator for the extraction reply ``{"data": [{"source_id", "fact"}]}``: returns
    ``[(source index or None, fact)]``; items without a usable fact are dropped, an out-of-range
    or missing source id becomes None."""

    def validate(obj: Any) -> list[tuple[int | None, str]]:
        if isinstance(obj, dict) and "data" in obj:
            items = obj["data"]
        elif isinstance(obj, dict) and "facts" in obj:
            items = obj["facts"]
        else:
            raise ValueError('reply needs a "data" list')
        if not isinstance(items, list):
            raise ValueError('"data" must be a list')
        out: list[tuple[int | None, str]] = []
        for item in items:
            if not isinstance(item, dict):
                continue
            fact = item.get("fact")
            if not isinstance(fact, str) or not fact.strip():
                continue
            sid: int | None
            try:
                sid = int(str(item.get("source_id", "")).strip())
            except ValueError:
                sid = None
            if sid is not None and not 0 <= sid < n_messages:
                sid = None
            out.append((sid, fact.strip()))
        return out

    return validate


def parse_update(obj: Any) -> UpdateDecision:
    """Validator for the offline-update reply ``{"action", "new_memory"}``."""
    if not isinstance(obj, dict):
        raise ValueError("reply must be an object")
    action = str(obj.get("action", "")).strip().lower()
    if action not in ("update", "delete", "ignore"):
        raise ValueError(f"unknown action {action!r}")
    if action != "update":
        return UpdateDecision(action)
    new = obj.get("new_memory")
    if isinstance(new, dict):  # their prompt writes new_memory as { ... }; accept {"memory": "..."}
        new = new.get("memory") or new.get("text") or new.get("content")
    if not isinstance(new, str) or not new.strip():
        raise ValueError("update needs a non-empty new_memory string")
    return UpdateDecision("update", new.strip())


def message_time(turn: Turn) -> str:
    """Per-message timestamp shown to the extractor, LightMem-style: ``2023-05-08 (Mon) 13:56``."""
    return turn.session_time.strftime("%Y-%m-%d (%a) %H:%M")


class LightMem:
    """One conversation's LightMem. ``ingest`` in order, then ``finalize``; ``retrieve`` is
    read-only and thread-safe afterwards."""

    def __init__(
        self, config: LightMemConfig, backbone: Callable[[], ChatBackbone], embedder: Callable[[], Embedder]
    ) -> None:
        """``backbone`` / ``embedder`` are zero-argument callables (the runner's lazy resources), so
        loading a snapshot never starts an LLM server."""
        self.cfg = config
        self._backbone = backbone
        self._embedder = embedder
        self._next_id = 0
        self._compressor = IdfCompressor(config.compress_rate) if config.compressor == "idf" else IdentityCompressor()
        self._order = 0
        self._next_topic = 0
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
            "update_calls": 0,
            "update_fallbacks": 0,
            "updated": 0,
            "deleted": 0,
        }
        self._buffers = TopicBuffers(config, embedder, self._extract, self.counters)

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
        compressed = self._compressor.compress(turn.text) or turn.text
        item = BufferedTurn(turn, self._order, compressed, count_tokens(compressed))
        self._order += 1
        self.counters["turns"] += 1
        self.counters["raw_tokens"] += count_tokens(turn.text)
        self.counters["compressed_tokens"] += item.tokens
        self._buffers.push(item)

    def _extract(self, batch: Batch) -> None:
        flat: list[BufferedTurn] = [b for seg in batch for b in seg]
        seg_of: list[int] = []
        lines: list[str] = []
        topic_ids: list[int] = []
        for k, seg in enumerate(batch):
            topic_ids.append(self._next_topic)
            self._next_topic += 1
            lines.append(f"--- Topic {k + 1} ---")
            for b in seg:
                lines.append(f"[{message_time(b.turn)}] {len(seg_of)}.{b.turn.speaker}: {b.compressed}")
                seg_of.append(k)
        messages = [
            {"role": "system", "content": P.EXTRACT_SYSTEM},
            {"role": "user", "content": P.EXTRACT_USER.format(segments="\n".join(lines))},
        ]
        self.counters["extraction_calls"] += 1
        res = complete_json(
            self.backbone,
            messages,
            stage="ingest",
            validate=parse_facts(len(flat)),
            fallback=None,
            fallback_kind="lightmem extraction → compressed turns stored verbatim",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.extract_max_tokens,
        )
        seg_ids = [tuple(b.turn.dia_id for b in seg) for seg in batch]
        batch_ids = tuple(d for ids in seg_ids for d in ids)
        new: list[LightMemEntry] = []
        if res.value is None:
            self.counters["extraction_fallbacks"] += 1
            for i, b in enumerate(flat):
                new.append(
                    self._entry(f"{b.turn.speaker}: {b.compressed}", b, seg_ids[seg_of[i]], topic_ids[seg_of[i]], "raw")
                )
        else:
            for sid, fact in res.value:
                if sid is None:
                    self.counters["facts_without_source"] += 1
                    last = flat[-1]
                    entry = self._entry(fact, last, batch_ids, topic_ids[seg_of[-1]], "fact")
                    entry.source_dia_ids = batch_ids
                else:
                    entry = self._entry(fact, flat[sid], seg_ids[seg_of[sid]], topic_ids[seg_of[sid]], "fact")
                new.append(entry)
            self.counters["facts"] += len(new)
        if new:
            vecs = np.asarray(self.embedder.encode([e.text for e in new]), dtype=np.float32)
            self._vectors = vecs if not self.entries else np.vstack([self._vectors, vecs])
            self.entries.extend(new)

    def _entry(self, text: str, src: BufferedTurn, segment: tuple[str, ...], topic: int, kind: str) -> LightMemEntry:
        self._next_id += 1
        return LightMemEntry(
            entry_id=f"lm{self._next_id - 1}",
            text=text,
            source_dia_ids=(src.turn.dia_id,),
            segment_dia_ids=segment,
            timestamp=src.turn.session_time_raw,
            speaker=src.turn.speaker,
            order=src.order,
            topic_id=topic,
            kind=kind,
        )

    # ------------------------------------------------------------------ sleep-time consolidation
    def finalize(self) -> None:
        if self._finalized:
            return
        self._buffers.flush()
        if self.cfg.consolidate and len(self.entries) > 1:
            self._consolidate()
        self._finalized = True

    def update_queues(self) -> list[list[tuple[int, float]]]:
        """For each entry j: its ``queue_keep`` most similar entries i ≠ j with order_i ≤ order_j,
        chosen among the ``queue_top_k`` nearest (LightMem's construct_update_queue_all_entries)."""
        sims = self._vectors @ self._vectors.T
        orders = np.array([e.order for e in self.entries])
        queues: list[list[tuple[int, float]]] = []
        for j in range(len(self.entries)):
            allowed = np.flatnonzero(orders <= orders[j])
            ranked = sorted(allowed.tolist(), key=lambda i: (-float(sims[j, i]), i))[: self.cfg.queue_top_k]
            queues.append([(i, float(sims[j, i])) for i in ranked if i != j][: self.cfg.queue_keep])
        return queues

    def _consolidate(self) -> None:
        queues = self.update_queues()
        sources: dict[int, list[int]] = {}
        for j, queue in enumerate(queues):
            for i, score in queue:
                if score >= self.cfg.update_threshold:
                    sources.setdefault(i, []).append(j)
        decisions: dict[int, UpdateDecision] = {}
        for target in sorted(sources):
            cands = sources[target]
            messages = [
                {"role": "system", "content": P.UPDATE_SYSTEM},
                {
                    "role": "user",
                    "content": P.UPDATE_USER.format(
                        target=self.entries[target].text,
                        candidates="\n".join(f"- {self.entries[c].text}" for c in cands),
                    ),
                },
            ]
            self.counters["update_calls"] += 1
            res = complete_json(
                self.backbone,
                messages,
                stage="ingest",
                validate=parse_update,
                fallback=IGNORE,
                fallback_kind="lightmem offline update → entry kept unchanged",
                prompt_version=P.VERSION,
                temperature=self.cfg.temperature,
                max_tokens=self.cfg.update_max_tokens,
            )
            if not res.ok:
                self.counters["update_fallbacks"] += 1
            decisions[target] = res.value
        # Decisions were all made against the pre-consolidation memory (LightMem reads every entry
        # once, then updates in parallel); apply them now.
        changed: list[int] = []
        for target, dec in decisions.items():
            if dec.action != "update":
                continue
            e = self.entries[target]
            e.text = dec.new_memory
            for c in sources[target]:
                e.source_dia_ids = _union(e.source_dia_ids, self.entries[c].source_dia_ids)
                e.segment_dia_ids = _union(e.segment_dia_ids, self.entries[c].segment_dia_ids)
            changed.append(target)
        if changed:
            self._vectors[changed] = np.asarray(
                self.embedder.encode([self.entries[i].text for i in changed]), dtype=np.float32
            )
        deleted = {t for t, dec in decisions.items() if dec.action == "delete"}
        keep = [i for i in range(len(self.entries)) if i not in deleted]
        self.entries = [self.entries[i] for i in keep]
        self._vectors = self._vectors[keep] if keep else np.zeros((0, self._vectors.shape[1]), dtype=np.float32)
        self.counters["updated"] += len(changed)
        self.counters["deleted"] += len(deleted)

    # ------------------------------------------------------------------ retrieval
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
        return Evidence(notes=notes, extra={"entries": len(entries)})

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
            entries=len(self.entries),
            llm_calls=calls,
            llm_calls_per_turn=round(calls / turns, 4),
            compression_ratio=round(c["compressed_tokens"] / c["raw_tokens"], 4) if c["raw_tokens"] else None,
            mean_segment_dia_ids=round(float(np.mean([len(e.segment_dia_ids) for e in self.entries])), 2)
            if self.entries
            else 0.0,
        )
        return c


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


def _factory(ctx: MethodContext) -> LightMem:
    cfg = config_from_dict(ctx.config)
    return LightMem(cfg, backbone=lambda: ctx.backbone, embedder=lambda: ctx.embedder)


SPEC = MethodSpec(
    name="lightmem",
    factory=_factory,
    ingest_uses_llm=lambda c, a: True,
    config_schema=(LightMemConfig,),
    validate_config=method_validator(LightMemConfig, build=lambda name, cfg: config_from_dict(cfg)),
    description="LightMem: compressed sensory buffer → topic segments → batched fact extraction → sleep-time update",
)

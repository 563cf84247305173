"""Mem0's two-phase pipeline (``method=mem0-two-phase``): the algorithm behind Mem0's published LoCoMo numbers.

mem0ai 2.2.1 (``method=mem0``) adds memories in one additive extraction call. The published numbers come
from the earlier ``Memory.add``: (1) an extraction call turns the new messages into facts; (2) each fact's
5 nearest stored memories are retrieved, and one update call decides, for every fact, ADD / UPDATE / DELETE /
NONE against them. This module reimplements that ``_add_to_vector_store`` of mem0ai 1.0.11 (the newest
release that has it; 2.0 replaced it) on our own per-speaker vector store and the run's backbone and
embedder, with mem0's prompts verbatim (:mod:`baselines.mem0.prompts_v1`). It needs no mem0ai install:
1.0.11 and 2.2.1 cannot share one environment.

Driven as ``method=mem0``: per session and speaker, batches of 2 messages (the speaker's own turns as
``user``, the other's as ``assistant``, each ``"Speaker: text"``), metadata timestamp = the session date;
questions search each speaker (top_k 30, cosine) and the context is their ``search.py`` layout.
Deviations: ``baselines/mem0/README.md`` (section "mem0-two-phase").
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from baselines.amem.system import config_from_dict
from baselines.attribution import kept_turns, source_turn
from baselines.mem0 import prompts_v1 as P
from baselines.mem0.system import cap_per_speaker_results
from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.json_reply import complete_json
from memcore.schema import POS, TEMPERATURE, UNIT, Rule, check_rules, knob, method_validator
from memcore.types import Conversation, Evidence, EvidenceNote, Turn

STATE_FILE = "mem0_two_phase.json"
#: fact_retrieval: ``FACT_RETRIEVAL_PROMPT``, the prompt of the paper's era (mem0 v0.1.93, unchanged to 1.0.11) |
#: user: ``USER_MEMORY_EXTRACTION_PROMPT`` (mem0 1.0.0 and later; the user's messages only)
EXTRACTION_PROMPTS = ("fact_retrieval", "user")
#: source: a memory cites the turn(s) its text was attributed to (:mod:`baselines.attribution`) | batch: every
#: turn of the adds that wrote it (the lenient upper bound)
PROVENANCE = ("source", "batch")


@dataclass(frozen=True)
class Mem0TwoPhaseConfig:
    """Knobs; defaults are mem0ai 1.0.11's (``BaseLlmConfig``, ``_add_to_vector_store``) and Mem0's LoCoMo
    evaluation (batch 2, top_k 30)."""

    format_version: int = knob(3, build=True, rule=POS)  # 3: events compared exactly, text as given
    batch_size: int = knob(2, build=True, rule=POS)  # messages per add (their MemoryADD batch_size)
    top_k: int = knob(30, rule=POS)  # memories per speaker per question (run_experiments.py --top_k)
    # stored memories retrieved per new fact (vector_store.search limit=5)
    existing_per_fact: int = knob(5, build=True, rule=POS)
    # fact_retrieval: FACT_RETRIEVAL_PROMPT (v0.1.93, the paper's era) | user: USER_MEMORY_EXTRACTION_PROMPT (1.0+)
    extraction_prompt: str = knob("fact_retrieval", build=True, rule=Rule(choices=EXTRACTION_PROMPTS))
    temperature: float = knob(0.1, build=True, rule=TEMPERATURE)  # BaseLlmConfig defaults, sent with every call
    max_tokens: int = knob(2000, build=True, rule=POS)
    top_p: float = knob(0.1, build=True, rule=UNIT)
    # "Today's date" in the extraction prompt = the session date (else the wall clock)
    ground_dates: bool = knob(True, build=True)
    # source: the attributed turn(s) of each memory | batch: every turn of its adds (upper bound); retrieval only
    provenance: str = knob("source", rule=Rule(choices=PROVENANCE))

    def __post_init__(self) -> None:
        check_rules(self, "mem0-two-phase")


@dataclass
class MemoryRecord:
    """One stored memory: text, the session timestamp of the add that last wrote it, every turn of the adds that
    wrote it (``dia_ids``) and the turns its text was attributed to (``source_ids``; empty: unattributed)."""

    mem_id: str
    text: str
    timestamp: str
    dia_ids: list[str] = field(default_factory=list)
    source_ids: list[str] = field(default_factory=list)


def parse_messages(messages: list[dict[str, str]]) -> str:
    """mem0's ``parse_messages``: one ``role: content`` line per message."""
    return "".join(f"{m['role']}: {m['content']}\n" for m in messages if m["role"] in ("system", "user", "assistant"))


def parse_facts(obj: Any) -> list[str]:
    """The extraction reply's ``facts`` as strings (mem0's ``normalize_facts``: ``{"fact"|"text": …}`` too)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("facts"), list):
        raise ValueError('reply needs a "facts" list')
    out = []
    for item in obj["facts"]:
        fact = item.get("fact") or item.get("text") if isinstance(item, dict) else item
        if fact:
            out.append(str(fact))
    return out


def parse_actions(obj: Any) -> list[dict[str, Any]]:
    """The update reply's ``memory`` list of ``{"id", "text", "event", ...}`` entries."""
    if not isinstance(obj, dict) or not isinstance(obj.get("memory"), list):
        raise ValueError('reply needs a "memory" list')
    return [a for a in obj["memory"] if isinstance(a, dict)]


class SpeakerStore:
    """One speaker's memories with unit-norm vectors; cosine search (their qdrant collection)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.records: dict[str, MemoryRecord] = {}
        self.vectors: dict[str, np.ndarray] = {}
        self.next_id = 0

    def add(self, text: str, vec: np.ndarray, timestamp: str, dia_ids: list[str], source_ids: list[str]) -> str:
        mem_id = f"{self.prefix}-{self.next_id}"
        self.next_id += 1
        self.records[mem_id] = MemoryRecord(mem_id, text, timestamp, list(dia_ids), list(source_ids))
        self.vectors[mem_id] = np.asarray(vec, dtype=np.float32)
        return mem_id

    def search(self, vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """Top-k (id, cosine), best first; ties by insertion order."""
        if not self.records:
            return []
        ids = list(self.records)
        sims = np.stack([self.vectors[i] for i in ids]) @ np.asarray(vec, dtype=np.float32)
        order = np.argsort(-sims, kind="stable")[:k]
        return [(ids[j], float(sims[j])) for j in order]

    def to_json(self) -> dict[str, Any]:
        return {
            "prefix": self.prefix,
            "next_id": self.next_id,
            "records": [asdict(r) for r in self.records.values()],
            "vectors": {i: v.tolist() for i, v in self.vectors.items()},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SpeakerStore:
        store = cls(str(data["prefix"]))
        store.next_id = int(data["next_id"])
        for r in data["records"]:
            store.records[r["mem_id"]] = MemoryRecord(**r)
        store.vectors = {i: np.asarray(v, dtype=np.float32) for i, v in data["vectors"].items()}
        return store


class Mem0TwoPhase:
    """One conversation's two-phase Mem0 memory (a store per speaker). ``ingest`` in order, ``finalize``;
    ``retrieve`` is read-only and thread-safe."""

    def __init__(
        self,
        cfg: Mem0TwoPhaseConfig,
        conversation: Conversation,
        backbone: Any,
        embedder: Any,
        seed: int,
    ) -> None:
        self.cfg = cfg
        self.speakers = (conversation.speaker_a, conversation.speaker_b)
        self.user_ids = {s: f"{s}_{conversation.conv_id}" for s in self.speakers}
        self._backbone = backbone
        self._embedder = embedder
        self.seed = seed
        self.stores = {s: SpeakerStore(self.user_ids[s]) for s in self.speakers}
        self._pending: list[Turn] = []
        self._turn_text: dict[str, str] = {}  # dia_id -> text, for attributing updates to the turns they keep
        self._lock = threading.Lock()
        self.counters: dict[str, int] = {
            "sessions": 0,
            "add_calls": 0,
            "extraction_calls": 0,
            "update_calls": 0,
            "adds_without_facts": 0,
            "facts": 0,
            "events_add": 0,
            "events_update": 0,
            "events_delete": 0,
            "events_none": 0,
            "events_invalid": 0,
            "events_unattributed": 0,
            "retrievals": 0,
        }

    @property
    def backbone(self) -> ChatBackbone:
        return self._backbone()

    @property
    def embedder(self) -> Embedder:
        return self._embedder()

    # -- construction -----------------------------------------------------------------------------
    def ingest(self, turn: Turn) -> None:
        if turn.speaker not in self.stores:
            raise ValueError(f"mem0-two-phase: turn {turn.dia_id} is by {turn.speaker!r}, not one of {self.speakers}.")
        if self._pending and turn.session_index != self._pending[0].session_index:
            self._flush()
        self._pending.append(turn)
        self._turn_text[turn.dia_id] = turn.text

    def finalize(self) -> None:
        if self._pending:
            self._flush()

    def _flush(self) -> None:
        turns, self._pending = self._pending, []
        for speaker in self.speakers:
            for i in range(0, len(turns), self.cfg.batch_size):
                self.add(speaker, turns[i : i + self.cfg.batch_size])
        self.counters["sessions"] += 1

    def _llm(self, messages: list[dict[str, str]], validate: Any, fallback: Any, kind: str) -> Any:
        return complete_json(
            self.backbone,
            messages,
            stage="ingest",
            validate=validate,
            fallback=fallback,
            fallback_kind=kind,
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
            top_p=self.cfg.top_p,
        ).value

    def add(self, speaker: str, batch: list[Turn]) -> list[dict[str, Any]]:
        """One ``Memory.add`` of mem0ai 1.0.11 for ``speaker``: extraction, then the ADD/UPDATE/DELETE/NONE
        decisions against each fact's nearest stored memories. Returns the applied events."""
        from datetime import date

        store = self.stores[speaker]
        messages = [{"role": "user" if t.speaker == speaker else "assistant", "content": t.render()} for t in batch]
        timestamp = batch[0].session_time_raw
        today = batch[0].session_time.date().isoformat() if self.cfg.ground_dates else date.today().isoformat()
        self.counters["add_calls"] += 1
        self.counters["extraction_calls"] += 1
        facts: list[str] = self._llm(
            [
                {"role": "system", "content": P.extraction_system_prompt(self.cfg.extraction_prompt, today)},
                {"role": "user", "content": P.extraction_user_prompt(parse_messages(messages))},
            ],
            parse_facts,
            [],
            "mem0_two_phase_no_facts",
        )
        if not facts:
            self.counters["adds_without_facts"] += 1
            return []
        self.counters["facts"] += len(facts)
        fact_vecs = self.embedder.encode(facts)
        cache = {f: fact_vecs[i] for i, f in enumerate(facts)}
        old: dict[str, str] = {}
        for vec in fact_vecs:
            for mem_id, _ in store.search(vec, self.cfg.existing_per_fact):
                old.setdefault(mem_id, store.records[mem_id].text)
        temp_ids = {str(i): mem_id for i, mem_id in enumerate(old)}  # their UUID → index mapping
        old_list = [{"id": str(i), "text": text} for i, text in enumerate(old.values())]
        self.counters["update_calls"] += 1
        actions: list[dict[str, Any]] = self._llm(
            [{"role": "user", "content": P.update_memory_prompt(old_list, facts)}],
            parse_actions,
            [],
            "mem0_two_phase_no_actions",
        )
        return self._apply(store, actions, temp_ids, cache, timestamp, batch)

    def _vec(self, text: str, cache: dict[str, np.ndarray]) -> np.ndarray:
        if text not in cache:
            cache[text] = self.embedder.encode([text])[0]
        return cache[text]

    def _apply(
        self,
        store: SpeakerStore,
        actions: list[dict[str, Any]],
        temp_ids: dict[str, str],
        cache: dict[str, np.ndarray],
        timestamp: str,
        batch: list[Turn],
    ) -> list[dict[str, Any]]:
        """Their event loop: ADD a new memory, UPDATE (text, vector and metadata of the call) or DELETE the
        memory behind a temporary id, NONE nothing; an entry without text, with an event that is none of these four
        exactly, or naming an unknown id, is skipped (counted as invalid; their code logs and skips it). Provenance (:mod:`baselines.attribution`): an ADD
        cites the batch turn its text came from; an UPDATE the turns (previous ones and the batch's) whose
        content the new text keeps; an event attributed to no turn is counted (``events_unattributed``)."""
        dia_ids = [t.dia_id for t in batch]
        batch_turns = [(t.dia_id, t.text) for t in batch]
        applied = []
        for action in actions:
            # as their loop: the text as given, the event compared exactly ("add" is no ADD: counted invalid)
            raw_text = action.get("text")
            text = raw_text if isinstance(raw_text, str) else str(raw_text or "")
            event = action.get("event")
            if not text:
                self.counters["events_invalid"] += 1
                continue
            if event == "ADD":
                source = source_turn(text, batch_turns, self.speakers)
                self.counters["events_unattributed"] += int(source is None)
                sources = [] if source is None else [source]
                mem_id = store.add(text, self._vec(text, cache), timestamp, dia_ids, sources)
                self.counters["events_add"] += 1
            elif event in ("UPDATE", "DELETE"):
                mem_id = temp_ids.get(str(action.get("id")))
                if mem_id is None or mem_id not in store.records:
                    self.counters["events_invalid"] += 1
                    continue
                if event == "UPDATE":
                    rec = store.records[mem_id]
                    rec.text, rec.timestamp = text, timestamp
                    rec.dia_ids = list(dict.fromkeys([*rec.dia_ids, *dia_ids]))
                    previous = [(d, self._turn_text.get(d, "")) for d in rec.source_ids if d not in dia_ids]
                    rec.source_ids = kept_turns(text, [*previous, *batch_turns], self.speakers)
                    self.counters["events_unattributed"] += int(not rec.source_ids)
                    store.vectors[mem_id] = np.asarray(self._vec(text, cache), dtype=np.float32)
                    self.counters["events_update"] += 1
                else:
                    del store.records[mem_id]
                    del store.vectors[mem_id]
                    self.counters["events_delete"] += 1
            elif event == "NONE":
                self.counters["events_none"] += 1
                continue
            else:
                self.counters["events_invalid"] += 1
                continue
            applied.append({"id": mem_id, "memory": text, "event": event})
        return applied

    # -- retrieval --------------------------------------------------------------------------------
    def prefetch_queries(self, questions: Sequence[str]) -> None:
        """Embed the questions in one batch: the search query is the question as asked."""
        if questions:
            self.embedder.encode(list(questions))

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Each speaker's top_k memories (cosine); ``budget`` (``eval.note_cap``): the ``budget`` best over both
        speakers. Context = their ``search.py`` layout; each note cites ``provenance``'s turns."""
        k = budget or self.cfg.top_k
        q = self.embedder.encode([query])[0]
        results: dict[str, list[dict[str, Any]]] = {}
        for speaker in self.speakers:
            store = self.stores[speaker]
            results[speaker] = [
                {"id": mem_id, "score": score, "record": store.records[mem_id]} for mem_id, score in store.search(q, k)
            ]
        if budget is not None:
            results = cap_per_speaker_results(results, budget)
        notes: list[EvidenceNote] = []
        blocks = []
        layout: list[tuple[str, list[str]]] = []
        for speaker in self.speakers:
            lines = []
            for r in results[speaker]:
                rec: MemoryRecord = r["record"]
                line = f"{rec.timestamp}: {rec.text}"
                lines.append(line)
                ids = rec.source_ids if self.cfg.provenance == "source" else rec.dia_ids
                notes.append(
                    EvidenceNote(rec.mem_id, line, tuple(ids), r["score"], (f"mem0:{speaker}",), rec.timestamp)
                )
            blocks.append(f"Memories for user {speaker}:\n\n{json.dumps(lines, indent=4)}")
            layout.append((speaker, lines))
        with self._lock:
            self.counters["retrievals"] += 1
        return Evidence(notes=notes, context="\n\n".join(blocks), layout={"speaker_memories": layout})

    # -- persistence ------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        state = {
            "format_version": self.cfg.format_version,
            "stores": {s: st.to_json() for s, st in self.stores.items()},
            "counters": self.counters,
        }
        (path / STATE_FILE).write_text(json.dumps(state, ensure_ascii=False), encoding="utf-8")

    def load(self, path: Path) -> None:
        file = path / STATE_FILE
        if not file.is_file():
            raise FileNotFoundError(f"no mem0-two-phase snapshot at {file}; rebuild the memory.")
        state = json.loads(file.read_text(encoding="utf-8"))
        if state.get("format_version") != self.cfg.format_version:
            raise ValueError(f"mem0-two-phase snapshot {path} has another format_version; rebuild it.")
        self.stores = {s: SpeakerStore.from_json(d) for s, d in state["stores"].items()}
        self.counters.update(state["counters"])

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counters = dict(self.counters)
        records = [r for st in self.stores.values() for r in st.records.values()]
        return {
            "memories": len(records),
            "memories_per_speaker": {s: len(st.records) for s, st in self.stores.items()},
            "mean_turns_per_memory": round(sum(len(r.dia_ids) for r in records) / len(records), 4) if records else 0.0,
            "mean_source_turns_per_memory": round(sum(len(r.source_ids) for r in records) / len(records), 4)
            if records
            else 0.0,
            "memories_unattributed": sum(1 for r in records if not r.source_ids),
            "llm_calls_per_add": round(
                (counters["extraction_calls"] + counters["update_calls"]) / max(counters["add_calls"], 1), 4
            ),
            **counters,
        }


def _factory(ctx: MethodContext) -> Mem0TwoPhase:
    cfg = config_from_dict(Mem0TwoPhaseConfig, ctx.config, "mem0-two-phase")
    return Mem0TwoPhase(cfg, ctx.conversation, lambda: ctx.backbone, lambda: ctx.embedder, ctx.seed)


SPEC = MethodSpec(
    name="mem0-two-phase",
    factory=_factory,
    ingest_uses_llm=lambda c, a: True,
    config_schema=(Mem0TwoPhaseConfig,),
    validate_config=method_validator(
        Mem0TwoPhaseConfig, build=lambda name, cfg: config_from_dict(Mem0TwoPhaseConfig, cfg, name)
    ),
    description="Mem0's two-phase pipeline (mem0ai 1.0.11 prompts): fact extraction, then ADD/UPDATE/DELETE/NONE",
    upstream_answer="baselines.mem0.answer_prompt:UPSTREAM",
    paper_row="mem0",  # the two-phase pipeline is the one behind Mem0's published numbers
    report_rank=40,
    sim_replies="baselines.mem0.sim:REPLIES",
    sim_run_kinds=("mem0_facts", "mem0_update"),
    bad_configs=(
        (("method.extraction_prompt=v2",), ("method.extraction_prompt='v2'", "user")),
        (("method.top_p=2",), ("method.top_p=2", "in [0, 1]")),
    ),
)

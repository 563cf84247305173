"""Mem0 baseline: the real ``mem0ai`` package, driven the way Mem0's own LoCoMo evaluation drove it.

Per session and per speaker (one mem0 user id each), the session's turns go to ``Memory.add`` in
batches of two messages — the speaker's own turns as ``user``, the other's as ``assistant`` — with
``metadata={"timestamp": <session date string>}``. Questions search each speaker with top_k 30 and
the answer context lists ``"<timestamp>: <memory>"`` per speaker, as their ``search.py`` did.
Provenance: every memory an ``add()`` call returns maps to the dia_ids of that call's messages.
Deviations and offline adaptations: ``baselines/mem0/README.md``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.amem.system import config_from_dict
from baselines.attribution import source_turn
from baselines.mem0.custom_instructions import CUSTOM_INSTRUCTIONS as EVALUATION_INSTRUCTIONS
from memcore.interfaces import ChatBackbone, Embedder, MethodContext, MethodSpec
from memcore.llm.embedders import minilm_model_dir
from memcore.schema import POS, TEMPERATURE, UNIT, Rule, check_rules, knob, method_validator
from memcore.types import Conversation, Evidence, EvidenceNote, Turn

STATE_FILE = "mem0_state.json"
PROVENANCE_FILE = "mem0_provenance.json"
SOURCES_FILE = "mem0_sources.json"
MINILM_NAME = "all-MiniLM-L6-v2"
#: ``custom_instructions`` choices: Mem0's evaluation text (:mod:`baselines.mem0.custom_instructions`) or none.
CUSTOM_INSTRUCTIONS = ("evaluation", "none")


def custom_instructions_text(choice: str) -> str | None:
    """The ``MemoryConfig.custom_instructions`` for ``choice`` (None: mem0ai's extraction prompt alone)."""
    return EVALUATION_INSTRUCTIONS if choice == "evaluation" else None


def cap_per_speaker_results(results: dict[str, list[dict[str, Any]]], budget: int) -> dict[str, list[dict[str, Any]]]:
    """Keep the ``budget`` highest-scoring results over all speakers (ties: speaker order, then rank),
    each speaker's list keeping its own order."""
    ranked = [
        (-float(r.get("score") or 0.0), s_i, r_i)
        for s_i, found in enumerate(results.values())
        for r_i, r in enumerate(found)
    ]
    keep = {(s_i, r_i) for _, s_i, r_i in sorted(ranked)[:budget]}
    return {
        speaker: [r for r_i, r in enumerate(found) if (s_i, r_i) in keep]
        for s_i, (speaker, found) in enumerate(results.items())
    }


@dataclass(frozen=True)
class Mem0Config:
    """Knobs; defaults follow Mem0's LoCoMo evaluation (evaluation/src/memzero*/add.py, search.py)."""

    format_version: int = knob(3, build=True, rule=POS)  # 2: top_p passed; 3: custom_instructions
    batch_size: int = knob(2, build=True, rule=POS)  # messages per add() call
    top_k: int = knob(30, rule=POS)  # memories per speaker per question
    search_threshold: float = knob(0.1, rule=UNIT)  # mem0ai 2.2.1's Memory.search default
    # mem0's BaseLlmConfig default (their evaluation sets no LLM parameters)
    temperature: float = knob(0.1, build=True, rule=TEMPERATURE)
    max_tokens: int = knob(2000, build=True, rule=POS)  # BaseLlmConfig default
    top_p: float = knob(0.1, build=True, rule=UNIT)  # BaseLlmConfig default; mem0's OpenAILLM sends it with every call
    # backbone: our client (cache, retries, accounting) | direct: mem0's OpenAI client
    llm_route: str = knob("backbone", build=True, rule=Rule(choices=("backbone", "direct")))
    # auto: mem0's huggingface embedder for MiniLM, else the run's | mem0 | run
    embedder_route: str = knob("auto", build=True, rule=Rule(choices=("auto", "mem0", "run")))
    # mem0's faiss default; unit vectors → same ranking as cosine
    distance_strategy: str = knob("euclidean", build=True, rule=Rule(choices=("euclidean", "cosine", "inner_product")))
    ground_dates: bool = knob(True, build=True)  # session date as mem0's Observation/Current Date (else the wall clock)
    parallel_speakers: bool = False  # their add.py ran both speakers in threads; off = reproducible order
    # evaluation: their add.py's custom_instructions as MemoryConfig.custom_instructions | none: mem0ai's prompt only
    custom_instructions: str = knob("evaluation", build=True, rule=Rule(choices=CUSTOM_INSTRUCTIONS))
    # source: the batch turn each memory's text was attributed to | batch: both turns of its add() (upper bound)
    provenance: str = knob("source", rule=Rule(choices=("source", "batch")))

    def __post_init__(self) -> None:
        check_rules(self, "mem0")
        if self.llm_route == "direct" and not self.ground_dates:
            raise ValueError("mem0: ground_dates=false is only supported with llm_route=backbone.")


def _bridge() -> Any:
    """Import mem0ai (through our bridge) with telemetry off; a clear error when the extra is missing."""
    os.environ["MEM0_TELEMETRY"] = "False"
    try:
        # mem0ai is an optional extra, heavy to import: loaded only when a memory is built
        from baselines.mem0 import bridge
    except ImportError as exc:
        raise ImportError(
            f"method=mem0 needs the optional extra: pip install -e '.[mem0]' (mem0ai==2.2.1); import failed: {exc}"
        ) from None
    return bridge


def user_id(speaker: str, conv_id: str) -> str:
    """mem0 user id per speaker, as their add.py (``f"{speaker}_{idx}"``); no whitespace allowed."""
    return "_".join(f"{speaker}_{conv_id}".split())


class Mem0Memory:
    """One conversation's Mem0: one ``mem0.Memory`` (own faiss collection + history DB) per speaker.

    Separate stores per speaker make each user-filtered search exact, as with the qdrant store Mem0's
    evaluation used (mem0's faiss store over-fetches 2k and filters afterwards).
    """

    def __init__(
        self,
        cfg: Mem0Config,
        conversation: Conversation,
        workdir: Path,
        backbone: Callable[[], ChatBackbone],
        embedder: Callable[[], Embedder],
        seed: int,
    ) -> None:
        self.cfg = cfg
        self.conversation = conversation
        self.speakers = [conversation.speaker_a, conversation.speaker_b]
        self.user_ids = {s: user_id(s, conversation.conv_id) for s in self.speakers}
        self.root = workdir / "mem0"
        self._backbone = backbone
        self._embedder = embedder
        self.seed = seed
        self._memories: dict[str, Any] = {}
        self._clock: Any = None
        self._pending: list[Turn] = []
        self.provenance: dict[str, list[str]] = {}  # mem0 memory id → the dia_ids of its add() batch
        self.sources: dict[str, list[str]] = {}  # mem0 memory id → the attributed turn ([]: unattributed)
        self.counters: dict[str, int] = {
            "sessions": 0,
            "add_calls": 0,
            "add_calls_without_memory": 0,
            "memories_added": 0,
            "memories_updated": 0,
            "memories_deleted": 0,
            "retrievals": 0,
            "retrieved_without_provenance": 0,
            "memories_unattributed": 0,
        }
        self._lock = threading.Lock()
        self._embedding_route = ""
        self.dims = 0

    # -- building the mem0 objects ----------------------------------------------------------------
    def _embedding_model(self, bridge: Any) -> Any:
        route = self.cfg.embedder_route
        emb = self._embedder()
        if route == "auto":
            route = "mem0" if emb.name == MINILM_NAME else "run"
        if route == "mem0":
            if emb.name != MINILM_NAME:
                raise ValueError(
                    f"mem0: embedder_route=mem0 loads all-MiniLM-L6-v2, but the run's embedder is {emb.name!r}; "
                    "use embedder_route=auto or run so both sides embed with the same model."
                )

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            model = bridge.huggingface_embedder(str(minilm_model_dir()), int(emb.dim))
        else:
            model = bridge.RunEmbedder(self._embedder)
        self._embedding_route = route
        self.dims = int(emb.dim)
        return model

    def _llm(self, bridge: Any, for_ingest: bool) -> Any:
        clock = self._clock if self.cfg.ground_dates else None
        placeholder = bridge.openai_llm_config(
            model="replaced-by-memcore",
            base_url="http://127.0.0.1:9/v1",
            api_key="unused",
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            top_p=self.cfg.top_p,
        )
        if self.cfg.llm_route == "backbone" or not for_ingest:
            return bridge.BackboneLLM(placeholder, self._backbone, clock, seed=self.seed)
        backbone = self._backbone()
        connect = getattr(backbone, "connection_kwargs", None)
        if connect is None:
            raise ValueError(
                f"mem0: llm_route=direct needs an OpenAI-compatible backbone, got {type(backbone).__name__}; "
                "use llm_route=backbone."
            )
        conn = connect()
        config = bridge.openai_llm_config(
            model=conn["model"],
            base_url=conn["base_url"],
            api_key=conn["api_key"],
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            top_p=self.cfg.top_p,
        )
        return bridge.DirectLLM(config, backbone.usage, self._clock, getattr(backbone, "extra_body", None))

    def _build(self, *, for_ingest: bool) -> None:
        bridge = _bridge()
        self._clock = bridge.SessionClock()
        embedding_model = self._embedding_model(bridge)
        llm = self._llm(bridge, for_ingest)
        for speaker, uid in self.user_ids.items():
            d = self.root / uid
            d.mkdir(parents=True, exist_ok=True)
            self._memories[speaker] = bridge.build_memory(
                faiss_path=str(d / "faiss"),
                history_db_path=str(d / "history.db"),
                dims=self.dims,
                distance_strategy=self.cfg.distance_strategy,
                temperature=self.cfg.temperature,
                max_tokens=self.cfg.max_tokens,
                top_p=self.cfg.top_p,
                llm=llm,
                embedding_model=embedding_model,
                custom_instructions=custom_instructions_text(self.cfg.custom_instructions),
            )

    def _fresh(self) -> None:
        # A half-built store from an interrupted attempt would be loaded by faiss and duplicate memories.
        if self.root.exists():
            shutil.rmtree(self.root)
        self._build(for_ingest=True)

    # -- construction -----------------------------------------------------------------------------
    def ingest(self, turn: Turn) -> None:
        if turn.speaker not in self.user_ids:
            raise ValueError(
                f"mem0: turn {turn.dia_id} is by {turn.speaker!r}, not one of the conversation's speakers "
                f"{self.speakers}; check the conversation data."
            )
        if self._pending and turn.session_index != self._pending[0].session_index:
            self._flush()
        self._pending.append(turn)

    def finalize(self) -> None:
        if self._pending:
            self._flush()
        elif not self._memories:
            self._fresh()  # an empty conversation still gets (empty) stores

    def _flush(self) -> None:
        turns, self._pending = self._pending, []
        if not self._memories:
            self._fresh()
        self._clock.date = turns[0].session_time.date().isoformat()
        metadata = {"timestamp": turns[0].session_time_raw, "created_at": turns[0].session_time.isoformat()}
        if self.cfg.parallel_speakers:
            with ThreadPoolExecutor(max_workers=len(self.speakers)) as pool:
                list(pool.map(lambda s: self._add_session(s, turns, metadata), self.speakers))
        else:
            for speaker in self.speakers:
                self._add_session(speaker, turns, metadata)
        self._clock.date = None
        self.counters["sessions"] += 1

    def _add_session(self, speaker: str, turns: list[Turn], metadata: dict[str, str]) -> None:
        memory = self._memories[speaker]
        uid = self.user_ids[speaker]
        for i in range(0, len(turns), self.cfg.batch_size):
            batch = turns[i : i + self.cfg.batch_size]
            messages = [{"role": "user" if t.speaker == speaker else "assistant", "content": t.render()} for t in batch]
            result = memory.add(messages, user_id=uid, metadata=dict(metadata))
            self._record(result.get("results", []) if isinstance(result, dict) else [], batch)

    def _record(self, results: list[dict[str, Any]], batch: list[Turn]) -> None:
        """Provenance of the memories one ``add()`` returned: the batch's dia_ids (``provenance: batch``) and the
        one batch turn each memory's text is attributed to (:func:`baselines.attribution.source_turn`; a memory
        attributed to none is counted in ``memories_unattributed`` and cites no turn)."""
        dia_ids = [t.dia_id for t in batch]
        turns = [(t.dia_id, t.text) for t in batch]
        with self._lock:
            self.counters["add_calls"] += 1
            if not results:
                self.counters["add_calls_without_memory"] += 1
            for r in results:
                mem_id, event = str(r.get("id")), r.get("event", "ADD")
                if event == "ADD":
                    self.provenance[mem_id] = list(dia_ids)
                    source = source_turn(str(r.get("memory") or ""), turns, self.speakers)
                    self.sources[mem_id] = [] if source is None else [source]
                    self.counters["memories_unattributed"] += int(source is None)
                    self.counters["memories_added"] += 1
                elif event == "UPDATE":  # not emitted by mem0ai 2.2.1's additive pipeline; kept for safety
                    self.provenance[mem_id] = list(dict.fromkeys([*self.provenance.get(mem_id, []), *dia_ids]))
                    self.sources[mem_id] = list(self.provenance[mem_id])
                    self.counters["memories_updated"] += 1
                elif event == "DELETE":
                    self.provenance.pop(mem_id, None)
                    self.sources.pop(mem_id, None)
                    self.counters["memories_deleted"] += 1

    # -- retrieval --------------------------------------------------------------------------------
    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """Search each speaker's memories (top_k each); context = their search.py layout.

        With ``budget`` (``eval.note_cap``) each speaker is searched for ``budget`` memories and only the
        ``budget`` best by score over both speakers are kept, so the run gets ``budget`` notes in all, as
        every other method does (without it: ``top_k`` per speaker, as their search.py)."""
        if not self._memories:
            raise RuntimeError("mem0: retrieve() before ingest/finalize or load(); build the memory first.")
        k = budget or self.cfg.top_k
        results: dict[str, list[dict[str, Any]]] = {}
        for speaker in self.speakers:
            with self._lock:  # mem0's search path (embedder, faiss) is not meant for concurrent use
                results[speaker] = self._memories[speaker].search(
                    query, top_k=k, filters={"user_id": self.user_ids[speaker]}, threshold=self.cfg.search_threshold
                )["results"]
        if budget is not None:
            results = cap_per_speaker_results(results, budget)
        notes: list[EvidenceNote] = []
        blocks: list[str] = []
        layout: list[tuple[str, list[str]]] = []
        missing = 0
        cited = self.sources if self.cfg.provenance == "source" else self.provenance
        for speaker in self.speakers:
            found = results[speaker]
            lines = []
            for r in found:
                stamp = (r.get("metadata") or {}).get("timestamp", "")
                line = f"{stamp}: {r['memory']}"
                lines.append(line)
                dia_ids = tuple(cited.get(str(r["id"]), ()))
                missing += int(not dia_ids)
                notes.append(
                    EvidenceNote(
                        note_id=str(r["id"]),
                        text=line,
                        dia_ids=dia_ids,
                        score=float(r.get("score") or 0.0),
                        channels=(f"mem0:{speaker}",),
                        timestamp=stamp or None,
                    )
                )
            blocks.append(f"Memories for user {speaker}:\n\n{json.dumps(lines, indent=4)}")
            layout.append((speaker, lines))
        with self._lock:
            self.counters["retrievals"] += 1
            self.counters["retrieved_without_provenance"] += missing
        return Evidence(notes=notes, context="\n\n".join(blocks), layout={"speaker_memories": layout})

    # -- persistence ------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        for speaker, uid in self.user_ids.items():
            src, dst = self.root / uid, path / "mem0" / uid
            dst.mkdir(parents=True, exist_ok=True)
            if (src / "faiss").is_dir():
                shutil.copytree(src / "faiss", dst / "faiss", dirs_exist_ok=True)
            db = self._memories[speaker].db
            with db._lock:  # mem0's SQLiteManager lock; the backup API copies a consistent snapshot
                target = sqlite3.connect(dst / "history.db")
                try:
                    db.connection.backup(target)
                finally:
                    target.close()
        bridge = _bridge()
        state = {
            "format_version": self.cfg.format_version,
            "mem0ai": bridge.MEM0_VERSION,
            "user_ids": self.user_ids,
            "embedding_route": self._embedding_route,
            "dims": self.dims,
            "counters": self.counters,
        }
        (path / STATE_FILE).write_text(json.dumps(state, indent=2), encoding="utf-8")
        (path / PROVENANCE_FILE).write_text(json.dumps(self.provenance, ensure_ascii=False), encoding="utf-8")
        (path / SOURCES_FILE).write_text(json.dumps(self.sources, ensure_ascii=False), encoding="utf-8")

    def load(self, path: Path) -> None:
        state_file = path / STATE_FILE
        if not state_file.is_file():
            raise FileNotFoundError(f"no mem0 snapshot at {state_file}; rebuild the memory (delete the snapshot dir).")
        state = json.loads(state_file.read_text(encoding="utf-8"))
        bridge = _bridge()
        if state.get("format_version") != self.cfg.format_version or state.get("mem0ai") != bridge.MEM0_VERSION:
            raise ValueError(
                f"mem0 snapshot {path} was built with format_version {state.get('format_version')} / mem0ai "
                f"{state.get('mem0ai')}; this run has {self.cfg.format_version} / {bridge.MEM0_VERSION}. Rebuild it."
            )
        if state.get("user_ids") != self.user_ids:
            raise ValueError(f"mem0 snapshot {path} belongs to other speakers {state.get('user_ids')}; rebuild it.")
        if self.root.exists():
            shutil.rmtree(self.root)
        shutil.copytree(path / "mem0", self.root)
        self._memories = {}
        self._build(for_ingest=False)
        self.provenance = json.loads((path / PROVENANCE_FILE).read_text(encoding="utf-8"))
        self.sources = json.loads((path / SOURCES_FILE).read_text(encoding="utf-8"))
        self.counters.update(state.get("counters", {}))

    def stats(self) -> dict[str, Any]:
        with self._lock:
            counters = dict(self.counters)
            provenance = dict(self.provenance)
        per_speaker = {}
        for speaker, memory in self._memories.items():
            per_speaker[speaker] = int(memory.vector_store.index.ntotal) if memory.vector_store.index is not None else 0
        return {
            "memories": sum(per_speaker.values()),
            "memories_per_speaker": per_speaker,
            "memories_with_provenance": len(provenance),
            "memories_with_source_turn": sum(1 for v in self.sources.values() if v),
            "mean_turns_per_memory": round(sum(len(v) for v in provenance.values()) / len(provenance), 3)
            if provenance
            else 0.0,
            "embedding_route": self._embedding_route,
            "llm_route": self.cfg.llm_route,
            **counters,
        }


def _factory(ctx: MethodContext) -> Mem0Memory:
    cfg = config_from_dict(Mem0Config, ctx.config, "mem0")
    return Mem0Memory(cfg, ctx.conversation, Path(ctx.workdir), lambda: ctx.backbone, lambda: ctx.embedder, ctx.seed)


SPEC = MethodSpec(
    name="mem0",
    factory=_factory,
    ingest_uses_llm=lambda c, a: True,
    config_schema=(Mem0Config,),
    validate_config=method_validator(Mem0Config, build=lambda name, cfg: config_from_dict(Mem0Config, cfg, name)),
    description="Mem0 (mem0ai 2.2.1, real package): LLM fact extraction per 2-message batch, per-speaker search",
    upstream_answer="baselines.mem0.answer_prompt:UPSTREAM",
    report_rank=50,
    table_notes=(
        "mem0: mem0ai 2.2.1's add-only pipeline (one extraction call per add), not the algorithm behind Mem0's"
        " published numbers; the paper's Mem0 row is mem0-two-phase (extraction, then ADD/UPDATE/DELETE/NONE).",
    ),
    sim_replies="baselines.mem0.sim:REPLIES",
    sim_run_kinds=("mem0_extract",),
    bad_configs=(
        (("method.llm_route=cloud",), ("method.llm_route='cloud'", "backbone, direct")),
        (("method.batch_size=0",), ("method.batch_size=0", ">= 1")),
    ),
)

"""MemGPT (Packer et al. 2023) reimplemented behind memcore's MemorySystem.

Main context = system instructions + core memory (editable blocks: persona and one per speaker) +
the recursive summary of evicted messages + a FIFO of recent messages. Each ingested turn is
appended to the FIFO and to recall storage; the agent then runs its heartbeat loop, each step one function
call chosen by the backbone, continuing while a call asks for a heartbeat or fails (``max_steps_per_turn`` is only
a safety limit). When a step's total tokens pass ``warning_fraction`` of the window, the memory-pressure alert is
the next step's input; past the window the oldest messages (about ``evict_fraction`` of the tokens, the previous
summary counted) are evicted and folded into the summary by one LLM call.
At question time the agent searches recall and archival storage with its own queries; the evidence
is its main context (core memory, summary, recent messages) plus every search result.

Function calls use a JSON protocol in the reply text (``functions.py``), parsed through ``complete_json``
— it works on every OpenAI-compatible server (llama.cpp included); MemGPT's own local-LLM wrappers do the
same. The context-window arithmetic is in ``paging.py``, the evidence assembly in ``evidence.py``; this
module runs the agent's loops.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from baselines.memgpt import framing
from baselines.memgpt import prompts as P
from baselines.memgpt.config import MemGPTConfig, config_from_dict, resolve_window
from baselines.memgpt.evidence import cap_evidence, context_evidence
from baselines.memgpt.functions import INGEST_FUNCTIONS, QA_FUNCTIONS, FunctionCalls, Hit, result_message
from baselines.memgpt.paging import (
    FifoMessage,
    SummaryCounts,
    eviction_cut,
    main_context,
    summary_messages,
    summary_note,
)
from baselines.memgpt.stores import ArchivalMemory, CoreLine, CoreMemory, RecallMemory, RecallMessage
from memcore.interfaces import BadConfig, ChatBackbone, Embedder, Message, MethodContext, MethodSpec
from memcore.schema import bad_value, method_validator
from memcore.text import count_tokens
from memcore.types import Evidence, Turn

STATE_FILE = "memgpt.json"
#: The reasons MemGPT 0.2.6 packs into its heartbeat messages (``REQ_HEARTBEAT_MESSAGE``,
#: ``FUNC_FAILED_HEARTBEAT_MESSAGE``), logged in recall storage as it logs those user messages.
HEARTBEAT_REQUESTED = "heartbeat: request_heartbeat == true"
HEARTBEAT_FAILED = "heartbeat: Function call failed"
SEARCH_FUNCTIONS = ("archival_memory_search", "conversation_search")
VECTORS_FILE = "memgpt_archival.npy"


def new_counters() -> dict[str, Any]:
    """An agent's counters (``stats()`` reports them), all zero."""
    return {
        "turns": 0,
        "agent_steps": 0,
        "step_fallbacks": 0,
        "noop_steps": 0,
        "failed_calls": 0,
        "evictions": 0,
        "summary_calls": 0,
        "alerts": 0,
        "step_limit_hits": 0,
        "replies_at_max_tokens": 0,
        "calls_by_function": {},
        "qa_questions": 0,
        "qa_steps": 0,
        "qa_searches": 0,
        "qa_step_fallbacks": 0,
        "qa_fallback_searches": 0,
    }


class MemGPT:
    """One conversation's MemGPT agent. ``ingest`` in order, then ``finalize``; ``retrieve`` only
    reads memory (safe from several threads). It owns the memory tiers and the main context and runs the
    heartbeat loops; each step's LLM call and the function it chose go through :class:`FunctionCalls`."""

    def __init__(
        self,
        config: MemGPTConfig,
        speakers: tuple[str, str],
        backbone: Callable[[], ChatBackbone],
        embedder: Callable[[], Embedder],
        seed: int = 0,
    ) -> None:
        self.cfg = config
        self.window, self.window_source = resolve_window(config)
        self.speakers = speakers
        self._backbone = backbone
        self._embedder = embedder
        persona = framing.PERSONA.format(speaker_a=speakers[0], speaker_b=speakers[1])
        blocks: dict[str, list[CoreLine]] = {name: [] for name in framing.blocks(*speakers)}
        blocks["persona"] = [CoreLine(persona)]
        self.core = CoreMemory(config.core_block_chars, blocks)
        self.archival = ArchivalMemory()
        self.recall = RecallMemory(config.recall_search)
        self.fifo: list[FifoMessage] = []
        self.summary = ""
        self.summary_dia_ids: tuple[str, ...] = ()
        self.n_hidden = 0
        self.summary_counts = SummaryCounts()
        self._alerted = False
        self._n_logged = 0
        self._lock = threading.Lock()
        self._calls = FunctionCalls(config, backbone, embedder, seed)
        self.counters = new_counters()
        self.system_prompt = framing.system_message(
            speakers[0], speakers[1], page_size=config.page_size, recall_search=config.recall_search
        )

    @property
    def backbone(self) -> ChatBackbone:
        return self._backbone()

    @property
    def embedder(self) -> Embedder:
        return self._embedder()

    # ------------------------------------------------------------------ main context
    def _head(self) -> list[Message]:
        return main_context(self.system_prompt, self.summary, self.summary_counts, self.fifo)

    def _state(self, template: str, **kw: Any) -> str:
        return template.format(
            core=self.core.render(),
            n_archival=len(self.archival.entries),
            n_recall=len(self.recall.messages),
            n_hidden=self.n_hidden,
            **kw,
        )

    def context_tokens(self) -> int:
        """Approximate size of the main context (system, summary, FIFO, core memory + stats)."""
        fixed = count_tokens(self.system_prompt)
        if self.summary:
            fixed += count_tokens(summary_note(self.summary, self.summary_counts))
        state = self._state(P.INGEST_STEP, directive=P.INGEST_NEW_MESSAGE)
        return fixed + sum(m.tokens for m in self.fifo) + count_tokens(state)

    def _alert_due(self, total_tokens: int) -> bool:
        """MemGPT's memory-pressure check after a step: the reply's total tokens past ``warning_fraction`` of the
        window, once until the next eviction."""
        if self._alerted or total_tokens <= self.cfg.warning_fraction * self.window:
            return False
        self._alerted = True
        self.counters["alerts"] += 1
        return True

    def _maybe_evict(self) -> None:
        while self.context_tokens() > self.window and self._evict():
            pass

    def _evict(self) -> bool:
        """Fold the oldest FIFO messages, with the previous summary, into a new recursive summary (one LLM call),
        cut by :func:`eviction_cut`; False when nothing can be evicted."""
        summary_tokens = count_tokens(summary_note(self.summary, self.summary_counts)) if self.summary else None
        cut = eviction_cut(
            self.fifo,
            keep_last=self.cfg.keep_last_messages,
            fraction=self.cfg.evict_fraction,
            summary_tokens=summary_tokens,
        )
        if cut is None:
            return False
        evicted, self.fifo = self.fifo[:cut], self.fifo[cut:]
        summarized = len(evicted) + (1 if self.summary else 0)
        self.summary = self._summarize(evicted)
        self.summary_dia_ids = tuple(dict.fromkeys((*self.summary_dia_ids, *(m.dia_id for m in evicted if m.dia_id))))
        self.n_hidden += len(evicted)
        self.summary_counts = SummaryCounts(self.n_hidden, self.n_hidden + len(self.fifo) + 1, summarized)
        self._alerted = False
        self.counters["evictions"] += 1
        return True

    def _summarize(self, evicted: list[FifoMessage]) -> str:
        """The new recursive summary of ``evicted`` (the current one if the reply is empty)."""
        self.counters["summary_calls"] += 1
        reply = self.backbone.complete(
            summary_messages(self.summary, self.summary_counts, evicted, self.cfg.summary_words),
            stage="ingest",
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.summary_max_tokens,
            seed=self._calls.seed if self.cfg.temperature > 0 else None,
            prompt_version=P.VERSION,
        )
        self.counters["replies_at_max_tokens"] += int(reply.completion_tokens >= self.cfg.summary_max_tokens)
        text = reply.text.strip()
        return text or self.summary

    # ------------------------------------------------------------------ ingestion
    def _log(self, speaker: str, text: str, dia_id: str, timestamp: str) -> None:
        """Add one of the agent's own messages or a user-role event to recall storage (MemGPT logs every message)."""
        if text:
            self._n_logged += 1
            self.recall.add(RecallMessage(dia_id, speaker, text, timestamp, message_id=f"m{self._n_logged}"))

    def ingest(self, turn: Turn) -> None:
        """MemGPT's chat loop for one message: steps while the last one asked for a heartbeat, failed, or crossed
        the memory-pressure warning (then the warning is the next step's input); at most
        ``max_steps_per_turn`` steps, a safety limit (counted in ``step_limit_hits`` when it stops a chain)."""
        self.counters["turns"] += 1
        stamp = turn.session_time_raw
        self.recall.add(RecallMessage(turn.dia_id, turn.speaker, turn.text, stamp))
        self.fifo.append(FifoMessage("user", "turn", f"[{stamp}] {turn.render()}", turn.dia_id, stamp))
        directive = P.INGEST_NEW_MESSAGE
        steps = 0
        while True:
            if steps == self.cfg.max_steps_per_turn:
                self.counters["step_limit_hits"] += 1
                break
            self._maybe_evict()
            state = self._state(P.INGEST_STEP, directive=directive)
            step = self._calls.step(self._head(), state, INGEST_FUNCTIONS, stage="ingest")
            action = step.action
            steps += 1
            self.counters["agent_steps"] += 1
            self.counters["step_fallbacks"] += 0 if step.ok else 1
            self.counters["replies_at_max_tokens"] += int(step.at_max_tokens)
            by_fn = self.counters["calls_by_function"]
            by_fn[action.function] = by_fn.get(action.function, 0) + 1
            self._log("assistant", action.thought, turn.dia_id, stamp)
            failed = heartbeat = False
            if action.function == "done":
                # A no-op reply carries no information; kept in the FIFO, a row of identical ones
                # became a copy attractor for the 0.5B model (it answered `done` to every turn).
                if self.cfg.keep_noop_steps:
                    self.fifo.append(FifoMessage("assistant", "action", action.render(), turn.dia_id))
                self.counters["noop_steps"] += 1
            else:
                self.fifo.append(FifoMessage("assistant", "action", action.render(), turn.dia_id))
                success, message, _ = self._calls.execute(action, turn, self.core, self.archival, self.recall)
                self.fifo.append(FifoMessage("user", "result", result_message(action, success, message), turn.dia_id))
                failed, heartbeat = not success, action.heartbeat
                self.counters["failed_calls"] += int(failed)
            # MemGPT's main loop: the warning first, then a failed call, then a requested heartbeat
            if self._alert_due(step.total_tokens):
                self.fifo.append(FifoMessage("user", "alert", P.PRESSURE_ALERT))
                self._log("user", P.PRESSURE_ALERT, "", stamp)
                directive = P.INGEST_ALERT
            elif failed or heartbeat:
                self._log("user", HEARTBEAT_FAILED if failed else HEARTBEAT_REQUESTED, "", stamp)
                directive = P.INGEST_CONTINUE
            else:
                break
        self._maybe_evict()

    def finalize(self) -> None:
        """Nothing is pending: every turn was fully processed in ``ingest``."""

    # ------------------------------------------------------------------ question time
    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """The agent's own searches (at most ``qa_max_steps`` steps) over recall and archival
        storage, plus its main context. ``budget`` (``eval.note_cap``) caps the notes in all, main context
        included (:func:`cap_evidence`), so MemGPT gets as many notes as every other method."""
        local: list[Message] = []
        hits: dict[str, Hit] = {}
        searches: list[dict[str, Any]] = []
        steps = fallbacks = 0
        for _ in range(self.cfg.qa_max_steps):
            state = self._state(P.QA_STEP, question=query)
            step = self._calls.step([*self._head(), *local], state, QA_FUNCTIONS, stage="retrieve")
            action = step.action
            steps += 1
            fallbacks += 0 if step.ok else 1
            if action.function == "done":
                break
            success, message, found = self._calls.execute(action, None, self.core, self.archival, self.recall)
            searches.append({"function": action.function, **action.arguments, "hits": len(found)})
            for h in found:
                hits.setdefault(h.note_id, h)
            local.append({"role": "assistant", "content": action.render()})
            local.append({"role": "user", "content": result_message(action, success, message)})
            if not action.heartbeat:
                break
        fallback_search = False
        if not searches and self.cfg.qa_fallback_search:
            fallback_search = True
            found = (
                self._calls.archival_search(self.archival, query, 0)[2]
                + self._calls.recall_search(self.recall, query, 0)[2]
            )
            for h in found:
                hits.setdefault(h.note_id, h)
        with self._lock:
            self.counters["qa_questions"] += 1
            self.counters["qa_steps"] += steps
            self.counters["qa_searches"] += len(searches)
            self.counters["qa_step_fallbacks"] += fallbacks
            self.counters["qa_fallback_searches"] += int(fallback_search)
        cap = budget or self.cfg.qa_max_results or None
        evidence = context_evidence(
            self.core, self.summary, self.fifo, list(hits.values())[:cap] if cap else list(hits.values())
        )
        if budget is not None:
            evidence = cap_evidence(evidence, budget)
        evidence.extra = {
            "searches": searches,
            "qa_steps": steps,
            "fallback_search": fallback_search,
            "step_fallbacks": fallbacks,
        }
        return evidence

    # ------------------------------------------------------------------ persistence
    def save(self, path: Path) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {
            "format": 1,
            "speakers": list(self.speakers),
            "core": self.core.to_json(),
            "archival": self.archival.to_json(),
            "recall": self.recall.to_json(),
            "fifo": [asdict(m) for m in self.fifo],
            "summary": self.summary,
            "summary_dia_ids": list(self.summary_dia_ids),
            "n_hidden": self.n_hidden,
            "summary_counts": asdict(self.summary_counts),
            "alerted": self._alerted,
            "logged": self._n_logged,
            "counters": self.counters,
        }
        (path / STATE_FILE).write_text(json.dumps(state, ensure_ascii=False, indent=1))
        vectors = self.archival.vectors if self.archival.vectors is not None else np.zeros((0, 0), dtype=np.float32)
        np.save(path / VECTORS_FILE, vectors)

    def load(self, path: Path) -> None:
        path = Path(path)
        state = json.loads((path / STATE_FILE).read_text())
        self.core = CoreMemory.from_json(state["core"])
        self.archival = ArchivalMemory.from_json(state["archival"], np.load(path / VECTORS_FILE))
        self.recall = RecallMemory.from_json(self.cfg.recall_search, state["recall"])
        self.fifo = [FifoMessage(**m) for m in state["fifo"]]
        self.summary = state["summary"]
        self.summary_dia_ids = tuple(state["summary_dia_ids"])
        self.n_hidden = int(state["n_hidden"])
        self.summary_counts = SummaryCounts(**state.get("summary_counts", {}))
        self._alerted = bool(state["alerted"])
        self._n_logged = int(state.get("logged", 0))
        self.counters.update(state["counters"])

    def stats(self) -> dict[str, Any]:
        with self._lock:
            c = json.loads(json.dumps(self.counters))
        turns = c["turns"] or 1
        c.update(
            archival_entries=len(self.archival.entries),
            recall_messages=len(self.recall.messages),
            core_lines={n: len(lines) for n, lines in self.core.blocks.items()},
            core_chars={n: self.core.chars(n) for n in self.core.blocks},
            fifo_messages=len(self.fifo),
            hidden_messages=self.n_hidden,
            summary_covers_turns=len(self.summary_dia_ids),
            context_tokens=self.context_tokens(),
            context_window_tokens=self.window,
            context_window_source=self.window_source,
            ingest_searches=sum(c["calls_by_function"].get(f, 0) for f in SEARCH_FUNCTIONS),
            ingest_llm_calls=c["agent_steps"] + c["summary_calls"],
            ingest_llm_calls_per_turn=round((c["agent_steps"] + c["summary_calls"]) / turns, 4),
        )
        return c


def _build(name: str, raw: dict[str, Any]) -> MemGPTConfig:
    """The config of method ``name``: ``memgpt-full-window`` pins ``context_window: backbone``."""
    if name == FULL_WINDOW:
        if raw.get("context_window", "backbone") != "backbone" or raw.get("context_window_tokens") is not None:
            raise bad_value(
                "method.context_window",
                raw.get("context_window_tokens") or raw.get("context_window"),
                "backbone (use method=memgpt to size the main context otherwise)",
                f"method {name}",
            )
        raw = {**raw, "context_window": "backbone"}
    return config_from_dict(raw)


def _factory(ctx: MethodContext) -> MemGPT:
    cfg = _build(str(ctx.config.get("name", "memgpt")), dict(ctx.config))
    if cfg.prompt_token_cap is None and "prompt_token_cap" in ctx.extras:
        # configs/method/memgpt.yaml interpolates it; a config built in code gets the run's value here
        cfg = dataclasses.replace(cfg, prompt_token_cap=int(ctx.extras["prompt_token_cap"]))
    conv = ctx.conversation
    return MemGPT(
        cfg,
        (conv.speaker_a, conv.speaker_b),
        backbone=lambda: ctx.backbone,
        embedder=lambda: ctx.embedder,
        seed=ctx.seed,
    )


#: The variant whose main context is the backbone's whole prompt budget (labelled as a variant in tables).
FULL_WINDOW = "memgpt-full-window"


def _whole_conversation_in_context(method_cfg: dict[str, Any]) -> bool:
    """Whether the main context holds the whole conversation: sized to the backbone's prompt budget (a LoCoMo
    conversation never pages). A run recorded before MemGPT paged at its own window has no ``context_window``:
    its main context was the backbone's."""
    return method_cfg.get("context_window", "backbone") == "backbone"


def _spec(name: str, description: str, bad_configs: tuple[BadConfig, ...], **reporting: Any) -> MethodSpec:
    return MethodSpec(
        name=name,
        factory=_factory,
        ingest_uses_llm=lambda c, a: True,
        retrieve_uses_llm=lambda c, a: True,
        config_schema=(MemGPTConfig,),
        validate_config=method_validator(MemGPTConfig, build=_build),
        description=description,
        conversation_in_context=_whole_conversation_in_context,
        sim_replies="baselines.memgpt.sim:REPLIES",
        bad_configs=bad_configs,
        **reporting,
    )


SPEC = _spec(
    "memgpt",
    "MemGPT (reimplementation): main context sized as MemGPT 0.2.6 (8,192 tokens), paged by eviction and "
    "recursive summaries; recall/archival storage via function calls",
    (
        (("method.evict_fraction=1.5",), ("method.evict_fraction=1.5", "(0, 1)")),
        (("method.recall_search=regex",), ("method.recall_search='regex'", "keyword, substring")),
        (("method.context_window_tokens=1000",), ("context_window_tokens", "1000 tokens", "cannot hold")),
        (("backbone.prompt_token_cap=1500",), ("1500 tokens", "capped", "cannot hold")),
    ),
    paper_row="memgpt",
    report_rank=20,
    reimplemented="cpacker/MemGPT 0.2.6, baselines/memgpt/README.md",
    sim_run_kinds=("memgpt_step",),
)
SPEC_FULL_WINDOW = _spec(
    FULL_WINDOW,
    "MemGPT variant: the main context is the backbone's whole prompt budget (a LoCoMo conversation never pages)",
    ((("method.context_window=memgpt",), ("method.context_window='memgpt'", "method=memgpt")),),
)

"""MemGPT's function-call protocol: the functions the agent may call (at ingest and at question time), the
validation of its replies into :class:`Action` steps, asking the backbone for one step and running the
function it chose against the memory tiers (:class:`FunctionCalls`), and how results are shown to the agent.

Function calls use a JSON protocol in the reply text, ``{"function": name, "arguments": {...},
"request_heartbeat": bool}``, parsed through ``complete_json``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from baselines.memgpt import prompts as P
from baselines.memgpt.config import MemGPTConfig
from baselines.memgpt.stores import (
    ArchivalEntry,
    ArchivalMemory,
    CoreMemory,
    FunctionError,
    RecallMemory,
    RecallMessage,
    split_passages,
)
from memcore.interfaces import ChatBackbone, Embedder, Message
from memcore.llm.json_reply import complete_json
from memcore.text import count_tokens
from memcore.types import Turn

#: function name → (required string args, optional args); ``new_content`` may be empty.
FUNCTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "core_memory_append": (("name", "content"), ()),
    "core_memory_replace": (("name", "old_content"), ("new_content",)),
    "archival_memory_insert": (("content",), ()),
    "archival_memory_search": (("query",), ("page",)),
    "conversation_search": (("query",), ("page",)),
    "done": ((), ()),
}
INGEST_FUNCTIONS = frozenset(FUNCTIONS)
QA_FUNCTIONS = frozenset({"archival_memory_search", "conversation_search", "done"})
_ALIASES = {"send_message": "done", "pause_heartbeats": "done", "finish": "done", "none": "done"}


@dataclass(frozen=True)
class Action:
    """One parsed agent step."""

    function: str
    arguments: dict[str, Any] = field(default_factory=dict)
    heartbeat: bool = False
    thought: str = ""

    def render(self) -> str:
        """Canonical JSON kept in the FIFO as the assistant's message."""
        d: dict[str, Any] = {"thought": self.thought, "function": self.function, "arguments": self.arguments}
        if self.heartbeat:
            d["request_heartbeat"] = True
        return json.dumps(d, ensure_ascii=False)


DONE = Action("done")


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return bool(value)


def parse_action(allowed: frozenset[str]) -> Callable[[Any], Action]:
    """Validator for one agent reply. Accepts ``function``/``name`` (or a nested
    ``{"function": {"name", "arguments"}}``) and ``arguments``/``args``/``parameters`` (object or
    JSON string); raises ValueError on an unknown function or a missing required argument."""

    def validate(obj: Any) -> Action:
        if not isinstance(obj, dict):
            raise ValueError("reply must be a JSON object")
        fn = obj.get("function", obj.get("name", obj.get("function_call")))
        args: Any = obj.get("arguments", obj.get("args", obj.get("parameters")))
        if isinstance(fn, dict):
            args = fn.get("arguments", args)
            fn = fn.get("name")
        if not isinstance(fn, str) or not fn.strip():
            raise ValueError('reply needs "function"')
        name = fn.strip().lower().removeprefix("functions.").strip("()")
        name = _ALIASES.get(name, name)
        if name not in allowed:
            raise ValueError(f"function {name!r} is not available here; use one of {sorted(allowed)}")
        if isinstance(args, str):
            args = json.loads(args) if args.strip() else {}
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ValueError("arguments must be an object")
        required, optional = FUNCTIONS[name]
        clean: dict[str, Any] = {}
        for key in required:
            value = args.get(key)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{name} needs a non-empty string argument {key!r}")
            clean[key] = value.strip()
        for key in optional:
            if key == "page":
                try:
                    clean["page"] = max(0, int(args.get("page", 0) or 0))
                except (TypeError, ValueError):
                    clean["page"] = 0
            elif key in args:
                clean[key] = "" if args[key] is None else str(args[key])
        heartbeat = _as_bool(obj.get("request_heartbeat", args.get("request_heartbeat", False)))
        thought = obj.get("thought", obj.get("inner_thoughts", ""))
        return Action(name, clean, heartbeat, str(thought)[:300] if thought else "")

    return validate


@dataclass
class Hit:
    """A search result kept as evidence."""

    note_id: str
    text: str
    dia_ids: tuple[str, ...]
    timestamp: str
    score: float
    channel: str


def archival_hits(results: list[tuple[ArchivalEntry, float]]) -> list[Hit]:
    """``archival_memory_search`` results as hits (note ids ``archival:<entry id>``)."""
    return [Hit(f"archival:{e.entry_id}", e.content, e.dia_ids, e.timestamp, s, "archival_search") for e, s in results]


def recall_hits(results: list[tuple[RecallMessage, float]]) -> list[Hit]:
    """``conversation_search`` results as hits (note ids ``recall:<dia_id>`` for a turn, ``recall:<message id>``
    for the agent's own messages and events; an event credits no turn)."""
    return [
        Hit(
            m.note_id,
            f"{m.speaker}: {m.text}",
            (m.dia_id,) if m.dia_id else (),
            m.timestamp,
            s,
            "conversation_search",
        )
        for m, s in results
    ]


def format_results(hits: list[Hit], total: int, page: int, page_size: int, max_chars: int | None) -> str:
    """One page of search results as the agent sees them, cut at ``max_chars`` (None: uncut, as MemGPT 0.2.6)."""
    if not hits:
        return "No results found."
    pages = max(0, (total - 1) // page_size)
    body = "\n".join(f"- [{h.timestamp}] {h.text}" for h in hits)
    return f"Showing {len(hits)} of {total} results (page {page}/{pages}):\n{body}"[:max_chars]


def result_message(action: Action, ok: bool, message: str) -> str:
    """The function result returned to the agent after ``action`` ran."""
    return P.FUNCTION_RESULT.format(name=action.function, status="OK" if ok else "Failed", message=message or "done")


@dataclass(frozen=True)
class Step:
    """One agent step: the action (``DONE`` when the reply was unusable), whether the reply was usable, the
    step's total tokens (prompt + reply, approximate: what MemGPT reads from the API's ``usage.total_tokens``)
    and whether the reply reached ``max_tokens``."""

    action: Action
    ok: bool
    total_tokens: int
    at_max_tokens: bool


@dataclass(frozen=True)
class FunctionCalls:
    """One agent's function calls: a step asks the backbone for an :class:`Action`, ``execute`` runs it on
    the memory tiers passed in (the agent's current ones; ``load`` replaces them). ``backbone`` /
    ``embedder`` are providers, called only when needed."""

    cfg: MemGPTConfig
    backbone: Callable[[], ChatBackbone]
    embedder: Callable[[], Embedder]
    seed: int = 0

    def step(self, context: list[Message], state: str, allowed: frozenset[str], *, stage: str) -> Step:
        """The agent's next step after ``context`` and the ``state`` message (an unusable reply is :data:`DONE`)."""
        kind = "memgpt ingest step → done" if stage == "ingest" else "memgpt question step → done"
        messages = [*context, {"role": "user", "content": state}]
        res = complete_json(
            self.backbone(),
            messages,
            stage=stage,
            validate=parse_action(allowed),
            fallback=DONE,
            fallback_kind=kind,
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed if self.cfg.temperature > 0 else None,
        )
        total = sum(count_tokens(m["content"]) for m in messages) + count_tokens(res.raw)
        return Step(res.value, res.ok, total, res.truncated)

    def execute(
        self, action: Action, turn: Turn | None, core: CoreMemory, archival: ArchivalMemory, recall: RecallMemory
    ) -> tuple[bool, str, list[Hit]]:
        """Run one function; returns (ok, message for the agent, search hits)."""
        a = action.arguments
        ids = (turn.dia_id,) if turn is not None else ()
        try:
            if action.function == "core_memory_append":
                return True, core.append(a["name"], a["content"], ids), []
            if action.function == "core_memory_replace":
                return True, core.replace(a["name"], a["old_content"], a.get("new_content", ""), ids), []
            if action.function == "archival_memory_insert":
                passages = split_passages(a["content"], self.cfg.archival_chunk_tokens, self.cfg.archival_chunk_overlap)
                vecs = np.asarray(self.embedder().encode(passages), dtype=np.float32)
                stamp = turn.session_time_raw if turn is not None else ""
                entries = [archival.insert(p, ids, stamp, v) for p, v in zip(passages, vecs)]
                return True, f"stored as {', '.join(e.entry_id for e in entries)}", []
            if action.function == "archival_memory_search":
                return self.archival_search(archival, a["query"], a.get("page", 0))
            if action.function == "conversation_search":
                return self.recall_search(recall, a["query"], a.get("page", 0))
        except FunctionError as exc:
            return False, str(exc), []
        return True, "", []

    def archival_search(self, archival: ArchivalMemory, query: str, page: int) -> tuple[bool, str, list[Hit]]:
        """``archival_memory_search``: one page of entries by embedding similarity to ``query``."""
        vec = np.asarray(self.embedder().encode([query]), dtype=np.float32)[0]
        results, total = archival.search(vec, page, self.cfg.page_size)
        return self._results(archival_hits(results), total, page)

    def recall_search(self, recall: RecallMemory, query: str, page: int) -> tuple[bool, str, list[Hit]]:
        """``conversation_search``: one page of conversation messages matching ``query``."""
        results, total = recall.search(query, page, self.cfg.page_size)
        return self._results(recall_hits(results), total, page)

    def _results(self, hits: list[Hit], total: int, page: int) -> tuple[bool, str, list[Hit]]:
        return True, format_results(hits, total, page, self.cfg.page_size, self.cfg.function_result_chars), hits

"""The simulator's replies to MemGPT's prompts (the agent's function-call steps and the recursive summary): the
specs' ``sim_replies`` (:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from baselines.memgpt import prompts as MEMGPT_PROMPT
from memcore.interfaces import Message
from memcore.testing.sim_text import SimReplies, between, content, first_words, last_text, system_text

KINDS = ("memgpt_step", "memgpt_summary")

_TURN_RE = re.compile(r"^\[([^\]]+)\] (.+)$", re.DOTALL)


def classify(msgs: Sequence[Message]) -> str | None:
    system = system_text(msgs)
    if system.startswith("You are MemGPT"):
        return "memgpt_step"
    if system.startswith(MEMGPT_PROMPT.SUMMARY_SYSTEM.split("{", 1)[0]):
        return "memgpt_summary"
    return None


def _step(messages: Sequence[Message]) -> str:
    state = content(messages[-1])
    if "QUESTION:" in state:
        q = between(state, "QUESTION:", "\n")
        return json.dumps(
            {"thought": "search", "function": "archival_memory_search", "arguments": {"query": q, "page": 0}}
        )
    if MEMGPT_PROMPT.INGEST_NEW_MESSAGE in state:
        for m in reversed(messages[:-1]):
            found = _TURN_RE.match(content(m)) if m.get("role") == "user" else None
            if found:
                fact = f"On {found.group(1)} {first_words(found.group(2), 30)}"
                return json.dumps(
                    {"thought": "store", "function": "archival_memory_insert", "arguments": {"content": fact}}
                )
    return json.dumps({"thought": "nothing more", "function": "done", "arguments": {}})


def reply(kind: str, msgs: Sequence[Message]) -> str:
    if kind == "memgpt_step":
        return _step(msgs)
    return first_words(last_text(msgs).split("\n", 1)[-1], 60) or "nothing yet"


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

"""The simulator's replies to A-MEM's prompts (note analysis, memory evolution, query keywords): the spec's
``sim_replies`` (:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

from baselines.amem import prompts as AMEM_PROMPT
from memcore.interfaces import Message
from memcore.testing.sim_text import (
    SimReplies,
    between,
    first_words,
    keywords,
    last_text,
    question,
    system_text,
    user_text,
)

KINDS = ("amem_analysis", "amem_evolution", "amem_query")


def classify(msgs: Sequence[Message]) -> str | None:
    if system_text(msgs) != AMEM_PROMPT.SYSTEM:
        return None
    user = user_text(msgs)
    if user.startswith("Generate a structured analysis"):
        return "amem_analysis"
    if "memory evolution agent" in user:
        return "amem_evolution"
    if "generate several keywords" in user:
        return "amem_query"
    return None


def _analysis(user: str) -> str:
    text = user.split("Content for analysis:\n", 1)[-1]
    return json.dumps(
        {"keywords": keywords(text, 4), "context": first_words(text, 20), "tags": ["conversation", "memory"]}
    )


def _evolution(user: str) -> str:
    n = int(between(user, "The number of neighbors is", ".") or 0)
    if n == 0 or zlib.crc32(user.encode()) % 2:
        return json.dumps({"should_evolve": False, "actions": []})
    return json.dumps(
        {
            "should_evolve": True,
            "actions": ["strengthen"],
            "suggested_connections": [0],
            "tags_to_update": keywords(between(user, "keywords:", "\n"), 3) or ["memory"],
            "new_context_neighborhood": [],
            "new_tags_neighborhood": [],
        }
    )


def _query(user: str) -> str:
    return json.dumps({"keywords": ", ".join(keywords(question(user), 4)) or "conversation"})


_HANDLERS = {"amem_analysis": _analysis, "amem_evolution": _evolution, "amem_query": _query}


def reply(kind: str, msgs: Sequence[Message]) -> str:
    return _HANDLERS[kind](last_text(msgs))


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

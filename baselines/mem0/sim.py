"""The simulator's replies to Mem0's prompts: mem0ai's additive extraction (``mem0``), and the two-phase
pipeline's fact extraction and ADD/UPDATE/DELETE/NONE update (``mem0-two-phase``): the specs' ``sim_replies``
(:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence

from memcore.interfaces import Message
from memcore.testing.sim_text import SimReplies, first_text, first_words, last_text, system_text

KINDS = ("mem0_extract", "mem0_facts", "mem0_update")

_EXTRACTOR_MARK = "You are a Memory Extractor"  # mem0ai's ADDITIVE_EXTRACTION_PROMPT
_FACTS_MARK = "You are a Personal Information Organizer"  # prompts_v1 extraction system prompts
_UPDATE_MARK = "You are a smart memory manager which controls the memory of a system."


def classify(msgs: Sequence[Message]) -> str | None:
    system = system_text(msgs)
    if _EXTRACTOR_MARK in system[:400]:  # mem0ai opens it with a "# ROLE" heading
        return "mem0_extract"
    if system.startswith(_FACTS_MARK):
        return "mem0_facts"
    if first_text(msgs).startswith(_UPDATE_MARK):
        return "mem0_update"
    return None


def _section(prompt: str, name: str) -> str:
    return prompt.split(f"## {name}\n", 1)[-1].split("\n\n#", 1)[0] if f"## {name}\n" in prompt else ""


def _extract(user: str) -> str:
    lines = [ln.strip() for ln in _section(user, "New Messages").splitlines() if ln.strip()]
    return json.dumps({"memory": [{"id": str(i), "text": first_words(ln, 40)} for i, ln in enumerate(lines[:4])]})


def _facts(user: str) -> str:
    lines = [ln.split(": ", 1)[-1] for ln in user.splitlines() if ln.startswith(("user: ", "assistant: "))]
    return json.dumps({"facts": [first_words(ln, 30) for ln in lines[:4] if ln.strip()]})


def _update(prompt: str) -> str:
    blocks = re.findall(r"```\n\s*(\[.*?\])\n\s*```", prompt, re.S)
    try:
        facts = [str(f) for f in ast.literal_eval(blocks[-1])] if blocks else []
    except (ValueError, SyntaxError):  # a malformed fact list in the prompt: reply with no fact, as mem0 would parse
        facts = []
    return json.dumps({"memory": [{"id": str(i), "text": f, "event": "ADD"} for i, f in enumerate(facts)]})


def reply(kind: str, msgs: Sequence[Message]) -> str:
    if kind == "mem0_update":
        return _update(first_text(msgs))
    return _extract(last_text(msgs)) if kind == "mem0_extract" else _facts(last_text(msgs))


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

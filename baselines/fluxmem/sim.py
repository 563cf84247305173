"""The simulator's replies to FluxMem's eight prompts (fact extraction, listed and graded verification, support
check, reshape, skill extraction / rerun / refinement): the specs' ``sim_replies``
(:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

from baselines.fluxmem import prompt_verify as FLUX_VERIFY
from baselines.fluxmem import prompts as FLUX_PROMPT
from memcore.interfaces import Message
from memcore.testing.sim_text import SimReplies, between, first_words, last_text, overlap, system_text

_KIND_OF_SYSTEM = {
    FLUX_PROMPT.FACTS_SYSTEM: "fluxmem_facts",
    FLUX_PROMPT.VERIFY_SYSTEM: "fluxmem_verify",
    FLUX_VERIFY.VERIFY_SYSTEM: "fluxmem_verify_graded",
    FLUX_PROMPT.CHECK_SYSTEM: "fluxmem_check",
    FLUX_PROMPT.RESHAPE_SYSTEM: "fluxmem_reshape",
    FLUX_PROMPT.SKILL_EXTRACT_SYSTEM: "fluxmem_skill_extract",
    FLUX_PROMPT.SKILL_RERUN_SYSTEM: "fluxmem_skill_rerun",
    FLUX_PROMPT.SKILL_REFINE_SYSTEM: "fluxmem_skill_refine",
}
KINDS = tuple(_KIND_OF_SYSTEM.values())

_TURN_RE = re.compile(r"Turn to record \([^)]+\):\n([^:\n]+): (.*)")
_NUMBERED_RE = re.compile(r"^\s*\[?(\d+)[\].)]", re.MULTILINE)


def classify(msgs: Sequence[Message]) -> str | None:
    return _KIND_OF_SYSTEM.get(system_text(msgs))


def reply(kind: str, msgs: Sequence[Message]) -> str:
    user = last_text(msgs)
    if kind == "fluxmem_facts":
        m = _TURN_RE.search(user)
        return json.dumps({"facts": [f"{m.group(1)} says: {first_words(m.group(2), 30)}"] if m else []})
    if kind == "fluxmem_verify_graded":  # upstream's plain-text score: word overlap of claim and evidence
        claim = between(user, "Claim:", "\n\nEvidence:")
        evidence = between(user, "Evidence:", "\n\nRelevance score")
        return f"{overlap(claim, evidence):.2f}"
    if kind == "fluxmem_verify":
        ids = sorted({int(i) for i in _NUMBERED_RE.findall(between(user, "Candidate facts:", "Which candidates"))})
        return json.dumps({"relevant": ids[:2]})
    if kind == "fluxmem_check":
        if zlib.crc32(user.encode()) % 2:
            return json.dumps({"supported": True, "failure": "none", "missing": "", "distracting": [], "reshape": []})
        q = between(user, "Question:", "\n")
        return json.dumps(
            {"supported": False, "failure": "under_connection", "missing": q, "distracting": [], "reshape": []}
        )
    if kind == "fluxmem_reshape":
        return json.dumps({"mode": "expand", "text": between(user, "Memory fact:", "\n") or "fact"})
    if kind in ("fluxmem_skill_extract", "fluxmem_skill_refine"):
        return json.dumps({"skill": "Find the dated facts about the person asked about and answer with them."})
    return json.dumps({"answer": first_words(between(user, "Question:", "\n"), 4), "success": True})


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

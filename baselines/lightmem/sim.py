"""The simulator's replies to LightMem's prompts (metadata extraction, memory update): the spec's
``sim_replies`` (:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

from baselines.lightmem import prompt_extract as LIGHT_EXTRACT
from baselines.lightmem import prompt_update as LIGHT_UPDATE
from memcore.interfaces import Message
from memcore.testing.sim_text import SimReplies, between, first_words, last_text, system_text

KINDS = ("lightmem_extract", "lightmem_update")

_MSG_RE = re.compile(r"^\[[^\]]*\] (\d+)\.([^:]+): (.*)$", re.MULTILINE)


def classify(msgs: Sequence[Message]) -> str | None:
    system = system_text(msgs)
    if system == LIGHT_EXTRACT.METADATA_GENERATE_PROMPT_LOCOMO:
        return "lightmem_extract"
    if system == LIGHT_UPDATE.UPDATE_PROMPT:
        return "lightmem_update"
    return None


def _extract(user: str) -> str:
    found = _MSG_RE.findall(user)
    data = [{"source_id": int(i), "fact": f"{sp} said: {first_words(text, 30)}"} for i, sp, text in found]
    return json.dumps({"data": data})


def _update(user: str) -> str:
    if zlib.crc32(user.encode()) % 4:
        return json.dumps({"action": "ignore"})
    target = between(user, "Target memory:", "\n")
    return json.dumps({"action": "update", "new_memory": target or "updated memory"})


def reply(kind: str, msgs: Sequence[Message]) -> str:
    return _extract(last_text(msgs)) if kind == "lightmem_extract" else _update(last_text(msgs))


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

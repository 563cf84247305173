"""Relative dates resolved in code at ingestion: the ingestion, gate and merge prompts see
"yesterday [= 30 April 2023]", the note's raw turn stays verbatim, and ``resolve_dates=false`` is the old text."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from memcore.interfaces import Message
from tests.fakes import MemCoReLLM
from tests.support import build, conversation_of

# session 1 of conversation_of is Monday 1 May 2023
TURNS = ["tagA: I adopted a dog yesterday", "tagA dup: we walked him last Saturday"]


def test_prompts_see_resolved_dates_and_raw_turns_stay_verbatim(tmp_path: Path) -> None:
    llm = MemCoReLLM()  # tag_strength: the "dup" turn is redundant with the first → merge
    mem, _, _ = build(conversation_of(TURNS), tmp_path, llm=llm)
    ingest = llm.prompts_of("ingest")
    assert "tagA: I adopted a dog yesterday [= 30 April 2023]" in ingest[0]
    assert "last Saturday [= 29 April 2023]" in ingest[1]
    assert "yesterday [= 30 April 2023]" in ingest[1]  # the previous turn, shown for context, resolved too
    gate = llm.prompts_of("gate")[0]
    assert "last Saturday [= 29 April 2023]" in gate and "yesterday [= 30 April 2023]" in gate
    merge = llm.prompts_of("merge")[0]
    assert "yesterday [= 30 April 2023]" in merge and "last Saturday [= 29 April 2023]" in merge
    note = mem.store.notes[0]
    assert [r.text for r in note.raws] == TURNS  # verbatim
    assert "[= 30 April 2023]" in note.context


def test_resolve_dates_false_keeps_the_old_text(tmp_path: Path) -> None:
    llm = MemCoReLLM()
    build(conversation_of(TURNS), tmp_path, llm=llm, resolve_dates=False)
    assert llm.calls and not any("[=" in llm.user(m) for _, m in llm.calls)


class DropsAnnotations(MemCoReLLM):
    """An ingest model that writes the turn back without the "[= …]" annotations (keeps "last weekend")."""

    def on_ingest(self, messages: Sequence[Message]) -> str:
        reply = json.loads(super().on_ingest(messages))
        reply["context"] = re.sub(r" \[= [^\]]*\]", "", reply["context"])
        return json.dumps(reply)


def test_an_llm_context_that_keeps_a_relative_date_is_resolved(tmp_path: Path) -> None:
    llm = DropsAnnotations()
    mem, _, _ = build(conversation_of(["I went hiking last weekend"]), tmp_path, llm=llm)
    assert "last weekend [= 29–30 April 2023]" in llm.prompts_of("ingest")[0]
    assert mem.store.notes[0].context == "Alice said that I went hiking last weekend [= 29–30 April 2023]"

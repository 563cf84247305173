"""Flat baselines: full_context (official LoCoMo layout, budget with headers and a question + answer reserve) and
rag_locomo (LoCoMo's RAG setting: top-5 turns, official line format)."""

from __future__ import annotations

from datetime import datetime

from baselines.full_context import (
    CONV_START_PROMPT,
    PROMPT_OVERHEAD_TOKENS,
    FullContext,
    FullContextConfig,
    session_header,
    turn_line,
)
from memcore.text import count_tokens
from memcore.types import Turn


def _turns() -> list[Turn]:
    out = []
    for s in (1, 2):
        raw = f"1:56 pm on {s} May, 2023"
        for j in range(1, 6):
            speaker = "Ann" if j % 2 else "Bob"
            caption = "a dog on a beach" if (s, j) == (2, 2) else None
            text = f"message {s}.{j} about things"
            if caption:
                text = f"{text} [shares an image: {caption}]"
            out.append(Turn(f"D{s}:{j}", speaker, text, s, datetime(2023, 5, s, 13, 56), raw, image_caption=caption))
    return out


def _system(budget: int) -> FullContext:
    fc = FullContext(FullContextConfig(), budget, ("Ann", "Bob"))
    for t in _turns():
        fc.ingest(t)
    fc.finalize()
    return fc


def test_official_layout_header_dates_and_image_line() -> None:
    ev = _system(10_000).retrieve("What did Ann say?")
    assert ev.context.startswith(CONV_START_PROMPT.format("Ann", "Bob"))
    assert "wriiten at the beginning" in ev.context  # verbatim, typo included
    assert 'DATE: 1:56 pm on 1 May, 2023\nCONVERSATION:\nAnn said, "message 1.1 about things"\n' in ev.context
    assert 'Bob said, "message 2.2 about things"\n[shares a dog on a beach]\n' in ev.context
    assert "[shares an image:" not in ev.context
    assert ev.context.count("CONVERSATION:") == 2 and len(ev.notes) == 10


def test_budget_counts_headers_and_reserves_question_and_answer() -> None:
    question = "What did Ann say about things?"
    full = _system(10_000).retrieve(question)
    need = count_tokens(full.context)
    reserve = PROMPT_OVERHEAD_TOKENS + count_tokens(question) + 50
    # exactly enough for everything: all turns kept; one token less: the oldest turn goes
    assert len(_system(need + reserve).retrieve(question).notes) == 10
    cut = _system(need + reserve - 1).retrieve(question)
    assert cut.notes[0].dia_ids[0] == "D1:2"
    assert count_tokens(cut.context) + reserve <= need + reserve - 1
    # a longer question leaves less room
    longer = _system(need + reserve).retrieve(question + " Please answer with the date and the place.")
    assert len(longer.notes) < 10


def test_turns_not_sessions_are_dropped_and_the_partial_session_keeps_its_date() -> None:
    question = "q?"
    fc = _system(10_000)
    turns = _turns()
    cost = {t.dia_id: count_tokens(turn_line(t)) for t in turns}
    header = count_tokens(CONV_START_PROMPT.format("Ann", "Bob"))
    date = {s: count_tokens(session_header(f"1:56 pm on {s} May, 2023")) for s in (1, 2)}
    session2 = date[2] + sum(v for k, v in cost.items() if k.startswith("D2:"))
    # room for session 2, then session 1's date header and its last two turns (not the whole session)
    budget = fc.reserve_tokens(question) + header + session2 + date[1] + cost["D1:4"] + cost["D1:5"]
    ev = _system(budget).retrieve(question)
    ids = [n.dia_ids[0] for n in ev.notes]
    assert ids[:2] == ["D1:4", "D1:5"] and ids[-1] == "D2:5" and len(ids) == 7
    assert 'DATE: 1:56 pm on 1 May, 2023\nCONVERSATION:\nBob said, "message 1.4' in ev.context


def test_rag_locomo_is_top5_dense_in_the_official_line_format(tmp_path, tiny_conversation) -> None:
    from baselines.rag import RAG_LOCOMO
    from tests.support import method_context

    conv = tiny_conversation
    ctx = method_context(
        {"name": "rag_locomo", "retriever": "dense", "top_k": 5, "context_format": "locomo"}, conv, tmp_path
    )
    rag = RAG_LOCOMO.factory(ctx)
    for t in conv.turns:
        rag.ingest(t)
    rag.finalize()
    ev = rag.retrieve(conv.turns[0].text)
    assert len(ev.notes) == min(5, len(conv.turns))
    lines = ev.context.split("\n")
    first = conv.turns[0]
    assert lines[0] == f'{first.session_time_raw}: {first.speaker} said, "{first.text}"'  # best match first
    assert len(lines) == len(ev.notes)
    assert [n.score for n in ev.notes] == sorted((n.score for n in ev.notes), reverse=True)


def test_budget_keeps_that_many_most_recent_turns() -> None:
    ev = _system(10_000).retrieve("q?", budget=3)
    assert [n.dia_ids[0] for n in ev.notes] == ["D2:3", "D2:4", "D2:5"]
    assert ev.context.count("CONVERSATION:") == 1

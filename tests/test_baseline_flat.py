"""Flat baselines: full_context (official LoCoMo layout, budget with headers and a question + answer reserve) and
rag_locomo (LoCoMo's RAG setting: top-5 turns, official line format)."""

from __future__ import annotations

import hashlib
from datetime import datetime

from baselines.full_context import (
    CONV_START_PROMPT,
    PROMPT_OVERHEAD_TOKENS,
    FullContext,
    FullContextConfig,
    session_header,
    turn_line,
)
from baselines.locomo_batch_prompt import QA_PROMPT_BATCH
from baselines.rag import RAG, RAG_LOCOMO, RAGConfig
from memcore.llm.embedders import HashingEmbedder
from memcore.text import count_tokens
from memcore.types import Turn
from tests.support import method_context


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


def _official_context(turns: list[Turn], speakers: tuple[str, str]) -> str:
    """``get_input_context`` of snap-research/locomo task_eval/evaluate_gpts.py @ 9228632, transcribed for the
    untruncated case over a locomo10.json-like dict (turns with ``text`` and ``blip_caption``, no ``img_file``)."""
    data: dict[str, object] = {}
    for t in turns:
        data.setdefault(f"session_{t.session_index}", []).append(  # type: ignore[union-attr]
            {"speaker": t.speaker, "clean_text": t.text.split(" [shares an image:")[0], "blip_caption": t.image_caption}
        )
        data[f"session_{t.session_index}_date_time"] = t.session_time_raw
    query_conv = ""
    last = max(i for i in range(1, 50) if f"session_{i}" in data)
    for i in range(last, 0, -1):
        if f"session_{i}" in data:
            query_conv += "\n\n"
            for dialog in data[f"session_{i}"][::-1]:  # type: ignore[index]
                turn = dialog["speaker"] + ' said, "' + dialog["clean_text"] + '"' + "\n"
                if "img_file" in dialog and len(dialog["img_file"]) > 0:
                    turn += f"[shares {dialog['blip_caption']}]\n"
                query_conv = turn + query_conv
            query_conv = "DATE: " + str(data[f"session_{i}_date_time"]) + "\n" + "CONVERSATION:\n" + query_conv
    return CONV_START_PROMPT.format(*speakers) + query_conv


def test_official_layout_header_dates_and_no_caption_by_default() -> None:
    ev = _system(10_000).retrieve("What did Ann say?")
    assert ev.context == _official_context(_turns(), ("Ann", "Bob"))
    assert ev.context.startswith(CONV_START_PROMPT.format("Ann", "Bob"))
    assert "wriiten at the beginning" in ev.context  # verbatim, typo included
    # sha256 of CONV_START_PROMPT in snap-research/locomo task_eval/evaluate_gpts.py @ 9228632
    assert hashlib.sha256(CONV_START_PROMPT.encode()).hexdigest() == (
        "68e12aada9c2b0308cf3c92cc50565391d9a408f953413565a573bb15ff0a4d8"
    )
    assert 'DATE: 1:56 pm on 1 May, 2023\nCONVERSATION:\nAnn said, "message 1.1 about things"\n' in ev.context
    # sessions back to back; the official per-session blank lines all come after the last turn
    assert 'Ann said, "message 1.5 about things"\nDATE: 1:56 pm on 2 May, 2023\n' in ev.context
    assert ev.context.endswith('Ann said, "message 2.5 about things"\n' + "\n\n" * 2)
    # the official code writes a caption only for a turn with an img_file key (locomo10.json has none)
    assert 'Bob said, "message 2.2 about things"\nBob said' not in ev.context
    assert 'Bob said, "message 2.2 about things"\nAnn said, "message 2.3' in ev.context
    assert "[shares" not in ev.context
    assert ev.context.count("CONVERSATION:") == 2 and len(ev.notes) == 10


def test_shares_captions_are_a_knob() -> None:
    fc = FullContext(FullContextConfig(image_captions="shares"), 10_000, ("Ann", "Bob"))
    for t in _turns():
        fc.ingest(t)
    ev = fc.retrieve("What did Ann say?")
    assert 'Bob said, "message 2.2 about things"\n[shares a dog on a beach]\n' in ev.context
    assert "[shares an image:" not in ev.context
    assert count_tokens(ev.context) > count_tokens(_system(10_000).retrieve("What did Ann say?").context)


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


def test_locomo_protocol_reserves_as_the_official_code_with_a_strict_check() -> None:
    """``get_gpt_answers``: the question's room is ``QA_PROMPT_BATCH + "0: <question>"`` (batch size 1 too) plus
    ``PER_QA_TOKEN_BUDGET``, and a turn is kept only while the total stays strictly below the limit."""
    question = "What did Ann say about things?"
    fc = FullContext(FullContextConfig(protocol="locomo"), 10_000, ("Ann", "Bob"))
    reserve = count_tokens(QA_PROMPT_BATCH + "0: " + question) + 50
    assert (
        fc.reserve_tokens(question)
        == reserve
        != FullContext(FullContextConfig(), 1, ("Ann", "Bob")).reserve_tokens(question)
    )

    def official(budget: int) -> FullContext:
        sys = FullContext(FullContextConfig(protocol="locomo"), budget, ("Ann", "Bob"))
        for t in _turns():
            sys.ingest(t)
        return sys

    need = count_tokens(official(10_000).retrieve(question).context)
    assert len(official(need + reserve + 1).retrieve(question).notes) == 10
    # exactly at the limit: not strictly below it, so the oldest turn goes
    assert official(need + reserve).retrieve(question).notes[0].dia_ids[0] == "D1:2"


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


def test_rag_locomo_leaves_the_caption_out_as_the_official_dialog_database(tmp_path) -> None:
    emb = HashingEmbedder(64)
    lines = {}
    for captions in ("none", "inline"):
        rag = RAG(
            RAGConfig(retriever="dense", top_k=10, context_format="locomo", locomo_captions=captions), lambda: emb
        )
        for t in _turns():
            rag.ingest(t)
        rag.finalize()
        lines[captions] = rag.retrieve("a dog on a beach").context.split("\n")
    assert '1:56 pm on 2 May, 2023: Bob said, "message 2.2 about things"' in lines["none"]
    assert "[shares" not in "\n".join(lines["none"])
    assert (
        '1:56 pm on 2 May, 2023: Bob said, "message 2.2 about things [shares an image: a dog on a beach]"'
        in (lines["inline"])
    )


def test_budget_keeps_that_many_most_recent_turns() -> None:
    ev = _system(10_000).retrieve("q?", budget=3)
    assert [n.dia_ids[0] for n in ev.notes] == ["D2:3", "D2:4", "D2:5"]
    assert ev.context.count("CONVERSATION:") == 1

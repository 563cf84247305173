"""Evidence toward the limit: the oracle at a budget, session-level hit, the session frame and the re-ranking cues
shared by every method that packs turns (memcore/packing/turns.py, memcore/eval/oracle.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from baselines.rag import RAG, RAGConfig
from memcore.eval.bootstrap import metric_value
from memcore.eval.oracle import oracle_fill, oracle_items, turn_line
from memcore.itemlog import LoggedItem
from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import ConfigError, MemCoReConfig
from memcore.metrics.scorers.evidence import session_hit
from memcore.packing.turns import Cues, TurnMeta, content_words, fill_framed, named_speaker, render_framed, rerank
from memcore.text import count_tokens
from tests.support import build, conversation_of, story_conversation

D1 = "1:00 pm on 8 May, 2023"
D2 = "2:00 pm on 20 June, 2023"
META = {
    "D1:1": TurnMeta("D1:1", "Alice", "Hey Bob, how's it going?", D1),
    "D1:2": TurnMeta("D1:2", "Bob", "I adopted a beagle puppy named Rex", D1),
    "D1:3": TurnMeta("D1:3", "Alice", "Rex sounds lovely, what does he eat?", D1),
    "D2:1": TurnMeta("D2:1", "Bob", "Rex chewed my violin case yesterday", D2),
    "D2:2": TurnMeta("D2:2", "Alice", "Oh no!", D2),
}


# ------------------------------------------------------------------ the oracle
def test_the_oracle_packs_gold_turns_smallest_first_and_cuts_only_a_lone_oversized_turn() -> None:
    cost = {"D1:1": 10, "D1:2": 4, "D1:3": 7}
    assert oracle_fill(["D1:1", "D1:2", "D1:3"], cost, 12) == (["D1:2", "D1:3"], 11, False)
    assert oracle_fill(["D1:1"], cost, 5) == (["D1:1"], 5, True)  # larger than the budget: cut, still counted
    assert oracle_fill([], cost, 5) == ([], 0, False)
    with pytest.raises(KeyError):
        oracle_fill(["D9:9"], cost, 5)


def test_oracle_items_score_the_gold_turns_in_the_packing_line_format() -> None:
    conv = story_conversation(n_sessions=2)
    items = [
        {"item_id": f"{conv.conv_id}#{q.index}", "conv_id": conv.conv_id, "qa_index": q.index, "category": 1}
        | {"evidence": list(q.evidence)}
        for q in conv.qa
    ]
    items.append({"item_id": "x#9", "conv_id": conv.conv_id, "qa_index": 9, "category": 1, "evidence": []})
    got = oracle_items(items, [conv], 200)
    turn = {t.dia_id: t for t in conv.turns}["D1:3"]
    assert turn_line(turn) == f"[{turn.session_time_raw}] {turn.speaker}: {turn.text}"
    assert got[0]["retrieved_dia_ids"] == ["D1:3"] and got[0]["recall"] == 1.0
    assert got[0]["tokens_used"] == count_tokens(turn_line(turn))
    assert got[-1]["recall"] is None and got[-1]["retrieved_dia_ids"] == []


# ------------------------------------------------------------------ session-level hit
def test_session_hit_looks_at_the_first_five_distinct_sessions_in_order() -> None:
    retrieved = ["D1:1", "D1:2", "D2:1", "D3:1", "D4:4", "D5:1", "D6:1"]
    assert session_hit(["D5:9"], retrieved) == 1.0  # D5 is the fifth distinct session; the turn need not be there
    assert session_hit(["D6:1"], retrieved) == 0.0  # the sixth is past N = 5
    assert session_hit(["D6:1"], retrieved, n=6) == 1.0
    assert session_hit([], retrieved) is None
    item = LoggedItem(evidence=["D2:7"], retrieved_dia_ids=["D2:1"], recall=0.0, hit=0.0)
    assert metric_value(item, "session_hit") == 1.0 and metric_value(item, "hit") == 0.0


# ------------------------------------------------------------------ cues
def test_the_cues_find_the_named_speaker_the_stated_date_filler_and_neighbours() -> None:
    assert named_speaker("What did Bob adopt?", ["Alice", "Bob"]) == "Bob"
    assert named_speaker("What did Alice and Bob do?", ["Alice", "Bob"]) is None
    assert content_words("Hey Bob, how's it going?") < 2 <= content_words("I adopted a beagle puppy named Rex")
    order = ["D1:1", "D2:2", "D1:3", "D2:1", "D1:2"]
    assert rerank(order, "q", META.get, ["Alice", "Bob"], Cues()) == order  # no cue: unchanged
    by_bob = rerank(order, "What did Bob adopt?", META.get, ["Alice", "Bob"], Cues(speaker=1.0))
    assert by_bob[:2] == ["D2:1", "D1:2"]
    dated = rerank(order, "What happened on 20 June, 2023?", META.get, ["Alice", "Bob"], Cues(date=1.0))
    assert dated[:2] == ["D2:2", "D2:1"]
    assert rerank(order, "What happened in June 2023?", META.get, [], Cues(date=1.0))[:2] == ["D2:2", "D2:1"]
    no_filler = rerank(order, "q", META.get, [], Cues(filler=2))
    assert set(no_filler[-2:]) == {"D1:1", "D2:2"} and len(no_filler) == len(order)
    nb = rerank(["D1:2", "D2:1"], "q", META.get, [], Cues(neighbors=1))
    assert nb == ["D1:2", "D1:1", "D1:3", "D2:1"]  # neighbours of the first turn, even if not candidates


# ------------------------------------------------------------------ the frame
def test_the_session_frame_charges_each_header_once_and_keeps_every_date_readable() -> None:
    order = ["D2:1", "D1:3", "D1:2"]
    line = fill_framed(order, META, 10_000, "line")
    framed = fill_framed(order, META, 10_000, "session")
    text = render_framed(framed.dia_ids, META, "session")
    assert text.splitlines() == [f"[{D1}]", META["D1:2"].line(), META["D1:3"].line(), f"[{D2}]", META["D2:1"].line()]
    assert framed.used == count_tokens(text) < line.used == count_tokens(render_framed(order, META, "line"))
    ranked = render_framed(framed.dia_ids, META, "session_rank")
    assert ranked.splitlines()[0] == f"[{D2}]" and ranked.splitlines()[3] == META["D1:3"].line()
    # the header is charged: a budget for one turn's line alone does not take a turn from a new session
    alone = count_tokens(META["D2:1"].line())
    assert fill_framed(["D2:1", "D2:2"], META, alone, "session").cut
    tiny = fill_framed(order, META, 3, "session")
    assert tiny.cut and count_tokens(render_framed(tiny.dia_ids, META, "session", cut_to=3)) <= 3
    with pytest.raises(ValueError, match="unknown frame"):
        fill_framed(order, META, 10, "poster")


MERGED = [
    "I adopted a dog named Rex from the shelter",
    "how are you",
    "I adopted a dog named Rex, he is a beagle puppy",
    "my painting class meets on Monday evenings",
    "I started painting landscapes with watercolors",
] * 3


@pytest.mark.parametrize("frame", ["session", "session_rank"])
def test_memcore_packing_writes_the_session_frame_within_the_budget(frame: str, tmp_path: Path) -> None:
    conv = conversation_of(MERGED, per_session=5)
    on, _, _ = build(conv, tmp_path, cheap=True, pack=True, pack_frame=frame, pack_cue_neighbors=1, pack_cue_filler=2)
    for tokens in (25, 60, 150):
        ev = on.retrieve_within("Is Rex a beagle puppy?", tokens)
        text = ev.render()
        assert count_tokens(text) <= tokens and ev.context == text
        assert ev.extra["packing"]["used"] == count_tokens(text)
        headers = [ln for ln in text.splitlines() if ln.startswith("[")]
        assert len(headers) == len(set(headers)) == len({n.timestamp for n in ev.notes})
        assert all(n.text in text for n in ev.notes) and len(ev.dia_ids) == len(ev.notes)


def test_rag_takes_the_same_frame_and_cues(tmp_path: Path) -> None:
    emb = HashingEmbedder(dim=64)
    conv = conversation_of(MERGED, per_session=5)
    plain = RAG(RAGConfig(), lambda: emb)
    framed = RAG(RAGConfig(pack_frame="session", pack_cue_filler=2), lambda: emb)
    for rag in (plain, framed):
        for t in conv.turns:
            rag.ingest(t)
        rag.finalize()
    q = "Is Rex a beagle puppy?"
    a, b = plain.retrieve_within(q, 80), framed.retrieve_within(q, 80)
    assert count_tokens(b.render()) <= 80 and b.context.startswith("[")
    assert len(b.dia_ids) >= len(a.dia_ids)  # headers once per session leave room for as many turns or more
    assert "frame" in b.extra["context_budget"]["how"] and a.extra["context_budget"]["how"] == "rag_ranking"


def test_a_summary_line_with_the_session_frame_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="pack_summary"):
        MemCoReConfig(pack=True, pack_summary=True, pack_frame="session")
    with pytest.raises(ConfigError, match="pack_frame"):
        MemCoReConfig(pack_frame="poster")

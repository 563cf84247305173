"""MemCoRe as the paper describes it (issue 14): IER evidence can enter the final pool, sub-queries are not
repeated, the gate's label and strength agree, notes keep their dates, neighbour expansion cannot push out
anchors both channels found, near-duplicate edges stay out of it, and link updates carry provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.construction import Judgement, resolve_label
from memcore.memory.ier import fuse_rounds, subquery_key
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import NoteStore, RawTurn, VectorMatrix
from memcore.memory.retrieval import RetrievalIndex, Retriever
from memcore.memory.topics import Topics
from tests.fakes import MemCoReLLM
from tests.support import build, conversation_of

VEGETABLES = ["carrots", "potatoes", "onions", "beans", "peppers", "tomatoes", "lettuce", "spinach", "radishes"]


def garden_turns(n: int = 110) -> list[str]:
    """``n`` turns that all mention the garden, then one gold turn that shares no word with the question."""
    turns = [
        f"garden diary {i}: my garden rows of {VEGETABLES[i % len(VEGETABLES)]} grew {i} centimetres" for i in range(n)
    ]
    return [*turns, "zebra xylophone quartzite"]


GOLD_QUESTION = "What grows in the garden rows?"
SUBQUERY = {"query": "xylophone quartzite", "entities": ["xylophone", "quartzite"]}


def _gold_rank(ev: Any) -> int | None:
    ids = [d for n in ev.notes for d in n.dia_ids]
    return ids.index("D3:11") if "D3:11" in ids else None


@pytest.mark.parametrize(("weight", "reserved", "enters"), [(0.5, 0, False), (0.5, 2, True), (1.0, 2, True)])
def test_a_note_only_a_subquery_finds_reaches_the_top_k_of_a_large_memory(
    tmp_path: Path, weight: float, reserved: int, enters: bool
) -> None:
    """≥ 100 notes, all matching the question: its own list is ≥ K_final long. The gold note is found only by
    the IER sub-query. Under the old fusion (sub-query weight 0.5, no reserved slots) it could never enter."""
    plan = [{"sufficient": False, "sub_queries": [SUBQUERY]}, {"sufficient": True, "sub_queries": []}]
    mem, _, _ = build(
        conversation_of(garden_turns()),
        tmp_path,
        llm=MemCoReLLM(ier_plan=plan),
        ier_subquery_weight=weight,
        ier_reserved=reserved,
    )
    assert len(mem.store) >= 100
    ev = mem.retrieve(GOLD_QUESTION)
    assert ev.rounds == 2
    first_round = ev.extra["rounds_log"][0]
    assert first_round["sufficient"] is False
    assert (_gold_rank(ev) is not None) is enters
    assert len(ev.notes) == 20
    assert "D3:11" not in ev.extra["round1_dia_ids"]  # round 1's pool, kept beside the final one
    assert ("D3:11" in [d for n in ev.notes for d in n.dia_ids]) is enters


def test_without_ier_the_gold_note_is_not_retrieved(tmp_path: Path) -> None:
    plan = [{"sufficient": False, "sub_queries": [SUBQUERY]}]
    mem, _, _ = build(conversation_of(garden_turns()), tmp_path, llm=MemCoReLLM(ier_plan=plan), abl="wo_ier")
    ev = mem.retrieve(GOLD_QUESTION)
    assert ev.rounds == 1 and _gold_rank(ev) is None
    assert ev.extra["ier_stop"] == "off" and "round1_dia_ids" not in ev.extra  # one round: the pool is round 1's


def test_fuse_rounds_reserved_slots_hand_computed() -> None:
    lists = {"q": [1, 2, 3, 4], "r2.0": [9, 3]}
    plain = fuse_rounds(lists, k=60, weight=0.5, reserved=0, k_final=3)
    assert [n for n, _ in plain] == [3, 1, 2, 4, 9]  # 3: 1/63 + 0.5/62; 9: 0.5/61 < 1/64
    assert plain[0][1] == pytest.approx(1 / 63 + 0.5 / 62)
    reserved = fuse_rounds(lists, k=60, weight=0.5, reserved=1, k_final=3)
    # 9 (the sub-query's best) is lifted into the top 3, displacing the lowest unreserved note (2)
    assert [n for n, _ in reserved][:3] == [3, 1, 9]
    assert sorted(n for n, _ in reserved) == [1, 2, 3, 4, 9]


def test_repeated_subqueries_stop_refinement(tmp_path: Path) -> None:
    same = {"sufficient": False, "sub_queries": [{"query": "Xylophone  quartzite!", "entities": ["xylophone"]}]}
    plan = [{"sufficient": False, "sub_queries": [SUBQUERY]}, same]
    mem, _, _ = build(conversation_of(garden_turns(30)), tmp_path, llm=MemCoReLLM(ier_plan=plan))
    ev = mem.retrieve(GOLD_QUESTION)
    assert ev.rounds == 2  # round 3 would repeat round 2's sub-query word for word: not run
    assert ev.extra["ier_stop"] == "repeated_subqueries"
    assert ev.extra["rounds_log"][-1]["repeated_subqueries"] == 1
    assert mem.stats()["retrieval"]["ier_stops"] == {"repeated_subqueries": 1}
    assert subquery_key("Xylophone  quartzite!") == subquery_key("xylophone quartzite")


def test_the_judge_sees_whole_dated_notes_within_its_token_budget(tmp_path: Path) -> None:
    long_turn = "garden " + " ".join(f"word{i}" for i in range(150))
    llm = MemCoReLLM(ier_plan=[{"sufficient": True, "sub_queries": []}])
    mem, backbone, _ = build(conversation_of([long_turn, "garden beans"]), tmp_path, llm=llm, ier_judge_tokens=5000)
    mem.retrieve("What is in the garden?")
    assert backbone is not None
    ier_prompts = [m[1]["content"] for _, m in backbone.calls if "Retrieved notes" in m[1]["content"]]
    assert ier_prompts and "word149" in ier_prompts[0]  # not cut to 80 tokens any more
    assert "(1:00 pm on 1 May, 2023)" in ier_prompts[0]
    assert mem.stats()["retrieval"]["ier_stops"] == {"sufficient": 1}


@pytest.mark.parametrize(
    ("s", "rel", "expected", "disagreed"),
    [
        (0.7, "complementary", ("complementary", "<0.7"), True),  # the old overlap: merged before
        (0.65, "redundant", ("redundant", 0.7), True),  # linked before
        (0.9, "redundant", ("redundant", 0.9), False),
        (0.6, "unrelated", ("unrelated", "<0.5"), True),
        (0.3, "complementary", ("complementary", 0.5), True),
        (0.55, None, ("complementary", 0.55), False),  # no label: the strength decides
    ],
)
def test_label_decides_and_strength_moves_into_its_range(
    s: float, rel: str | None, expected: tuple[str, Any], disagreed: bool
) -> None:
    strength, relation, flag = resolve_label(s, rel, 0.7, 0.5)
    assert relation == expected[0] and flag is disagreed
    if isinstance(expected[1], str):
        assert strength < float(expected[1][1:])
    else:
        assert strength == pytest.approx(expected[1])


def test_complementary_at_point_seven_links_and_the_disagreement_is_counted(tmp_path: Path) -> None:
    reply = MemCoReLLM(verdict={"relation": "complementary", "strength": 0.7, "edge": "Supports"})
    mem, _, _ = build(conversation_of(["I adopted a dog named Rex", "Rex is a beagle"]), tmp_path, llm=reply)
    c = mem.stats()["construction"]
    assert c["merges"] == 0 and c["links"] == 1 and c["label_strength_disagreements"] == 1
    edge = next(iter(mem.store.edges.values()))
    assert edge.weight < 0.7


def test_gate_merge_and_link_prompts_carry_each_notes_date(tmp_path: Path) -> None:
    reply = MemCoReLLM(verdict={"relation": "redundant", "strength": 0.9, "edge": "Supports"})
    conv = conversation_of(["I went hiking today", "I went hiking today"], per_session=1)
    mem, backbone, _ = build(conv, tmp_path, llm=reply)
    assert "(1:00 pm on 2 May, 2023)" in reply.prompts_of("gate")[0].split("Existing notes:")[0]  # the new note's date
    assert "[1] (1:00 pm on 1 May, 2023)" in reply.prompts_of("gate")[0]  # the candidate's date
    assert backbone is not None
    merge = next(m[1]["content"] for _, m in backbone.calls if "Two memory notes" in m[1]["content"])
    assert "(1:00 pm on 1 May, 2023)" in merge and "(1:00 pm on 2 May, 2023)" in merge
    # the merged note renders one date per raw turn, and its timestamp lists both dates (no range)
    note = mem.store.notes[0]
    text = mem.render(note.nid)
    assert "> (1:00 pm on 1 May, 2023) Alice: I went hiking today" in text
    assert "> (1:00 pm on 2 May, 2023) Bob: I went hiking today" in text
    assert note.timestamp == "1:00 pm on 1 May, 2023; 1:00 pm on 2 May, 2023"


def test_merge_min_cosine_turns_a_low_cosine_redundant_verdict_into_a_link(tmp_path: Path) -> None:
    reply = MemCoReLLM(verdict={"relation": "redundant", "strength": 0.9, "edge": "Supports"})
    mem, _, _ = build(
        conversation_of(["I adopted a dog", "my car broke down on the highway"]),
        tmp_path,
        llm=reply,
        merge_min_cosine=0.99,
    )
    c = mem.stats()["construction"]
    assert c["merges"] == 0 and c["merge_cosine_redirects"] == 1 and c["links"] == 1


def test_link_update_records_the_new_turns_dia_id_as_provenance(tmp_path: Path) -> None:
    reply = MemCoReLLM(verdict={"relation": "complementary", "strength": 0.65, "edge": "Supports"})
    mem, _, _ = build(conversation_of(["I adopted a dog named Rex", "Rex is a beagle"]), tmp_path, llm=reply)
    first = mem.store.notes[0]
    assert first.updates == 1 and first.linked_sources == ["D1:2"]
    assert first.dia_ids == ("D1:1",) and first.source_ids == ("D1:1", "D1:2")
    mem.save(tmp_path / "snap")
    again, _, _ = build(conversation_of(["x"]), tmp_path / "other", llm=MemCoReLLM())
    again.load(tmp_path / "snap")
    assert again.store.notes[0].linked_sources == ["D1:2"]


def _star_index() -> tuple[Retriever, NoteStore]:
    """Notes 0 and 1 are anchors; note 2 is 0's neighbour (w = 0.99) and 3's through a merge_cap edge."""
    dim = 8
    store = NoteStore(dim=dim)
    kindex = KeywordIndex()
    eye = np.eye(dim, dtype=np.float32)
    for i, kws in enumerate([["rex"], ["park"], ["beagle"], ["leash"]]):
        store.add([RawTurn(f"D1:{i + 1}", "A", f"t{i}", "t")], f"t{i}", kws, eye[i], denoised=False)
        kindex.set_note(i, kws)
    store.add_edge(0, 2, 0.99, "Supports")
    store.add_edge(3, 2, 0.95, "Supports", origin="merge_cap")
    kw_vecs = VectorMatrix(dim)
    kw_vecs.extend(eye[:4])
    indptr, ids = kindex.posting_arrays()
    ix = RetrievalIndex(store, kindex, Topics.empty(dim), kw_vecs, kindex.idf(4), indptr, ids)
    return Retriever(ix, HashingEmbedder(dim), MemCoReConfig(), Switches()), store


def test_a_neighbour_never_outranks_an_anchor_both_channels_found() -> None:
    r, _ = _star_index()
    scores = {0: 2 / 61, 1: 1 / 62 + 1 / 63}
    channels = {0: {"topic", "keyword"}, 1: {"topic", "keyword"}}
    r._expand([(0, scores[0]), (1, scores[1])], scores, channels)
    # uncapped, note 2 would score 0.99 × 2/61 = 0.03246 > note 1's 1/62 + 1/63 = 0.03200: capped just below it
    assert scores[1] < 0.99 * 2 / 61
    assert scores[2] < scores[1]
    assert scores[2] == pytest.approx(scores[1], rel=1e-9)
    assert "neighbor" in channels[2]


def test_without_a_dual_channel_anchor_the_neighbour_score_is_propagated() -> None:
    r, _ = _star_index()
    scores = {0: 1 / 61}
    channels: dict[int, set[str]] = {0: {"topic"}}
    r._expand([(0, scores[0])], scores, channels)
    assert scores[2] == pytest.approx(0.99 / 61, rel=1e-6)


def test_merge_cap_edges_do_not_feed_neighbour_expansion() -> None:
    r, store = _star_index()
    indptr, nbrs, _ = store.neighbours_csr()
    assert nbrs[indptr[3] : indptr[4]].tolist() == []  # 2–3 is a merge_cap edge
    assert nbrs[indptr[0] : indptr[1]].tolist() == [2]
    scores = {3: 1 / 61}
    channels: dict[int, set[str]] = {3: {"topic"}}
    r._expand([(3, scores[3])], scores, channels)
    assert 2 not in scores
    # a later gate edge between the same notes makes the pair expandable
    store.add_edge(3, 2, 0.6, "Related_To")
    assert store.edges[(2, 3)].origin == "gate"


def test_judgement_dataclass_keeps_the_flag() -> None:
    assert Judgement(0, 0.5, "complementary", "Supports", 0.3, True).disagreed


def test_dead_topic_recompute_key_is_gone() -> None:
    from memcore.memory.config import CONSTRUCTION_KEYS

    assert "topic_recompute_every" not in CONSTRUCTION_KEYS
    with pytest.raises(ValueError, match="topic_recompute_every"):
        MemCoReConfig.from_dict({"topic_recompute_every": 100})


@pytest.mark.parametrize(
    ("subject", "fact", "relation", "merges", "links"),
    [(True, True, "redundant", 1, 0), (True, False, "complementary", 0, 1), ("no", "no", "unrelated", 0, 0)],
)
def test_binary_gate_form_maps_its_answers_to_a_relation(
    tmp_path: Path, subject: Any, fact: Any, relation: str, merges: int, links: int
) -> None:
    reply = MemCoReLLM(verdict={"same_subject": subject, "same_fact": fact, "edge": "Supports"})
    mem, backbone, _ = build(
        conversation_of(["I adopted a dog named Rex", "Rex is a beagle"]),
        tmp_path,
        llm=reply,
        gate_form="binary",
    )
    c = mem.stats()["construction"]
    assert c["relations"] == {relation: 1} and c["merges"] == merges and c["links"] == links
    assert "same_fact" in reply.prompts_of("gate")[0] and c["label_strength_disagreements"] == 0
    if links:
        assert next(iter(mem.store.edges.values())).weight == pytest.approx(0.6)  # middle of [0.5, 0.7)
    assert backbone is not None


def test_resolve_label_without_a_strength_takes_the_middle_of_the_range() -> None:
    assert resolve_label(None, "redundant", 0.7, 0.5) == (pytest.approx(0.85), "redundant", False)
    assert resolve_label(None, "unrelated", 0.7, 0.5) == (pytest.approx(0.25), "unrelated", False)

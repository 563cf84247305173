"""MemCoRe as the paper describes it: IER evidence can enter the final pool, sub-queries are not
repeated, the gate's label and strength agree, notes keep their dates, neighbour expansion cannot push out
anchors both channels found, near-duplicate edges stay out of it, and link updates carry provenance."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import CONSTRUCTION_KEYS, MemCoReConfig, Switches
from memcore.memory.construction import Judgement, resolve_label
from memcore.memory.ier import fuse_rounds, fuse_rounds_detail, subquery_key
from memcore.memory.judge_view import MIN_NOTE_TOKENS, note_view, per_note_budget, rank_turns
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import Note, NoteStore, RawTurn, VectorMatrix
from memcore.memory.retrieval import RetrievalIndex, Retriever
from memcore.memory.topics import Topics
from memcore.text import count_tokens
from tests.fakes import MemCoReLLM
from tests.support import build, conversation_of

VEGETABLES = ["carrots", "potatoes", "onions", "beans", "peppers", "tomatoes", "lettuce", "spinach", "radishes"]


def garden_turns(n: int = 110, *, word: str = "plot") -> list[str]:
    """``n`` turns that all mention the garden, then one gold turn that shares no word with the question. With
    ``word`` = "plot" (4 letters: never a keyword of the fake ingest) only the topic channel finds the turns for
    the question; with "garden" both channels find every one of them."""
    turns = [
        f"garden diary {i}: my {word} rows of {VEGETABLES[i % len(VEGETABLES)]} grew {i} centimetres" for i in range(n)
    ]
    return [*turns, "zebra xylophone quartzite"]


GOLD_QUESTION = "What grows in the plot rows?"
SUBQUERY = {"query": "xylophone quartzite", "entities": ["xylophone", "quartzite"]}


def _gold_rank(ev: Any) -> int | None:
    ids = [d for n in ev.notes for d in n.dia_ids]
    return ids.index("D3:11") if "D3:11" in ids else None


def _dual(ev: Any) -> list[str]:
    """The notes of the final pool both channels found, the gold note (a sub-query's) left out."""
    return [n.note_id for n in ev.notes if {"topic", "keyword"} <= set(n.channels) and "D3:11" not in n.dia_ids]


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
    assert _dual(ev) == []  # only the topic channel found the question's notes: none is protected but its best
    assert (_gold_rank(ev) is not None) is enters
    assert len(ev.notes) == 20
    assert "D3:11" not in ev.extra["round1_dia_ids"]  # round 1's pool, kept beside the final one
    assert ("D3:11" in [d for n in ev.notes for d in n.dia_ids]) is enters
    if reserved:
        assert ev.extra["rounds_log"][1]["reserved_lifted"] == 1


def test_reservations_never_evict_notes_both_channels_found(tmp_path: Path) -> None:
    """Every note of the question's top 20 was found by both channels: a sub-query's reservation evicts none
    of them, so the gold note (only the sub-query finds it) stays out and refinement stops (no new evidence)."""
    plan = [{"sufficient": False, "sub_queries": [SUBQUERY]}, {"sufficient": True, "sub_queries": []}]
    mem, _, _ = build(conversation_of(garden_turns(word="garden")), tmp_path, llm=MemCoReLLM(ier_plan=plan))
    ev = mem.retrieve("What grows in the garden rows?")
    assert len(_dual(ev)) == 20
    assert _gold_rank(ev) is None
    assert ev.extra["ier_stop"] == "no_new_evidence"
    assert ev.extra["rounds_log"][1]["reserved_lifted"] == 0
    assert ev.extra["rounds_log"][1]["protected_kept"] > 0  # the sub-query's RRF shares alone would evict some


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


def test_a_link_update_after_a_merge_credits_only_the_new_turn(tmp_path: Path) -> None:
    """Turn 3 merges into note 0 (turns 1 and 3) and strongly links note 1. The rewrite of note 1 sees only turn 3
    and credits only D1:3, not D1:1 of the merged note, a turn whose facts it never carried into note 1."""

    def strength(new: str, cand: str) -> float:
        if "dup" not in new:
            return 0.1
        return 0.9 if "tagA" in cand else 0.65

    turns = ["tagA: I adopted a dog named Rex", "tagB: my painting class meets on Mondays", "tagA dup: Rex is a beagle"]
    llm = MemCoReLLM(strength=strength)
    mem, _, _ = build(conversation_of(turns), tmp_path, llm=llm)
    merged, linked = mem.store.notes[0], mem.store.notes[1]
    assert merged.dia_ids == ("D1:1", "D1:3") and merged.context.startswith("MERGED")
    assert linked.updates == 1 and linked.linked_sources == ["D1:3"]
    assert linked.source_ids == ("D1:2", "D1:3")
    rewrite = llm.prompts_of("link_update")[0].split("New related note:", 1)[1]
    assert "Rex is a beagle" in rewrite and "MERGED" not in rewrite and "adopted" not in rewrite


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


# ------------------------------------------------------------------ IER fusion: reservations
def _top(ranked: list[tuple[int, float]], k: int) -> list[int]:
    return [n for n, _ in ranked[:k]]


def test_fusion_at_k5_three_subqueries_keeps_the_questions_protected_notes() -> None:
    """K = 5, one judge reply with three sub-queries, 2 reserved slots each. Unconditional, the six reservations
    would fill the whole top 5 (note 1, the question's best, evicted). Here: notes 1 (best) and 2 (both channels) stay,
    at most K // 2 = 2 slots are reserved (round-robin: each sub-query's best first), the fused rest fills one."""
    lists = {
        "q": list(range(1, 31)),
        "r2.0": [101, 102, 103],
        "r2.1": [201, 202],
        "r2.2": [301, 302],
    }
    detail = fuse_rounds_detail(lists, k=60, weight=0.5, reserved=2, k_final=5, protected=[1, 2])
    assert _top(detail.ranked, 5) == [1, 2, 3, 101, 201]  # 3: 1/63 > every sub-query share (≤ 0.5/61)
    assert detail.lifted == (101, 201) and detail.kept == ()
    assert sorted(n for n, _ in detail.ranked) == sorted({n for lst in lists.values() for n in lst})
    # every note of the top 5 protected (the question's best and four dual-channel notes): nothing is lifted
    full = fuse_rounds_detail(lists, k=60, weight=0.5, reserved=2, k_final=5, protected=[1, 2, 3, 4, 5])
    assert _top(full.ranked, 5) == [1, 2, 3, 4, 5] and full.lifted == ()


def test_fusion_at_k20_two_rounds_of_three_subqueries_reserves_at_most_half() -> None:
    """K = 20, two refinement rounds of three sub-queries each (six lists), 2 reserved slots each: twelve
    reservations if unconditional (12 of 20 slots forced); here at most 10, and the question's eight
    dual-channel notes are never among the evicted."""
    lists: dict[str, list[int]] = {"q": list(range(1, 61))}
    for r in (2, 3):
        for i in range(3):
            base = 100 * (10 * r + i)
            lists[f"r{r}.{i}"] = [base + j for j in range(1, 6)]
    protected = list(range(1, 9))
    detail = fuse_rounds_detail(lists, k=60, weight=0.5, reserved=2, k_final=20, protected=protected)
    top = _top(detail.ranked, 20)
    assert set(protected) <= set(top)
    assert len(detail.lifted) == 10  # round-robin: the six lists' best, then four second-best
    assert set(detail.lifted) == {2001, 2101, 2201, 3001, 3101, 3201, 2002, 2102, 2202, 3002}
    assert set(top) == set(protected) | set(detail.lifted) | {9, 10}  # the fused rest: the question's next two
    # a protected note that a sub-query also finds takes none of its reservations
    lists["r2.0"] = [3, *lists["r2.0"]]
    again = fuse_rounds_detail(lists, k=60, weight=0.5, reserved=2, k_final=20, protected=protected)
    assert len(again.lifted) == 10 and 2001 in again.lifted and 3 in _top(again.ranked, 20)


def test_fusion_keeps_protected_notes_that_plain_rrf_would_push_out() -> None:
    """Sub-query lists at weight 1 outscore the question's lower ranks: plain RRF would drop its dual-channel
    note 4 from a top 4; the reservation rule keeps it (``kept``) and lifts at most K // 2 = 2 notes."""
    lists = {"q": [1, 2, 3, 4], "r2.0": [11, 12], "r2.1": [21, 22]}
    plain = fuse_rounds(lists, k=60, weight=1.0, reserved=0, k_final=4)
    assert 4 not in _top(plain, 4)
    detail = fuse_rounds_detail(lists, k=60, weight=1.0, reserved=2, k_final=4, protected=[1, 4])
    # the two free slots hold the sub-queries' best notes (already in plain RRF's top: nothing lifted)
    assert _top(detail.ranked, 4) == [1, 11, 21, 4] and detail.kept == (4,) and detail.lifted == ()


# ------------------------------------------------------------------ IER judge view
def _merged_note(n_turns: int = 6) -> Note:
    raws = [
        RawTurn(f"D1:{i}", "Alice", f"turn {i}: " + " ".join(f"filler{i}x{j}" for j in range(50)), "1 May, 2023")
        for i in range(1, n_turns + 1)
    ]
    raws[4] = RawTurn("D1:5", "Alice", "I bought a violin in Lisbon " + "and more " * 20, "8 May, 2023")
    context = "Alice talked about many things " + " ".join(f"ctx{j}" for j in range(75))
    return Note(0, raws, context, ["alice"])


def test_judge_view_shows_the_turns_that_match_the_question_within_the_share() -> None:
    note = _merged_note()
    whole = f"({note.timestamp}) {note.context}\n" + "\n".join(r.render_dated() for r in note.raws)
    assert count_tokens(whole) > 340  # a merged note whole: about 8 of them fill a 3,000-token budget
    view = note_view(note, "Where did Alice buy the violin?", 150, "both")
    assert count_tokens(view) <= 150
    assert "(1 May, 2023; 8 May, 2023)" in view and "violin in Lisbon" in view  # the 5th turn: the best match
    assert view.startswith("(1 May, 2023; 8 May, 2023) Alice talked about")  # the context, cut
    assert "(+5 more turns)" in view
    assert rank_turns(note, "Where did Alice buy the violin?")[0] == 4
    # the answerer's view decides the parts: raw → no context; context → no turns
    assert "Alice talked" not in note_view(note, "violin?", 150, "raw")
    assert "violin" not in note_view(note, "violin?", 150, "context")
    assert per_note_budget(3000, 20) == 150 and per_note_budget(3000, 200) == MIN_NOTE_TOKENS


def test_the_judge_sees_all_k_final_long_notes(tmp_path: Path) -> None:
    """20 notes of ≈ 330 tokens: whole, 9 fitted the judge's 3,000 tokens; now each gets 150 and all 20 show."""
    turns = [f"plot rows {i} " + " ".join(f"w{i}x{j}" for j in range(300)) for i in range(25)]
    llm = MemCoReLLM(ier_plan=[{"sufficient": True, "sub_queries": []}])
    mem, backbone, _ = build(conversation_of(turns), tmp_path, llm=llm)
    mem.retrieve("What grows in the plot rows?")
    assert backbone is not None
    prompt = next(m[1]["content"] for _, m in backbone.calls if "Retrieved notes" in m[1]["content"])
    evidence = prompt.split("Retrieved notes (each starts with the date it was said):\n", 1)[1].split("\n\nSearches")[0]
    assert "[20] (" in evidence and "[21]" not in evidence
    assert count_tokens(evidence) <= 3000


def test_under_a_context_cap_a_refined_question_records_its_final_pool_before_the_cap(tmp_path: Path) -> None:
    """Round 1's pool is the top K before any cap; so that refinement is judged under one cap, a capped retrieval
    also records the final top K before the cap (``final_pool_dia_ids``). An uncapped one does not need it."""

    def memory(where: str) -> Any:  # the scripted IER plan is consumed by one retrieval: a memory per call
        plan = [{"sufficient": False, "sub_queries": [SUBQUERY]}, {"sufficient": True, "sub_queries": []}]
        mem, _, _ = build(
            conversation_of(garden_turns()), tmp_path / where, llm=MemCoReLLM(ier_plan=plan), ier_reserved=2
        )
        return mem

    uncapped = memory("a").retrieve(GOLD_QUESTION)
    assert uncapped.rounds == 2 and "final_pool_dia_ids" not in uncapped.extra
    capped = memory("b").retrieve_within(GOLD_QUESTION, 60)
    assert capped.rounds == 2
    pool = capped.extra["final_pool_dia_ids"]
    assert set(pool) == {d for n in uncapped.notes for d in n.dia_ids}  # the same top K as without the cap
    assert "D3:11" in pool  # the sub-query's note, in the pool whatever the cap kept
    assert {d for n in capped.notes for d in n.dia_ids} < set(pool)  # the cap kept fewer

"""One test per ablation switch: it removes its component and nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from memcore.memory.ingestion import clean_text
from memcore.memory.system import MemCoRe
from tests.fakes import MemCoReLLM
from tests.support import QUESTIONS, TAGGED_TURNS, TOPIC_TURNS, build, conversation_of, make_memory

CONV = conversation_of(TAGGED_TURNS)


def counts(mem: MemCoRe) -> tuple[int, int, int]:
    c = mem.stats()["construction"]
    return c["merges"], len(mem.store.edges), len(mem.store)


def test_full_model_on_tagged_turns(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path)
    # t2 merges into t1; t3 links to the merged note; t5 links to t4
    assert counts(mem) == (1, 2, 4)
    assert mem.store.notes[0].dia_ids == ("D1:1", "D1:2")
    assert mem.stats()["construction"]["neighbour_updates"] == 2


def test_wo_merge_zero_merges_links_kept(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path, abl="wo_merge")
    merges, _edges, notes = counts(mem)
    assert merges == 0 and notes == len(CONV.turns)
    # the redundant pair is appended without an edge; t3 links to both t1 and t2, t5 to t4
    assert sorted(mem.store.edges) == [(0, 2), (1, 2), (3, 4)]


def test_wo_link_zero_edges_merges_kept(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path, abl="wo_link")
    assert counts(mem) == (1, 0, 4)
    assert mem.stats()["construction"]["neighbour_updates"] == 0
    assert not any(n.context.endswith("(followed up later)") for n in mem.store.notes)


def test_wo_update_every_turn_its_own_note(tmp_path: Path) -> None:
    mem, backbone, _ = build(CONV, tmp_path, abl="wo_update")
    assert counts(mem) == (0, 0, len(CONV.turns))
    assert [n.dia_ids for n in mem.store.notes] == [(t.dia_id,) for t in CONV.turns]
    assert backbone is not None
    prompts = [m[1]["content"] for _, m in backbone.calls]
    assert not any("Existing notes:" in p for p in prompts)  # no gate call at all
    assert all("Turn to record" in p for p in prompts)  # ingestion (keywords) still runs
    assert all(n.denoised for n in mem.store.notes)  # denoising untouched


def _unannotated(text: str) -> str:
    return re.sub(r" \[= [^\]]*\]", "", text)


def test_wo_denoise_context_is_raw(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path, abl="wo_denoise")
    assert counts(mem) == (1, 2, 4)  # the gate works as before
    merged = mem.store.notes[0]
    # c = r, with the relative dates resolved in code (resolve_dates): "last week [= the week of …]"
    assert "last week [= the week of 24 April 2023]" in merged.context
    assert _unannotated(merged.context) == "\n".join(clean_text(r.render()) for r in merged.raws)
    for note in mem.store.notes[1:]:
        assert _unannotated(note.context) == clean_text(note.raws[0].render())
        assert not note.denoised
    assert mem.stats()["construction"]["neighbour_updates"] == 0  # c = r: nothing rewrites a context
    # keywords still come from ingestion
    assert "adopted" in mem.store.notes[0].keywords


# --------------------------------------------------------------- retrieval switches (reuse one snapshot)
def _snapshot(tmp_path: Path, cheap: bool) -> Path:
    mem, _, _ = build(conversation_of(TOPIC_TURNS), tmp_path / "build", cheap=cheap, topic_min=2, topic_max=8)
    snap = tmp_path / "snap"
    mem.save(snap)
    return snap


def _evidence(
    tmp_path: Path, snap: Path, abl: str, cheap: bool, budget: int = 8, questions: list[str] = QUESTIONS
) -> list:
    mem, _backbone, _ctx = make_memory(
        conversation_of(TOPIC_TURNS), tmp_path / abl, abl=abl, cheap=cheap, topic_min=2, topic_max=8
    )
    mem.load(snap)
    return [mem.retrieve(q, budget=budget) for q in questions]


def _channels(evs: list) -> set[str]:
    return {c for ev in evs for n in ev.notes for c in n.channels}


def test_wo_topic_no_note_found_by_topic(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, cheap=True)
    full = _evidence(tmp_path, snap, "none", True)
    wo = _evidence(tmp_path, snap, "wo_topic", True)
    assert "topic" in _channels(full)
    assert "topic" not in _channels(wo) and "keyword" in _channels(wo)


def test_wo_keyword_no_note_found_by_keyword(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, cheap=True)
    full = _evidence(tmp_path, snap, "none", True)
    wo = _evidence(tmp_path, snap, "wo_keyword", True)
    assert "keyword" in _channels(full)
    assert "keyword" not in _channels(wo) and "topic" in _channels(wo)


def test_wo_neighbor_no_note_found_by_neighbour(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, cheap=False)
    pools = {}
    for abl in ("none", "wo_neighbor"):
        mem, _, _ = make_memory(
            conversation_of(TOPIC_TURNS), tmp_path / abl, abl=abl, topic_min=2, topic_max=8, channel_depth=3
        )
        mem.load(snap)
        assert mem._refiner is not None
        pools[abl] = [mem._refiner.retrieve(q, 3) for q in QUESTIONS]  # whole pools, before truncation
        evs = [mem.retrieve(q, budget=3) for q in QUESTIONS]
        assert ("neighbor" in _channels(evs)) == (abl == "none")
    for full, wo in zip(pools["none"], pools["wo_neighbor"], strict=True):
        assert any("neighbor" in c for c in full.channels.values())
        assert not any("neighbor" in c for c in wo.channels.values())
        # nothing else changes: the notes the topic and keyword channels found are the same
        found_full = {(n, c) for n, cs in full.channels.items() for c in cs if c != "neighbor"}
        found_wo = {(n, c) for n, cs in wo.channels.items() for c in cs}
        assert found_full == found_wo


def test_wo_ier_one_round(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path, cheap=True)
    q = ["Did the dog Rex meet the guitar band?"]
    full = _evidence(tmp_path, snap, "none", True, budget=2, questions=q)
    wo = _evidence(tmp_path, snap, "wo_ier", True, budget=2, questions=q)
    assert full[0].rounds >= 2  # an entity the top-2 pool misses triggers a sub-query
    assert wo[0].rounds == 1
    assert len(wo[0].extra["rounds_log"]) == 1


def test_llm_ier_rounds_follow_the_judge(tmp_path: Path) -> None:
    plan = [
        {"sufficient": False, "sub_queries": [{"query": "guitar band songs", "entities": ["guitar band"]}]},
        {"sufficient": True, "sub_queries": []},
    ]
    mem, _backbone, _ = build(conversation_of(TOPIC_TURNS), tmp_path, llm=MemCoReLLM(ier_plan=plan))
    ev = mem.retrieve("What is the name of the dog?")
    assert ev.rounds == 2
    assert ev.extra["rounds_log"][1]["sub_queries"][0]["entities"] == ["guitar band"]
    assert any("tagC" in n.text for n in ev.notes)  # the sub-query's evidence entered the pool
    assert mem.stats()["retrieval"]["ier_rounds"] == {2: 1}


def test_llm_ier_answer_first_prompt_is_opt_in_and_read_the_same_way(tmp_path: Path) -> None:
    plan = [
        {
            "answer": "",
            "sufficient": False,
            "missing": "x",
            "sub_queries": [{"query": "guitar band songs", "entities": ["guitar band"]}],
        },
        {"answer": "Rex", "sufficient": True, "missing": "", "sub_queries": []},
    ]
    mem, backbone, _ = build(
        conversation_of(TOPIC_TURNS), tmp_path, llm=MemCoReLLM(ier_plan=plan), ier_prompt="answer_first"
    )
    ev = mem.retrieve("What is the name of the dog?")
    assert ev.rounds == 2 and any("tagC" in n.text for n in ev.notes)
    assert backbone is not None
    judge = [m[1]["content"] for _, m in backbone.calls if "Retrieved notes" in m[1]["content"]]
    assert len(judge) == 2 and all("Step 1: answer the question from these notes alone" in p for p in judge)
    assert '"sufficient": true' not in judge[0]  # the format example shows no verdict to copy

"""FluxMem end to end with a ScriptedBackbone and the HashingEmbedder: construction, Stage 1–3, switches,
spec wiring and the save/load round trip."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from baselines.fluxmem import SPEC, SPEC_FACTS, SPEC_NO_CONSOLIDATE, SPEC_NO_REFINE, FluxMem, FluxMemConfig
from baselines.fluxmem import prompt_verify as V
from baselines.fluxmem.chunking import session_chunks
from baselines.fluxmem.relevance import minmax
from memcore.config import ConfigError
from memcore.datasets.locomo.categories import Category
from memcore.interfaces import SelfAnsweringMemory
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.methods import get_method
from memcore.types import QAItem
from tests.fakes import FluxMemLLM
from tests.support import method_context, story_conversation

# Stage 1 as it was before the upstream alignment: pool by dense + BM25, layer-wide normalisation,
# weights 0.4 / 0.3 / 0.3. Tests of that arithmetic pin it explicitly; the upstream defaults are tested below.
OLD_STAGE1: dict[str, Any] = {
    "pool_by": "hybrid",
    "normalize_over": "layer",
    "w_dense": 0.4,
    "w_sparse": 0.3,
    "w_llm": 0.3,
}


#: The units and verification these Stage 1-3 tests were written for: atomic facts and one listing call. Upstream's
#: chunks and graded verification (the defaults) are tested on their own below.
FACTS_LISTED: dict[str, Any] = {"unit": "fact", "verify_mode": "listed"}


def build(script: FluxMemLLM, tmp_path: Path, **overrides: Any) -> tuple[FluxMem, ScriptedBackbone]:
    conv = story_conversation(n_sessions=3)
    backbone = ScriptedBackbone(script)
    embedder = HashingEmbedder(256)
    ctx = method_context(
        {"name": "fluxmem", **FACTS_LISTED, **overrides},
        conv,
        tmp_path,
        backbone=lambda: backbone,
        embedder=lambda: embedder,
    )
    system = SPEC.factory(ctx)
    assert isinstance(system, FluxMem)
    for turn in conv.turns:
        system.ingest(turn)
    system.finalize()
    return system, backbone


def item(question: str, index: int = 0, answer: str = "GOLD-SENTINEL") -> QAItem:
    return QAItem("conv-x", index, question, Category.SINGLE_HOP, answer, ("D1:3",))


class Answerer:
    def __init__(self, reply: str = "beagle") -> None:
        self.contexts: list[str] = []
        self.reply = reply

    def __call__(self, context: str) -> str:
        self.contexts.append(context)
        return self.reply


# ---------------------------------------------------------------- construction
def test_construction_facts_provenance_and_associations(tmp_path: Path) -> None:
    script = FluxMemLLM()
    mem, backbone = build(script, tmp_path)
    g = mem.graph
    assert len(g.turns) == 9 and script.purposes().count("facts") == 9
    assert len(g.semantic) == 10  # one fact per turn + the extra dog fact of D1:1
    assert [n.dia_ids for n in g.semantic[:3]] == [("D1:1",), ("D1:1",), ("D1:2",)]
    assert g.semantic[1].text == "Alice has a dog named Rex." and g.semantic[1].time == "1:00 pm on 1 May, 2023"
    same_turn = [e for e in g.edges if e.label == "same_turn"]
    assert [(e.src, e.dst) for e in same_turn] == [("s0", "s1")]
    assert g.neighbours("s0")["s1"] == 1.0
    assert g.sem_vecs.shape == (10, 256)
    assert backbone.calls_by_stage() == {"ingest": 9}
    # each prompt holds its own turn and session date only
    assert "Alice: I adopted a puppy" in script.log[0][1] and "puppy" not in script.log[1][1]
    assert "Session date: 1:00 pm on 1 May, 2023" in script.log[0][1]


def test_unparseable_facts_keep_the_raw_turn_and_are_counted(tmp_path: Path) -> None:
    mem, backbone = build(FluxMemLLM(bad_facts=True), tmp_path)
    assert [n.origin for n in mem.graph.semantic] == ["turn"] * 9
    assert mem.graph.semantic[0].text == "Alice: I adopted a puppy named Rex last week."
    assert backbone.usage.to_json()["by_stage"]["ingest"]["parse_failures"] == 9
    assert mem.stats()["counters"]["fallback_facts"] == 9


def test_a_memory_without_facts_still_answers(tmp_path: Path) -> None:
    script = FluxMemLLM(empty_facts=True, checks=[{"supported": False, "failure": "under_connection"}] * 3)
    mem, _ = build(script, tmp_path)
    assert mem.graph.semantic == [] and mem.stats()["turns_without_nodes"] == 9
    ans = Answerer()
    text, ev = mem.answer(item("What breed is Rex?"), ans)
    assert text == "beagle" and ev.notes == [] and len(ans.contexts) == 1
    assert ans.contexts[0] == "Memory facts (date, fact):"
    assert mem.stats()["counters"]["edits_without_change"] == 1


def test_no_llm_at_ingest_without_fact_extraction(tmp_path: Path) -> None:
    script = FluxMemLLM()
    mem, backbone = build(script, tmp_path, unit="turn")
    assert backbone.calls_by_stage() == {} and len(mem.graph.semantic) == 9
    assert not SPEC.ingest_uses_llm({"unit": "turn"}, {}) and not SPEC.ingest_uses_llm({}, {})
    assert SPEC.ingest_uses_llm({"unit": "fact"}, {}) and SPEC_FACTS.ingest_uses_llm({}, {})


# ---------------------------------------------------------------- Stage 1
def test_stage1_hybrid_ranking_with_llm_verification(tmp_path: Path) -> None:
    script = FluxMemLLM(relevant=[3])
    mem, _ = build(script, tmp_path, unit="turn", k=2, verify_pool=4, **OLD_STAGE1)
    q = "What breed is Rex?"
    q_vec = mem.embedder.encode([q])[0]
    pre, dn, sn = mem._pre_scores(q, q_vec)
    pool = np.argsort(-pre, kind="stable")[:4]
    v = np.array([0.0, 0.0, 1.0, 0.0])
    expected = (0.4 * dn[pool] + 0.3 * sn[pool] + 0.3 * v) / 1.0
    best = pool[np.argsort(-expected, kind="stable")[:2]]
    ev = mem.retrieve(q)
    assert [n.note_id for n in ev.notes] == [f"s{i}" for i in best]
    assert [n.score for n in ev.notes] == pytest.approx(sorted(expected, reverse=True)[:2])
    third = f"s{pool[2]}"
    assert third in [n.note_id for n in ev.notes] and "llm" in next(n.channels for n in ev.notes if n.note_id == third)
    assert script.purposes()[-1] == "verify" and "[4]" in script.log[-1][1] and "[5]" not in script.log[-1][1]
    assert ev.dia_ids == [mem.graph.node(n.note_id).dia_ids[0] for n in ev.notes]


def test_verification_fallback_ranks_by_dense_and_bm25(tmp_path: Path) -> None:
    mem, backbone = build(FluxMemLLM(), tmp_path, unit="turn", k=3, **OLD_STAGE1)
    backbone.responder = lambda messages: "not json"
    ev = mem.retrieve("What breed is Rex?")
    q_vec = mem.embedder.encode(["What breed is Rex?"])[0]
    pre, _, _ = mem._pre_scores("What breed is Rex?", q_vec)
    assert [n.score for n in ev.notes] == pytest.approx(sorted(pre, reverse=True)[:3])
    assert mem.stats()["counters"]["fallback_verify"] == 1


# ---------------------------------------------------------------- Stage 2
def test_refinement_honours_T_and_records_attributions(tmp_path: Path) -> None:
    unsupported = {"supported": False, "failure": "under_connection", "missing": "violin"}
    script = FluxMemLLM(checks=[unsupported] * 10)
    mem, _ = build(script, tmp_path, unit="turn", k=2, T=2, expand_n=5, consolidate=False)
    ans = Answerer()
    text, ev = mem.answer(item("What breed is Rex?"), ans)
    assert text == "beagle" and len(ans.contexts) == 3 and ev.rounds == 3
    assert script.purposes().count("check") == 3  # T rounds + the check of the final answer
    info = ev.extra["fluxmem"]
    assert info["attributions"] == ["under_connection", "under_connection"] and info["supported"] is False
    assert len(info["added"]) == 7  # 5 in round 1, then the 2 nodes still unlinked
    assert len(ev.notes) == 2 + len(info["added"])
    assert mem.graph.episodes[0].attributions == info["attributions"] and mem.graph.episodes[0].rounds == 3

    script0 = FluxMemLLM(checks=[unsupported] * 10)
    mem0, _ = build(script0, tmp_path / "t0", unit="turn", k=2, T=0, consolidate=False)
    ans0 = Answerer()
    _, ev0 = mem0.answer(item("What breed is Rex?"), ans0)
    assert (
        len(ans0.contexts) == 1
        and script0.purposes().count("check") == 1
        and ev0.extra["fluxmem"]["attributions"] == []
    )


def test_refinement_stops_once_supported(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "under_connection"}, {"supported": True}])
    mem, _ = build(script, tmp_path, unit="turn", k=2, T=5, consolidate=False)
    ans = Answerer()
    _, ev = mem.answer(item("What breed is Rex?"), ans)
    assert len(ans.contexts) == 2 and ev.extra["fluxmem"]["supported"] is True
    assert mem.graph.episodes[0].supported is True


def test_under_connection_expands_links(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "under_connection", "missing": "violin March"}])
    mem, _ = build(script, tmp_path, unit="turn", k=2, T=1, expand_n=1, consolidate=False)
    ans = Answerer()
    _, ev = mem.answer(item("What breed is Rex?"), ans)
    added = ev.extra["fluxmem"]["added"]
    assert added == ["s3"]  # "Bob: I started learning the violin in March."
    line = "(1:00 pm on 8 May, 2023) Bob: I started learning the violin in March."
    assert line not in ans.contexts[0] and line in ans.contexts[1]
    assert next(n for n in ev.notes if n.note_id == "s3").channels == ("expansion",)
    assert "D2:1" in ev.dia_ids


def test_over_connection_prunes_named_links(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "over_connection", "distracting": [2]}])
    mem, _ = build(script, tmp_path, unit="turn", k=4, T=1, min_keep=1, consolidate=False)
    ans = Answerer()
    before = mem.retrieve("What breed is Rex?")
    _, ev = mem.answer(item("What breed is Rex?"), ans)
    dropped = before.notes[1].note_id
    assert ev.extra["fluxmem"]["pruned"] == [dropped]
    assert [n.note_id for n in ev.notes] == [n.note_id for n in before.notes if n.note_id != dropped]


def test_an_edit_that_changes_nothing_ends_refinement(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "over_connection", "distracting": [1]}] * 3)
    mem, _ = build(script, tmp_path, unit="turn", k=3, T=2, min_keep=3, consolidate=False)
    ans = Answerer()
    _, ev = mem.answer(item("What breed is Rex?"), ans)
    assert len(ans.contexts) == 1 and ev.extra["fluxmem"]["attributions"] == ["over_connection"]
    assert mem.stats()["counters"]["edits_without_change"] == 1 and len(ev.notes) == 3


def test_granularity_reshapes_a_node_with_provenance(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "granularity", "reshape": [1]}])
    mem, _ = build(script, tmp_path, unit="turn", k=3, T=1, consolidate=False)
    ans = Answerer()
    top = mem.retrieve("What breed is Rex?").notes[0]
    n_before = len(mem.graph.semantic)
    _, ev = mem.answer(item("What breed is Rex?"), ans)
    new_id = ev.extra["fluxmem"]["reshaped"][top.note_id]
    new = mem.graph.node(new_id)
    assert (
        new.origin == "reshaped" and new.parent == top.note_id and new.text == "Rex is a beagle puppy adopted by Alice."
    )
    assert (
        new.dia_ids == top.dia_ids
        and len(mem.graph.semantic) == n_before + 1
        and mem.graph.sem_vecs.shape[0] == n_before + 1
    )
    assert ev.notes[0].note_id == new_id and ev.notes[0].dia_ids == top.dia_ids
    assert any(e.src == new_id and e.dst == top.note_id and e.label == "refines" for e in mem.graph.edges)
    assert "Rex is a beagle puppy adopted by Alice." in ans.contexts[1]
    # the reshaped unit stays in memory and is found by BM25 for later questions
    assert mem.graph.bm25.scores("beagle puppy adopted")[mem.graph.row(new_id)] > 0


def test_gold_answer_never_reaches_a_prompt(tmp_path: Path) -> None:
    script = FluxMemLLM(checks=[{"supported": False, "failure": "under_connection"}] * 3)
    mem, backbone = build(script, tmp_path, unit="turn", consolidate_every=1, cluster_min_sim=-1.0, min_cluster_size=1)
    mem.answer(item("What breed is Rex?", answer="ZZGOLD"), Answerer())
    mem.after_qa()
    assert backbone.calls and all("ZZGOLD" not in m["content"] for _, msgs in backbone.calls for m in msgs)


# ---------------------------------------------------------------- Stage 3
QUESTIONS = ["What breed is Rex?", "What breed is the dog Rex?", "What breed is Rex the dog?"]


def test_consolidation_makes_a_skill_and_stops_on_threshold(tmp_path: Path) -> None:
    # PEMS reduced to the success rate (length and drift weights 0) so the scores are exact
    script = FluxMemLLM(
        skills=["S0", "S1", "S2"], rerun={"S0": [False, False], "S1": [True, False], "S2": [True, False]}
    )
    mem, _ = build(
        script,
        tmp_path,
        unit="turn",
        refine=False,
        consolidate_every=0,
        cluster_min_sim=0.3,
        rerun_episodes=2,
        pems_formula="linear",  # the earlier score (upstream's is the default now; tested below)
        pems_w_length=0.0,
        pems_w_drift=0.0,
        pems_threshold=0.2,
    )
    for i, q in enumerate(QUESTIONS):
        mem.answer(item(q, i), Answerer())
    assert script.purposes().count("check") == 3  # outcome judged for PEMS even without Stage 2
    assert not mem.graph.skills
    mem.after_qa()
    assert len(mem.graph.skills) == 1
    skill = mem.graph.skills[0]
    # S0: 0/2 → 0.0; S1: 1/2 → 0.5 (gain 0.5 ≥ 0.2, kept, go on); S2: 1/2 → gain 0 < 0.2: stop
    assert skill.text == "S1" and skill.version == 1 and skill.pems == pytest.approx(0.5)
    assert [h["pems"] for h in skill.history] == [0.0, 0.5, 0.5]
    assert [h["accepted"] for h in skill.history] == [True, True, False]
    assert script.purposes().count("skill_refine") == 2 and script.purposes().count("skill_rerun") == 6
    assert skill.episodes == ["e0", "e1", "e2"]
    assert all(mem.graph.skills_of(e) == ["k0"] for e in skill.episodes)
    assert mem.stats()["extraction_edges"] == 3


def test_skills_reach_later_questions_through_similar_episodes(tmp_path: Path) -> None:
    script = FluxMemLLM(skills=["Find the fact naming the breed."], rerun={"Find the fact naming the breed.": [True]})
    mem, _ = build(script, tmp_path, unit="turn", consolidate_every=2, cluster_min_sim=0.3, episode_min_sim=0.3)
    for i, q in enumerate(QUESTIONS[:2]):
        mem.answer(item(q, i), Answerer())
    assert len(mem.graph.skills) == 1 and mem.stats()["counters"]["consolidations"] == 1
    ans = Answerer()
    _, ev = mem.answer(item(QUESTIONS[2], 2), ans)
    info = ev.extra["fluxmem"]
    assert info["skills"] == ["k0"] and set(info["episodes"]) == {"e0", "e1"}
    assert "Answering skills learned from earlier questions:\n- Find the fact naming the breed." in ans.contexts[0]
    assert "Q: What breed is Rex? A: beagle" in ans.contexts[0]
    assert [n.dia_ids for n in ev.notes if n.channels in (("episode",), ("skill",))] == [(), (), ()]


def test_small_clusters_make_no_skill(tmp_path: Path) -> None:
    script = FluxMemLLM()
    mem, _ = build(script, tmp_path, unit="turn", consolidate_every=0, cluster_min_sim=0.99)
    mem.answer(item("What breed is Rex?"), Answerer())
    mem.answer(item("Where did Alice move?", 1), Answerer())
    mem.after_qa()
    assert mem.graph.skills == [] and "skill_extract" not in script.purposes()


# ---------------------------------------------------------------- switches
def test_switches_remove_their_stage(tmp_path: Path) -> None:
    checks = [{"supported": False, "failure": "under_connection"}] * 20
    full = FluxMemLLM(checks=list(checks))
    mem, _ = build(full, tmp_path / "full", unit="turn", consolidate_every=0, cluster_min_sim=-1.0)
    for i, q in enumerate(QUESTIONS):
        mem.answer(item(q, i), Answerer())
    mem.after_qa()
    assert {"verify", "check", "skill_extract"} <= set(full.purposes())

    no_stage2 = FluxMemLLM(checks=list(checks))
    mem2, _ = build(no_stage2, tmp_path / "s2", unit="turn", refine=False, consolidate=False)
    ans = Answerer()
    for i, q in enumerate(QUESTIONS):
        mem2.answer(item(q, i), ans)
    mem2.after_qa()
    assert len(ans.contexts) == 3 and set(no_stage2.purposes()) == {"verify"}
    assert all(e.supported is None for e in mem2.graph.episodes)

    no_stage3 = FluxMemLLM(checks=list(checks))
    mem3, _ = build(no_stage3, tmp_path / "s3", unit="turn", consolidate=False, consolidate_every=1)
    for i, q in enumerate(QUESTIONS):
        mem3.answer(item(q, i), Answerer())
    mem3.after_qa()
    assert not {"skill_extract", "skill_rerun", "skill_refine"} & set(no_stage3.purposes()) and mem3.graph.skills == []

    no_stage1 = FluxMemLLM()
    mem1, _ = build(no_stage1, tmp_path / "s1", unit="turn", connect=False, refine=False, consolidate=False, k=3)
    ev = mem1.retrieve("What breed is Rex?")
    q_vec = mem1.embedder.encode(["What breed is Rex?"])[0]
    dense = mem1.graph.sem_vecs @ q_vec
    assert [n.score for n in ev.notes] == pytest.approx(sorted(dense, reverse=True)[:3])
    assert all(n.channels == ("dense",) for n in ev.notes) and no_stage1.purposes() == []

    no_verify = FluxMemLLM()
    memv, _ = build(no_verify, tmp_path / "v", unit="turn", llm_verify=False)
    memv.retrieve("What breed is Rex?")
    assert no_verify.purposes() == []


# ---------------------------------------------------------------- persistence
def test_save_load_round_trip(tmp_path: Path) -> None:
    script = FluxMemLLM(
        checks=[{"supported": False, "failure": "granularity", "reshape": [1]}] + [{"supported": True}] * 10,
        skills=["Find the breed."],
    )
    mem, backbone = build(script, tmp_path, consolidate_every=0, cluster_min_sim=0.3)
    for i, q in enumerate(QUESTIONS):
        mem.answer(item(q, i), Answerer())
    mem.after_qa()
    assert mem.graph.episodes and mem.graph.skills and any(n.origin == "reshaped" for n in mem.graph.semantic)
    out = tmp_path / "snap"
    out.mkdir()
    mem.save(out)
    other = SPEC.factory(
        method_context(
            {"name": "fluxmem", **FACTS_LISTED, "consolidate_every": 0, "cluster_min_sim": 0.3},
            story_conversation(n_sessions=3),
            tmp_path / "w",
            backbone=lambda: backbone,
            embedder=lambda: HashingEmbedder(256),
        )
    )
    other.load(out)
    a, b = mem.graph, other.graph
    assert a.semantic == b.semantic and a.episodes == b.episodes and a.skills == b.skills and a.edges == b.edges
    assert a.turns == b.turns
    for x, y in (
        (a.sem_vecs, b.sem_vecs),
        (a.ep_q_vecs, b.ep_q_vecs),
        (a.ep_traj_vecs, b.ep_traj_vecs),
        (a.skill_vecs, b.skill_vecs),
    ):
        assert np.array_equal(x, y)
    assert np.array_equal(a.bm25.scores("beagle Rex"), b.bm25.scores("beagle Rex"))
    assert a.neighbours("s0") == b.neighbours("s0") and b.skills_of("e0") == ["k0"]
    assert [n.to_json() for n in mem.retrieve("Where did Alice move?").notes] == [
        n.to_json() for n in other.retrieve("Where did Alice move?").notes
    ]
    stats = {k: v for k, v in mem.stats().items() if k not in ("attributions", "counters")}
    assert stats == {k: v for k, v in other.stats().items() if k not in ("attributions", "counters")}
    # saving the loaded memory gives byte-identical files (snapshot checksums stay stable)
    again = tmp_path / "snap2"
    again.mkdir()
    other.save(again)
    for f in sorted(out.iterdir()):
        assert f.read_bytes() == (again / f.name).read_bytes(), f.name


def test_construction_snapshot_has_empty_episodic_layers(tmp_path: Path) -> None:
    mem, _ = build(FluxMemLLM(), tmp_path, unit="turn")
    out = tmp_path / "snap"
    out.mkdir()
    mem.save(out)
    assert (out / "episodes.jsonl").read_text() == "" and (out / "skills.jsonl").read_text() == ""
    assert np.load(out / "semantic.npy").shape == (9, 256)


# ---------------------------------------------------------------- spec wiring
def test_specs_and_variants(tmp_path: Path) -> None:
    for name, spec in (
        ("fluxmem", SPEC),
        ("fluxmem-no-refine", SPEC_NO_REFINE),
        ("fluxmem-no-consolidate", SPEC_NO_CONSOLIDATE),
        ("fluxmem-facts", SPEC_FACTS),
    ):
        got = get_method(name)
        assert got is spec and got.name == name and got.sequential_qa and got.retrieve_uses_llm({}, {})
        assert "format_version" in got.construction_keys and "k" not in got.construction_keys
    ctx = method_context(
        {"name": "fluxmem-no-refine", "refine": False},
        story_conversation(),
        tmp_path,
        backbone=lambda: pytest.fail("backbone touched at construction time"),
        seed=0,
    )
    mem = SPEC_NO_REFINE.factory(ctx)
    assert isinstance(mem, SelfAnsweringMemory) and mem.cfg.refine is False
    with pytest.raises(ConfigError, match="fluxmem-no-refine runs with refine=False"):
        SPEC_NO_REFINE.factory(replace(ctx, config={"name": "fluxmem-no-refine", "refine": True}))
    assert SPEC_NO_CONSOLIDATE.factory(replace(ctx, config={"name": "fluxmem-no-consolidate"})).cfg.consolidate is False
    with pytest.raises(ConfigError, match="unknown config key"):
        SPEC.factory(replace(ctx, config={"name": "fluxmem", "T_max": 3}))
    assert FluxMemConfig().construction()["format_version"] == 2
    assert SPEC_FACTS.factory(replace(ctx, config={"name": "fluxmem-facts"})).cfg.unit == "fact"
    with pytest.raises(ConfigError, match="fluxmem-facts runs with unit=fact"):
        SPEC_FACTS.factory(replace(ctx, config={"name": "fluxmem-facts", "unit": "chunk"}))


def test_stage1_upstream_fusion_over_the_dense_pool(tmp_path: Path) -> None:
    """Upstream semantic_retriever: the pool is the dense top candidates, dense and BM25 are min-max
    normalised over the pool, fused 1.0 / 0.5 / 0.3 with the LLM term; verification runs at 0.1, seeded."""
    script = FluxMemLLM(relevant=[2])
    mem, backbone = build(script, tmp_path, unit="turn", k=2, verify_pool=4)
    q = "What breed is Rex?"
    q_vec = mem.embedder.encode([q])[0]
    dense = mem.graph.sem_vecs @ q_vec
    pool = np.lexsort((np.arange(len(dense)), -dense))[:4]
    bm25 = np.asarray(mem.graph.bm25.scores(q), dtype=np.float64)
    v = np.array([0.0, 1.0, 0.0, 0.0])
    expected = (1.0 * minmax(dense[pool]) + 0.5 * minmax(bm25[pool]) + 0.3 * v) / 1.8
    best = pool[np.lexsort((np.arange(4), -expected))[:2]]
    seen: list[dict[str, Any]] = []
    inner = backbone.complete

    def recording(messages: Any, **kw: Any) -> Any:
        seen.append(kw)
        return inner(messages, **kw)

    backbone.complete = recording  # type: ignore[method-assign]
    ev = mem.retrieve(q)
    assert [n.note_id for n in ev.notes] == [f"s{i}" for i in best]
    assert [(kw["temperature"], kw["seed"]) for kw in seen] == [(0.1, 1)]  # one verification call


def test_budget_counts_episodes_and_skills(tmp_path: Path) -> None:
    """eval.note_cap=B: B notes in all at Stage 1; semantic nodes make room for past episodes."""
    mem, _ = build(
        FluxMemLLM(),
        tmp_path,
        unit="turn",
        consolidate=False,
        refine=False,
        episode_min_sim=-1.0,
        episodes_supported_only=False,
    )
    for i, q in enumerate(QUESTIONS):
        mem.answer(item(q, i), Answerer())
    ev = mem.retrieve("What breed is Rex?", budget=4)
    kinds = [n.channels[0] if n.channels and n.channels[0] in ("episode", "skill") else "semantic" for n in ev.notes]
    assert len(ev.notes) == 4 and kinds.count("episode") == 3 and kinds.count("semantic") == 1
    assert len(mem.retrieve("What breed is Rex?").notes) == 5 + 3  # no budget: k = 5 plus the episodes


# ---------------------------------------------------------------- upstream's units and verification (the defaults)
def test_default_units_are_512_character_chunks_of_each_session_without_an_llm(tmp_path: Path) -> None:
    script = FluxMemLLM()
    conv = story_conversation(n_sessions=3)
    mem, backbone = build(script, tmp_path, unit="chunk")
    assert backbone.calls_by_stage() == {}  # chunks need no LLM call
    g = mem.graph
    assert {n.origin for n in g.semantic} == {"chunk"} and len(g.turns) == 9
    # each session's text is short: one chunk per session, its turns' lines joined by newlines, all its dia_ids
    for s, node in zip(conv.sessions, g.semantic):
        assert node.text == "\n".join(t.render() for t in s.turns)
        assert node.dia_ids == tuple(t.dia_id for t in s.turns) and node.time == s.time_raw
    assert mem.stats()["turns_without_nodes"] == 0 and mem.stats()["semantic_by_origin"] == {"chunk": 3}
    assert not SPEC.ingest_uses_llm({}, {}) and FluxMemConfig().unit == "chunk"


def test_long_sessions_split_at_turn_boundaries_and_keep_overlapping_turns(tmp_path: Path) -> None:
    conv = story_conversation(n_sessions=1)
    turns = list(conv.turns)
    lines = [t.render() for t in turns]
    size = len(lines[0]) + 1 + len(lines[1]) + 5  # two turns fit; the cut falls on the newline after the second
    chunks = session_chunks(turns, size)
    assert chunks[0] == (lines[0] + "\n" + lines[1], (turns[0].dia_id, turns[1].dia_id))
    assert "".join(c for c, _ in chunks).replace("\n", "") == "".join(lines)  # nothing lost, nothing repeated
    # a hard cut inside a turn: that turn's dia_id is on both sides
    hard = session_chunks(turns[:1], 20)
    assert len(hard) > 1 and all(ids == (turns[0].dia_id,) for _, ids in hard)


def test_graded_verification_is_one_upstream_call_per_candidate(tmp_path: Path) -> None:
    flat, _ = build(
        FluxMemLLM(grade=lambda evidence: "0.5"),
        tmp_path / "flat",
        unit="turn",
        verify_mode="graded",
        k=4,
        verify_pool=4,
    )
    base = {n.note_id: n.score for n in flat.retrieve("Where did Alice move?").notes}
    # equal grades carry no ranking information (min-max over the pool, as upstream): the last candidate by the
    # other signals gets 0.9, the rest 0.1, so only its score rises, by w_llm / (w_dense + w_sparse + w_llm)
    last = min(base, key=lambda n: base[n])
    text = flat.graph.node(last).text
    script = FluxMemLLM(grade=lambda evidence: "0.9" if evidence == text else "Score: 0.1")
    mem, backbone = build(script, tmp_path / "graded", unit="turn", verify_mode="graded", k=4, verify_pool=4)
    got = {n.note_id: n.score for n in mem.retrieve("Where did Alice move?").notes}
    assert got.keys() == base.keys()
    assert got[last] == pytest.approx(base[last] + 0.3 / 1.8)
    assert all(got[n] == pytest.approx(base[n]) for n in base if n != last)
    grades = [msgs for kind, msgs in script.calls if kind == "grade"]
    assert len(grades) == 4 and backbone.calls_by_stage() == {"retrieve": 4}
    assert grades[0][0]["content"] == V.VERIFY_SYSTEM
    assert grades[0][1]["content"].startswith("Claim: Where did Alice move?\n\nEvidence: ")
    assert grades[0][1]["content"].endswith("\n\nRelevance score (0.0-1.0):")
    assert mem.stats()["counters"]["calls_verify"] == 4


def test_graded_reply_without_a_number_is_retried_then_scored_zero_and_counted(tmp_path: Path) -> None:
    script = FluxMemLLM(grade=lambda evidence: "relevant")
    mem, backbone = build(script, tmp_path, unit="turn", verify_mode="graded", k=2, verify_pool=3)
    ev = mem.retrieve("Where did Alice move?")
    assert len(ev.notes) == 2 and backbone.calls_by_stage() == {"retrieve": 6}  # 3 candidates x 2 attempts
    counters = mem.stats()["counters"]
    assert counters["fallback_verify"] == 3 and counters["calls_verify"] == 6
    assert backbone.usage.to_json()["by_stage"]["retrieve"]["parse_failures"] == 3


def test_graded_score_is_the_first_number_clipped_as_upstream(tmp_path: Path) -> None:
    replies = {"a": "1.7", "b": "Relevance: 0.25 (maybe 0.9)", "c": "-0.3", "d": "7"}
    script = FluxMemLLM(grade=lambda evidence: replies[evidence])
    mem, _ = build(script, tmp_path, unit="turn")
    assert [mem._calls.grade("q", e) for e in "abcd"] == [1.0, 0.25, 0.3, 1.0]

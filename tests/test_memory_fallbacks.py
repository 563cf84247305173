"""Unparseable LLM replies take counted fallbacks; cheap mode never touches the backbone."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.memory.config import ConfigError
from memcore.memory.ingestion import clean_text
from tests.fakes import MemCoReLLM
from tests.support import QUESTIONS, TAGGED_TURNS, TOPIC_TURNS, build, conversation_of, make_memory


def test_unparseable_ingest_keeps_raw_context_and_no_keywords(tmp_path: Path) -> None:
    conv = conversation_of(TAGGED_TURNS)
    mem, backbone, _ = build(conv, tmp_path, llm=MemCoReLLM(garbage=["ingest"]))
    stats = mem.stats()
    assert stats["fallbacks"]["ingest:raw_context_no_keywords"] == len(conv.turns)
    for note in mem.store.notes:
        if len(note.raws) == 1:
            assert note.context == clean_text(note.raws[0].render())
        assert set(note.keywords) <= {"alice", "bob"}  # only the speaker names, no extracted keyword
    assert backbone is not None
    assert backbone.usage.parse_failures()["ingest"]["ingest:raw_context_no_keywords"] == len(conv.turns)
    # one retry per turn before the fallback
    assert stats["construction"]["llm_calls"] >= 2 * len(conv.turns)


def test_unparseable_gate_appends(tmp_path: Path) -> None:
    conv = conversation_of(TAGGED_TURNS)
    mem, backbone, _ = build(conv, tmp_path, llm=MemCoReLLM(garbage=["gate"]))
    c = mem.stats()["construction"]
    assert (c["merges"], c["links"], c["appends"]) == (0, 0, len(conv.turns))
    assert c["fallbacks"] == {"gate:append": len(conv.turns) - 1}  # the first turn has no candidates
    assert backbone is not None
    assert backbone.usage.parse_failures()["ingest"]["gate:append"] == len(conv.turns) - 1


def test_unparseable_merge_concatenates(tmp_path: Path) -> None:
    conv = conversation_of(TAGGED_TURNS)
    mem, _, _ = build(conv, tmp_path, llm=MemCoReLLM(garbage=["merge"]))
    merged = mem.store.notes[0]
    assert merged.context.startswith(  # (a later strong link appends its clause to it)
        "Alice said that tagA: I adopted a dog named Rex from the shelter "
        "Bob said that tagA dup: I adopted a dog named Rex from the shelter last week"
    )
    assert mem.stats()["fallbacks"]["merge:concatenated_contexts"] == 1


def test_unparseable_decompose_and_ier_fall_back(tmp_path: Path) -> None:
    conv = conversation_of(TOPIC_TURNS)
    llm = MemCoReLLM(garbage=["decompose", "ier"])
    mem, backbone, _ = build(conv, tmp_path, llm=llm)
    ev = mem.retrieve(QUESTIONS[0])
    # the judge's reply did not parse: not "sufficient"; the coverage rule finds every entity covered, so
    # refinement stops, under its own stop reason
    assert ev.rounds == 1
    assert ev.extra["ier_stop"] == "judge_unparsed"
    assert ev.extra["rounds_log"][0]["judge"] == "unparsed" and ev.extra["rounds_log"][0]["sufficient"] is False
    assert ev.extra["fallbacks"] == ["decompose:statistical_plan", "ier:rule_subqueries"]
    assert ev.notes  # the statistical plan still retrieves
    assert mem.stats()["retrieval"]["fallbacks"] == {"decompose:statistical_plan": 1, "ier:rule_subqueries": 1}
    assert mem.stats()["retrieval"]["ier_stops"] == {"judge_unparsed": 1}
    assert backbone is not None
    assert backbone.usage.parse_failures()["retrieve"] == {"decompose:statistical_plan": 1, "ier:rule_subqueries": 1}


def test_unparseable_ier_judge_refines_with_the_coverage_rule(tmp_path: Path) -> None:
    """At K = 2 the pool covers "walks" but not "watercolors": with the judge's reply unparseable the cheap
    coverage rule issues the uncovered entity as the sub-query of round 2 (counted as ier:rule_subqueries)."""
    mem, _, _ = build(conversation_of(TOPIC_TURNS), tmp_path, llm=MemCoReLLM(garbage=["ier"]))
    ev = mem.retrieve("What about walks and watercolors?", budget=2)
    log = ev.extra["rounds_log"]
    assert log[0]["judge"] == "unparsed" and log[0]["sufficient"] is False
    assert ev.rounds == 2 and [sq["query"] for sq in log[1]["sub_queries"]] == ["watercolors"]
    assert ev.extra["fallbacks"] == ["ier:rule_subqueries"]
    assert ev.extra["ier_stop"] != "sufficient"


def test_cheap_mode_makes_zero_backbone_calls(tmp_path: Path) -> None:
    conv = conversation_of(TOPIC_TURNS + TAGGED_TURNS)
    mem, backbone, ctx = build(conv, tmp_path / "a", cheap=True)  # the context's backbone raises if touched
    for q in QUESTIONS:
        assert mem.retrieve(q).notes
    mem.save(tmp_path / "snap")
    other, _, ctx2 = make_memory(conv, tmp_path / "b", cheap=True)
    other.load(tmp_path / "snap")
    other.retrieve(QUESTIONS[0])
    assert backbone is None and not ctx._backbone.built and not ctx2._backbone.built
    assert mem.stats()["construction"]["llm_calls"] == 0
    assert mem.stats()["mode"] == "embedding (cheap variant)"


def test_method_names_pin_the_mode(tmp_path: Path) -> None:
    conv = conversation_of(TAGGED_TURNS)
    with pytest.raises(ConfigError, match="memcore-cheap"):
        make_memory(conv, tmp_path, cheap=False, judge="embedding")
    with pytest.raises(ConfigError, match="no-LLM variant"):
        make_memory(conv, tmp_path, cheap=True, judge="llm")


def test_config_errors_name_the_key(tmp_path: Path) -> None:
    conv = conversation_of(TAGGED_TURNS)
    with pytest.raises(ConfigError, match="unknown MemCoRe config key"):
        make_memory(conv, tmp_path, cheap=True, tau_merg=0.7)
    with pytest.raises(ConfigError, match="tau_link <= tau_merge"):
        make_memory(conv, tmp_path, cheap=True, tau_link=0.8)
    with pytest.raises(ConfigError, match="k_final must be an integer"):
        make_memory(conv, tmp_path, cheap=True, k_final="20")

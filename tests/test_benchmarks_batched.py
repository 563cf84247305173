"""memcore-batched: chunked ingestion + one gate call per chunk, with hand-counted LLM calls."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.memory.batched import SPEC_BATCHED, BatchSettings, MemCoReBatched, salvage_list_items, split_config
from memcore.memory.config import ConfigError, MemCoReConfig, Switches
from memcore.memory.persistence import SnapshotMismatchError
from memcore.memory.prompts import batch as BATCH_PROMPT
from memcore.memory.prompts import gate as GATE_PROMPT
from memcore.memory.system import MemCoRe
from memcore.testing.sim_replies import structured_responder
from tests.fakes import BatchedLLM
from tests.support import method_context, story_conversation

CONV = story_conversation(n_sessions=2)  # session 1: Rex the puppy (3 turns); session 2: the violin (3 turns)


def build(
    batch_size: int = 3, ablation: dict | None = None, llm: BatchedLLM | None = None, **resp: bool
) -> tuple[MemCoReBatched, ScriptedBackbone]:
    backbone = ScriptedBackbone(llm or BatchedLLM(**resp))
    mem = MemCoReBatched(
        MemCoReConfig(name="memcore-batched"),
        Switches.from_dict(ablation),
        BatchSettings(batch_size),
        embedder=HashingEmbedder(64),
        backbone=lambda: backbone,
        seed=0,
    )
    for t in CONV.turns:
        mem.ingest(t)
    mem.finalize()
    return mem, backbone


def test_chunk_costs_two_calls_and_in_chunk_merges_resolve_to_the_holder() -> None:
    mem, backbone = build()
    # chunk 1: 1 ingest + 1 gate + 2 merges (N2→N1, then N3→N2 = the note holding N1); chunk 2: 1 ingest + 1 gate
    assert backbone.calls_by_stage() == {"ingest": 6}
    assert len(mem.store) == 4
    first = mem.store.notes[0]
    assert first.dia_ids == ("D1:1", "D1:2", "D1:3") and first.context == "merged"
    assert [n.dia_ids for n in mem.store.notes[1:]] == [("D2:1",), ("D2:2",), ("D2:3",)]
    stats = mem.stats()
    assert stats["construction"]["merges"] == 2
    assert stats["construction"]["llm_calls"] == 6
    assert stats["llm_calls_per_turn"] == 1.0
    assert mem.store.notes[1].context == "Bob: I started learning the violin in March. (noted)"


def test_the_batched_gate_shows_every_notes_date_and_the_single_gates_scale() -> None:
    """Without dates the same kind of event on another day looks redundant and merges; the batched
    gate shows existing notes with their session date(s) and each new note with its own, like the single gate."""
    llm = BatchedLLM()
    build(llm=llm)
    second = llm.prompts_of("batch_gate")[-1]  # chunk 2 (session 2) against chunk 1's note (session 1)
    existing, new = second.split("New notes", 1)
    assert "] (1:00 pm on 1 May, 2023) " in existing
    assert "[N1] (1:00 pm on 8 May, 2023) " in new and "[N3] (1:00 pm on 8 May, 2023) " in new
    assert GATE_PROMPT.RELATIONS in second and BATCH_PROMPT.GATE_VERSION == "memcore-gate-batch-v2"


def test_a_chunk_without_a_usable_reply_is_split_down_to_per_turn_calls() -> None:
    mem, backbone = build(ablation={"name": "wo_update", "update": False}, garbage=True)
    # per chunk of 3: batch (2 attempts) -> [1 turn: per-turn call] + [2 turns: batch (2 attempts) -> 2 per-turn]
    assert backbone.calls_by_stage() == {"ingest": 14}
    assert len(mem.store) == 6
    # the relative date resolved in code; the fake echoes the annotated turn
    assert (
        mem.store.notes[0].context
        == "Alice: I adopted a puppy named Rex last week [= the week of 24 April 2023]. (single)"
    )
    assert mem.store.notes[0].denoised and "rex" in mem.store.notes[0].keywords
    construction = mem.stats()["construction"]
    assert construction["fallbacks"] == {"ingest_batch:split": 4}
    assert construction["llm_calls"] == 14
    assert backbone.usage.parse_failures() == {"ingest": {"ingest_batch:no_usable_reply": 4}}


def test_turns_missing_from_the_reply_are_asked_again() -> None:
    mem, backbone = build(ablation={"name": "wo_update", "update": False}, drop_last=True)
    assert backbone.calls_by_stage() == {"ingest": 4}  # per chunk: 1 batch call + 1 per-turn call for the last turn
    assert mem.stats()["construction"]["fallbacks"] == {"ingest_batch:reask": 2}
    assert mem.store.notes[1].context == "Bob: Congrats! What breed is Rex? (noted)"
    assert mem.store.notes[2].context == "Alice: Rex is a beagle. (single)"


def test_a_reply_cut_at_max_tokens_keeps_its_complete_entries_and_is_not_retried() -> None:
    mem, backbone = build(ablation={"name": "wo_update", "update": False}, runaway=True)
    assert backbone.calls_by_stage() == {"ingest": 4}  # no retry of the cut reply: it would be cut again
    assert [n.context.endswith("(noted)") for n in mem.store.notes] == [True, True, False, True, True, False]
    assert mem.store.notes[2].context == "Alice: Rex is a beagle. (single)"
    assert mem.stats()["construction"]["fallbacks"] == {"ingest_batch:reask": 2}
    assert backbone.usage.stage("ingest").parse_retries == 0


def test_a_gate_reply_cut_at_max_tokens_keeps_its_complete_judgements() -> None:
    mem, backbone = build(gate_runaway=True)
    # chunk 1: ingest + gate (cut, not retried) + 1 merge (N2 -> N1; N3 was never judged: appended); chunk 2: 2
    assert backbone.calls_by_stage() == {"ingest": 5}
    assert [n.dia_ids for n in mem.store.notes[:2]] == [("D1:1", "D1:2"), ("D1:3",)]
    assert mem.stats()["construction"]["fallbacks"] == {"gate_batch:cut_kept_complete": 1}


def test_salvage_keeps_the_complete_items_of_a_cut_list() -> None:
    assert salvage_list_items('{"notes": [{"a": 1}, {"b": [2, 3]} , {"c": "x') == [{"a": 1}, {"b": [2, 3]}]
    assert salvage_list_items('{"notes": [{"a": 1}]}') == [{"a": 1}]
    assert salvage_list_items("no list at all") == []


def test_batch_size_one_builds_what_memcore_builds(tmp_path: Path) -> None:
    def run(mem: MemCoRe) -> list[tuple]:
        for t in CONV.turns:
            mem.ingest(t)
        mem.finalize()
        return [(n.dia_ids, n.context, tuple(n.keywords)) for n in mem.store.notes]

    b1, b2 = ScriptedBackbone(structured_responder), ScriptedBackbone(structured_responder)
    plain = MemCoRe(MemCoReConfig(), Switches(), embedder=HashingEmbedder(64), backbone=lambda: b1)
    batched = MemCoReBatched(
        MemCoReConfig(name="memcore-batched"),
        Switches(),
        BatchSettings(1),
        embedder=HashingEmbedder(64),
        backbone=lambda: b2,
    )
    assert run(plain) == run(batched)
    assert b1.calls_by_stage() == b2.calls_by_stage()


def test_snapshot_of_another_batch_size_is_refused(tmp_path: Path) -> None:
    mem, _ = build(batch_size=3)
    mem.save(tmp_path / "snap")
    other = MemCoReBatched(
        MemCoReConfig(name="memcore-batched"),
        Switches(),
        BatchSettings(4),
        embedder=HashingEmbedder(64),
        backbone=lambda: None,  # type: ignore[arg-type, return-value]
    )
    with pytest.raises(SnapshotMismatchError, match="ingest_batch_size"):
        other.load(tmp_path / "snap")
    same = MemCoReBatched(
        MemCoReConfig(name="memcore-batched"),
        Switches(),
        BatchSettings(3),
        embedder=HashingEmbedder(64),
        backbone=lambda: None,  # type: ignore[arg-type, return-value]
    )
    same.load(tmp_path / "snap")
    assert [n.dia_ids for n in same.store.notes] == [n.dia_ids for n in mem.store.notes]


def test_config_validation_and_spec(tmp_path: Path) -> None:
    cfg, batch = split_config({"name": "memcore-batched", "ingest_batch_size": 5, "tau_merge": 0.8})
    assert (cfg.tau_merge, batch.ingest_batch_size) == (0.8, 5)
    with pytest.raises(ConfigError, match="ingest_batch_size must be >= 1"):
        split_config({"ingest_batch_size": 0})
    with pytest.raises(ConfigError, match="unknown MemCoRe config key"):
        split_config({"ingest_batch_sise": 4})
    assert SPEC_BATCHED.construction_keys[-2:] == ("ingest_batch_size", "batch_format_version")
    ctx = method_context({"name": "memcore-batched", "judge": "embedding"}, CONV, tmp_path, seed=0)
    with pytest.raises(ConfigError, match="memcore-cheap"):
        SPEC_BATCHED.factory(ctx)

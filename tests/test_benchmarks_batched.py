"""memcore-batched (issue 7): chunked ingestion + one gate call per chunk, with hand-counted LLM calls."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from memcore.interfaces import LazyResource, Message, MethodContext
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.memory.batched import SPEC_BATCHED, BatchSettings, MemCoReBatched, split_config
from memcore.memory.config import ConfigError, MemCoReConfig, Switches
from memcore.memory.persistence import SnapshotMismatchError
from memcore.memory.system import MemCoRe
from memcore.prompts import batch as BATCH_PROMPT
from memcore.prompts import merge as MERGE_PROMPT
from tests.helpers import make_conversation

CONV = make_conversation(n_sessions=2)  # session 1: Rex the puppy (3 turns); session 2: the violin (3 turns)
_TURN_RE = re.compile(r"^\[([^\]]+)\] \([^)]*\) (.*)$", re.MULTILINE)


def responder(messages: Sequence[Message], *, drop_last: bool = False, garbage: bool = False) -> str:
    """Batch ingest: "<speaker> says <text>" per turn. Batch gate: in the Rex chunk, N2 and N3 repeat their
    predecessor (redundant, 0.9 and 0.8); nothing else is related. Merge: "merged"."""
    system, user = messages[0]["content"], messages[-1]["content"]
    if len(messages) > 2:
        user = messages[1]["content"]
    if system == BATCH_PROMPT.INGEST_SYSTEM:
        if garbage:
            return "sorry, no JSON here"
        turns = _TURN_RE.findall(user.split("Turns to record", 1)[1])
        if drop_last:
            turns = turns[:-1]
        return json.dumps({"notes": [{"id": i, "context": f"{t} (noted)", "keywords": ["rex"]} for i, t in turns]})
    if system == BATCH_PROMPT.GATE_SYSTEM:
        if "puppy" not in user.split("New notes", 1)[1]:
            return json.dumps({"judgements": []})
        pairs = [("N2", "N1", 0.9), ("N3", "N2", 0.8)]
        return json.dumps(
            {"judgements": [{"new": a, "candidate": b, "relation": "redundant", "strength": s} for a, b, s in pairs]}
        )
    if system == MERGE_PROMPT.SYSTEM:
        return json.dumps({"context": "merged"})
    raise AssertionError(f"unexpected prompt: {system[:60]}")


def build(batch_size: int = 3, ablation: dict | None = None, **resp: bool) -> tuple[MemCoReBatched, ScriptedBackbone]:
    backbone = ScriptedBackbone(lambda m: responder(m, **resp))
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


def test_unparseable_batch_falls_back_to_raw_contexts_counted_per_turn() -> None:
    mem, backbone = build(ablation={"name": "wo_update", "update": False}, garbage=True)
    assert backbone.calls_by_stage() == {"ingest": 4}  # 2 chunks x 2 attempts, no gate (wo_update)
    assert len(mem.store) == 6
    assert mem.store.notes[0].context == "Alice: I adopted a puppy named Rex last week."
    assert not mem.store.notes[0].denoised
    assert mem.stats()["construction"]["fallbacks"] == {"ingest_batch:raw_context_no_keywords": 6}


def test_a_turn_missing_from_the_reply_keeps_its_raw_text() -> None:
    mem, _ = build(ablation={"name": "wo_update", "update": False}, drop_last=True)
    assert mem.stats()["construction"]["fallbacks"] == {"ingest_batch:turn_missing": 2}
    assert mem.store.notes[2].context == "Alice: Rex is a beagle."
    assert mem.store.notes[1].context == "Bob: Congrats! What breed is Rex? (noted)"


def test_batch_size_one_builds_what_memcore_builds(tmp_path: Path) -> None:
    from experiments.benchmarks.responders import structured_responder

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
    assert SPEC_BATCHED.construction_keys[-1] == "ingest_batch_size"
    ctx = MethodContext(
        {"name": "memcore-batched", "judge": "embedding"},
        {"name": "none"},
        CONV,
        0,
        tmp_path,
        LazyResource(lambda: None),
        LazyResource(lambda: HashingEmbedder(64)),
    )
    with pytest.raises(ConfigError, match="memcore-cheap"):
        SPEC_BATCHED.factory(ctx)

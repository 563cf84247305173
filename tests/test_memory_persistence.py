"""Snapshots: save → load round trip, open formats, refusal of a snapshot built under another config."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from memcore.memory.config import MemCoReConfig
from memcore.memory.persistence import MANIFEST, SnapshotMismatchError
from tests.support import QUESTIONS, TOPIC_TURNS, build, conversation_of, make_memory

CONV = conversation_of(TOPIC_TURNS)


def test_save_load_round_trip_is_equal(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path / "a", topic_min=2, topic_max=8)
    mem.save(tmp_path / "snap")
    files = sorted(p.name for p in (tmp_path / "snap").iterdir())
    assert files == sorted(
        [
            MANIFEST,
            "construction.json",
            "edges.jsonl",
            "embeddings.npy",
            "keyword_embeddings.npy",
            "keywords.json",
            "notes.jsonl",
            "topic_centroids.npy",
            "topics.json",
        ]
    )
    manifest = json.loads((tmp_path / "snap" / MANIFEST).read_text())
    assert manifest["format_version"] == MemCoReConfig().format_version
    assert manifest["counts"]["notes"] == len(mem.store)
    assert manifest["counts"]["turns"] == len(CONV.turns)

    other, _, _ = make_memory(CONV, tmp_path / "b", topic_min=2, topic_max=8)
    other.load(tmp_path / "snap")
    assert [n.to_json() for n in other.store.notes] == [n.to_json() for n in mem.store.notes]
    np.testing.assert_array_equal(other.store.vectors.matrix, mem.store.vectors.matrix)
    assert {k: e.to_json() for k, e in other.store.edges.items()} == {
        k: e.to_json() for k, e in mem.store.edges.items()
    }
    assert other.kindex.keywords == mem.kindex.keywords
    assert other.kindex.note_keywords == mem.kindex.note_keywords
    assert [m.tolist() for m in other.topics.members] == [m.tolist() for m in mem.topics.members]
    assert [n.tolist() for n in other.topics.notes] == [n.tolist() for n in mem.topics.notes]
    np.testing.assert_array_equal(other.topics.centroids, mem.topics.centroids)
    np.testing.assert_array_equal(other.kw_embeddings, mem.kw_embeddings)
    before = {k: v for k, v in mem.stats().items() if k != "retrieval"}
    assert {k: v for k, v in other.stats().items() if k != "retrieval"} == before
    for q in QUESTIONS:
        a, b = mem.retrieve(q), other.retrieve(q)
        assert [(n.note_id, n.dia_ids, n.channels, n.text) for n in a.notes] == [
            (n.note_id, n.dia_ids, n.channels, n.text) for n in b.notes
        ]
        assert [n.score for n in a.notes] == pytest.approx([n.score for n in b.notes])
        assert a.rounds == b.rounds


def test_retrieval_only_changes_reuse_the_snapshot(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path / "a", cheap=True)
    mem.save(tmp_path / "snap")
    other, _, _ = make_memory(CONV, tmp_path / "b", cheap=True, abl="wo_neighbor", k_final=5, k_topic=2)
    other.load(tmp_path / "snap")
    assert len(other.retrieve(QUESTIONS[0]).notes) == 5


def test_snapshot_of_another_construction_config_is_refused(tmp_path: Path) -> None:
    mem, _, _ = build(CONV, tmp_path / "a", cheap=True)
    mem.save(tmp_path / "snap")
    other, _, _ = make_memory(CONV, tmp_path / "b", cheap=True, tau_merge=0.8)
    with pytest.raises(SnapshotMismatchError, match="tau_merge"):
        other.load(tmp_path / "snap")
    wo_link, _, _ = make_memory(CONV, tmp_path / "c", cheap=True, abl="wo_link")
    with pytest.raises(SnapshotMismatchError, match=r"ablation\.link"):
        wo_link.load(tmp_path / "snap")
    with pytest.raises(SnapshotMismatchError, match="not a MemCoRe snapshot"):
        other.load(tmp_path)


def test_retrieve_before_finalize_is_a_clear_error(tmp_path: Path) -> None:
    mem, _, _ = make_memory(CONV, tmp_path, cheap=True)
    mem.ingest(CONV.turns[0])
    with pytest.raises(RuntimeError, match="finalize"):
        mem.retrieve("anything")

"""Snapshots are built once, reused, keyed on construction only, and rebuilt when damaged."""

from __future__ import annotations

import json
from pathlib import Path

from baselines.rag import RAG_BM25
from memcore.interfaces import LazyResource, MethodContext
from memcore.snapshots import MANIFEST, SnapshotStore, construction_fields
from tests.helpers import make_conversation


def _build(store: SnapshotStore, calls: list[str], cfg: dict | None = None):
    conv = make_conversation()
    cfg = cfg or {"name": "rag_bm25", "retriever": "bm25", "top_k": 5}
    fields = construction_fields(
        RAG_BM25, cfg, {"name": "none"}, backbone_model="m", embedder_name="hashing", conversation=conv
    )

    def make(workdir: Path):
        ctx = MethodContext(
            cfg, {"name": "none"}, conv, 0, workdir, LazyResource(lambda: None), LazyResource(lambda: None)
        )
        return RAG_BM25.factory(ctx)

    def build(system) -> dict:
        calls.append("build")
        for t in conv.turns:
            system.ingest(t)
        system.finalize()
        return {"turns": len(conv.turns)}

    return store.build_or_load(method="rag_bm25", fields=fields, make=make, build=build)


def test_build_once_then_reuse(tmp_path) -> None:
    store = SnapshotStore(tmp_path)
    calls: list[str] = []
    first = _build(store, calls)
    second = _build(store, calls)
    assert calls == ["build"]
    assert not first.reused and second.reused
    assert second.system.retrieve("Which dog is a beagle?").dia_ids[0] == "D1:3"
    manifest = json.loads((first.path / MANIFEST).read_text())
    assert manifest["stats"]["turns"] == 6 and "turns.jsonl" in manifest["files"]


def test_retrieval_only_change_reuses_snapshot(tmp_path) -> None:
    store = SnapshotStore(tmp_path)
    calls: list[str] = []
    _build(store, calls, {"name": "rag_bm25", "retriever": "bm25", "top_k": 5})
    _build(store, calls, {"name": "rag_bm25", "retriever": "bm25", "top_k": 50})  # top_k is not a construction key
    assert calls == ["build"]


def test_corrupted_snapshot_is_rebuilt(tmp_path, caplog) -> None:
    store = SnapshotStore(tmp_path)
    calls: list[str] = []
    first = _build(store, calls)
    (first.path / "turns.jsonl").write_text("garbage\n")
    again = _build(store, calls)
    assert calls == ["build", "build"] and not again.reused
    assert "checksum" in caplog.text


def test_half_written_snapshot_is_rebuilt(tmp_path, caplog) -> None:
    store = SnapshotStore(tmp_path)
    calls: list[str] = []
    first = _build(store, calls)
    (first.path / MANIFEST).unlink()
    again = _build(store, calls)
    assert calls == ["build", "build"] and not again.reused
    assert "half-written" in caplog.text

"""Snapshots are built once, reused, keyed on construction only, and rebuilt when damaged."""

from __future__ import annotations

import json
from pathlib import Path

from baselines.rag import RAG_BM25
from memcore.snapshots import MANIFEST, SnapshotStore, construction_fields
from tests.support import method_context, story_conversation


def _build(store: SnapshotStore, calls: list[str], cfg: dict | None = None):
    conv = story_conversation()
    cfg = cfg or {"name": "rag_bm25", "retriever": "bm25", "top_k": 5}
    fields = construction_fields(
        RAG_BM25, cfg, {"name": "none"}, backbone_model="m", embedder_name="hashing", conversation=conv
    )

    def make(workdir: Path):
        ctx = method_context(cfg, conv, workdir, embedder=lambda: None, seed=0)
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


def test_a_build_field_change_builds_a_new_snapshot(tmp_path) -> None:
    """context_format decides the embedded text of every rag_* method, so it is part of the key (it once was
    not for rag_dense / rag_bm25 / rag_hybrid, and an override reused vectors embedded in the other format)."""
    store = SnapshotStore(tmp_path)
    calls: list[str] = []
    _build(store, calls, {"name": "rag_bm25", "retriever": "bm25", "context_format": "notes"})
    _build(store, calls, {"name": "rag_bm25", "retriever": "bm25", "context_format": "locomo"})
    assert calls == ["build", "build"]
    assert RAG_BM25.construction_keys == ("retriever", "context_format", "locomo_captions")
    # locomo_captions decides rag_locomo's embedded text (caption tag or not), so it is part of the key too
    _build(
        store, calls, {"name": "rag_bm25", "retriever": "bm25", "context_format": "locomo", "locomo_captions": "inline"}
    )
    assert calls == ["build", "build", "build"]


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


def test_scratch_dirs_of_finished_processes_are_removed(tmp_path) -> None:
    import os
    import subprocess
    import sys

    store = SnapshotStore(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # this process has exited
    parent = tmp_path / ".work" / "rag_bm25"
    (parent / f"k1-{dead_pid}" / "db").mkdir(parents=True)
    (parent / f"k1-{os.getppid()}").mkdir()  # a live process (our parent) keeps its dir
    (parent / f"k2-{dead_pid}").mkdir()  # another key is left to that key's builder
    mine = store.scratch_dir("rag_bm25", "k1")
    assert mine == parent / f"k1-{os.getpid()}"
    assert sorted(p.name for p in parent.iterdir()) == sorted([f"k1-{os.getppid()}", f"k2-{dead_pid}"])


def test_a_build_removes_tmp_dirs_that_killed_builds_of_other_keys_left(tmp_path) -> None:
    import os
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    method_dir = tmp_path / "rag_bm25"
    (method_dir / f"otherkey.tmp-{int(dead.stdout)}").mkdir(parents=True)  # its builder was killed
    (method_dir / f"livekey.tmp-{os.getppid()}").mkdir()  # a build still running in another process
    _build(SnapshotStore(tmp_path), [])
    assert not (method_dir / f"otherkey.tmp-{int(dead.stdout)}").exists()
    assert (method_dir / f"livekey.tmp-{os.getppid()}").is_dir()

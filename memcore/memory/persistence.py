"""MemCoRe snapshot files: open formats (JSON / JSONL / .npy) plus a manifest with format version and counts.

Layout of a snapshot directory::

    memcore_manifest.json    format, format_version, construction hash + values, embedder, counts, file list
    notes.jsonl              one note per line (raws verbatim, context, keywords, flags)
    embeddings.npy           (notes, dim) float32, row i embeds note i's context
    edges.jsonl              undirected typed weighted edges {a, b, weight, type, origin}
    keywords.json            keyword strings (id = position) and each note's keyword ids
    keyword_embeddings.npy   (keywords, dim) float32
    topics.json              per topic: keyword ids and note ids; Leiden info
    topic_centroids.npy      (topics, dim) float32
    construction.json        construction counters (merges, links, appends, fallbacks, …)

The runner writes its own MANIFEST.json (snapshot key, checksums) around these files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memcore.memory.construction import ConstructionCounters
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import Edge, Note, NoteStore
from memcore.memory.topics import Topics

MANIFEST = "memcore_manifest.json"
FORMAT = "memcore-memory"
FILES = (
    "notes.jsonl",
    "embeddings.npy",
    "edges.jsonl",
    "keywords.json",
    "keyword_embeddings.npy",
    "topics.json",
    "topic_centroids.npy",
    "construction.json",
)


class SnapshotMismatchError(RuntimeError):
    """A snapshot built under a different construction config, format version or embedder."""


@dataclass
class MemoryFiles:
    store: NoteStore
    kindex: KeywordIndex
    topics: Topics
    kw_embeddings: np.ndarray
    counters: ConstructionCounters
    extra: dict[str, Any]


def save_memory(path: Path, mem: MemoryFiles, meta: dict[str, Any]) -> None:
    """Write every file and the manifest. ``meta`` carries format_version, construction_hash, construction,
    switches, embedder and dim; it is checked again on load."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    store = mem.store
    with open(path / "notes.jsonl", "w", encoding="utf-8") as fh:
        for note in store.notes:
            fh.write(json.dumps(note.to_json(), ensure_ascii=False) + "\n")
    np.save(path / "embeddings.npy", np.ascontiguousarray(store.vectors.matrix, dtype=np.float32))
    with open(path / "edges.jsonl", "w", encoding="utf-8") as fh:
        for edge in sorted(store.edges.values(), key=lambda e: (e.a, e.b)):
            fh.write(json.dumps(edge.to_json()) + "\n")
    kw = {
        "keywords": mem.kindex.keywords,
        "note_keywords": {str(n): k for n, k in sorted(mem.kindex.note_keywords.items())},
    }
    (path / "keywords.json").write_text(json.dumps(kw, ensure_ascii=False))
    np.save(path / "keyword_embeddings.npy", np.ascontiguousarray(mem.kw_embeddings, dtype=np.float32))
    topics = {
        "members": [m.tolist() for m in mem.topics.members],
        "notes": [n.tolist() for n in mem.topics.notes],
        "info": mem.topics.info,
    }
    (path / "topics.json").write_text(json.dumps(topics))
    np.save(path / "topic_centroids.npy", np.ascontiguousarray(mem.topics.centroids, dtype=np.float32))
    (path / "construction.json").write_text(json.dumps({"counters": mem.counters.to_json(), **mem.extra}, indent=1))
    manifest = {
        "format": FORMAT,
        **meta,
        "counts": {
            "notes": len(store),
            "edges": len(store.edges),
            "keywords": len(mem.kindex),
            "topics": len(mem.topics),
            "turns": sum(len(n.raws) for n in store.notes),
        },
        "files": list(FILES),
    }
    (path / MANIFEST).write_text(json.dumps(manifest, indent=1, ensure_ascii=False))


def load_memory(path: Path, expected: dict[str, Any], *, ann_threshold: int) -> MemoryFiles:
    """Read a snapshot; refuses (``SnapshotMismatchError``) one whose format version, construction hash
    or embedder differ from ``expected``."""
    path = Path(path)
    mpath = path / MANIFEST
    if not mpath.is_file():
        raise SnapshotMismatchError(
            f"{path} is not a MemCoRe snapshot (no {MANIFEST}); build it with ingest + finalize + save"
        )
    manifest = json.loads(mpath.read_text())
    if manifest.get("format") != FORMAT:
        raise SnapshotMismatchError(f"{mpath}: format {manifest.get('format')!r}, expected {FORMAT!r}")
    for key in ("format_version", "construction_hash", "embedder", "dim"):
        if manifest.get(key) != expected.get(key):
            diff = ""
            if key == "construction_hash":
                old, new = manifest.get("construction", {}), expected.get("construction", {})
                changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
                old_sw, new_sw = manifest.get("switches", {}), expected.get("switches", {})
                changed += sorted(f"ablation.{k}" for k in set(old_sw) | set(new_sw) if old_sw.get(k) != new_sw.get(k))
                diff = f" (differs in: {', '.join(changed) or 'unknown'})"
            raise SnapshotMismatchError(
                f"snapshot {path} was built with {key}={manifest.get(key)!r}, this memory has {expected.get(key)!r}{diff}; "
                "rebuild it (the runner does so automatically under a new snapshot key)"
            )
    missing = [f for f in FILES if not (path / f).is_file()]
    if missing:
        raise SnapshotMismatchError(f"snapshot {path} is incomplete (missing {', '.join(missing)}); rebuild it")
    store = NoteStore(dim=int(manifest["dim"]), ann_threshold=ann_threshold)
    with open(path / "notes.jsonl", encoding="utf-8") as fh:
        store.notes = [Note.from_json(json.loads(line)) for line in fh if line.strip()]
    emb = np.load(path / "embeddings.npy")
    if emb.shape != (len(store.notes), store.dim):
        raise SnapshotMismatchError(
            f"snapshot {path}: embeddings.npy has shape {emb.shape}, expected ({len(store.notes)}, {store.dim})"
        )
    store.vectors.extend(emb)
    with open(path / "edges.jsonl", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                d = json.loads(line)
                store.edges[(d["a"], d["b"])] = Edge(
                    d["a"], d["b"], float(d["weight"]), d["type"], d.get("origin", "gate")
                )
    kw = json.loads((path / "keywords.json").read_text())
    kindex = KeywordIndex()
    for k in kw["keywords"]:
        kindex.intern(k)
    for nid, kids in kw["note_keywords"].items():
        kindex.set_note(int(nid), [kindex.keywords[i] for i in kids])
    kw_emb = np.load(path / "keyword_embeddings.npy")
    t = json.loads((path / "topics.json").read_text())
    members = [np.asarray(m, dtype=np.int64) for m in t["members"]]
    keyword_topic = np.full(len(kindex), -1, dtype=np.int64)
    for i, m in enumerate(members):
        keyword_topic[m] = i
    topics = Topics(
        keyword_topic=keyword_topic,
        members=members,
        notes=[np.asarray(n, dtype=np.int64) for n in t["notes"]],
        centroids=np.load(path / "topic_centroids.npy").astype(np.float32),
        info=t.get("info", {}),
    )
    cons = json.loads((path / "construction.json").read_text())
    counters = ConstructionCounters.from_json(cons.pop("counters"))
    return MemoryFiles(store, kindex, topics, kw_emb.astype(np.float32), counters, cons)

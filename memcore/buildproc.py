"""Memory builds that need no LLM, run in worker processes (issue 7).

Threads cannot speed up a CPU-bound build (keyword extraction, Leiden, BM25 indexing hold the GIL), so
when a method's ingestion uses no chat backbone the runner hands each conversation's build to a process
pool: the worker builds and saves the snapshot, the runner's thread then loads it like any reused snapshot.
Builds that call the LLM stay in threads (they wait on the server, and the backbone lives in the runner).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcore.config import EmbedderConfig
from memcore.interfaces import BufferedIngest, LazyResource, MemorySystem, MethodContext, MethodSpec, StagedIngest
from memcore.llm.usage import UsageTracker
from memcore.seeding import derive_seed
from memcore.snapshots import SnapshotError, SnapshotStore, snapshot_key
from memcore.types import Conversation

log = logging.getLogger(__name__)


class BackboneInBuildWorkerError(RuntimeError):
    """A method declared ``ingest_uses_llm`` false but touched the chat backbone while building."""


def method_context(
    *,
    method_cfg: dict[str, Any],
    ablation: dict[str, Any],
    conversation: Conversation,
    run_seed: int,
    workdir: Path,
    backbone: LazyResource,
    embedder: LazyResource,
    extras: dict[str, Any],
) -> MethodContext:
    """The ``MethodContext`` the runner gives a method for one conversation (same in threads and workers)."""
    workdir.mkdir(parents=True, exist_ok=True)
    return MethodContext(
        config=method_cfg,
        ablation=ablation,
        conversation=conversation,
        seed=derive_seed(run_seed, "method", conversation.conv_id),
        workdir=workdir,
        _backbone=backbone,
        _embedder=embedder,
        extras=dict(extras),
    )


def build_memory(
    system: MemorySystem,
    conversation: Conversation,
    scope: UsageTracker,
    on_turn: Callable[[], None] | None = None,
    on_ingested: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Ingest every turn in order, finalize; returns the manifest extras (ingest usage, seconds, turns).
    ``on_turn`` runs once per turn: as the turn enters the memory for a ``BufferedIngest`` system, else after
    its ``ingest`` call. ``on_ingested(n)`` runs when a ``StagedIngest`` system finished ingesting ``n`` more
    turns (before its gate); other systems have no separate stage and never call it."""
    t0 = time.perf_counter()
    buffered = on_turn is not None and isinstance(system, BufferedIngest)
    staged = on_ingested is not None and isinstance(system, StagedIngest)
    if buffered:
        system.set_turn_callback(on_turn)  # type: ignore[union-attr]
    if staged:
        system.set_ingest_callback(on_ingested)  # type: ignore[union-attr]
    try:
        for turn in conversation.turns:
            system.ingest(turn)
            if on_turn is not None and not buffered:
                on_turn()
        system.finalize()
    finally:
        if buffered:
            system.set_turn_callback(None)  # type: ignore[union-attr]
        if staged:
            system.set_ingest_callback(None)  # type: ignore[union-attr]
    return {
        "ingest_usage": scope.to_json(),
        "ingest_seconds": round(time.perf_counter() - t0, 3),
        "turns": len(conversation.turns),
    }


@dataclass(frozen=True)
class BuildJob:
    """Everything a worker process needs to build one conversation's snapshot (picklable)."""

    method: str
    method_cfg: dict[str, Any]
    ablation: dict[str, Any]
    conversation: Conversation
    run_seed: int
    fields: dict[str, Any]
    snapshots: str
    embedder: EmbedderConfig
    embedder_cache: str | None
    extras: dict[str, Any]


def _no_backbone(method: str) -> Any:
    raise BackboneInBuildWorkerError(
        f"method {method!r} declares that building its memory uses no LLM (ingest_uses_llm is false) but its build "
        "touched the chat backbone; fix the method's MethodSpec.ingest_uses_llm, or run with build_processes=0."
    )


def build_in_worker(job: BuildJob) -> bool:
    """Build ``job``'s snapshot in this process unless a complete one exists; True when built here."""
    from memcore.llm.factory import build_embedder
    from memcore.methods import get_method

    spec: MethodSpec = get_method(job.method)
    store = SnapshotStore(Path(job.snapshots))
    key = snapshot_key(job.fields)
    try:
        if store.verify(store.path_for(spec.name, key), key) is not None:
            return False
    except SnapshotError:
        pass  # damaged: build_or_load below moves it aside and rebuilds
    cache = Path(job.embedder_cache) if job.embedder_cache else None
    embedder = LazyResource(lambda: build_embedder(job.embedder, cache_path=cache))
    backbone = LazyResource(lambda: _no_backbone(job.method))
    scope = UsageTracker()

    def make(workdir: Path) -> MemorySystem:
        ctx = method_context(
            method_cfg=job.method_cfg,
            ablation=job.ablation,
            conversation=job.conversation,
            run_seed=job.run_seed,
            workdir=workdir,
            backbone=backbone,
            embedder=embedder,
            extras=job.extras,
        )
        return spec.factory(ctx)

    snap = store.build_or_load(
        method=spec.name, fields=job.fields, make=make, build=lambda s: build_memory(s, job.conversation, scope)
    )
    return not snap.reused

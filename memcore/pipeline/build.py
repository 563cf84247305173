"""Stage 2 of the pipeline: build or load each conversation's memory — the one place for build threads,
worker processes and the snapshot store.

:class:`MemoryBuilder` gives the runner a ready :class:`MemorySystem` per conversation: loaded from the snapshot
store when a complete snapshot of the same construction exists, else built (turn by turn, with progress and
stop callbacks) and saved. Builds that call no LLM are CPU-bound, and threads cannot speed them up (keyword
extraction, Leiden, BM25 indexing hold the GIL), so when a method's ingestion uses no chat backbone each
conversation's build runs in a worker process: the worker builds and saves the snapshot, the
runner's thread then loads it like any reused snapshot. Builds that call the LLM stay in threads (they wait on
the server, and the backbone lives in the runner).
"""

from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import ConfigError, EmbedderConfig, typed_section
from memcore.interfaces import (
    BufferedIngest,
    LazyResource,
    MemorySystem,
    MethodContext,
    MethodSpec,
    PrefetchesQueries,
    StagedIngest,
)
from memcore.llm.cache_shards import CacheLayout
from memcore.llm.factory import build_embedder
from memcore.llm.usage import UsageTracker
from memcore.methods import get_method
from memcore.seeding import derive_seed
from memcore.snapshots import SnapshotError, SnapshotResult, SnapshotStore, construction_fields, snapshot_key
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


def system_factory(
    spec: MethodSpec, job: BuildJob, *, backbone: LazyResource, embedder: LazyResource
) -> Callable[[Path], MemorySystem]:
    """``make(workdir)`` for :meth:`SnapshotStore.build_or_load`: a fresh, empty memory of ``spec`` for
    ``job``'s conversation (the same in build threads and worker processes)."""

    def make(workdir: Path) -> MemorySystem:
        return spec.factory(
            method_context(
                method_cfg=job.method_cfg,
                ablation=job.ablation,
                conversation=job.conversation,
                run_seed=job.run_seed,
                workdir=workdir,
                backbone=backbone,
                embedder=embedder,
                extras=job.extras,
            )
        )

    return make


def build_memory(
    system: MemorySystem,
    conversation: Conversation,
    scope: UsageTracker,
    on_turn: Callable[[], None] | None = None,
    on_ingested: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Ingest every turn in order, finalize; returns the manifest extras (ingest usage, seconds, turns, the
    per-turn :class:`IngestTrace`). ``on_turn`` runs once per turn: as the turn enters the memory for a
    ``BufferedIngest`` system, else after its ``ingest`` call. ``on_ingested(n)`` runs when a ``StagedIngest``
    system finished ingesting ``n`` more turns (before its gate); other systems have no separate stage and never
    call it."""
    t0 = time.perf_counter()
    trace = IngestTrace(scope, len(conversation.turns))
    buffered = isinstance(system, BufferedIngest)
    staged = isinstance(system, StagedIngest)

    def entered() -> None:
        trace.entered()
        if on_turn is not None:
            on_turn()

    def ingested(n: int) -> None:
        trace.ingested(n)
        if on_ingested is not None:
            on_ingested(n)

    if buffered:
        system.set_turn_callback(entered)  # type: ignore[union-attr]
    if staged:
        system.set_ingest_callback(ingested)  # type: ignore[union-attr]
    try:
        for turn in conversation.turns:
            system.ingest(turn)
            if not buffered:
                entered()
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
        "ingest_trace": trace.to_json(),
    }


class IngestTrace:
    """Per-turn build usage: the calls and prompt / completion tokens each turn cost, in turn order.

    A turn's cost is what the build spent up to the moment it entered the memory (after its ``ingest`` call, or
    a buffered system's turn callback, so a batch's gate calls land on their own turns), plus its share of a
    separate ingestion stage (a ``StagedIngest`` system's ``n`` turns ingested at once share that stage's cost
    evenly). What ``finalize`` adds is the total minus the turns' sum. ``memcore.report.estimate`` reads it to see
    whether a method's cost per turn grows with its memory."""

    def __init__(self, scope: UsageTracker, turns: int) -> None:
        self._scope = scope
        self._last = scope.totals()
        self._turns = [[0, 0, 0] for _ in range(turns)]
        self._ingested = 0
        self._entered = 0

    def _delta(self) -> tuple[int, int, int]:
        now = self._scope.totals()
        d = (now[0] - self._last[0], now[1] - self._last[1], now[2] - self._last[2])
        self._last = now
        return d

    def entered(self) -> None:
        """The next turn entered the memory: it costs what was spent since the last event."""
        d = self._delta()
        if self._entered < len(self._turns):
            self._turns[self._entered] = [a + b for a, b in zip(self._turns[self._entered], d)]
        self._entered += 1

    def ingested(self, n: int) -> None:
        """``n`` more turns finished the ingestion stage: they share what was spent since the last event."""
        d = self._delta()
        slots = [i for i in range(self._ingested, self._ingested + n) if i < len(self._turns)]
        for k, total in enumerate(d):
            share, rest = divmod(total, max(1, len(slots)))
            for j, i in enumerate(slots):
                self._turns[i][k] += share + (1 if j < rest else 0)
        self._ingested += n

    def to_json(self) -> dict[str, list[int]]:
        """Three lists, one entry per turn: ``calls``, ``prompt_tokens``, ``completion_tokens``."""
        return {k: [t[i] for t in self._turns] for i, k in enumerate(("calls", "prompt_tokens", "completion_tokens"))}


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
    embedder_cache: CacheLayout | None  # where the embedding cache lives (None: memory only)
    extras: dict[str, Any]
    worker_threads: int = 1  # torch threads of the worker's embedder when the config leaves them unset


def _no_backbone(method: str) -> Any:
    raise BackboneInBuildWorkerError(
        f"method {method!r} declares that building its memory uses no LLM (ingest_uses_llm is false) but its build "
        "touched the chat backbone; fix the method's MethodSpec.ingest_uses_llm, or run with build_processes=0."
    )


def build_in_worker(job: BuildJob) -> tuple[bool, dict[str, float]]:
    """Build ``job``'s snapshot in this process unless a complete one exists; returns whether it was built here
    and the embedder's :meth:`~memcore.llm.embedders.CachedEmbedder.counts` (empty when none was loaded)."""
    store = SnapshotStore(Path(job.snapshots))
    key = snapshot_key(job.fields)
    try:
        if store.verify(store.path_for(job.method, key), key) is not None:
            return False, {}
    except SnapshotError:
        pass  # damaged: build_or_load below moves it aside and rebuilds
    snap, embedder, built = snapshot_in_worker(job)
    if built and isinstance(snap.system, PrefetchesQueries) and job.conversation.qa:
        # the questions' query texts go into the shared cache from here, beside the other builds, and not from
        # the runner's process, whose torch threads would compete with the workers for the cores
        snap.system.prefetch_queries([q.question for q in job.conversation.qa])
    return built, embedding_counts(embedder)


def snapshot_in_worker(job: BuildJob) -> tuple[SnapshotResult, LazyResource, bool]:
    """In this (worker) process: ``job``'s memory, loaded from its snapshot or built and saved first; with the
    lazy embedder it used and whether it was built here."""
    spec: MethodSpec = get_method(job.method)
    # the worker's share of the cores unless the config says otherwise: the workers run side by side
    ecfg = job.embedder if job.embedder.threads else dataclasses.replace(job.embedder, threads=job.worker_threads)
    embedder = LazyResource(lambda: build_embedder(ecfg, cache=job.embedder_cache))
    backbone = LazyResource(lambda: _no_backbone(job.method))
    scope = UsageTracker()
    make = system_factory(spec, job, backbone=backbone, embedder=embedder)
    snap = SnapshotStore(Path(job.snapshots)).build_or_load(
        method=spec.name, fields=job.fields, make=make, build=lambda s: build_memory(s, job.conversation, scope)
    )
    return snap, embedder, not snap.reused


def snapshot_stats(snap: SnapshotResult, conversation: Conversation, *, built_in_worker: bool) -> dict[str, Any]:
    """A conversation's ``stats.json`` entry for its memory ``snap``: snapshot path, whether it was reused (not
    when a worker process of this run built it), turns, the build's usage, seconds and trace, the memory's stats."""
    return {
        "snapshot": str(snap.path),
        "reused": snap.reused and not built_in_worker,
        "turns": len(conversation.turns),
        "ingest_usage": snap.manifest.get("ingest_usage", {}),
        "ingest_seconds": snap.manifest.get("ingest_seconds"),
        "ingest_trace": snap.manifest.get("ingest_trace"),
        "memory": snap.manifest.get("stats", {}),
    }


def embedding_counts(embedder: LazyResource) -> dict[str, float]:
    """The counts of ``embedder`` when it was built and counts (:class:`~memcore.llm.embedders.CachedEmbedder`),
    with the seconds its model spent encoding."""
    if not embedder.built:
        return {}
    inner = embedder.get()
    counts = getattr(inner, "counts", None)
    if not callable(counts):
        return {}
    out: dict[str, float] = dict(counts())
    seconds = getattr(inner, "seconds", None)
    if callable(seconds):
        out["seconds"] = round(float(seconds()), 3)
    load_seconds = getattr(inner, "load_seconds", None)
    if callable(load_seconds):
        out["load_seconds"] = round(float(load_seconds()), 3)
    return out


def no_worker_processes(
    spec: MethodSpec, method_cfg: dict[str, Any], ablation: dict[str, Any], *, embedder_injected: bool
) -> str | None:
    """Why the method's builds cannot go to worker processes (threads would share one core under the GIL, so only
    CPU-bound builds that call no LLM do), or None when they can. An injected embedder (it could not reach a
    worker) keeps them in the threads too."""
    if spec.ingest_uses_llm(method_cfg, ablation):
        return f"method {spec.name}'s memory is built by the LLM, which a worker process cannot call"
    if not spec.build_cpu_bound:
        return f"method {spec.name}'s memory builds are not CPU-bound"
    if embedder_injected:
        return "the run's embedder is injected and cannot reach a worker process"
    return None


def threads_per_worker(cpus: int, workers: int) -> int:
    """Torch threads for each of ``workers`` build worker processes running side by side on ``cpus`` cores: the
    cores shared evenly, at least one each (pure)."""
    return max(1, cpus // max(1, workers))


class WorkerPool(ProcessPoolExecutor):
    """The build worker processes, with how many there are (``workers``) and each one's share of the cores
    (``threads``: :func:`threads_per_worker`)."""

    def __init__(self, workers: int, cpus: int) -> None:
        # spawn, not fork: the runner already has threads (and faiss/torch thread pools) at this point.
        super().__init__(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
        self.workers = workers
        self.threads = threads_per_worker(cpus, workers)


def worker_pool(n_convs: int, processes: int, cpus: int | None = None) -> WorkerPool | None:
    """Up to ``processes`` worker processes (the run's bound, :mod:`memcore.pipeline.concurrency`; 0 when its
    builds cannot use them) for ``n_convs`` builds on ``cpus`` cores (default: this machine's); None when fewer than
    two builds can overlap."""
    workers = min(processes, n_convs)
    if workers < 2:
        return None
    pool = WorkerPool(workers, cpus or os.cpu_count() or 1)
    log.info(
        "%d worker processes (%d torch threads each) build or load the memories of %d conversations (ingestion uses"
        " no LLM)",
        workers,
        pool.threads,
        n_convs,
    )
    return pool


def other_memory_backbone(cfg: Any) -> str | None:
    """``memory_backbone`` when it names another model than the run's backbone (the run then reads that model's
    memories and builds none), else None."""
    other = cfg.get("memory_backbone")
    return str(other) if other and str(other) != str(cfg.backbone.model) else None


@dataclass
class BuiltMemory:
    """A conversation's memory, ready to answer, and its ``stats.json`` entry (snapshot path, whether it was
    reused, turns, the build's LLM usage and seconds, the memory's own stats)."""

    system: MemorySystem
    reused: bool
    stats: dict[str, Any]


def run_memory_builder(
    cfg: DictConfig, spec: MethodSpec, *, layout: CacheLayout | None, pool: ProcessPoolExecutor | None
) -> MemoryBuilder:
    """The :class:`MemoryBuilder` of the run config ``cfg`` (method ``spec``, embedder cache ``layout``, worker
    processes ``pool``); it only loads when ``memory_backbone`` names another model."""
    method_cfg = OmegaConf.to_container(cfg.method, resolve=True)
    ablation = OmegaConf.to_container(cfg.ablation, resolve=True)
    ecfg = typed_section(cfg.embedder, EmbedderConfig)
    assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
    other = other_memory_backbone(cfg)
    return MemoryBuilder(
        spec,
        method_cfg,
        ablation,
        run_seed=int(cfg.seed),
        backbone_model=other or str(cfg.backbone.model),
        load_only=other is not None,
        embedder_cfg=ecfg,
        snapshots=Path(cfg.paths.snapshots),
        embedder_cache=layout,
        extras={"prompt_token_cap": int(cfg.backbone.prompt_token_cap), "seed": int(cfg.seed)},
        pool=pool,
    )


class MemoryBuilder:
    """Builds or loads the memory of each conversation of one run (one method, ablation and seed).

    ``pool`` is :func:`worker_pool`'s executor or None (build in the calling thread). Thread-safe: the
    snapshot store locks per key, so conversations may be built concurrently."""

    def __init__(
        self,
        spec: MethodSpec,
        method_cfg: dict[str, Any],
        ablation: dict[str, Any],
        *,
        run_seed: int,
        backbone_model: str,
        embedder_cfg: EmbedderConfig,
        snapshots: Path,
        embedder_cache: CacheLayout | None,
        extras: dict[str, Any],
        pool: ProcessPoolExecutor | None = None,
        load_only: bool = False,
    ) -> None:
        self.spec = spec
        self.method_cfg = method_cfg
        self.ablation = ablation
        self.run_seed = run_seed
        self.backbone_model = backbone_model
        self.embedder_cfg = embedder_cfg
        self.snapshots = snapshots
        self.embedder_cache = embedder_cache
        self.extras = extras
        self.pool = None if load_only else pool
        self.load_only = load_only
        self.store = SnapshotStore(snapshots)
        self._queued: dict[str, Future[tuple[bool, dict[str, float]]]] = {}

    def fields(self, conversation: Conversation) -> dict[str, Any]:
        """The construction fields that key ``conversation``'s snapshot."""
        return construction_fields(
            self.spec,
            self.method_cfg,
            self.ablation,
            backbone_model=self.backbone_model,
            embedder_name=str(self.embedder_cfg.name),
            conversation=conversation,
            seed=self.run_seed,
        )

    def queue(self, conversations: Sequence[Conversation]) -> None:
        """Hand every conversation's build to the worker processes now, in order (no-op without them), so that the
        workers stay busy however few conversation threads take the memories; :meth:`build` then waits on its own.
        Call :meth:`cancel_queued` when the run stops, before the pool shuts down."""
        if self.pool is None:
            return
        for conversation in conversations:
            if conversation.conv_id not in self._queued:
                self._queued[conversation.conv_id] = self.pool.submit(build_in_worker, self.job(conversation))

    def cancel_queued(self) -> None:
        """Cancel the queued builds no worker has started (a stopped run must not wait for them)."""
        for future in self._queued.values():
            future.cancel()

    def require_snapshots(self, conversations: list[Conversation], where: str) -> None:
        """A ``load_only`` builder's check before any work: every conversation's memory has a finished snapshot,
        else one ConfigError naming the missing ones and what to do."""
        missing = [
            c.conv_id for c in conversations if not self.store.exists(self.spec.name, snapshot_key(self.fields(c)))
        ]
        if missing:
            raise ConfigError(
                f"memory_backbone={self.backbone_model}: no {self.spec.name} memory built by that model (with this "
                f"method config, ablation and seed) for {', '.join(missing)} under {where}; build it first with "
                f"the backbone preset whose model is {self.backbone_model}, or drop memory_backbone"
            )

    def job(self, conversation: Conversation) -> BuildJob:
        """The picklable job that builds (or loads) ``conversation``'s memory in a worker process."""
        return BuildJob(
            method=self.spec.name,
            method_cfg=self.method_cfg,
            ablation=self.ablation,
            conversation=conversation,
            run_seed=self.run_seed,
            fields=self.fields(conversation),
            snapshots=str(self.snapshots),
            embedder=self.embedder_cfg,
            embedder_cache=self.embedder_cache,
            extras=self.extras,
            worker_threads=self.pool.threads if isinstance(self.pool, WorkerPool) else 1,
        )

    def build(
        self,
        conversation: Conversation,
        *,
        backbone: LazyResource,
        embedder: LazyResource,
        scope: UsageTracker,
        on_turn: Callable[[], None],
        on_ingested: Callable[[int], None],
    ) -> BuiltMemory:
        """Load ``conversation``'s memory, building and saving it first when no complete snapshot exists.
        ``backbone`` should record its usage in ``scope`` (the build's usage goes into the manifest);
        ``on_turn`` / ``on_ingested`` are :func:`build_memory`'s callbacks and may raise to stop the build."""
        job = self.job(conversation)
        fields = job.fields
        built_in_worker, worker_embeddings = False, {}
        if self.pool is not None:
            queued = self._queued.pop(conversation.conv_id, None)
            built_in_worker, worker_embeddings = (queued or self.pool.submit(build_in_worker, job)).result()
        make = system_factory(self.spec, job, backbone=backbone, embedder=embedder)
        snap = self.store.build_or_load(
            method=self.spec.name,
            fields=fields,
            make=make,
            build=None
            if self.load_only
            else lambda system: build_memory(system, conversation, scope, on_turn=on_turn, on_ingested=on_ingested),
        )
        stats = snapshot_stats(snap, conversation, built_in_worker=built_in_worker)
        if worker_embeddings:  # this invocation's embeddings of a build in a worker process
            stats["worker_embeddings"] = worker_embeddings
        return BuiltMemory(snap.system, snap.reused, stats)


def run_embedding_counts(embedder: LazyResource, conv_stats: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Texts this invocation embedded with the model and texts the caches served: the run's own embedder plus the
    builds in worker processes (``worker_embeddings`` of :meth:`MemoryBuilder.build`'s stats)."""
    total: dict[str, float] = {"computed": 0, "from_cache": 0, **embedding_counts(embedder)}
    for stats in conv_stats:
        for k, v in (stats.get("worker_embeddings") or {}).items():
            timed = k in ("seconds", "load_seconds")
            total[k] = round(total.get(k, 0) + float(v), 3) if timed else int(total.get(k, 0)) + int(v)
    return total

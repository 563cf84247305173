"""Runs one configuration through the pipeline (stages in :mod:`memcore.pipeline`): load the slice → build or load
each conversation's memory → predict (retrieve + answer) → score → items.jsonl → report.

The runner owns what spans the stages: the run's evaluation protocol and metrics, resolved once and handed to
scoring and the report; scheduling (each pending conversation's job, :mod:`memcore.pipeline.conversation`, from
a conversation thread, on the executor the plan chose, into the sink that scores and writes its items,
:mod:`memcore.pipeline.recorder`), stop handling (Ctrl-C, SIGTERM, the first fatal error) and resume: items in
items.jsonl are skipped, a conversation whose items are all done is not rebuilt, and a rerun whose
result-affecting config differs is refused (config-hash guard).
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import ConfigError, EmbedderConfig, validate
from memcore.eval.judge import get_preset, judge_run_info
from memcore.eval.protocols import EvalProtocol, get_protocol
from memcore.eval.upstream import no_upstream_line
from memcore.interfaces import MethodSpec
from memcore.itemlog import ItemWriter, read_items, require_unique_ids
from memcore.llm.cache_shards import CacheLayout
from memcore.llm.factory import precheck_embedder
from memcore.llm.usage import UsageTracker
from memcore.methods import get_method, run_uses_llm
from memcore.metrics import Metric
from memcore.metrics.scorers.answer import load_nltk
from memcore.pipeline.build import (
    MemoryBuilder,
    other_memory_backbone,
    run_embedding_counts,
    run_memory_builder,
    worker_pool,
)
from memcore.pipeline.concurrency import Concurrency, plan_concurrency
from memcore.pipeline.conversation import PredictSettings, RunStopped
from memcore.pipeline.executors import conversation_executor
from memcore.pipeline.load import LoadedSlice, load_slice
from memcore.pipeline.preflight import check_dirs, check_resources
from memcore.pipeline.progress import StageBars
from memcore.pipeline.recorder import ItemRecorder
from memcore.pipeline.report import RunResult, invocation_entry, record_unfinished, write_report
from memcore.pipeline.resources import cache_layout, open_resources
from memcore.pipeline.rundir import RunConflictError, guard_run_dir, result_fields, write_run_config
from memcore.pipeline.runlock import RunDirLock
from memcore.pipeline.score import run_extra_metrics
from memcore.stopflag import StopFlag, StopRequested, wait_interruptibly
from memcore.timing import StageClock
from memcore.types import Conversation
from memcore.validation import validate_run

log = logging.getLogger(__name__)

__all__ = ["RunConflictError", "RunResult", "RunStopped", "Runner", "result_fields", "run_config"]


class Runner:
    """Runs one configuration into ``run_dir``. ``backbone_override`` / ``embedder_override`` let tests and
    benchmarks inject a scripted backbone or a hashing embedder; ``stop``, a caller-owned stop flag (a notebook's
    cancel button, a test), stops the run the way Ctrl-C does when set."""

    def __init__(
        self,
        cfg: DictConfig,
        run_dir: Path,
        *,
        backbone_override: Any = None,
        embedder_override: Any = None,
        stop: StopFlag | None = None,
        startup_s: float | None = None,
    ) -> None:
        """``startup_s``: the seconds the process took before this run (imports), when the caller knows them."""
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.backbone_override = backbone_override
        self.embedder_override = embedder_override
        self.usage = UsageTracker()
        self.spec: MethodSpec = get_method(str(cfg.method.name))
        self.protocol: EvalProtocol = get_protocol(str(cfg.protocol.name))
        self.extra_metrics: tuple[Metric, ...] = run_extra_metrics(cfg)
        self.timings: dict[str, float] = {}
        self.clock = StageClock()
        if startup_s is not None:
            self.clock.add("start-up", startup_s)
        self.conv_stats: dict[str, Any] = {}
        self._stop = stop or StopFlag()  # set on the first fatal error, Ctrl-C or SIGTERM: workers stop taking work
        self._cache_layout: CacheLayout | None = None
        self._writer: ItemWriter | None = None
        self._concurrency: Concurrency | None = None

    @property
    def items_written(self) -> int:
        """Items this invocation added to items.jsonl."""
        return self._writer.written if self._writer is not None else 0

    @property
    def concurrency(self) -> Concurrency:
        """What the run does at once (:mod:`memcore.pipeline.concurrency`), planned by the checks before any work."""
        if self._concurrency is None:
            raise RuntimeError("the run's concurrency is planned when Runner.run checks the config")
        return self._concurrency

    def _layout(self) -> CacheLayout:
        """The run's cache layout (``cache_mode``), resolved and logged once."""
        if self._cache_layout is None:
            self._cache_layout = cache_layout(self.cfg)
        return self._cache_layout

    # ---------------------------------------------------------------- run
    def run(self) -> RunResult:
        """Check every knob and load the slice (an empty selection stops here), guard the run dir, then build,
        predict and score each pending conversation and item; finally report over everything in items.jsonl."""
        t_start = time.perf_counter()
        with self.clock.stage("load"):
            data = self._check()
        # one writer per run dir, before anything in it is read or written
        with RunDirLock(self.run_dir, wait=str(self.cfg.get("on_locked_run")) == "wait"):
            return self._run_locked(data, t_start)

    def _run_locked(self, data: LoadedSlice, t_start: float) -> RunResult:
        guard_run_dir(
            self.run_dir,
            result_fields(self.cfg, data.sha256),
            overwrite=bool(self.cfg.overwrite),
            resume=bool(self.cfg.resume),
        )
        write_run_config(self.run_dir, self.cfg)
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        try:
            built = self._process(data)
        except BaseException as exc:  # keep what this invocation did for the rerun that finishes the run
            self._record_unfinished(data, started, t_start, exc)
            raise
        return write_report(
            self.run_dir,
            self.cfg,
            method=self.spec.name,
            data=data,
            conv_stats=self.conv_stats,
            usage=self.usage.to_json(),
            timings=self.timings,
            t_start=t_start,
            built=built,
            started=started,
            items_written=self.items_written,
            protocol=self.protocol,
            extra_metrics=self.extra_metrics,
            clock=self.clock,
        )

    def _record_unfinished(self, data: LoadedSlice, started: str, t_start: float, exc: BaseException) -> None:
        """Add this stopped or failed invocation to ``stats.json`` (:func:`memcore.pipeline.report.record_unfinished`)."""
        status = "interrupted" if isinstance(exc, KeyboardInterrupt | StopRequested | RunStopped) else "failed"
        entry = invocation_entry(
            started=started,
            status=f"{status}: {type(exc).__name__}",
            usage=self.usage.to_json(),
            conv_stats=self.conv_stats,
            items_written=self.items_written,
            wall_s=time.perf_counter() - t_start,
        )
        try:
            record_unfinished(self.run_dir, data, entry=entry, conv_stats=self.conv_stats, method=self.spec.name)
        except (OSError, ValueError) as err:  # the original error matters more; the items are kept either way
            log.warning("could not record this invocation in stats.json: %s", err)

    def _check(self) -> LoadedSlice:
        """Fail before any work (no run-dir file, cache or snapshot written): unknown ablation, any bad knob, bad
        judge setting or key, a slice that selects no QA item. Returns the slice."""
        name = str(self.cfg.ablation.name)
        if name not in self.spec.ablations:
            raise ConfigError(
                f"method {self.spec.name!r} does not support ablation {name!r} (it supports: {', '.join(sorted(self.spec.ablations))}); "
                "ablations are switches of memcore."
            )
        validate_run(self.cfg)

        ecfg = OmegaConf.to_object(self.cfg.embedder)
        assert isinstance(ecfg, EmbedderConfig)
        precheck_embedder(ecfg)  # a hub embedder that cannot load stops here, before any work

        if self.cfg.eval.get("judge_preset"):
            get_preset(self.cfg.eval.judge_preset)  # a misspelt preset stops the run even when it does not judge
        if self.cfg.eval.judge:
            judge_run_info(self.cfg, check_key=True)
        check_resources(
            self.cfg,
            self.spec,
            backbone_injected=self.backbone_override is not None,
            embedder_injected=self.embedder_override is not None,
        )
        data = load_slice(self.cfg.dataset, audited=bool(self.cfg.eval.audited), audit_path=self.cfg.eval.audit_path)
        self._concurrency = plan_concurrency(
            self.cfg,
            self.spec,
            data,
            calls_llm=run_uses_llm(self.cfg),
            cpus=os.cpu_count() or 1,
            backbone_injected=self.backbone_override is not None,
            embedder_injected=self.embedder_override is not None,
        )
        self._concurrency.log()
        self._layout()  # cache_mode=shared on a network file system fails here, before any work
        check_dirs(self.cfg)  # the last check: it creates the snapshot store and the cache dir
        if str(self.cfg.eval.get("answer_prompt")) == "upstream" and not self.spec.upstream_answer:
            log.info(no_upstream_line(self.spec.name))
        return data

    def _process(self, data: LoadedSlice) -> dict[str, Any]:
        """Build, predict and score every pending item, conversations in parallel threads; returns which lazy
        resources were started."""
        plan = self.concurrency
        items_path = self.run_dir / "items.jsonl"
        logged = read_items(items_path, repair=True)
        require_unique_ids(logged, self.run_dir)
        done = {rec["item_id"] for rec in logged}
        pending_convs = [c for c in data.conversations if any(q.item_id not in done for q in c.qa)]
        n_pending = sum(1 for c in data.conversations for q in c.qa if q.item_id not in done)
        log.info(
            "%s: %d conversations, %d QA items (%d already done)",
            self.run_dir,
            len(data.conversations),
            data.n_items,
            len(done),
        )

        if other_memory_backbone(self.cfg):  # this run never builds under another model's name
            self._builder(None).require_snapshots(pending_convs, str(self.cfg.paths.snapshots))
        with contextlib.ExitStack() as resources:
            res = open_resources(
                self.cfg,
                self.run_dir,
                self.usage,
                resources,
                backbone_override=self.backbone_override,
                embedder_override=self.embedder_override,
                stop_requested=self._stop.is_set,
                layout=self._layout(),
                requests=plan.requests,
            )
            n_turns = sum(len(c.turns) for c in pending_convs)
            bars = StageBars(self.cfg.progress, n_turns, n_pending, staged=self.spec.staged_ingest)
            writer = resources.enter_context(ItemWriter(items_path))
            self._writer = writer
            resources.enter_context(self._stop.watch_signals())  # workers see Ctrl-C/SIGTERM on delivery
            pool = worker_pool(len(pending_convs), plan.build_processes)
            if pool is not None:
                resources.enter_context(pool)
            builder = self._builder(pool)
            executor = conversation_executor(
                builder,
                res,
                PredictSettings.of_run(self.cfg, self.spec.name),
                self._stop,
                in_workers=plan.retrieval_in_workers,
                qa_threads=1 if self.spec.sequential_qa else plan.threads,
            )
            executor.queue(pending_convs, lambda c: [q for q in c.qa if q.item_id not in done])
            resources.callback(executor.cancel_queued)  # before the pool's shutdown (a stack is LIFO)
            recorder = ItemRecorder(
                writer,
                data,
                self.protocol,
                self.extra_metrics,
                res.judge if self.cfg.eval.judge else None,
                clock=self.clock,
                bars=bars,
                conv_stats=self.conv_stats,
            )
            errors: list[BaseException] = []

            def process(conv: Conversation) -> None:
                try:
                    executor.run(conv, recorder)
                except BaseException as exc:  # collected and re-raised in the main thread after the pool drains
                    errors.append(exc)
                    self._stop.set()
                    raise

            if self.cfg.eval.answer and pending_convs:
                load_nltk()  # before the threads: a first import of nltk in two threads at once can fail
            t0 = time.perf_counter()
            workers = max(1, min(plan.threads, len(pending_convs)))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="conv") as threads:
                futures = [threads.submit(process, c) for c in pending_convs]
                try:
                    wait_interruptibly(futures)
                except KeyboardInterrupt:
                    # Threads cannot be killed: workers stop at their next turn or item, after the LLM call in
                    # flight; every finished item is already in items.jsonl, so a rerun resumes from there.
                    self._stop.set()  # before logging: a log call releases the GIL to the workers
                    log.warning("interrupted: stopping after the LLM calls in flight; rerun the command to resume")
                    for other in futures:
                        other.cancel()
                    raise
            bars.close()
            self.timings["conversations_s"] = time.perf_counter() - t0
            if errors:  # the cause, not a worker's "stopped" that it set off
                raise next((e for e in errors if not isinstance(e, StopRequested | RunStopped)), errors[0])
            # a llama.cpp backbone whose every call the cache served was built but never started its server
            started = res.backbone.built and getattr(res.backbone.get(), "started", True)
            return {
                "backbone_started": bool(started),
                "embedder_loaded": res.embedder.built,
                "embeddings": run_embedding_counts(res.embedder, self.conv_stats.values()),
            }

    def _builder(self, pool: ProcessPoolExecutor | None) -> MemoryBuilder:
        return run_memory_builder(self.cfg, self.spec, layout=self._layout(), pool=pool)


def run_config(cfg: DictConfig, run_dir: Path, **overrides: Any) -> RunResult:
    """Validate ``cfg`` and run it into ``run_dir``."""
    return Runner(validate(cfg), run_dir, **overrides).run()

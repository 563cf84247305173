"""A conversation's LLM-free work in a build worker process: build or load its memory, prefetch its questions'
query texts, and retrieve the evidence of each pending QA item.

A run that calls no LLM spends its time in Python that holds the GIL (retrieval, packing), so threads of one
process take turns on one core. When its builds already go to worker processes (:mod:`memcore.pipeline.build`),
each worker does the rest of its conversation's work too and hands back the predictions; the runner's process
only scores and writes them, in item order, as it would its own. The retrieval is the same
:func:`memcore.pipeline.predict.predict` call on the same memory, so no result depends on where it ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from memcore.interfaces import LazyResource, PrefetchesQueries
from memcore.pipeline.build import BuildJob, MemoryBuilder, embedding_counts, snapshot_in_worker, snapshot_stats
from memcore.pipeline.predict import Prediction, predict
from memcore.types import Conversation, QAItem


@dataclass(frozen=True)
class RetrievalJob:
    """One conversation's work for a worker (picklable): its build job and the QA items to retrieve for, with the
    run's ``eval.budget`` and ``eval.context_tokens``."""

    build: BuildJob
    items: tuple[QAItem, ...]
    budget: int | None
    context_tokens: int | None


@dataclass(frozen=True)
class RetrievedConversation:
    """What a worker hands back: ``stats`` as :meth:`memcore.pipeline.build.MemoryBuilder.build` gives them (with
    the worker's embedding counts), ``predictions`` in the order of the job's items, the seconds the worker spent
    building or loading and prefetching, and the memory's stats after the QA items (None when it has none)."""

    built: bool
    stats: dict[str, Any]
    predictions: tuple[Prediction, ...]
    build_s: float
    prefetch_s: float
    memory_after_qa: dict[str, Any] | None


def _no_answerer() -> Any:
    raise RuntimeError("a retrieval job in a worker process has no answerer: its run calls no LLM")


def retrieve_in_worker(job: RetrievalJob) -> RetrievedConversation:
    """In this (worker) process: build ``job``'s memory unless a complete snapshot exists, load it, prefetch the
    items' query texts and retrieve for each item, as the runner's own conversation thread would."""
    t0 = time.perf_counter()
    snap, embedder, built = snapshot_in_worker(job.build)
    build_s = time.perf_counter() - t0
    system = snap.system
    t1 = time.perf_counter()
    if isinstance(system, PrefetchesQueries) and job.items:
        system.prefetch_queries([q.question for q in job.items])
    prefetch_s = time.perf_counter() - t1
    answerer = LazyResource(_no_answerer)
    predictions = tuple(
        predict(
            system,
            item,
            answerer,
            budget=job.budget,
            context_tokens=job.context_tokens,
            answer=False,
            method=job.build.method,
        )
        for item in job.items
    )
    stats = snapshot_stats(snap, job.build.conversation, built_in_worker=built)
    counts = embedding_counts(embedder)
    if counts:
        stats["worker_embeddings"] = counts
    stats_fn = getattr(system, "stats", None)
    return RetrievedConversation(
        built=built,
        stats=stats,
        predictions=predictions,
        build_s=round(build_s, 6),
        prefetch_s=round(prefetch_s, 6),
        memory_after_qa=stats_fn() if callable(stats_fn) else None,
    )


class WorkerRetrievals:
    """Every conversation's :class:`RetrievalJob`, handed to ``builder``'s worker processes at once (longest
    first, so the workers stay busy however the runner takes the results); :meth:`result` waits for one
    conversation's."""

    def __init__(self, builder: MemoryBuilder, *, budget: int | None, context_tokens: int | None) -> None:
        if builder.pool is None:
            raise ValueError("WorkerRetrievals needs a builder with worker processes")
        self.builder = builder
        self.budget = budget
        self.context_tokens = context_tokens
        self._queued: dict[str, tuple[tuple[QAItem, ...], Future[RetrievedConversation]]] = {}

    def queue(
        self, conversations: Sequence[Conversation], items_of: Callable[[Conversation], Sequence[QAItem]]
    ) -> None:
        """Submit each conversation's job for the QA items ``items_of(conversation)`` returns (its pending ones).
        Call :meth:`cancel_queued` when the run stops, before the pool shuts down."""
        pool = self.builder.pool
        assert pool is not None
        # longest first: the last job to finish then is a short one, and the other workers idle least meanwhile
        for conv in sorted(conversations, key=lambda c: len(c.turns), reverse=True):
            if conv.conv_id in self._queued:
                continue
            items = tuple(items_of(conv))
            job = RetrievalJob(self.builder.job(conv), items, self.budget, self.context_tokens)
            self._queued[conv.conv_id] = items, pool.submit(retrieve_in_worker, job)

    def result(self, conversation: Conversation) -> tuple[tuple[QAItem, ...], RetrievedConversation]:
        """The QA items queued for ``conversation`` and its worker's predictions for them, once the worker is done
        (its error, raised here, if it failed)."""
        items, future = self._queued.pop(conversation.conv_id)
        return items, future.result()

    def cancel_queued(self) -> None:
        """Cancel the jobs no worker has started (a stopped run must not wait for them)."""
        for _, future in self._queued.values():
            future.cancel()

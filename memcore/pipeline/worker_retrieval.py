"""The process executor: a conversation's LLM-free work (:func:`memcore.pipeline.conversation.run_conversation`)
in a build worker process.

A run that calls no LLM spends its time in Python that holds the GIL (retrieval, packing), so threads of one
process take turns on one core. When its builds already go to worker processes (:mod:`memcore.pipeline.build`),
each worker runs its conversation's whole job and hands back what the job gave its sink; the runner's process
hands the same results, in the same order, to its own sink, which scores and writes them as it would for a
conversation run in its threads. The job is the same function on the same memory, so no result depends on where
it ran.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from memcore.interfaces import LazyResource
from memcore.llm.usage import UsageTracker
from memcore.pipeline.build import (
    BuildJob,
    BuiltMemory,
    MemoryBuilder,
    embedding_counts,
    snapshot_in_worker,
    snapshot_stats,
)
from memcore.pipeline.conversation import ConversationSink, ConversationWork, PredictSettings, run_conversation
from memcore.pipeline.predict import Prediction
from memcore.stopflag import StopFlag
from memcore.types import Conversation, QAItem


@dataclass(frozen=True)
class RetrievalJob:
    """One conversation's work for a worker (picklable): its build job and the work on its memory."""

    build: BuildJob
    work: ConversationWork


@dataclass(frozen=True)
class RetrievedConversation:
    """What a worker hands back: ``stats`` as :meth:`memcore.pipeline.build.MemoryBuilder.build` gives them (with
    the worker's embedding counts), ``predictions`` in the order of the job's items, the seconds the worker spent
    building or loading and prefetching (None when it did not prefetch), and the memory's stats after the QA items
    (None when it has none)."""

    built: bool
    stats: dict[str, Any]
    predictions: tuple[Prediction, ...]
    build_s: float
    prefetch_s: float | None
    memory_after_qa: dict[str, Any] | None

    def replay(
        self, conversation: Conversation, items: Sequence[QAItem], sink: ConversationSink, stop: StopFlag
    ) -> None:
        """Hand ``sink`` what the worker's job handed its own, in the same order (a memory built in the worker
        enters all at once); once ``stop`` is set no further prediction is handed on."""
        if self.built:
            sink.turns_built(len(conversation.turns))
        sink.memory_ready(conversation, self.stats, reused=not self.built, seconds=self.build_s)
        if self.prefetch_s is not None:
            sink.prefetched(self.prefetch_s)
        for item, prediction in zip(items, self.predictions, strict=True):
            if stop.is_set():  # a fatal error elsewhere, or Ctrl-C: the rerun retrieves the rest
                return
            sink.predicted(item, prediction, UsageTracker())
        sink.finished(conversation, self.memory_after_qa)


@dataclass
class _Collected:
    """A worker's sink: keeps what the job hands it for :class:`RetrievedConversation`."""

    stats: dict[str, Any] = field(default_factory=dict)
    reused: bool = False
    build_s: float = 0.0
    prefetch_s: float | None = None
    predictions: list[Prediction] = field(default_factory=list)
    memory_after_qa: dict[str, Any] | None = None

    def turns_built(self, n: int) -> None:
        pass

    def turns_ingested(self, n: int) -> None:
        pass

    def memory_ready(self, conversation: Conversation, stats: dict[str, Any], *, reused: bool, seconds: float) -> None:
        self.stats, self.reused, self.build_s = stats, reused, seconds

    def prefetched(self, seconds: float) -> None:
        self.prefetch_s = seconds

    def predicted(self, item: QAItem, prediction: Prediction, spent: UsageTracker) -> None:
        self.predictions.append(prediction)

    def finished(self, conversation: Conversation, memory_after_qa: dict[str, Any] | None) -> None:
        self.memory_after_qa = memory_after_qa


def _no_answerer() -> Any:
    raise RuntimeError("a retrieval job in a worker process has no answerer: its run calls no LLM")


def retrieve_in_worker(job: RetrievalJob) -> RetrievedConversation:
    """In this (worker) process: run ``job``'s conversation work on its memory, built here unless a complete
    snapshot exists, one item at a time and without an answerer."""
    embedders: list[LazyResource] = []

    def open_memory(_: ConversationSink) -> BuiltMemory:
        snap, embedder, built = snapshot_in_worker(job.build)
        embedders.append(embedder)
        stats = snapshot_stats(snap, job.work.conversation, built_in_worker=built)
        return BuiltMemory(snap.system, snap.reused, stats)

    got = _Collected()
    run_conversation(job.work, open_memory, LazyResource(_no_answerer), got, stop=StopFlag())
    counts = embedding_counts(embedders[0])
    if counts:
        got.stats["worker_embeddings"] = counts
    return RetrievedConversation(
        built=not got.reused,
        stats=got.stats,
        predictions=tuple(got.predictions),
        build_s=round(got.build_s, 6),
        prefetch_s=None if got.prefetch_s is None else round(got.prefetch_s, 6),
        memory_after_qa=got.memory_after_qa,
    )


class WorkerRetrievals:
    """The process executor: every conversation's :class:`RetrievalJob`, handed to ``builder``'s worker processes
    at once by :meth:`queue` (longest first, so the workers stay busy however the runner takes the results);
    :meth:`run` waits for one conversation's and replays it into the runner's sink."""

    def __init__(self, builder: MemoryBuilder, settings: PredictSettings, stop: StopFlag) -> None:
        if builder.pool is None:
            raise ValueError("WorkerRetrievals needs a builder with worker processes")
        if settings.answer:
            raise ValueError("WorkerRetrievals runs only retrieval: a worker process has no answerer")
        self.builder = builder
        self.settings = settings
        self.stop = stop
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
            job = RetrievalJob(self.builder.job(conv), ConversationWork(conv, items, self.settings))
            self._queued[conv.conv_id] = items, pool.submit(retrieve_in_worker, job)

    def result(self, conversation: Conversation) -> tuple[tuple[QAItem, ...], RetrievedConversation]:
        """The QA items queued for ``conversation`` and its worker's predictions for them, once the worker is done
        (its error, raised here, if it failed)."""
        items, future = self._queued.pop(conversation.conv_id)
        return items, future.result()

    def run(self, conversation: Conversation, sink: ConversationSink) -> None:
        """Wait for ``conversation``'s job and hand its results to ``sink`` (nothing once the run is stopping: the
        worker's results would not be written)."""
        if self.stop.is_set():
            return
        items, got = self.result(conversation)
        got.replay(conversation, items, sink, self.stop)

    def cancel_queued(self) -> None:
        """Cancel the jobs no worker has started (a stopped run must not wait for them)."""
        for _, future in self._queued.values():
            future.cancel()

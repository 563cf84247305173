"""One conversation's work, whichever executor runs it: build or load its memory (stage 2), prefetch its pending
questions' query texts, predict each pending QA item (stage 3) and hand every result to a
:class:`ConversationSink`.

:func:`run_conversation` is the only place this sequence is written. The executor decides where it runs: in a
thread of the runner's process with the run's resources (:mod:`memcore.pipeline.executors`), or, for a run that
calls no LLM, in a build worker process (:mod:`memcore.pipeline.worker_retrieval`), whose sink collects what the
runner's sink then receives in the same order. The runner's sink scores and writes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

from omegaconf import DictConfig

from memcore.interfaces import LazyResource, MemorySystem, PrefetchesQueries, SelfAnsweringMemory
from memcore.llm.usage import UsageTracker, usage_scope
from memcore.pipeline.build import BuiltMemory
from memcore.pipeline.predict import Prediction, predict
from memcore.stopflag import StopFlag, StopRequested
from memcore.types import Conversation, QAItem


class RunStopped(RuntimeError):
    """Raised in a worker between turns or items once the run is stopping (Ctrl-C or a fatal error elsewhere)."""


@dataclass(frozen=True)
class PredictSettings:
    """The run's knobs for :func:`memcore.pipeline.predict.predict` (picklable): ``eval.note_cap``,
    ``eval.token_cap``, ``eval.answer`` and the method's name."""

    note_cap: int | None
    token_cap: int | None
    answer: bool
    method: str

    @classmethod
    def of_run(cls, cfg: DictConfig, method: str) -> PredictSettings:
        """The settings of the run config ``cfg`` for ``method``."""
        return cls(
            note_cap=cfg.eval.note_cap,
            token_cap=cfg.eval.get("token_cap"),
            answer=bool(cfg.eval.answer),
            method=method,
        )


@dataclass(frozen=True)
class ConversationWork:
    """A conversation and the QA items still to predict for it (its pending ones, in order), with the run's
    predict settings (picklable)."""

    conversation: Conversation
    items: tuple[QAItem, ...]
    settings: PredictSettings


class ConversationSink(Protocol):
    """Where :func:`run_conversation` hands each result, in this order: turns as they enter a memory built here,
    the memory once ready, the prefetch, each item's prediction, the memory's stats after the items."""

    def turns_built(self, n: int) -> None:
        """``n`` more turns entered the memory being built."""

    def turns_ingested(self, n: int) -> None:
        """``n`` more turns passed a staged method's ingestion stage."""

    def memory_ready(self, conversation: Conversation, stats: dict[str, Any], *, reused: bool, seconds: float) -> None:
        """``conversation``'s memory is ready after ``seconds``: its ``stats.json`` entry, and whether it was loaded
        from a snapshot (its turns did not go through :meth:`turns_built`)."""

    def prefetched(self, seconds: float) -> None:
        """The pending questions' query texts were embedded in ``seconds``."""

    def predicted(self, item: QAItem, prediction: Prediction, spent: UsageTracker) -> None:
        """``item``'s prediction, with the LLM calls it made so far (called inside the item's usage scope, so a
        judge's calls count in ``spent`` too)."""

    def finished(self, conversation: Conversation, memory_after_qa: dict[str, Any] | None) -> None:
        """Every item was predicted; the memory's stats after them (None when it has none)."""


#: Opens a conversation's memory: builds it (calling the sink's turn callbacks, which may raise to stop the build)
#: or loads its snapshot.
MemoryOpener = Callable[[ConversationSink], BuiltMemory]


def run_conversation(
    work: ConversationWork,
    open_memory: MemoryOpener,
    answerer: LazyResource,
    sink: ConversationSink,
    *,
    stop: StopFlag,
    qa_threads: int = 1,
) -> None:
    """Open ``work``'s memory, prefetch its items' query texts, predict each item and hand everything to ``sink``.
    Items run in up to ``qa_threads`` threads (one at a time for a memory that answers itself). Once ``stop`` is
    set no further item starts; an item whose backbone call is refused because the run is stopping is left to the
    rerun; any other error sets ``stop`` and is raised."""
    t0 = time.perf_counter()
    memory = open_memory(sink)
    sink.memory_ready(work.conversation, memory.stats, reused=memory.reused, seconds=time.perf_counter() - t0)
    system = memory.system
    if isinstance(system, PrefetchesQueries) and work.items and not stop.is_set():
        t1 = time.perf_counter()
        try:
            system.prefetch_queries([q.question for q in work.items])
        finally:
            sink.prefetched(time.perf_counter() - t1)
    settings = work.settings

    def one(item: QAItem) -> None:
        if stop.is_set():  # a fatal error elsewhere (e.g. the backbone is down): the rerun resumes here
            return
        spent = UsageTracker()  # this item's calls, kept in its record: a resumed run's cost stays whole
        try:
            with usage_scope(spent):
                prediction = predict(
                    system,
                    item,
                    answerer,
                    note_cap=settings.note_cap,
                    token_cap=settings.token_cap,
                    answer=settings.answer,
                    method=settings.method,
                )
                sink.predicted(item, prediction, spent)
        except StopRequested:
            return  # the run is stopping (Ctrl-C or a failure elsewhere): the rerun answers this item
        except BaseException:
            stop.set()
            raise

    if qa_threads <= 1 or isinstance(system, SelfAnsweringMemory):
        for item in work.items:
            one(item)
    else:
        _in_threads(one, work.items, qa_threads, stop, name=f"qa-{work.conversation.conv_id}")
    if isinstance(system, SelfAnsweringMemory):
        system.after_qa()
    sink.finished(work.conversation, memory_stats(system))


def _in_threads(
    fn: Callable[[QAItem], None], items: Sequence[QAItem], threads: int, stop: StopFlag, *, name: str
) -> None:
    """``fn`` on every item in up to ``threads`` threads; the first error sets ``stop``, cancels the items not
    started and is raised."""
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name) as pool:
        futures = [pool.submit(fn, q) for q in items]
        try:
            for fut in futures:
                fut.result()
        except BaseException:
            stop.set()
            for fut in futures:
                fut.cancel()
            raise


def memory_stats(system: MemorySystem) -> dict[str, Any] | None:
    """``system.stats()``, or None for a system without it."""
    stats = getattr(system, "stats", None)
    return stats() if callable(stats) else None

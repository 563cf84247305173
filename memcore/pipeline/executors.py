"""Where a conversation's work (:func:`memcore.pipeline.conversation.run_conversation`) runs: the runner asks its
executor to run each pending conversation into the runner's sink, from one of its conversation threads.

- :class:`ThreadExecutor`: in the calling thread, with the run's lazy resources (the backbone, the embedder, the
  answerer); a build that calls no LLM may still go to a worker process (:class:`MemoryBuilder` decides), and the
  items run in QA threads.
- :class:`memcore.pipeline.worker_retrieval.WorkerRetrievals`: the whole job in a build worker process, for a run
  that calls no LLM and has them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from memcore.interfaces import LazyResource
from memcore.llm.scoped import ScopedBackbone
from memcore.llm.usage import UsageTracker
from memcore.pipeline.build import BuiltMemory, MemoryBuilder
from memcore.pipeline.conversation import (
    ConversationSink,
    ConversationWork,
    PredictSettings,
    RunStopped,
    run_conversation,
)
from memcore.pipeline.resources import RunResources
from memcore.pipeline.worker_retrieval import WorkerRetrievals
from memcore.stopflag import StopFlag
from memcore.types import Conversation, QAItem

#: A conversation's QA items still to predict (those not in items.jsonl), in order.
ItemsOf = Callable[[Conversation], Sequence[QAItem]]


class ConversationExecutor(Protocol):
    """Runs each conversation's work somewhere and hands its results to a sink."""

    def queue(self, conversations: Sequence[Conversation], items_of: ItemsOf) -> None:
        """Hand work that may start before :meth:`run` (a worker process's) to the workers now."""

    def run(self, conversation: Conversation, sink: ConversationSink) -> None:
        """Run (or wait for) ``conversation``'s work and hand its results to ``sink``."""

    def cancel_queued(self) -> None:
        """Cancel the queued work nothing has started (the run is stopping)."""


class ThreadExecutor:
    """Runs each conversation's work in the calling thread with the run's resources ``res``, its items in up to
    ``qa_threads`` threads; a build or item stops at its next turn or item once ``stop`` is set."""

    def __init__(
        self,
        builder: MemoryBuilder,
        res: RunResources,
        settings: PredictSettings,
        stop: StopFlag,
        *,
        qa_threads: int,
    ) -> None:
        self.builder = builder
        self.res = res
        self.settings = settings
        self.stop = stop
        self.qa_threads = qa_threads
        self._items_of: ItemsOf | None = None

    def queue(self, conversations: Sequence[Conversation], items_of: ItemsOf) -> None:
        """Queue the builds that go to worker processes (none without them); remember which items are pending."""
        self._items_of = items_of
        self.builder.queue(conversations)

    def run(self, conversation: Conversation, sink: ConversationSink) -> None:
        if self._items_of is None:
            raise RuntimeError("ThreadExecutor.queue tells it the pending items before it runs a conversation")
        work = ConversationWork(conversation, tuple(self._items_of(conversation)), self.settings)
        run_conversation(
            work, self._opener(conversation), self.res.answerer, sink, stop=self.stop, qa_threads=self.qa_threads
        )

    def _opener(self, conv: Conversation) -> Callable[[ConversationSink], BuiltMemory]:
        """Builds ``conv``'s memory here (the build's LLM calls in their own usage scope), stopping between turns
        once the run is stopping, or loads it."""

        def stop_check() -> None:
            if self.stop.is_set():
                raise RunStopped(f"{conv.conv_id}: memory build stopped (run interrupted or failed elsewhere)")

        def open_memory(sink: ConversationSink) -> BuiltMemory:
            scope = UsageTracker()

            def on_turn() -> None:
                sink.turns_built(1)
                stop_check()

            def on_ingested(n: int) -> None:
                sink.turns_ingested(n)
                stop_check()

            return self.builder.build(
                conv,
                backbone=LazyResource(lambda: ScopedBackbone(self.res.backbone.get(), scope)),
                embedder=self.res.embedder,
                scope=scope,
                on_turn=on_turn,
                on_ingested=on_ingested,
            )

        return open_memory

    def cancel_queued(self) -> None:
        self.builder.cancel_queued()


def conversation_executor(
    builder: MemoryBuilder,
    res: RunResources,
    settings: PredictSettings,
    stop: StopFlag,
    *,
    in_workers: bool,
    qa_threads: int,
) -> ConversationExecutor:
    """The run's executor: its worker processes when ``in_workers`` (the run calls no LLM) and the builder has
    them, else its threads."""
    if in_workers and builder.pool is not None:
        return WorkerRetrievals(builder, settings, stop)
    return ThreadExecutor(builder, res, settings, stop, qa_threads=qa_threads)

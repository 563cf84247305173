"""One conversation's work (memcore.pipeline.conversation.run_conversation) is the same job in both executors: a
sink receives the same memory, prefetch, predictions and stats whether the job ran in the calling thread or in a
worker process and was replayed; items run in order or in QA threads with the same results; a stop leaves the
items not started, and an item's error stops the run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore.interfaces import LazyResource
from memcore.llm.usage import UsageTracker
from memcore.pipeline.build import BuildJob, BuiltMemory, snapshot_in_worker, snapshot_stats
from memcore.pipeline.conversation import ConversationSink, ConversationWork, PredictSettings, run_conversation
from memcore.pipeline.predict import Prediction
from memcore.pipeline.worker_retrieval import RetrievalJob, retrieve_in_worker
from memcore.stopflag import StopFlag
from memcore.types import Conversation, QAItem
from tests.support import story_conversation
from tests.test_worker_retrieval import cheap_build_job

SETTINGS = PredictSettings(note_cap=5, token_cap=60, answer=False, method="memcore-cheap")


class Recording:
    """A sink that keeps every call, turns summed."""

    def __init__(self) -> None:
        self.turns = 0
        self.events: list[tuple[Any, ...]] = []

    def turns_built(self, n: int) -> None:
        self.turns += n

    def turns_ingested(self, n: int) -> None:
        pass

    def memory_ready(self, conversation: Conversation, stats: dict[str, Any], *, reused: bool, seconds: float) -> None:
        self.events.append(("memory", conversation.conv_id, stats["snapshot"], reused))

    def prefetched(self, seconds: float) -> None:
        self.events.append(("prefetch",))

    def predicted(self, item: QAItem, prediction: Prediction, spent: UsageTracker) -> None:
        self.events.append(("item", item.item_id, prediction.evidence, prediction.answer))

    def finished(self, conversation: Conversation, memory_after_qa: dict[str, Any] | None) -> None:
        self.events.append(("finished", memory_after_qa))


def _opener(job: BuildJob) -> Any:
    def open_memory(_: ConversationSink) -> BuiltMemory:
        snap, _, built = snapshot_in_worker(job)
        return BuiltMemory(snap.system, snap.reused, snapshot_stats(snap, job.conversation, built_in_worker=built))

    return open_memory


def test_the_sink_gets_the_same_results_from_the_thread_and_from_the_worker_replayed(tmp_path: Path) -> None:
    conv = story_conversation(n_sessions=3)
    job = cheap_build_job(tmp_path, conv)
    work = ConversationWork(conv, tuple(conv.qa), SETTINGS)
    in_worker = Recording()
    got = retrieve_in_worker(RetrievalJob(job, work))
    got.replay(conv, work.items, in_worker, StopFlag())
    here = Recording()
    run_conversation(work, _opener(job), LazyResource(lambda: None), here, stop=StopFlag())
    threads = Recording()
    run_conversation(work, _opener(job), LazyResource(lambda: None), threads, stop=StopFlag(), qa_threads=3)

    assert in_worker.turns == len(conv.turns)  # built in the worker: its turns enter on arrival
    assert in_worker.events[0] == ("memory", conv.conv_id, got.stats["snapshot"], False)
    assert here.events[0] == ("memory", conv.conv_id, got.stats["snapshot"], True)  # then loaded here
    assert in_worker.events[1:] == here.events[1:]
    assert [e[0] for e in here.events] == ["memory", "prefetch", "item", "item", "item", "finished"]
    assert sorted(threads.events[2:-1], key=lambda e: e[1]) == sorted(here.events[2:-1], key=lambda e: e[1])
    assert all(e[2].dia_ids for e in here.events[2:-1])  # something was retrieved


def test_a_stopped_run_starts_no_item_and_an_items_error_stops_it(tmp_path: Path) -> None:
    conv = story_conversation(n_sessions=2)
    job = cheap_build_job(tmp_path, conv)
    work = ConversationWork(conv, tuple(conv.qa), SETTINGS)
    stop = StopFlag()
    stop.set()
    stopped = Recording()
    run_conversation(work, _opener(job), LazyResource(lambda: None), stopped, stop=stop)
    assert [e[0] for e in stopped.events] == ["memory", "finished"]  # no prefetch, no item

    class Failing(Recording):
        def predicted(self, item: QAItem, prediction: Prediction, spent: UsageTracker) -> None:
            raise ValueError("cannot write")

    stop = StopFlag()
    with pytest.raises(ValueError, match="cannot write"):
        run_conversation(work, _opener(job), LazyResource(lambda: None), Failing(), stop=stop, qa_threads=2)
    assert stop.is_set()

"""A conversation's LLM-free work in a worker process (memcore.pipeline.worker_retrieval): the worker's predictions
are the ones the runner's own thread makes on the same memory, jobs are queued longest first and cancellable, and
a run that retrieves in its workers writes the items a run in threads writes."""

from __future__ import annotations

import json
import os
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from experiments.benchmarks.common import compose
from memcore.config import EmbedderConfig, validate
from memcore.interfaces import LazyResource
from memcore.methods import get_method
from memcore.pipeline.build import BuildJob, MemoryBuilder, snapshot_in_worker, threads_per_worker, worker_pool
from memcore.pipeline.conversation import ConversationWork, PredictSettings
from memcore.pipeline.predict import predict
from memcore.pipeline.worker_retrieval import RetrievalJob, WorkerRetrievals, retrieve_in_worker
from memcore.runner import Runner
from memcore.snapshots import construction_fields
from memcore.stopflag import StopFlag
from memcore.types import Conversation
from tests.support import story_conversation

HASHING = EmbedderConfig(name="hashing", kind="hashing", model="hashing", dim=64)
CHEAP = {"name": "memcore-cheap", "judge": "embedding"}


def cheap_build_job(tmp_path: Path, conv: Conversation) -> BuildJob:
    """The picklable job that builds ``conv``'s memcore-cheap memory (hashing embedder) under ``tmp_path``."""
    fields = construction_fields(
        get_method("memcore-cheap"), CHEAP, {"name": "none"}, backbone_model="m", embedder_name="hashing",
        conversation=conv,
    )  # fmt: skip
    return BuildJob("memcore-cheap", CHEAP, {"name": "none"}, conv, 0, fields, str(tmp_path / "snaps"), HASHING,
                    None, {})  # fmt: skip


def test_a_workers_predictions_are_the_threads_on_the_same_memory(tmp_path: Path) -> None:
    conv = story_conversation(n_sessions=3)
    settings = PredictSettings(note_cap=5, token_cap=60, answer=False, method="memcore-cheap")
    job = RetrievalJob(cheap_build_job(tmp_path, conv), ConversationWork(conv, tuple(conv.qa), settings))
    first = retrieve_in_worker(job)
    assert first.built and first.stats["reused"] is False  # built here, so not reused by this run
    again = retrieve_in_worker(job)
    assert not again.built and again.stats["reused"] is True  # the snapshot is loaded, not rebuilt
    assert again.stats["snapshot"] == first.stats["snapshot"]
    assert first.memory_after_qa is not None and first.memory_after_qa["notes"] > 0

    snap, _, built = snapshot_in_worker(job.build)  # the memory as the runner's thread would load it
    assert not built
    here = [
        predict(snap.system, q, LazyResource(lambda: None), note_cap=5, token_cap=60, answer=False,
                method="memcore-cheap")
        for q in conv.qa
    ]  # fmt: skip
    for got in (first, again):
        assert len(got.predictions) == len(conv.qa) == 3
        assert [p.evidence for p in got.predictions] == [p.evidence for p in here]
        assert all(p.answer is None and p.retrieve_s > 0 for p in got.predictions)
    assert all(p.evidence.dia_ids for p in here)  # something was retrieved


class _Pool:
    """Records the conversations submitted; its futures never run."""

    def __init__(self) -> None:
        self.submitted: list[str] = []
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Any, job: RetrievalJob) -> Future[Any]:
        self.submitted.append(job.work.conversation.conv_id)
        self.futures.append(Future())
        return self.futures[-1]


@pytest.mark.usefixtures("locomo_path")
def test_jobs_are_queued_longest_first_once_each_and_a_stop_cancels_the_unstarted(tmp_path: Path) -> None:
    cfg = validate(compose(["method=memcore-cheap", "embedder=hashing", "eval.answer=false"], tmp_path))
    builder = Runner(cfg, tmp_path / "r")._builder(_Pool())  # type: ignore[arg-type]
    convs = [story_conversation("a", 1), story_conversation("b", 3), story_conversation("c", 2)]
    settings = PredictSettings(note_cap=None, token_cap=None, answer=False, method="memcore-cheap")
    retrievals = WorkerRetrievals(builder, settings, StopFlag())
    retrievals.queue(convs, lambda c: c.qa[:1])
    retrievals.queue(convs[:1], lambda c: c.qa)  # already queued: not queued again
    pool = builder.pool
    assert isinstance(pool, _Pool)
    assert pool.submitted == ["b", "c", "a"]  # 9, 6 and 3 turns
    done = object()
    pool.futures[0].set_result(done)
    assert retrievals.result(convs[1]) == (convs[1].qa[:1], done)  # the items queued, with the worker's result
    retrievals.cancel_queued()
    assert pool.futures[0].done() and all(f.cancelled() for f in pool.futures[1:])
    with pytest.raises(ValueError, match="worker processes"):
        WorkerRetrievals(Runner(cfg, tmp_path / "r2")._builder(None), settings, StopFlag())


def _items(run: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in (run / "items.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec.pop("latency_s")
        out[rec["item_id"]] = rec
    return out


@pytest.mark.e2e  # two runs on two LoCoMo conversations, one of them in spawned worker processes
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="worker processes need two CPU cores")
@pytest.mark.usefixtures("locomo_path")
def test_a_run_that_retrieves_in_its_workers_writes_what_a_run_in_threads_writes(tmp_path: Path) -> None:
    overrides = [
        "method=memcore-cheap", "dataset=locomo", "dataset.conversations=[conv-26,conv-30]", "dataset.max_sessions=2",
        "dataset.max_qa=6", "embedder=hashing", "eval.answer=false", "eval.token_cap=300",
    ]  # fmt: skip
    workers = Runner(validate(compose([*overrides, "concurrency=2"], tmp_path / "w")), tmp_path / "w" / "run")
    w = workers.run()
    threads = Runner(validate(compose([*overrides, "build_processes=0"], tmp_path / "t")), tmp_path / "t" / "run")
    t = threads.run()
    assert workers.concurrency.retrieval_in_workers and not threads.concurrency.retrieval_in_workers
    assert _items(tmp_path / "w" / "run") == _items(tmp_path / "t" / "run")
    assert len(_items(tmp_path / "w" / "run")) == 12
    convs = w.stats["conversations"]
    assert [v["reused"] for v in convs.values()] == [False, False]
    assert all(v["worker_embeddings"]["computed"] > 0 and "memory_after_qa" in v for v in convs.values())
    assert w.stats["timing"]["stages_s"]["retrieve"] > 0
    assert w.metrics["overall"] == t.metrics["overall"]


def test_each_build_worker_gets_its_share_of_the_cores() -> None:
    assert [threads_per_worker(2, w) for w in (1, 2, 3)] == [2, 1, 1]
    assert [threads_per_worker(8, w) for w in (2, 3, 4, 8, 16)] == [4, 2, 2, 1, 1]
    assert threads_per_worker(1, 0) == 1


def test_the_pool_hands_each_job_its_workers_share(tmp_path: Path) -> None:
    pool = worker_pool(n_convs=3, processes=2, cpus=8)
    assert pool is not None
    with pool:
        builder = MemoryBuilder(
            get_method("memcore-cheap"), CHEAP, {"name": "none"}, run_seed=0, backbone_model="m",
            embedder_cfg=HASHING, snapshots=tmp_path / "snaps", embedder_cache=None, extras={}, pool=pool,
        )  # fmt: skip
        assert (pool.workers, pool.threads) == (2, 4)
        assert builder.job(story_conversation(n_sessions=1)).worker_threads == 4
    assert worker_pool(n_convs=1, processes=2, cpus=8) is None  # one build: no pool, the run's process embeds

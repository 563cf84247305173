"""The runner end to end with the scripted backbone and hashing embedder (no model, seconds)."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcore.commands.run import stop_on_sigterm
from memcore.config import ConfigError
from memcore.eval.aggregate import budget_recall
from memcore.itemlog import read_items
from memcore.llm.backbone import BackboneError
from memcore.llm.cache import stable_hash
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.llm.usage import UsageTracker
from memcore.memory.batched import BatchSettings, MemCoReBatched
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.system import INGEST_BATCH, MemCoRe
from memcore.pipeline.build import build_memory
from memcore.pipeline.progress import StageBars as _Bars
from memcore.pipeline.rundir import RUN_STATE, guard_run_dir, without_added_defaults
from memcore.runner import RunConflictError, run_config
from memcore.stopflag import StopFlag
from memcore.testing.sim_replies import structured_responder
from tests.fakes import AMemMem0RunnerLLM
from tests.support import STORY, conversation_of, story_conversation

BASE = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=rag_bm25"]


@pytest.mark.usefixtures("locomo_path")
def test_run_writes_items_metrics_and_resumes(tmp_path, compose) -> None:
    cfg = compose(BASE)
    result = run_config(cfg, tmp_path / "run")
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8 == result.n_items
    assert {
        "item_id",
        "category",
        "question",
        "gold",
        "answer",
        "retrieved_dia_ids",
        "tokens_used",
        "scores",
    } <= set(items[0])
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 8
    assert sum(v["n"] for v in metrics["by_category"].values()) == 8
    # recall at the configured token budgets (eval.report_token_caps), recomputed here from the items

    assert list(metrics["recall_at_budget"]) == ["500", "1000", "2000"]
    assert metrics["recall_at_budget"] == json.loads(json.dumps(budget_recall(items, [500, 1000, 2000])))
    assert metrics["recall_at_budget"]["2000"]["n"] == sum(1 for r in items if r["category"] != 5 and r["evidence"])
    cost = json.loads((tmp_path / "run" / "cost.json").read_text())
    assert cost["usage"]["by_stage"]["answer"]["calls"] == 8
    assert (tmp_path / "run" / "config.yaml").is_file() and (tmp_path / "run" / "table.md").is_file()

    # Second run: everything done → no calls, no invocation recorded, the last working invocation's usage kept.
    again = run_config(compose(BASE), tmp_path / "run")
    assert again.cost["this_invocation"] == {"idle": True, "calls": 0, "items_written": 0}
    assert again.cost["usage"] == cost["usage"] and len(again.stats["invocations"]) == 1
    assert again.metrics["overall"] == metrics["overall"]


@pytest.mark.usefixtures("locomo_path")
def test_interrupted_run_resumes_to_identical_metrics(tmp_path, compose) -> None:
    full = run_config(compose(BASE), tmp_path / "full")
    run_config(compose(BASE), tmp_path / "cut")
    path = tmp_path / "cut" / "items.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(lines[:3]) + lines[3][:25])  # three whole lines + a torn one
    resumed = run_config(compose(BASE), tmp_path / "cut")
    items = read_items(path)
    assert len(items) == 8 and len({r["item_id"] for r in items}) == 8
    assert resumed.metrics["overall"] == full.metrics["overall"]
    assert resumed.metrics["by_category"] == full.metrics["by_category"]


@pytest.mark.usefixtures("locomo_path")
def test_changed_config_is_refused_then_overwrite_moves_aside(tmp_path, compose) -> None:
    run_config(compose(BASE), tmp_path / "run")
    with pytest.raises(RunConflictError, match="changed: method"):
        run_config(compose([*BASE, "method.top_k=5"]), tmp_path / "run")
    run_config(compose([*BASE, "method.top_k=5", "overwrite=true"]), tmp_path / "run")
    assert any(p.name.startswith("run.old-") for p in tmp_path.iterdir())


@pytest.mark.usefixtures("locomo_path")
def test_retrieval_only_run_starts_no_backbone(tmp_path, compose) -> None:
    cfg = compose(
        ["dataset=locomo-tiny", "embedder=hashing", "backbone=local", "method=rag_dense", "eval.answer=false"]
    )
    result = run_config(cfg, tmp_path / "run")
    resources = result.cost["resources"]
    assert {k: resources[k] for k in ("backbone_started", "embedder_loaded")} == {
        "backbone_started": False,
        "embedder_loaded": True,
    }
    assert resources["embeddings"]["computed"] > 0  # a cold cache: the model embedded the turns and questions
    assert result.cost["usage"]["total"]["calls"] == 0
    again = run_config(cfg, tmp_path / "run2").cost["resources"]["embeddings"]  # same cache, new run dir
    assert again["computed"] == 0 and again["from_cache"] > 0
    assert all(r["answer"] is None and r["scores"] == {} for r in read_items(tmp_path / "run" / "items.jsonl"))


@pytest.mark.usefixtures("locomo_path")
def test_unsupported_ablation_is_a_config_error(tmp_path, compose) -> None:
    cfg = compose([*BASE, "ablation=none", "ablation.name=wo_merge"])
    with pytest.raises(ConfigError, match="does not support ablation"):
        run_config(cfg, tmp_path / "run")


@pytest.mark.usefixtures("locomo_path")
def test_full_context_keeps_most_recent_turns_within_budget(tmp_path, compose) -> None:
    cfg = compose(
        [
            "dataset=locomo-tiny",
            "embedder=hashing",
            "backbone=scripted",
            "method=full_context",
            "method.prompt_token_cap=300",
        ],
    )
    run_config(cfg, tmp_path / "run")
    item = read_items(tmp_path / "run" / "items.jsonl")[0]
    assert item["tokens_used"] <= 300 + 40  # + the DATE/CONVERSATION headers
    assert item["retrieved_dia_ids"][-1] == "D2:17"  # the last turn of session 2 is kept
    assert "D1:1" not in item["retrieved_dia_ids"]  # the oldest is cut


def _wait_until_delivered(tid: int, signum: int, timeout_s: float = 60.0) -> None:
    """Return once ``signum`` is no longer pending for thread ``tid`` (/proc/self/task/<tid>/status SigPnd): the
    kernel has handed it to the thread's C-level handler. A real LLM call lasts seconds, far longer than that."""
    deadline = time.monotonic() + timeout_s
    status = Path(f"/proc/self/task/{tid}/status")
    while time.monotonic() < deadline:
        pending = next(line for line in status.read_text().splitlines() if line.startswith("SigPnd:"))
        if not int(pending.split()[1], 16) & (1 << (signum - 1)):
            return
        time.sleep(0.0005)
    raise AssertionError(f"signal {signum} not delivered to thread {tid} within {timeout_s} s")


def _wait_until(condition: Callable[[], bool], message: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(message)
        time.sleep(0.0005)


@pytest.mark.parametrize("delivery", ["main-thread", "worker-thread"])
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.usefixtures("locomo_path")
def test_ctrl_c_stops_the_memory_build_after_the_call_in_flight_and_a_rerun_finishes(
    tmp_path, signum, delivery, compose
) -> None:
    """Ctrl-C (or SIGTERM, with memcore-run's handler) stops a conversation's build after the LLM call in flight
    (not after all turns), even when the backbone answers instantly; nothing finished is lost and the same
    command finishes the run. The signal reaches the main thread (a terminal's Ctrl-C, ``kill``) or, as the
    kernel may choose for a process-directed signal, the worker thread itself."""
    if delivery == "main-thread" and not Path(f"/proc/self/task/{threading.get_native_id()}/status").exists():
        pytest.skip("needs /proc/self/task to observe signal delivery")

    responder = AMemMem0RunnerLLM()

    calls = 0
    main_tid = threading.main_thread().native_id
    assert main_tid is not None

    def interrupting(messages):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        if calls == 5:  # the signal arrives during the first of turn 3's two calls
            if delivery == "main-thread":
                signal.pthread_kill(threading.main_thread().ident, signum)
                _wait_until_delivered(main_tid, signum)
                # Dequeued is not yet handled: on a loaded machine the main thread can be preempted between the
                # kernel's dequeue and the C-level handler that writes to the wakeup pipe (a real LLM call lasts
                # seconds, far longer than that gap). Wait until the run's flag reports the signal.
                _wait_until(stop.is_set, f"signal {signum} never reached the run's stop flag")
            else:
                signal.raise_signal(signum)  # delivered to this thread before raise_signal returns
        return responder(messages)

    overrides = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=amem"]
    stop = StopFlag()
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    stop_on_sigterm()
    # Python's own Ctrl-C handler, as in an interactive memcore-run: a process started in the background by a
    # non-interactive shell (a CI runner, nohup, setsid …) inherits SIGINT ignored and would never see the signal.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_config(
                compose(overrides), tmp_path / "run", backbone_override=ScriptedBackbone(interrupting), stop=stop
            )
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    # A-MEM makes 2 calls per turn; the signal came during call 5 (turn 3's first): that call finished, no other
    # call started (the request limiter refuses calls once the run is stopping); 70 calls were ahead.
    assert calls == 5
    assert read_items(tmp_path / "run" / "items.jsonl") == []

    result = run_config(compose(overrides), tmp_path / "run", backbone_override=ScriptedBackbone(responder))
    assert result.n_items == 8 == len(read_items(tmp_path / "run" / "items.jsonl"))


def test_with_progress_bars_off_counts_are_logged_at_most_every_interval(caplog) -> None:
    import logging

    with caplog.at_level(logging.INFO, logger="memcore.pipeline.progress"):
        every = _Bars(False, turns=10, items=4, log_every_s=0.0)
        every.build(3)
        every.qa(1)
        staged = _Bars(False, turns=10, items=4, log_every_s=0.0, staged=True)
        staged.ingested(4)
        quiet = _Bars(False, turns=10, items=4, log_every_s=3600.0)
        quiet.build(10)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("progress:")]
    assert len(lines) == 3
    assert lines[0].startswith("progress: build 3/10 turns, qa 0/4 items")
    assert lines[1].startswith("progress: build 3/10 turns, qa 1/4 items")
    assert lines[2].startswith("progress: ingest 4/10 turns, build 0/10 turns, qa 0/4 items")


def test_the_build_traces_what_each_turn_cost() -> None:
    """``ingest_trace``: per turn, the calls and tokens its ``ingest`` added; ``finalize``'s are the rest of the
    total (``memcore.report.estimate`` reads the trace to see a cost per turn that grows with the memory)."""
    conv = story_conversation(n_sessions=2)
    scope = UsageTracker()

    class Growing:
        """Turn k makes k calls of 10 * k prompt tokens and 1 completion token; finalize makes one more call."""

        def __init__(self) -> None:
            self.k = 0

        def ingest(self, turn: object) -> None:
            self.k += 1
            for _ in range(self.k):
                scope.record("ingest", prompt_tokens=10 * self.k, completion_tokens=1, latency_s=0.0, cached=False)

        def finalize(self) -> None:
            scope.record("ingest", prompt_tokens=7, completion_tokens=0, latency_s=0.0, cached=False)

    out = build_memory(Growing(), conv, scope)  # type: ignore[arg-type]
    n = len(conv.turns)
    assert out["ingest_trace"] == {
        "calls": list(range(1, n + 1)),
        "prompt_tokens": [10 * k * k for k in range(1, n + 1)],
        "completion_tokens": list(range(1, n + 1)),
    }
    total = out["ingest_usage"]["total"]
    assert total["calls"] - sum(out["ingest_trace"]["calls"]) == 1
    assert total["prompt_tokens"] - sum(out["ingest_trace"]["prompt_tokens"]) == 7


def test_a_buffered_staged_build_traces_each_turn_with_its_own_gate_calls() -> None:
    """A MemCoRe-like system: each ``ingest`` makes one ingestion call (10 tokens) and reports it; every third
    turn flushes the buffer through the gate, one call per turn costing 100 x its position. The trace puts every
    gate call on its own turn, not on the turn that filled the buffer (nor on ``finalize``, which flushes the
    rest)."""
    conv = story_conversation(n_sessions=2)
    scope = UsageTracker()

    class Staged:
        def __init__(self) -> None:
            self.buffer: list[int] = []
            self.seen = 0
            self.turn_cb: Any = None
            self.ingest_cb: Any = None

        def set_turn_callback(self, cb: Any) -> None:
            self.turn_cb = cb

        def set_ingest_callback(self, cb: Any) -> None:
            self.ingest_cb = cb

        def _flush(self) -> None:
            for pos in self.buffer:
                scope.record("ingest", prompt_tokens=100 * pos, completion_tokens=0, latency_s=0.0, cached=False)
                self.turn_cb()
            self.buffer = []

        def ingest(self, turn: object) -> None:
            self.seen += 1
            scope.record("ingest", prompt_tokens=10, completion_tokens=1, latency_s=0.0, cached=False)
            self.ingest_cb(1)
            self.buffer.append(self.seen)
            if len(self.buffer) == 3:
                self._flush()

        def finalize(self) -> None:
            self._flush()

    n = len(conv.turns)
    out = build_memory(Staged(), conv, scope)  # type: ignore[arg-type]
    assert out["ingest_trace"]["calls"] == [2] * n
    assert out["ingest_trace"]["prompt_tokens"] == [10 + 100 * k for k in range(1, n + 1)]
    assert out["ingest_trace"]["completion_tokens"] == [1] * n


class _CallSizes(HashingEmbedder):
    """A hashing embedder that records how many texts each ``encode`` call was given."""

    def __init__(self) -> None:
        super().__init__(64)
        self.calls: list[int] = []

    def encode(self, texts: Any) -> Any:
        self.calls.append(len(texts))
        return super().encode(texts)


def test_a_cheap_build_embeds_every_context_in_one_call_and_an_llm_build_every_32_turns() -> None:
    """Cheap mode's ingestion is free, so all its contexts are embedded at once (sorted by length into batches with
    little padding); LLM mode flushes every ``INGEST_BATCH`` turns."""
    story = [text for session in STORY for _, text in session]
    # 36 turns: one full LLM-mode batch of 32 and 4 more
    conv = conversation_of([f"{story[i % len(story)]} (turn {i})" for i in range(36)])
    assert len(conv.turns) == 36 > INGEST_BATCH == 32
    cheap_embedder = _CallSizes()
    cheap = MemCoRe(MemCoReConfig(judge="embedding"), Switches(), embedder=cheap_embedder, backbone=None)
    build_memory(cheap, conv, UsageTracker())
    assert cheap_embedder.calls[0] == 36  # the contexts, before the first gate decision
    assert len(cheap.store.notes) > 0
    llm_embedder = _CallSizes()
    backbone = ScriptedBackbone(structured_responder)
    llm = MemCoRe(MemCoReConfig(), Switches(), embedder=llm_embedder, backbone=lambda: backbone)
    build_memory(llm, conv, UsageTracker())
    assert llm_embedder.calls[0] == 32 and 4 in llm_embedder.calls[1:]


@pytest.mark.parametrize("batched", [False, True])
def test_a_buffered_build_reports_each_turn_as_it_enters_the_memory(batched: bool) -> None:
    """MemCoRe buffers turns (32 per flush): progress and a stop request must follow the gate, turn by turn,
    not the buffering (a real-model flush of 32 turns takes minutes)."""
    conv = story_conversation(n_sessions=2)  # 6 turns, all in one buffer

    def system(backbone: ScriptedBackbone) -> MemCoRe:
        kw = {"embedder": HashingEmbedder(64), "backbone": lambda: backbone}
        if batched:
            return MemCoReBatched(MemCoReConfig(name="memcore-batched"), Switches(), BatchSettings(2), **kw)
        return MemCoRe(MemCoReConfig(), Switches(), **kw)

    counted: list[int] = []
    ingested: list[tuple[int, int]] = []  # (turns ingested so far, turns in the memory then)
    mem = system(ScriptedBackbone(structured_responder))
    build_memory(
        mem,
        conv,
        UsageTracker(),
        on_turn=lambda: counted.append(len(mem.store.notes)),
        on_ingested=lambda n: ingested.append(((ingested[-1][0] if ingested else 0) + n, len(counted))),
    )
    assert len(counted) == len(conv.turns)
    assert counted[0] == 1 and counted == sorted(counted)  # each call comes after a turn entered the memory
    # ingestion is reported before the gate: per turn, all 6 turns of the buffer before the first note; batched,
    # each chunk of 2 before its own turns enter the memory
    assert ingested[-1][0] == len(conv.turns)
    if batched:
        assert ingested == [(2, 0), (4, 2), (6, 4)]
    else:
        assert ingested == [(k, 0) for k in range(1, 7)]
    assert mem._turn_callback is None and mem._ingest_callback is None  # removed after the build

    class Stop(Exception):
        pass

    calls = 0

    def stop_at_second_turn() -> None:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise Stop

    stopped = system(ScriptedBackbone(structured_responder))
    with pytest.raises(Stop):
        build_memory(stopped, conv, UsageTracker(), on_turn=stop_at_second_turn)
    assert sum(len(n.raws) for n in stopped.store.notes) == 2  # the gate stopped after the second of 6 turns


@pytest.mark.usefixtures("locomo_path")
def test_quickstart_table_says_it_is_a_demonstration(tmp_path, compose) -> None:
    """make run's experiment prints (and writes) its footnote: a demonstration, not a benchmark."""
    cfg = compose(["experiment=quickstart", "backbone=scripted", "embedder=hashing"])
    assert (cfg.method.name, cfg.dataset.name) == ("memcore", "locomo-quick") and cfg.method.judge == "llm"
    result = run_config(cfg, tmp_path / "run")
    assert result.n_items == 4 and result.cost["memory_build"]["turns"] == 18
    assert result.table.rstrip().splitlines()[-1].startswith("Note: a demonstration, not a benchmark")
    assert "Note: a demonstration, not a benchmark" in (tmp_path / "run" / "table.md").read_text()


@pytest.mark.usefixtures("locomo_path")
def test_a_failure_stops_the_other_items_calls_and_the_run_reports_the_failure(tmp_path, compose) -> None:
    """With items answered concurrently, one item's backbone failure stops the run: the calls running beside it
    finish (and their items are kept), no call starts after it, and the error raised is that failure, not one
    of the refusals it set off."""
    stop = StopFlag()
    calls = 0
    lock = threading.Lock()

    def failing(messages):  # type: ignore[no-untyped-def]
        nonlocal calls
        with lock:
            calls += 1
            n = calls
        if n == 3:
            raise BackboneError("the server went away (scripted)")
        _wait_until(stop.is_set, "the failure never stopped the run")  # a slow call, still running at the failure
        return "an answer"

    overrides = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=rag_bm25", "concurrency=4"]
    with pytest.raises(BackboneError, match="went away"):
        run_config(compose(overrides), tmp_path / "run", backbone_override=ScriptedBackbone(failing), stop=stop)
    assert calls in (3, 4)  # calls 1, 2 (and 4 if it started before the failure); none after it; 8 items
    assert len(read_items(tmp_path / "run" / "items.jsonl")) == calls - 1


def test_a_knob_added_at_its_old_behaviour_does_not_stop_an_older_run_from_resuming(tmp_path: Path) -> None:
    recorded = {"method": {"name": "memcore", "k_final": 20}, "seed": 0}  # written before method.ier_prompt existed
    (tmp_path / RUN_STATE).write_text(json.dumps({"result_hash": stable_hash(recorded), "fields": recorded}))
    now = {"method": {"name": "memcore", "k_final": 20, "ier_prompt": "v2"}, "seed": 0}
    guard_run_dir(tmp_path, without_added_defaults(now), overwrite=False, resume=True)
    # a run recorded while the key was still written at its default is the same run too
    (tmp_path / RUN_STATE).write_text(json.dumps({"result_hash": stable_hash(now), "fields": now}))
    guard_run_dir(tmp_path, without_added_defaults(now), overwrite=False, resume=True)
    other = {"method": {"name": "memcore", "k_final": 20, "ier_prompt": "answer_first"}, "seed": 0}
    assert without_added_defaults(other) == other
    with pytest.raises(RunConflictError, match="changed: method"):
        guard_run_dir(tmp_path, without_added_defaults(other), overwrite=False, resume=True)

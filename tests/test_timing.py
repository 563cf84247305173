"""Where a run's time goes: the stage clock, the ``timing`` block of ``stats.json`` and its one line."""

from __future__ import annotations

import json
import threading

import pytest

from memcore.runner import run_config
from memcore.timing import STAGES, StageClock, process_age_s, timing_block, timing_line


def test_the_clock_sums_each_stage_over_threads_and_keeps_their_order() -> None:
    clock = StageClock()
    workers = [threading.Thread(target=lambda: [clock.add("retrieve", 0.25) for _ in range(4)]) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    clock.add("load", 0.5)
    clock.add("score", -1.0)  # a clock that went backwards adds nothing
    assert clock.seconds() == {"load": 0.5, "retrieve": 2.0, "score": 0.0}
    assert list(clock.seconds()) == [s for s in STAGES if s in clock.seconds()]


def test_a_timed_block_counts_also_when_it_raises() -> None:
    clock = StageClock()
    with pytest.raises(RuntimeError), clock.stage("build"):
        raise RuntimeError("boom")
    assert set(clock.seconds()) == {"build"}


def test_an_unknown_stage_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown stage 'embedding'; known: start-up, load, build"):
        StageClock().add("embedding", 1.0)


def test_the_block_adds_start_up_to_the_wall_and_the_line_reads_it() -> None:
    block = timing_block(
        {"start-up": 0.5, "load": 0.25, "build": 3.0}, 4.0, {"computed": 663, "from_cache": 193, "seconds": 2.0}
    )
    assert block["wall_s"] == 4.5 and block["embed_s"] == 2.0
    assert (block["texts_computed"], block["texts_from_cache"]) == (663, 193)
    assert timing_line(block) == (
        "time 4.5 s: start-up 0.5, load 0.2, build 3.0 (embed 2.0 inside them: 663 computed / 193 cached texts)"
    )


def test_the_process_age_is_positive_and_grows() -> None:
    first = process_age_s()
    assert first is not None and first > 0
    second = process_age_s()
    assert second is not None and second >= first


def test_a_run_writes_its_timing_with_every_stage_it_ran(tmp_path, compose) -> None:
    cfg = compose(["dataset=locomo-tiny", "embedder=hashing", "method=rag_hybrid", "eval.answer=false"])
    result = run_config(cfg, tmp_path / "run")
    timing = json.loads((tmp_path / "run" / "stats.json").read_text())["timing"]
    assert {"load", "build", "prefetch", "retrieve", "score", "write"} <= set(timing["stages_s"])
    assert "start-up" not in timing["stages_s"]  # only the CLI knows what the process spent before the run
    assert timing["stages_s"]["answer"] == 0.0
    # every question embedded once by the prefetch, then served by the cache when its item is retrieved
    assert timing["texts_from_cache"] >= result.n_items
    assert timing["wall_s"] > 0 and timing["texts_computed"] > 0


def test_the_line_says_how_much_of_the_embedding_time_was_the_model_load() -> None:
    block = timing_block(
        {"start-up": 0.5, "build": 12.0},
        13.0,
        {"computed": 856, "from_cache": 193, "seconds": 12.4, "load_seconds": 5.6},
    )
    assert block["embed_load_s"] == 5.6
    assert timing_line(block) == (
        "time 13.5 s: start-up 0.5, build 12.0 (embed 12.4 inside them, 5.6 of it loading the model: 856 computed /"
        " 193 cached texts)"
    )

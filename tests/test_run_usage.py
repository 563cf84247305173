"""A run's cost covers the whole run: each item keeps the LLM calls it spent (``items.jsonl → usage``), so a
resumed run's calls per question and the report's QA cost count every invocation, and a rerun keeps the
memory stats of conversations it did not have to process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from omegaconf import DictConfig

from memcore.itemlog import read_items
from memcore.llm.usage import ITEM_USAGE_KEYS, UsageTracker, item_usage, sum_item_usage
from memcore.report.collect import load_run
from memcore.report.summary import unit_costs, usage_totals
from memcore.runner import run_config
from tests.support import compose_run

SLICE = ["dataset=locomo-tiny", "dataset.max_qa=4", "embedder=hashing", "backbone=scripted", "concurrency=1"]


def test_stage_usage_counts_served_completion_tokens_and_retries_by_kind() -> None:
    """``llm_completion_tokens`` counts only the calls the endpoint served; a transport retry is counted under
    its kind with the time it cost."""
    tracker = UsageTracker()
    tracker.record("ingest", prompt_tokens=10, completion_tokens=7, latency_s=0.1, cached=False)
    tracker.record("ingest", prompt_tokens=10, completion_tokens=90, latency_s=0.0, cached=True)
    tracker.record_transport_retry("ingest", "timeout", 50.5)
    tracker.record_transport_retry("ingest", "429", 1.0)
    tracker.record_transport_retry("ingest", "429", 1.25)
    stage = tracker.to_json()["by_stage"]["ingest"]
    assert (stage["completion_tokens"], stage["llm_completion_tokens"]) == (97, 7)
    assert stage["errors_retried"] == 3 and stage["retries_by_kind"] == {"429": 2, "timeout": 1}
    assert stage["retry_wait_s"] == 52.75


def test_item_usage_and_its_sum_by_hand() -> None:
    tracker = UsageTracker()
    tracker.record("answer", prompt_tokens=10, completion_tokens=2, latency_s=0.1, cached=False)
    tracker.record("answer", prompt_tokens=5, completion_tokens=1, latency_s=0.0, cached=True)
    tracker.record_parse_retry("answer")
    tracker.stage("judge")  # a stage without a call is left out
    one = item_usage(tracker)
    assert one == {
        "answer": {
            "calls": 2,
            "cached_calls": 1,
            "prompt_tokens": 15,
            "completion_tokens": 3,
            "parse_retries": 1,
            "parse_failures": 0,
        }
    }
    records = [{"usage": one}, {"usage": {"retrieve": dict.fromkeys(ITEM_USAGE_KEYS, 1)}}, {"item_id": "old"}]
    total = sum_item_usage(records)
    assert total["n_items"] == 3 and total["n_items_with_usage"] == 2
    assert total["by_stage"]["answer"]["calls"] == 2 and total["by_stage"]["answer"]["llm_calls"] == 1
    assert total["by_stage"]["retrieve"] == {**dict.fromkeys(ITEM_USAGE_KEYS, 1), "llm_calls": 0}


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("concurrency", [1, 4])  # items answered in parallel threads keep their own calls
@pytest.mark.parametrize("method", ["memcore", "amem", "mem0-two-phase", "memgpt", "fluxmem", "full_context"])
def test_the_items_usage_is_every_qa_call_of_the_run(method: str, concurrency: int, tmp_path: Path) -> None:
    run_config(compose_run(tmp_path, [*SLICE, f"method={method}", f"concurrency={concurrency}"]), tmp_path / "run")
    cost = json.loads((tmp_path / "run" / "cost.json").read_text())
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert all("usage" in r for r in items) and cost["items_usage"]["n_items_with_usage"] == len(items) == 4
    stages = {k: v for k, v in cost["usage"]["by_stage"].items() if k != "ingest" and v["calls"]}
    assert stages, "the method made no QA call on the scripted backbone"
    for stage, want in stages.items():  # one invocation: the items account for every retrieve/answer call
        got = cost["items_usage"]["by_stage"][stage]
        assert {k: got[k] for k in ITEM_USAGE_KEYS} == {k: want[k] for k in ITEM_USAGE_KEYS}, stage


def _amem_run(tmp_path: Path) -> tuple[DictConfig, Path, dict[str, Any]]:
    """A complete A-MEM run on the slice: its config, run dir and ``cost.json``."""
    cfg = compose_run(tmp_path, [*SLICE, "method=amem"])
    run_dir = tmp_path / "run"
    run_config(cfg, run_dir)
    return cfg, run_dir, json.loads((run_dir / "cost.json").read_text())


@pytest.mark.usefixtures("locomo_path")
def test_a_resumed_run_keeps_the_whole_runs_cost(tmp_path: Path) -> None:
    cfg, run_dir, first_cost = _amem_run(tmp_path)
    first_stats = json.loads((run_dir / "stats.json").read_text())
    first_totals = usage_totals(load_run(run_dir))
    assert first_cost["per_question"]["answer"] == 1.0

    lines = (run_dir / "items.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "items.jsonl").write_text("".join(lines[:2]))  # as if the first invocation stopped after 2 items
    run_config(cfg, run_dir)
    resumed = json.loads((run_dir / "cost.json").read_text())
    assert resumed["usage"]["by_stage"]["answer"]["calls"] == 2  # this invocation answered the other two
    assert resumed["items_usage"] == first_cost["items_usage"]
    assert resumed["per_question"] == first_cost["per_question"]
    assert usage_totals(load_run(run_dir)) == first_totals

    run_config(cfg, run_dir)  # nothing left to do: no conversation is processed, nothing is lost
    again = json.loads((run_dir / "cost.json").read_text())
    assert again["this_invocation"] == {"idle": True, "calls": 0, "items_written": 0}
    assert again["usage"] == resumed["usage"]  # the last invocation that did work
    assert again["items_usage"] == first_cost["items_usage"]
    same = ("turns", "llm_calls", "prompt_tokens", "completion_tokens", "llm_calls_per_turn", "tokens_per_turn")
    assert {k: again["memory_build"][k] for k in same} == {k: first_cost["memory_build"][k] for k in same}
    assert again["memory_build"]["snapshots_reused"] == 1  # the build the resumed invocation loaded
    stats = json.loads((run_dir / "stats.json").read_text())
    assert stats["conversations"].keys() == first_stats["conversations"].keys()
    assert usage_totals(load_run(run_dir)) == first_totals


@pytest.mark.usefixtures("locomo_path")
def test_a_run_resumed_across_the_item_usage_change_reports_the_rate_of_the_items_it_knows(tmp_path: Path) -> None:
    cfg, run_dir, full = _amem_run(tmp_path)
    full_rate = unit_costs(load_run(run_dir))["calls_per_question"]
    assert full_rate and full["per_question"]["answer"] == 1.0

    records = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    for rec in records[:2]:  # two items written before items kept their usage
        del rec["usage"]
    (run_dir / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records[:2]))
    run_config(cfg, run_dir)  # this invocation answers the other two, with usage
    resumed = json.loads((run_dir / "cost.json").read_text())
    assert resumed["items_usage"]["n_items_with_usage"] == 2 and resumed["items_usage"]["n_items"] == 4
    # two of four items known: their rate, not their calls spread over all four (0.5 answer calls per question)
    assert resumed["per_question"]["answer"] == 1.0
    assert resumed["per_question"]["retrieve"] == full["per_question"]["retrieve"]
    assert unit_costs(load_run(run_dir))["calls_per_question"] == pytest.approx(full_rate)

"""SIGKILL at a random point of ingest or QA, rerun the same command: exactly one line per QA item
and the same results as an uninterrupted run. A-Mem builds its memory with LLM calls, so a kill
during ingest really interrupts a snapshot build. The scripted backbone (no server) with a small
per-call latency makes the run slow enough to be hit mid-way and still takes seconds."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from memcore.itemlog import read_items
from memcore.runner import run_config
from tests.support import RESUME_ITEMS, RESUME_OVERRIDES, compose_run, kill_and_resume


def outcome(run_dir: Path) -> dict[str, Any]:
    """What must not change: metrics, and per item its answer and retrieved turns."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    items = read_items(run_dir / "items.jsonl")
    return {
        "overall": metrics["overall"],
        "by_category": metrics["by_category"],
        "items": {r["item_id"]: (r["answer"], r["retrieved_dia_ids"]) for r in items},
    }


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("reference")
    run_config(compose_run(root, [*RESUME_OVERRIDES, "backbone.scripted_latency_s=0"]), root / "run")
    ref = outcome(root / "run")
    assert len(ref["items"]) == RESUME_ITEMS
    assert 0 < ref["overall"]["recall"] < 1  # retrieval over the built memory is not trivial
    return ref


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("point", ["ingest", "qa"])
def test_sigkill_then_rerun_matches_uninterrupted(
    tmp_path: Path, reference: dict[str, Any], point: str, seed: int
) -> None:
    before, run_dir = kill_and_resume(tmp_path, point, random.Random(f"{point}-{seed}"))
    items = read_items(run_dir / "items.jsonl")
    ids = [r["item_id"] for r in items]
    assert len(ids) == len(set(ids)) == RESUME_ITEMS
    assert outcome(run_dir) == reference
    cost = json.loads((run_dir / "cost.json").read_text())
    snaps = tmp_path / "results" / "snapshots" / "amem"
    if point == "ingest":
        assert cost["memory_build"]["snapshots_built"] == 1  # the half-built one was not used
        assert not [p for p in snaps.iterdir() if ".tmp-" in p.name]  # and its leftovers are gone
    else:
        assert 1 <= before < RESUME_ITEMS
        assert cost["memory_build"]["snapshots_reused"] == 1  # the finished snapshot was reused
        assert cost["usage"]["by_stage"]["answer"]["calls"] == RESUME_ITEMS - before  # only the missing items
        # the items killed mid-answer were redone, so the records count exactly one answer call each
        assert cost["items_usage"]["by_stage"]["answer"]["calls"] == RESUME_ITEMS
        assert cost["per_question"]["answer"] == 1.0

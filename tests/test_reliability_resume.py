"""SIGKILL at a random point of ingest or QA, rerun the same command: exactly one line per QA item
and the same results as an uninterrupted run. A-Mem builds its memory with LLM calls, so a kill
during ingest really interrupts a snapshot build. The scripted backbone (no server) with a small
per-call latency makes the run slow enough to be hit mid-way and still takes seconds."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memcore.data import resolve_locomo_path
from memcore.data.errors import DataError
from memcore.itemlog import read_items
from memcore.runner import run_config
from memcore.snapshots import MANIFEST
from tests.runner_utils import compose_run

REPO = Path(__file__).resolve().parents[1]
OVERRIDES = [
    "dataset=locomo-tiny",
    "embedder=hashing",
    "backbone=scripted",
    "backbone.scripted_latency_s=0.03",
    "method=amem",
    "concurrency=1",
]
N_ITEMS = 8


def command(root: Path, run_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "memcore.cli", *OVERRIDES, "progress=false", "print_table=false",
        f"paths.root={root}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip


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
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    try:
        resolve_locomo_path(None)
    except DataError:
        pytest.skip("LoCoMo data not found (set MEMCORE_DATA)")
    root = tmp_path_factory.mktemp("reference")
    run_config(compose_run(root, [*OVERRIDES, "backbone.scripted_latency_s=0"]), root / "run")
    ref = outcome(root / "run")
    assert len(ref["items"]) == N_ITEMS
    assert 0 < ref["overall"]["recall"] < 1  # retrieval over the built memory is not trivial
    return ref


def _wait(pred: Any, proc: subprocess.Popen[bytes], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def kill_and_resume(tmp_path: Path, point: str, rng: random.Random) -> tuple[int, Path]:
    """Start the CLI, SIGKILL it at ``point`` ("ingest" or "qa"), rerun it; items done before the kill."""
    root, run_dir = tmp_path / "results", tmp_path / "run"
    snaps = root / "snapshots" / "amem"
    items_path = run_dir / "items.jsonl"
    cmd = command(root, run_dir)
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        if point == "ingest":
            _wait(lambda: snaps.is_dir() and any(".tmp-" in p.name for p in snaps.iterdir()), proc, "ingest started")
            time.sleep(rng.uniform(0.1, 1.5))
        else:
            k = rng.randint(1, N_ITEMS - 2)
            _wait(lambda: items_path.exists() and len(read_items(items_path)) >= k, proc, f"{k} items")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    before = len(read_items(items_path)) if items_path.exists() else 0
    if point == "ingest":
        assert before == 0
        assert not [p for p in snaps.iterdir() if (p / MANIFEST).is_file()], "the kill came after the build"
        assert [p for p in snaps.iterdir() if ".tmp-" in p.name], "a half-built snapshot is left behind"

    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    return before, run_dir


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("point", ["ingest", "qa"])
def test_sigkill_then_rerun_matches_uninterrupted(
    tmp_path: Path, reference: dict[str, Any], point: str, seed: int
) -> None:
    before, run_dir = kill_and_resume(tmp_path, point, random.Random(f"{point}-{seed}"))
    items = read_items(run_dir / "items.jsonl")
    ids = [r["item_id"] for r in items]
    assert len(ids) == len(set(ids)) == N_ITEMS
    assert outcome(run_dir) == reference
    cost = json.loads((run_dir / "cost.json").read_text())
    snaps = tmp_path / "results" / "snapshots" / "amem"
    if point == "ingest":
        assert cost["memory_build"]["snapshots_built"] == 1  # the half-built one was not used
        assert not [p for p in snaps.iterdir() if ".tmp-" in p.name]  # and its leftovers are gone
    else:
        assert 1 <= before < N_ITEMS
        assert cost["memory_build"]["snapshots_reused"] == 1  # the finished snapshot was reused
        assert cost["usage"]["by_stage"]["answer"]["calls"] == N_ITEMS - before  # only the missing items

"""Two sweeps started at once on one results root both finish, every run done once: a job whose run dir another
process writes is skipped (``on_locked_run=skip``, the default: the sweep goes on with its next job) or waited for
(``wait``); ``error`` refuses it, as every busy run dir was refused before."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memcore.itemlog import read_items
from memcore.pipeline.runlock import LOCK_FILE, RunDirBusyError, RunDirLock
from tests.support import CHILD_OF_TEST, REPO

METHODS = ("rag_bm25", "rag_dense")
#: Answered by the scripted backbone, 0.3 s a call: a run of locomo-tiny's 8 items outlasts the other sweep's start.
SWEEP = [
    f"method={','.join(METHODS)}",
    "dataset=locomo-tiny",
    "embedder=hashing",
    "backbone=scripted",
    "backbone.scripted_latency_s=0.3",
    "concurrency=1",
    "progress=false",
    "print_table=false",
]


def _sweep(root: Path, *extra: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "memcore.commands.run", "-m", *SWEEP, f"paths.root={root}", *extra]
    return subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **CHILD_OF_TEST)


def _run_dir(root: Path, method: str) -> Path:
    return root / "runs" / "default" / "locomo-tiny" / "scripted" / "amem" / method / "none"


def _held(run_dir: Path) -> bool:
    lock = run_dir / LOCK_FILE
    return lock.is_file() and bool(lock.read_text())


def _start_two(root: Path, policy: str) -> tuple[subprocess.Popen[str], subprocess.Popen[str]]:
    """Sweep A, then sweep B once A holds its first run dir."""
    first = _sweep(root, f"on_locked_run={policy}")
    deadline = time.monotonic() + 180
    while not _held(_run_dir(root, METHODS[0])):
        assert first.poll() is None, first.communicate()[1][-2000:]
        assert time.monotonic() < deadline, "the first sweep never took its first run dir"
        time.sleep(0.02)
    return first, _sweep(root, f"on_locked_run={policy}")


def _finish(first: subprocess.Popen[str], second: subprocess.Popen[str]) -> tuple[str, str, str]:
    """Wait for both sweeps: the second's stdout and stderr, the first's stderr (a sweep still running is killed)."""
    try:
        out_b, err_b = second.communicate(timeout=600)
        _, err_a = first.communicate(timeout=600)
    finally:
        for proc in (first, second):
            if proc.poll() is None:
                proc.kill()
    return out_b, err_b, err_a


def _done_once(root: Path) -> None:
    for method in METHODS:
        run_dir = _run_dir(root, method)
        items = read_items(run_dir / "items.jsonl")
        assert len(items) == len({r["item_id"] for r in items}) == 8, method
        assert json.loads((run_dir / "metrics.json").read_text())["n_items"] == 8
        invocations = json.loads((run_dir / "stats.json").read_text())["invocations"]
        assert sum(i["items_written"] for i in invocations) == 8, invocations  # each item answered once


@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("policy", ["skip", "wait"])
def test_two_sweeps_on_one_root_both_finish_and_every_run_is_done_once(tmp_path: Path, policy: str) -> None:
    root = tmp_path / "results"
    first, second = _start_two(root, policy)
    out_b, err_b, err_a = _finish(first, second)
    assert first.returncode == 0, err_a[-3000:]
    assert second.returncode == 0, err_b[-3000:]
    assert "Traceback" not in err_a + err_b
    busy = str(_run_dir(root, METHODS[0]))
    if policy == "skip":
        (line,) = [ln for ln in err_b.splitlines() if ln.startswith("skipped ")]
        assert line.startswith(f"skipped {busy}: another memcore-run writes it (pid {first.pid} on host")
        assert "the sweep goes on with its next job" in line
    else:
        said = out_b + err_b  # Hydra's console log handler writes to stdout
        assert f"run dir {busy} is in use by pid {first.pid} on host" in said and "waiting for it" in said
    _done_once(root)


@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
def test_on_locked_run_error_refuses_the_second_sweep_at_its_first_job(tmp_path: Path) -> None:
    root = tmp_path / "results"
    first, second = _start_two(root, "error")
    _, err_b, err_a = _finish(first, second)
    assert first.returncode == 0, err_a[-3000:]
    assert second.returncode == 2, err_b[-3000:]
    assert err_b.strip().splitlines()[-1].startswith(f"error: {_run_dir(root, METHODS[0])} is in use by another")
    _done_once(root)


def test_a_waiting_lock_takes_the_run_dir_once_its_holder_ends(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; from memcore.pipeline.runlock import RunDirLock; "
            "lock = RunDirLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(float(sys.argv[2]))",
            str(run_dir),
            "1.0",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        **CHILD_OF_TEST,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(RunDirBusyError, match="on_locked_run=wait waits"):
            RunDirLock(run_dir).acquire()
        started = time.monotonic()
        with RunDirLock(run_dir, wait=True, poll_s=0.05):
            assert holder.poll() is not None  # taken only once the holder ended
        assert time.monotonic() - started < 60
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.wait()


def test_a_waiting_lock_never_waits_for_a_run_of_its_own_process(tmp_path: Path) -> None:
    done: list[BaseException] = []

    def second() -> None:
        try:
            RunDirLock(tmp_path / "run", wait=True, poll_s=0.05).acquire()
        except RunDirBusyError as exc:
            done.append(exc)

    with RunDirLock(tmp_path / "run"):
        thread = threading.Thread(target=second)
        thread.start()
        thread.join(timeout=30)
    assert not thread.is_alive() and len(done) == 1 and "another run of this process" in str(done[0])

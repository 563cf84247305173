"""Runs of one sweep in separate processes share memory snapshots: a file lock makes concurrent
builders of the same snapshot build it once (the other process waits and loads it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memcore.snapshots import SnapshotStore


class _SlowMemory:
    """A stand-in memory whose build takes long enough for two processes to overlap."""

    def __init__(self, log: str) -> None:
        self.log = log

    def save(self, path: Path) -> None:
        (Path(path) / "memory.txt").write_text("built")

    def load(self, path: Path) -> None:
        assert (Path(path) / "memory.txt").read_text() == "built"

    def stats(self) -> dict[str, int]:
        return {"notes": 1}


def _build_snapshot(root: str, log: str, start: float) -> None:
    import time

    time.sleep(max(0.0, start - time.time()))  # both processes enter build_or_load together

    def build(system: _SlowMemory) -> dict[str, int]:
        with open(log, "a") as fh:
            fh.write(f"{os.getpid()}\n")
        time.sleep(1.5)
        return {}

    res = SnapshotStore(Path(root)).build_or_load(
        method="slow", fields={"k": 1}, make=lambda workdir: _SlowMemory(log), build=build
    )
    with open(log + ".reused", "a") as fh:
        fh.write(f"{int(res.reused)}\n")


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
def test_two_processes_build_one_snapshot_once(tmp_path: Path) -> None:
    import multiprocessing as mp
    import time

    ctx = mp.get_context("spawn")
    log = str(tmp_path / "builds.log")
    start = time.time() + 3.0
    procs = [ctx.Process(target=_build_snapshot, args=(str(tmp_path / "snaps"), log, start)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    assert len(Path(log).read_text().splitlines()) == 1  # the file lock made the second process wait and load
    assert sorted(Path(log + ".reused").read_text().split()) == ["0", "1"]

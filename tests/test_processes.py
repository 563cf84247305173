"""stop_process: SIGTERM, then SIGKILL when the child ignores it; nothing to do for one that has exited."""

from __future__ import annotations

import subprocess
import sys

from memcore.processes import stop_process

IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(60)"
)


def test_a_child_that_ignores_sigterm_is_killed() -> None:
    proc = subprocess.Popen([sys.executable, "-c", IGNORES_TERM], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"up"
    stop_process(proc, timeout_s=0.5)
    assert proc.returncode == -9


def test_a_child_that_stops_on_sigterm_exits_by_it_and_an_exited_one_is_left_alone() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stop_process(proc, timeout_s=10)
    assert proc.returncode == -15
    stop_process(proc, timeout_s=10)  # already reaped: no error, same code
    assert proc.returncode == -15

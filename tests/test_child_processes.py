"""A child a test starts must not outlive the test process (a killed pytest left a memcore-run holding the
machine-wide llama.cpp lock, which blocked the next suite for 50 minutes)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.support import REPO


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_a_child_of_a_killed_test_process_is_stopped() -> None:
    parent_code = (
        "import subprocess, sys, time; from tests.support import CHILD_OF_TEST; "
        "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], **CHILD_OF_TEST); "
        "print(c.pid, flush=True); time.sleep(120)"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    os.kill(parent.pid, signal.SIGKILL)  # what `kill -9` of pytest does: no finalizer runs
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    os.kill(child, signal.SIGKILL)
    pytest.fail(f"child {child} outlived its killed parent by 30 s")

"""Stopping a child process: politely first, then for sure."""

from __future__ import annotations

import subprocess


def stop_process(proc: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM ``proc`` if it still runs, wait up to ``timeout_s``, then SIGKILL it and reap it. No-op when it has
    already exited."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()

"""Run a command as a child and stop it when the process that started us dies.

``python -m memcore.llm.server_guard -- CMD…``. The local llama.cpp server runs under this guard,
so a run killed with SIGKILL (which cannot clean up) never leaves an orphaned server holding
2–3 GB of memory and both cores. SIGTERM/SIGINT to the guard stop the child too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from types import FrameType

from memcore.processes import stop_process


def main(argv: list[str]) -> int:
    if "--" not in argv:
        print("usage: python -m memcore.llm.server_guard -- CMD...", file=sys.stderr)
        return 2
    cmd = argv[argv.index("--") + 1 :]
    parent = os.getppid()
    child = subprocess.Popen(cmd)

    def stop(signum: int = signal.SIGTERM, frame: FrameType | None = None) -> None:
        stop_process(child, timeout_s=15)
        sys.exit(128 + signum if signum else 0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    while True:
        code = child.poll()
        if code is not None:
            # A child killed by signal N reports -N; exit as the shell would (128 + N), so whoever started the
            # guard can still tell a segfault from an error exit.
            return 128 - code if code < 0 else code
        if os.getppid() != parent:  # re-parented: whoever started us is gone
            stop(0)
        time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

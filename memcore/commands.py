"""The package's commands in one place: every console command with its entry point (``pyproject.toml``'s
``[project.scripts]`` lists the same, checked by a test), the logging policy they share, and the closing lines by
which one command leads to the next. Imports nothing of the harness, so any command may use it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

#: Console command → ``"module:function"``.
COMMANDS: dict[str, str] = {
    "memcore-run": "memcore.cli:run_main",
    "memcore-report": "memcore.report.cli:main",
    "memcore-judge-probe": "memcore.eval.probe:main",
    "memcore-rescore": "memcore.rescore:main",
    "memcore-cache": "memcore.cache_cli:main",
    "memcore-archive": "memcore.report.archive:main",
    "memcore-simulate": "memcore.testing.simulator:main",
    "memcore-view": "memcore.view.site:main",
    "memcore-import": "memcore.published.cli:main",
}

HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "sentence_transformers")


def quiet_http_logs(verbose: bool) -> None:
    """Per-request logging of the HTTP client and model-loading chatter (INFO lines, the weight-loading bar)
    off unless ``verbose``; warnings and errors are still shown."""
    for name in HTTP_LOGGERS:
        logging.getLogger(name).setLevel(logging.DEBUG if verbose else logging.WARNING)
    if not verbose:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # read when transformers is imported


def _shown(path: str | Path) -> str:
    """A path as a command line should show it: relative to the working directory when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def view_command(runs: Sequence[str | Path], out: str | Path) -> str:
    """The command line that views ``runs`` (one or two) into ``out``; for closing lines of other commands."""
    return "memcore-view " + " ".join(_shown(r) for r in runs) + f" --out {_shown(out)}"


def viewer_hint(runs: Sequence[str | Path], out: str | Path) -> str:
    """The closing line of ``memcore-run`` / ``memcore-report``: how to look at what they wrote item by item (the
    runs themselves when one or two, else the form of the command)."""
    if 1 <= len(runs) <= 2:
        return f"look at it item by item: {view_command(runs, out)}"
    return f"look at a run item by item (or two side by side): memcore-view RUN [RUN2] --out {_shown(out)}"

"""What the console commands share: the errors that are the user's to fix (one ``error:`` line, exit 2), the
logging policy for HTTP clients and model loading, and the closing line by which a command leads to ``memcore-view``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path

from memcore.config import ConfigError
from memcore.datasets.errors import DataError
from memcore.itemlog import ItemLogError
from memcore.llm.backbone import BackboneError
from memcore.llm.embedders import EmbedderError
from memcore.llm.local_model import ModelNotFoundError
from memcore.llm.local_server import LocalServerError
from memcore.pipeline.runlock import RunDirBusyError, RunDirError
from memcore.registry import UnknownNameError


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors that are the user's to fix: a command prints one line, exits 2 and keeps everything already written."""
    # the runner loads the evaluation package (nltk, scikit-learn, pandas): kept off --help and composition errors
    from memcore.runner import RunConflictError

    return (
        ConfigError, BackboneError, EmbedderError, ModelNotFoundError, LocalServerError, UnknownNameError, RunConflictError, ItemLogError,
        RunDirBusyError, RunDirError, DataError,
    )  # fmt: skip


#: Loggers that write one INFO line per HTTP request (304 lines between the progress bars of one make run;
#: openai 3.x sends through httpx2 / httpcore2) or per model load.
HTTP_LOGGERS = ("httpx", "httpx2", "httpcore", "httpcore2", "openai", "sentence_transformers")


#: The log line of the commands that log to the terminal (as Hydra's run log, ``configs/run.yaml``).
LOG_FORMAT = "[%(asctime)s][%(levelname)s] %(name)s: %(message)s"


def start_logging(level: int) -> None:
    """Log to the terminal at ``level`` in :data:`LOG_FORMAT`, with the HTTP client and model loading quiet."""
    logging.basicConfig(level=level, format=LOG_FORMAT)
    quiet_http_logs(False)


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

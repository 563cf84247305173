"""The common end of a table script: make the table, print it and write it to ``--out``, or one error line."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def emit_table(make: Callable[[], str], out: Path | None) -> int:
    """Print ``make()`` and write it to ``out`` (its directory made); a ValueError is one ``error:`` line, exit 2."""
    try:
        text = make()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    print(text, end="")
    return 0

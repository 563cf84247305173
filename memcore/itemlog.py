"""items.jsonl: one JSON line per QA item, appended atomically; a torn last line is dropped."""

from __future__ import annotations

import gzip
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


ITEMS = "items.jsonl"
#: An archived run's items (``memcore-archive``): the same lines, gzipped.
ITEMS_GZ = "items.jsonl.gz"


class ItemLogError(RuntimeError):
    pass


def read_run_items(run_dir: Path) -> list[dict[str, Any]]:
    """A run dir's item records: ``items.jsonl`` (a live run) or, when absent, ``items.jsonl.gz`` (archived)."""
    live = run_dir / ITEMS
    if live.exists():
        return read_items(live)
    packed = run_dir / ITEMS_GZ
    if not packed.exists():
        return []
    with gzip.open(packed, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def read_items(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """All complete lines of ``path``. A final line without newline or with invalid JSON is a torn
    write from a killed run: it is dropped (and cut from the file when ``repair``). Invalid JSON
    anywhere else means the file was edited or damaged: ItemLogError."""
    if not path.exists():
        return []
    data = path.read_bytes()
    items: list[dict[str, Any]] = []
    good_end = 0
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl == -1:
            log.warning("%s: dropping a torn last line (%d bytes) from an interrupted run", path, len(data) - pos)
            break
        line = data[pos:nl]
        if line.strip():
            try:
                items.append(json.loads(line))
            except json.JSONDecodeError:
                if data[nl + 1 :].strip():
                    raise ItemLogError(
                        f"{path}: line {len(items) + 1} is not valid JSON and is not the last line; the file is damaged. "
                        "Move it away and rerun (items are recomputed; cached LLM calls make that cheap)."
                    ) from None
                log.warning("%s: dropping an unparseable last line", path)
                break
        pos = nl + 1
        good_end = pos
    if repair and good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return items


class ItemWriter:
    """Thread-safe appender: each record is one ``os.write`` of a full line, then fsync."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            os.fsync(self._fd)

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> ItemWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

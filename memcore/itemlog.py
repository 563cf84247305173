"""items.jsonl: one JSON line per QA item, appended atomically; a torn last line is dropped.

An item id appears once: a run dir whose items repeat an id (two processes wrote it before run dirs were locked)
is refused by every reader that counts (:func:`require_unique_ids`), and ``python -m memcore.itemlog dedupe
RUN_DIR`` keeps each id's first line."""

from __future__ import annotations

import gzip
import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


ITEMS = "items.jsonl"
#: An archived run's items (``memcore-archive``): the same lines, gzipped.
ITEMS_GZ = "items.jsonl.gz"


class ItemLogError(RuntimeError):
    pass


class DuplicateItemsError(ItemLogError):
    """A run's items repeat an item id; the message says how many, the first one, and the fix."""


def duplicate_ids(items: list[dict[str, Any]]) -> dict[str, int]:
    """Item ids that occur more than once in ``items``, with their counts (in first-seen order)."""
    counts: dict[str, int] = {}
    for rec in items:
        key = str(rec.get("item_id"))
        counts[key] = counts.get(key, 0) + 1
    return {k: n for k, n in counts.items() if n > 1}


def require_unique_ids(items: list[dict[str, Any]], run_dir: Path) -> None:
    """Raise :class:`DuplicateItemsError` (one line, with the fix) when ``items`` of ``run_dir`` repeat an id."""
    dup = duplicate_ids(items)
    if dup:
        first, n = next(iter(dup.items()))
        extra = sum(dup.values()) - len(dup)
        raise DuplicateItemsError(
            f"{run_dir}: the items repeat {len(dup)} item ids ({extra} extra lines; first: {first}, {n} times), "
            "so every score would count them twice (two processes wrote this run dir); "
            f"keep each id's first line with `python -m memcore.itemlog dedupe {run_dir}`, "
            "then rerun the same memcore-run command to rewrite its metrics"
        )


def read_run_items(run_dir: Path) -> list[dict[str, Any]]:
    """A run dir's item records: ``items.jsonl`` (a live run) or, when absent, ``items.jsonl.gz`` (archived)."""
    live = run_dir / ITEMS
    if live.exists():
        return read_items(live)
    packed = run_dir / ITEMS_GZ
    if not packed.exists():
        return []
    try:
        with gzip.open(packed, "rt", encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ItemLogError(f"{packed}: not a readable item log ({exc}); re-archive the run") from None


def read_items(path: Path, *, repair: bool = False) -> list[dict[str, Any]]:
    """All complete lines of ``path``. A final line without newline or with invalid JSON is a torn
    write from a killed run: it is dropped (and cut from the file when ``repair``). Invalid JSON
    anywhere else means the file was edited or damaged: ItemLogError."""
    items, _ = read_items_and_tail(path, repair=repair)
    return items


def read_items_and_tail(path: Path, *, repair: bool = False) -> tuple[list[dict[str, Any]], int]:
    """:func:`read_items` and the number of bytes of a torn last line it dropped (0 when the file ends cleanly)."""
    if not path.exists():
        return [], 0
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
    return items, len(data) - good_end


class ItemWriter:
    """Thread-safe appender: each record is one ``os.write`` of a full line, so a killed process keeps every
    record it wrote (the kernel holds them). The file is fsynced at most every ``sync_every_s`` seconds and on
    close: an fsync per record cost about 7 ms, more than an LLM-free item takes, and only a crash of the machine
    itself can lose the records of the last interval, which a rerun then recomputes."""

    def __init__(self, path: Path, sync_every_s: float = 1.0) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._sync_every_s = sync_every_s
        self._synced = time.monotonic()
        self.written = 0  # records written by this writer

    def write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            os.write(self._fd, line)
            self.written += 1
            now = time.monotonic()
            if now - self._synced >= self._sync_every_s:
                os.fsync(self._fd)
                self._synced = now

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> ItemWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def dedupe(run_dir: Path) -> tuple[int, int, Path | None]:
    """Keep the first line of each item id in ``run_dir/items.jsonl``; the original is kept beside it as
    ``items.jsonl.dup-<time>``. Returns (lines removed, ids whose repeated lines differ, the backup or None)."""
    path = Path(run_dir) / ITEMS
    items = read_items(path)
    seen: dict[str, dict[str, Any]] = {}
    differ: set[str] = set()
    for rec in items:
        key = str(rec.get("item_id"))
        if key in seen:
            if seen[key] != rec:
                differ.add(key)
            continue
        seen[key] = rec
    removed = len(items) - len(seen)
    if not removed:
        return 0, 0, None
    backup = path.with_name(f"{ITEMS}.dup-{time.strftime('%Y%m%d-%H%M%S')}")
    tmp = path.with_name(f"{ITEMS}.tmp-{os.getpid()}")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in seen.values()))
    os.replace(path, backup)
    os.replace(tmp, path)
    return removed, len(differ), backup


def main(argv: list[str] | None = None) -> int:
    """``python -m memcore.itemlog dedupe RUN_DIR…``: drop repeated item ids (the first line of each is kept)."""
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m memcore.itemlog", description=main.__doc__)
    p.add_argument("command", choices=["dedupe"])
    p.add_argument("run_dirs", nargs="+", type=Path)
    args = p.parse_args(argv)
    for run_dir in args.run_dirs:
        if not (run_dir / ITEMS).is_file():
            print(f"error: {run_dir} has no {ITEMS}", file=sys.stderr)
            return 2
        try:
            removed, differ, backup = dedupe(run_dir)
        except ItemLogError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        if not removed:
            print(f"{run_dir}: no repeated item ids")
            continue
        note = f"; {differ} of them had lines that differ (the first was kept)" if differ else ""
        print(f"{run_dir}: removed {removed} repeated lines{note}; the original is {backup}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

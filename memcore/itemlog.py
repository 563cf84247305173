"""items.jsonl: one JSON line per QA item, appended atomically, and the one typed reader every reader uses.

Reading: :func:`read_log` (one file, live or gzipped) and :func:`read_run_log` (a run dir: ``items.jsonl``, else its
archive ``items.jsonl.gz``) return an :class:`ItemLog` of :class:`LoggedItem` records. A final line without newline
or with invalid JSON is a torn write from a killed run; invalid JSON anywhere else means the file was damaged
(:class:`ItemLogError`). What a reader may do with a torn or short log is decided here, once:

- the runner resuming a run drops a torn last line and cuts it from the file (``read_log(..., repair=True)``), so the
  item is redone;
- a reader that shows or packs a finished run's numbers (``memcore-report``, ``memcore-view``, ``memcore-archive``,
  ``--verify``) goes through :func:`read_finished_run`, which refuses a torn last line or fewer items than
  ``metrics.json`` counts in one line naming the fix (rerun to resume): its metrics were computed from other items,
  so a point and its interval would come from different item sets;
- ``memcore-rescore`` scores what is left and records what was missing (:attr:`ItemLog.torn_bytes`).

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
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcore.config_aliases import tokens_used

log = logging.getLogger(__name__)


ITEMS = "items.jsonl"
#: An archived run's items (``memcore-archive``): the same lines, gzipped.
ITEMS_GZ = "items.jsonl.gz"
#: The key every line must carry: readers index items by it.
REQUIRED_FIELDS: dict[str, type | tuple[type, ...]] = {"item_id": str}
#: Fields of :class:`~memcore.pipeline.record.ItemRecord` whose type the reader checks when present (readers group
#: by category and aggregate scores; a line that breaks them is damaged).
CHECKED_FIELDS: dict[str, type | tuple[type, ...]] = {"category": int, "scores": dict, "extra": dict}
#: Optional top-level fields a line may carry beyond :class:`~memcore.pipeline.record.ItemRecord`'s, with the type
#: their value must have when present (``None`` is always allowed). A writer that adds a field (an imported vendor
#: run's answer length, say) declares it here; readers get it with ``item.get(name)`` and the reader checks its type.
#: Keys declared nowhere are kept and readable the same way, unchecked.
OPTIONAL_FIELDS: dict[str, type | tuple[type, ...]] = {}


class ItemLogError(RuntimeError):
    pass


class DuplicateItemsError(ItemLogError):
    """A run's items repeat an item id; the message says how many, the first one, and the fix."""


class IncompleteItemLogError(ItemLogError):
    """A finished run's item log is torn or holds fewer items than its ``metrics.json`` counts."""


class LoggedItem(dict[str, Any]):
    """One line of an item log: the line as written (a dict: every key, optional and extra fields included, see
    :data:`OPTIONAL_FIELDS`; ``json.dumps`` writes it back unchanged) with typed accessors for the fields readers
    aggregate. Lines are checked when read (:func:`read_log`), so the accessors do not fail on a read item."""

    __slots__ = ()

    @property
    def item_id(self) -> str:
        return str(self["item_id"])

    @property
    def conv_id(self) -> str:
        return str(self.get("conv_id", ""))

    @property
    def category(self) -> int:
        return int(self["category"])

    @property
    def question(self) -> str:
        return str(self.get("question") or "")

    @property
    def gold(self) -> str | None:
        return self.get("gold")

    @property
    def answer(self) -> str | None:
        return self.get("answer")

    @property
    def evidence(self) -> list[str]:
        """The gold evidence ids (empty: the item has none, so recall and hit are not measured)."""
        return [str(d) for d in self.get("evidence") or []]

    @property
    def notes(self) -> list[dict[str, Any]]:
        """The notes shown to the answerer, in retrieval order (``dia_ids``, ``tokens``, ...)."""
        return list(self.get("notes") or [])

    @property
    def scores(self) -> dict[str, Any]:
        return dict(self.get("scores") or {})

    @property
    def recall(self) -> float | None:
        return self.get("recall")

    @property
    def hit(self) -> float | None:
        return self.get("hit")

    @property
    def retrieved_dia_ids(self) -> list[str]:
        return list(self.get("retrieved_dia_ids") or [])

    @property
    def tokens_used(self) -> int:
        """Tokens of the context handed to the answerer (``context_tokens`` in logs written before the rename)."""
        return tokens_used(self)

    @property
    def extra(self) -> dict[str, Any]:
        return dict(self.get("extra") or {})

    @property
    def judge(self) -> dict[str, Any] | None:
        """The judge's per-run labels (None: not judged)."""
        return self.get("judge")

    @property
    def audited(self) -> dict[str, Any] | None:
        """The scores against the audit's gold (``gold``, ``evidence``, ``scores``, ``recall``, ``hit``), or None
        when the audit overlay was off."""
        return self.get("audited")

    @property
    def usage(self) -> dict[str, dict[str, int]] | None:
        return self.get("usage")

    def under_audit(self) -> LoggedItem:
        """This item as scored against the audited gold (its ``scores``, ``recall`` and ``hit`` replaced by the
        audit's); itself when the audit overlay was off."""
        a = self.audited
        if a is None:
            return self
        return LoggedItem(self, scores=a["scores"], recall=a["recall"], hit=a["hit"])

    def to_json(self) -> dict[str, Any]:
        """The line as written (a plain copy)."""
        return dict(self)


def as_logged(record: Mapping[str, Any]) -> LoggedItem:
    """``record`` as a :class:`LoggedItem` (itself when it is one): for readers handed records built in memory."""
    return record if isinstance(record, LoggedItem) else LoggedItem(record)


def _checked(value: Any, path: Path, lineno: int) -> LoggedItem:
    """``value`` (line ``lineno`` of ``path``) as a :class:`LoggedItem`, or ItemLogError naming the line."""
    if not isinstance(value, dict):
        raise ItemLogError(f"{path}: line {lineno} is not a JSON object; the file is damaged. {_RERUN}")
    for key, kind in (*REQUIRED_FIELDS.items(), *CHECKED_FIELDS.items(), *OPTIONAL_FIELDS.items()):
        have = value.get(key)
        if key in REQUIRED_FIELDS and have is None:
            raise ItemLogError(f"{path}: line {lineno} has no {key}; the file is damaged. {_RERUN}")
        if have is not None and (not isinstance(have, kind) or (isinstance(have, bool) and kind is int)):
            raise ItemLogError(
                f"{path}: line {lineno}: {key} is {have!r}, not {getattr(kind, '__name__', kind)}; the file is damaged. "
                f"{_RERUN}"
            )
    return LoggedItem(value)


_RERUN = "Move it away and rerun (items are recomputed; cached LLM calls make that cheap)."


@dataclass(frozen=True)
class ItemLog:
    """An item log as read: its records in file order and the bytes of a torn last line that were dropped (0 when
    the file ends cleanly; always 0 for an archive)."""

    path: Path
    items: list[LoggedItem]
    torn_bytes: int = 0


def duplicate_ids(items: list[Mapping[str, Any]]) -> dict[str, int]:
    """Item ids that occur more than once in ``items``, with their counts (in first-seen order)."""
    counts: dict[str, int] = {}
    for rec in items:
        key = str(rec.get("item_id"))
        counts[key] = counts.get(key, 0) + 1
    return {k: n for k, n in counts.items() if n > 1}


def require_unique_ids(items: list[Mapping[str, Any]], run_dir: Path) -> None:
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


def read_run_log(run_dir: Path) -> ItemLog:
    """A run dir's item log: ``items.jsonl`` (a live run) or, when absent, ``items.jsonl.gz`` (archived); an empty
    log when it has neither."""
    live = Path(run_dir) / ITEMS
    if live.exists():
        return read_log(live)
    return read_log(Path(run_dir) / ITEMS_GZ)


def read_run_items(run_dir: Path) -> list[LoggedItem]:
    """The records of :func:`read_run_log` (a torn last line dropped, with a warning)."""
    return _warn_torn(read_run_log(run_dir)).items


def _warn_torn(got: ItemLog) -> ItemLog:
    if got.torn_bytes:
        log.warning("%s: dropping a torn last line (%d bytes) left by an interrupted run", got.path, got.torn_bytes)
    return got


def read_finished_run(run_dir: Path, expected: int | None) -> list[LoggedItem]:
    """The items of a finished run whose ``metrics.json`` counts ``expected`` items (None: not known), for a reader
    that shows or packs its numbers. A torn last line, or fewer or more items than ``expected``, is refused
    (:class:`IncompleteItemLogError`, one line with the fix): the metrics were computed from another item set.
    Repeated item ids are refused first (:class:`DuplicateItemsError`), since their fix differs."""
    got = read_run_log(run_dir)
    if got.torn_bytes:
        raise IncompleteItemLogError(
            f"{got.path}: the last line is torn ({got.torn_bytes} bytes of an interrupted write), so metrics.json "
            f"counts items the log no longer holds; rerun the run's command to resume it (finished items are kept, "
            "the torn one is redone), then read it again"
        )
    require_unique_ids(got.items, run_dir)
    if expected is not None and got.items and len(got.items) != expected:
        raise IncompleteItemLogError(
            f"{got.path}: holds {len(got.items)} items but metrics.json counts {expected}, so its numbers come from "
            "another item set (the log was cut or edited); rerun the run's command to resume it and rewrite its "
            "metrics, then read it again"
        )
    return got.items


def read_items(path: Path, *, repair: bool = False) -> list[LoggedItem]:
    """The records of :func:`read_log` (a torn last line dropped, with a warning)."""
    got = read_log(path, repair=repair)
    return (got if repair else _warn_torn(got)).items


def read_log(path: Path, *, repair: bool = False) -> ItemLog:
    """Every complete line of ``path`` (``*.gz``: an archive). A final line without newline or with invalid JSON is
    a torn write from a killed run: it is dropped, counted in :attr:`ItemLog.torn_bytes`, and cut from the file
    when ``repair``. Invalid JSON anywhere else, or a line that is not an item, means the file was edited or
    damaged: ItemLogError. A missing file is an empty log."""
    path = Path(path)
    if not path.exists():
        return ItemLog(path, [])
    if path.name.endswith(".gz"):
        return ItemLog(path, _read_archive(path))
    data = path.read_bytes()
    items: list[LoggedItem] = []
    good_end = 0
    pos = 0
    lineno = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl == -1:
            break
        line = data[pos:nl]
        lineno += 1
        if line.strip():
            try:
                value = json.loads(line)
            except json.JSONDecodeError:
                if data[nl + 1 :].strip():
                    raise ItemLogError(
                        f"{path}: line {lineno} is not valid JSON and is not the last line; the file is damaged. "
                        f"{_RERUN}"
                    ) from None
                break
            items.append(_checked(value, path, lineno))
        pos = nl + 1
        good_end = pos
    torn = len(data) - good_end
    if repair and torn:
        log.warning(
            "%s: cutting a torn last line (%d bytes) left by an interrupted run; its item is redone", path, torn
        )
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
    return ItemLog(path, items, torn)


def _read_archive(path: Path) -> list[LoggedItem]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            lines = [line for line in fh if line.strip()]
        return [_checked(json.loads(line), path, i) for i, line in enumerate(lines, 1)]
    except (OSError, EOFError, zlib.error, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ItemLogError(f"{path}: not a readable item log ({exc}); re-archive the run") from None


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

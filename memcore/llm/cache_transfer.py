"""Carry the response cache from one machine to another: export it to a gzipped JSON-lines file that can be
committed beside a measurement, and merge such a file into another machine's cache.

A long LLM measurement resumes from the response cache (``<results root>/cache/llm.sqlite``), but that cache lives
on the machine that made it. An export makes an interrupted measurement resumable on a fresh machine: import it, run
the same command, and every call already made is a cache hit.

File format (version 1): the first line is a header ``{"format": "memcore-response-cache", "version": 1,
"rows": N}``; each further line is one entry ``{"k": <cache key>, "v": <stored reply object>}``, in key order. The
gzip header carries no timestamp, so exporting the same cache twice gives the same bytes.

Import never overwrites: an entry whose key is new is added; an entry already present with the same reply is
skipped; an entry present with a *different* reply keeps the local one and is counted as a conflict (a greedy or
seeded reply that differs across machines; it is logged, not hidden). A file that fails validation writes nothing.
:func:`fold_entries` is that rule; ``memcore-cache merge`` folds cache shards with it too
(:mod:`memcore.llm.cache_shards`).
"""

from __future__ import annotations

import dataclasses
import gzip
import io
import json
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from memcore.llm.cache import KVStore, ResponseCache

log = logging.getLogger(__name__)

FORMAT = "memcore-response-cache"
_CONFLICTS_LOGGED = 5  # conflicts logged one by one; the rest in one line (their count is returned anyway)
VERSION = 1


class CacheTransferError(ValueError):
    """An export file that cannot be read as this format; the message says which line and why."""


@dataclasses.dataclass(frozen=True)
class ImportCounts:
    """What an import did: ``added`` new entries, ``same`` already present and equal, ``conflicts`` present with
    another reply (the local one kept)."""

    added: int
    same: int
    conflicts: int


def _stored_reply(raw: bytes) -> dict[str, Any] | None:
    """:meth:`ResponseCache.decode`, with None also for bytes that are not UTF-8 JSON."""
    try:
        return ResponseCache.decode(raw)
    except ValueError:
        return None


def export_cache(cache: ResponseCache, out: Path) -> int:
    """Write every entry of ``cache`` to ``out`` (gzipped JSON lines, key order); returns the number of entries.

    Entries that do not decode as a stored reply are left out with a warning (the cache itself ignores them too)."""
    rows: list[tuple[str, dict[str, Any]]] = []
    unreadable = 0
    for key, raw in cache.kv.items():
        value = _stored_reply(raw)
        if value is None:
            unreadable += 1
        else:
            rows.append((key, value))
    if unreadable:
        log.warning("left out %d unreadable cache entries of %s", unreadable, cache.kv.path)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    with (
        open(partial, "wb") as raw_fh,
        gzip.GzipFile(fileobj=raw_fh, mode="wb", mtime=0, filename="") as gz,
        io.TextIOWrapper(gz, encoding="utf-8", newline="\n") as fh,
    ):
        fh.write(json.dumps({"format": FORMAT, "version": VERSION, "rows": len(rows)}) + "\n")
        for key, value in rows:
            fh.write(json.dumps({"k": key, "v": value}, ensure_ascii=False, sort_keys=True) + "\n")
    partial.replace(out)
    return len(rows)


def read_export(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The entries of an export file, validated whole; raises :class:`CacheTransferError` naming the first bad line."""
    if not path.is_file():
        raise CacheTransferError(f"{path}: no such file (make one with `memcore-cache export --out {path.name}`)")
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise CacheTransferError(f"{path}: not a gzipped memcore cache export ({exc})") from exc
    if not lines:
        raise CacheTransferError(f"{path}: empty file, expected a {FORMAT} header line")
    try:
        header = json.loads(lines[0])
    except json.JSONDecodeError as exc:
        raise CacheTransferError(f"{path}:1: the header is not JSON ({exc.msg})") from exc
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise CacheTransferError(f"{path}:1: not a {FORMAT} file")
    if header.get("version") != VERSION:
        raise CacheTransferError(f"{path}:1: version {header.get('version')!r}; this memcore reads version {VERSION}")
    rows: list[tuple[str, dict[str, Any]]] = []
    for lineno, line in enumerate(lines[1:], start=2):
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CacheTransferError(f"{path}:{lineno}: not JSON ({exc.msg})") from exc
        key, value = (entry.get("k"), entry.get("v")) if isinstance(entry, dict) else (None, None)
        if not isinstance(key, str) or not key or not isinstance(value, dict) or "text" not in value:
            raise CacheTransferError(f'{path}:{lineno}: expected {{"k": <key>, "v": {{"text": ...}}}}')
        rows.append((key, value))
    if header.get("rows") != len(rows):
        raise CacheTransferError(
            f"{path}: the header promises {header.get('rows')} entries, the file holds {len(rows)}"
        )
    return rows


def same_reply(local: bytes, incoming: bytes) -> bool:
    """Whether two stored replies are the same reply (equal as decoded objects, not as bytes)."""
    return _stored_reply(local) == _stored_reply(incoming)


def fold_entries(
    kv: KVStore, entries: Iterable[tuple[str, bytes]], *, equal: Callable[[bytes, bytes], bool], source: str
) -> ImportCounts:
    """Add ``entries`` (unique keys) to ``kv`` without overwriting, in one transaction: a new key is added, a key
    present with an ``equal`` value is counted as the same, one present with another value keeps the local value
    and is counted (and logged, naming ``source``) as a conflict."""
    new: list[tuple[str, bytes]] = []
    same = conflicts = 0
    for key, raw in entries:
        local = kv.peek(key)
        if local is None:
            new.append((key, raw))
        elif equal(local, raw):
            same += 1
        else:
            conflicts += 1
            if conflicts <= _CONFLICTS_LOGGED:
                log.warning("cache entry %s differs in %s; keeping the local reply", key[:12], source)
    if conflicts > _CONFLICTS_LOGGED:
        log.warning("%d more entries differ in %s; the local replies kept", conflicts - _CONFLICTS_LOGGED, source)
    kv.put_many(new, replace=False)
    return ImportCounts(added=len(new), same=same, conflicts=conflicts)


def import_cache(cache: ResponseCache, path: Path) -> ImportCounts:
    """Merge the export file at ``path`` into ``cache`` without overwriting (see the module doc); one transaction,
    after the whole file has been validated."""
    rows = read_export(path)
    return fold_entries(
        cache.kv, ((key, ResponseCache.encode(value)) for key, value in rows), equal=same_reply, source=str(path)
    )

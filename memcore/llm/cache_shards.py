"""Where a run's caches live and how they are written, so that jobs on several nodes can share one cache directory.

``cache_mode`` (a run-level knob) picks the layout of ``paths.cache``:

* ``shared``: one SQLite file per cache (``llm.sqlite``, ``embeddings.sqlite``) in WAL mode, read and written by
  every process. WAL keeps its index in shared memory, which works only on one host, so ``shared`` refuses a
  directory on a network file system (:func:`memcore.llm.fs_kind.network_fs_of`).
* ``sharded``: each job writes its own shard ``shards/<cache>/<job id>.sqlite`` (rollback journal, no shared
  memory, never two hosts on one file: :func:`job_id`) and reads through to the shared file, opened read-only (no
  ``-wal`` / ``-shm`` files are made). A lookup asks the shard, then the shared file; writes go to the shard only.
  ``memcore-cache merge`` folds the shards into the shared files after the sweep (:func:`merge_shards`), with the
  import rule of :func:`memcore.llm.cache_transfer.fold_entries`: nothing is overwritten, conflicts are counted.
* ``auto`` (default): ``sharded`` on a network file system, else ``shared``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from memcore.errors import ConfigError
from memcore.llm.cache import (
    EMBEDDINGS_FILE,
    EMBEDDINGS_TABLE,
    RESPONSE_CACHE_FILE,
    RESPONSE_TABLE,
    Journal,
    KVStore,
    SQLiteKV,
)
from memcore.llm.cache_transfer import ImportCounts, fold_entries, same_reply
from memcore.llm.fs_kind import network_fs_of
from memcore.registry import unknown_name_message

log = logging.getLogger(__name__)

CACHE_MODES: tuple[str, ...] = ("auto", "shared", "sharded")
SHARDS_DIR = "shards"


@dataclass(frozen=True)
class CacheFile:
    """One cache of a run's cache directory: its shared file, its table, and when two stored values are equal."""

    file: str
    table: str
    equal: Callable[[bytes, bytes], bool]


def _same_bytes(a: bytes, b: bytes) -> bool:
    return a == b


#: The caches a run keeps under ``paths.cache`` (the ones :func:`merge_shards` folds).
CACHE_FILES: tuple[CacheFile, ...] = (
    CacheFile(RESPONSE_CACHE_FILE, RESPONSE_TABLE, same_reply),
    CacheFile(EMBEDDINGS_FILE, EMBEDDINGS_TABLE, _same_bytes),
)


def shard_dir(root: Path, file: str) -> Path:
    """Where the job shards of the cache ``file`` (e.g. ``llm.sqlite``) under ``root`` live."""
    return root / SHARDS_DIR / Path(file).stem


def pending_shards(root: Path, file: str) -> list[Path]:
    """The shards of the cache ``file`` under ``root`` not merged yet, in name order."""
    where = shard_dir(root, file)
    return sorted(where.glob("*.sqlite")) if where.is_dir() else []


def check_cache_mode(value: object) -> str:
    """``value`` when it is a cache mode, else one ConfigError line naming the knob, the close matches and the modes."""
    if value not in CACHE_MODES:
        raise ConfigError(f"cache_mode={value!r}: " + unknown_name_message("cache mode", str(value), list(CACHE_MODES)))
    return str(value)


def job_id(env: Mapping[str, str] | None = None, *, host: str | None = None) -> str:
    """A filename-safe name of this job's shard: the SLURM array job and task, else the SLURM job (plus the task
    rank when a job runs several tasks), else the host name.

    Two jobs running at once on different hosts never share a name, which is what SQLite over a network file
    system needs. The name is stable across a rerun (a requeued SLURM job, an interrupted ``memcore-run`` started
    again on the same host), so the rerun reads the replies it already paid for from its shard; processes of one
    host that share a shard (a job's build workers, two runs on one machine) are coordinated by POSIX locks, as the
    snapshot locks are. (A per-process name would be unique too, but every rerun would start from an empty shard.)"""
    env = os.environ if env is None else env
    host = host if host is not None else socket.gethostname()
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        name = f"slurm-{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    elif env.get("SLURM_JOB_ID"):
        name = f"slurm-{env['SLURM_JOB_ID']}"
    else:
        name = f"host-{host}"
    if env.get("SLURM_JOB_ID") and int(env.get("SLURM_NTASKS", "1") or "1") > 1:
        name += f"-task{env.get('SLURM_PROCID', '0')}"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def shared_journal(path: Path, mounts_text: str | None = None) -> Journal:
    """The journal mode for a one-process writer of a shared cache file (``memcore-cache``): WAL on a local file
    system, the rollback journal on a network one (where the jobs read it without shared memory)."""
    return "delete" if network_fs_of(path, mounts_text) else "wal"


def _is_wal(path: Path) -> bool:
    """Whether the SQLite file at ``path`` is in WAL mode (its header's read/write version bytes are 2)."""
    try:
        with open(path, "rb") as fh:
            header = fh.read(20)
    except OSError:
        return False
    return len(header) == 20 and header[18] == 2


class ReadOnlyKV:
    """The shared cache file seen from a shard: read-only, opened without creating any file (``mode=ro``; a
    WAL-mode file on a network file system also ``immutable=1``, so no ``-shm`` is made there). Missing file or
    table: every lookup misses. A file that cannot be read is logged once and then misses (the shard still works)."""

    def __init__(self, path: Path, table: str, *, network: bool) -> None:
        self.path = Path(path)
        self.table = table
        self.network = network
        self._local = threading.local()
        self._broken: str | None = None

    def _open(self) -> sqlite3.Connection | None:
        conn = getattr(self._local, "conn", None)
        if conn is not None or self._broken is not None or not self.path.is_file():
            return conn
        uri = self.path.absolute().as_uri() + "?mode=ro"
        if self.network and _is_wal(self.path):
            uri += "&immutable=1"
            wal = self.path.with_name(self.path.name + "-wal")
            if wal.is_file() and wal.stat().st_size > 0:
                log.warning(
                    "%s has a non-empty %s; its newest entries are not read (run memcore-cache merge)",
                    self.path,
                    wal.name,
                )
        conn = sqlite3.connect(uri, uri=True, timeout=60.0, check_same_thread=False)
        self._local.conn = conn
        return conn

    def peek(self, key: str) -> bytes | None:
        try:
            conn = self._open()
            row = None if conn is None else conn.execute(f"SELECT v FROM {self.table} WHERE k=?", (key,)).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            self._give_up(exc)
            return None
        except sqlite3.DatabaseError as exc:
            self._give_up(exc)
            return None
        return None if row is None else bytes(row[0])

    def _give_up(self, exc: sqlite3.Error) -> None:
        if self._broken is None:
            self._broken = str(exc)
            log.warning("cannot read the shared cache %s (%s); this job uses its own shard only", self.path, exc)

    def items(self) -> Iterator[tuple[str, bytes]]:
        conn = self._open()
        if conn is None:
            return
        try:
            rows = conn.execute(f"SELECT k, v FROM {self.table} ORDER BY k").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return
            raise
        for key, value in rows:
            yield str(key), bytes(value)


class ShardedKV:
    """A job's shard (written) in front of the shared file (read-only): see the module doc. Counts hits and misses
    over both."""

    def __init__(self, shard: SQLiteKV, shared: ReadOnlyKV) -> None:
        self.shard = shard
        self.shared = shared
        self.path = shard.path
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()

    def peek(self, key: str) -> bytes | None:
        value = self.shard.peek(key)
        return value if value is not None else self.shared.peek(key)

    def get(self, key: str) -> bytes | None:
        value = self.peek(key)
        with self._count_lock:
            if value is None:
                self.misses += 1
            else:
                self.hits += 1
        return value

    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every pair of shard and shared file, in key order; the shard's value where both hold a key."""
        merged = dict(self.shared.items())
        merged.update(self.shard.items())
        for key in sorted(merged):
            yield key, merged[key]

    def put(self, key: str, value: bytes) -> None:
        self.shard.put(key, value)

    def put_many(self, items: list[tuple[str, bytes]], *, replace: bool = True) -> None:
        self.shard.put_many(items, replace=replace)

    def __len__(self) -> int:
        return sum(1 for _ in self.items())

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


@dataclass(frozen=True)
class CacheLayout:
    """How a run opens the caches under ``root`` (picklable: build worker processes get it). ``network_fs``: the
    network file-system type of ``root`` (None: local); ``job``: this job's shard name (:func:`job_id`)."""

    root: Path
    sharded: bool
    job: str
    network_fs: str | None = None

    def shard_path(self, file: str) -> Path:
        return shard_dir(self.root, file) / f"{self.job}.sqlite"

    def open(self, file: str, table: str) -> KVStore:
        """The store of the cache ``file`` (e.g. ``llm.sqlite``): the shared file in WAL mode, or this job's shard
        reading through to it."""
        shared = self.root / file
        if not self.sharded:
            return SQLiteKV(shared, table=table)
        return ShardedKV(
            SQLiteKV(self.shard_path(file), table=table, journal="delete"),
            ReadOnlyKV(shared, table, network=self.network_fs is not None),
        )

    def describe(self) -> str:
        """One line: which layout and why."""
        where = f"{self.root} is on {self.network_fs}" if self.network_fs else f"{self.root} is on a local file system"
        if not self.sharded:
            return f"cache: shared (one SQLite file per cache in WAL mode; {where})"
        return (
            f"cache: sharded ({where}); this job writes {self.root / SHARDS_DIR}/*/{self.job}.sqlite and reads the"
            f" shared files read-only; fold the shards in with `memcore-cache merge --cache-dir {self.root}` after the sweep"
        )


def resolve_layout(
    root: Path, mode: str, *, mounts_text: str | None = None, env: Mapping[str, str] | None = None
) -> CacheLayout:
    """The layout ``cache_mode=mode`` gives ``root`` (see the module doc); raises ConfigError for an unknown mode
    or for ``shared`` on a network file system. ``mounts_text`` / ``env`` stand in for ``/proc/mounts`` and
    ``os.environ`` (tests)."""
    mode = check_cache_mode(mode)
    fs = network_fs_of(Path(root), mounts_text)
    if mode == "shared" and fs is not None:
        raise ConfigError(
            f"cache_mode=shared: {root} is on a network file system ({fs}), where SQLite's WAL mode can corrupt or "
            "lock the cache; use cache_mode=sharded (or auto) and run `memcore-cache merge` after the sweep"
        )
    sharded = mode == "sharded" or (mode == "auto" and fs is not None)
    return CacheLayout(Path(root), sharded, job_id(env), fs)


# ---------------------------------------------------------------------------------------------- merge
@dataclass(frozen=True)
class ShardResult:
    """What merging one shard did: its counts, or the ``error`` that left it in place; ``deleted`` once its
    entries were committed to the shared file and it was removed."""

    shard: Path
    counts: ImportCounts | None = None
    error: str | None = None
    deleted: bool = False


def _read_shard(path: Path, table: str) -> list[tuple[str, bytes]]:
    """Every entry of a shard, after an integrity check; raises ``sqlite3.DatabaseError`` with the reason.

    Opened read-write so that SQLite rolls back a transaction a killed job left in its journal."""
    with contextlib.closing(sqlite3.connect(path, timeout=60.0)) as conn:
        row = conn.execute("PRAGMA quick_check").fetchone()
        if row is None or row[0] != "ok":
            raise sqlite3.DatabaseError(f"integrity check: {row[0] if row else 'no answer'}")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (table,)).fetchone() is None:
            return []  # a job that died before its first write
        return [(str(k), bytes(v)) for k, v in conn.execute(f"SELECT k, v FROM {table} ORDER BY k")]


def merge_shards(root: Path, *, keep: bool = False, mounts_text: str | None = None) -> dict[str, list[ShardResult]]:
    """Fold every shard under ``root/shards`` into its shared file (``llm.sqlite``, ``embeddings.sqlite``) with the
    import rule (:func:`~memcore.llm.cache_transfer.fold_entries`: never overwrite, count conflicts), one
    transaction per shard; delete a shard only after its entries are committed (never with ``keep``). A shard
    that cannot be read is reported (``error``) and left in place. Idempotent. Returns, per cache file, the
    result of each of its shards (caches without shards are left out).

    Run it when the sweep's jobs have ended: a job still writing a shard loses (as cache entries only) what it
    writes after the merge read the shard."""
    results: dict[str, list[ShardResult]] = {}
    journal = shared_journal(root, mounts_text)
    for cache in CACHE_FILES:
        shards = pending_shards(root, cache.file)
        if not shards:
            continue
        target = SQLiteKV(root / cache.file, table=cache.table, journal=journal)
        done: list[ShardResult] = []
        for shard in shards:
            try:
                entries = _read_shard(shard, cache.table)
            except sqlite3.DatabaseError as exc:
                log.warning("shard %s is unreadable (%s); left in place", shard, exc)
                done.append(ShardResult(shard, error=str(exc)))
                continue
            counts = fold_entries(target, entries, equal=cache.equal, source=f"shard {shard.name}")
            deleted = False
            if not keep:
                shard.unlink()
                shard.with_name(shard.name + "-journal").unlink(missing_ok=True)
                deleted = True
            done.append(ShardResult(shard, counts=counts, deleted=deleted))
        results[cache.file] = done
    return results

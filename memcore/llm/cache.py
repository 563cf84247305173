"""SQLite key-value caches shared safely by threads and processes (WAL, busy timeout), and the response-cache
layer of a backbone stack (:class:`CachedBackbone`, keyed by :func:`response_key`). Where the cache files live and
which journal mode they use on a cluster (one shared file, or one shard per job): :mod:`memcore.llm.cache_shards`.

A corrupted database is detected on open (``PRAGMA quick_check``), moved aside with a logged
warning and rebuilt empty — never silently used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from memcore.interfaces import Completion, Message
from memcore.llm.layer import Layer, Passthrough

log = logging.getLogger(__name__)

_INIT_ATTEMPTS = 12


class CacheCorruptError(RuntimeError):
    pass


def stable_hash(obj: Any) -> str:
    """sha256 of the canonical JSON of ``obj`` (sorted keys)."""
    blob = json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class KVStore(Protocol):
    """What the caches need of a persistent map ``key -> bytes`` (:class:`SQLiteKV`, or a shard reading through to
    a shared file: :class:`memcore.llm.cache_shards.ShardedKV`)."""

    path: Path

    def get(self, key: str) -> bytes | None: ...
    def peek(self, key: str) -> bytes | None: ...
    def items(self) -> Iterator[tuple[str, bytes]]: ...
    def put(self, key: str, value: bytes) -> None: ...
    def put_many(self, items: list[tuple[str, bytes]], *, replace: bool = True) -> None: ...
    def __len__(self) -> int: ...
    def stats(self) -> dict[str, int]: ...


Journal = Literal["wal", "delete"]


class SQLiteKV:
    """A tiny persistent map ``key -> bytes``. One connection per thread. ``journal="wal"`` (default) lets several
    processes of one host read and write concurrently; ``"delete"`` (the rollback journal) needs no shared memory,
    for a file on a network file system that one job writes (a cache shard)."""

    def __init__(self, path: Path, table: str = "kv", *, journal: Journal = "wal") -> None:
        self.path = Path(path)
        self.table = table
        self.journal = journal
        self._local = threading.local()
        self._init_lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._check_or_rebuild()
        self.hits = 0
        self.misses = 0
        self._count_lock = threading.Lock()

    def _connect(self) -> sqlite3.Connection:
        # Switching to WAL needs an exclusive lock and SQLite may answer SQLITE_BUSY at once
        # (without consulting busy_timeout) while another thread/process opens the same new file;
        # WAL is persistent, so only switch when needed and retry with backoff.
        with self._init_lock:
            last: sqlite3.OperationalError | None = None
            for attempt in range(_INIT_ATTEMPTS):
                conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
                try:
                    conn.execute("PRAGMA busy_timeout=60000")
                    mode = conn.execute("PRAGMA journal_mode").fetchone()
                    if mode is None or str(mode[0]).lower() != self.journal:
                        conn.execute(f"PRAGMA journal_mode={self.journal.upper()}")
                    # NORMAL is durable enough with WAL; the rollback journal needs FULL to survive a crashed node.
                    conn.execute(f"PRAGMA synchronous={'NORMAL' if self.journal == 'wal' else 'FULL'}")
                    conn.execute(f"CREATE TABLE IF NOT EXISTS {self.table} (k TEXT PRIMARY KEY, v BLOB NOT NULL)")
                    return conn
                except sqlite3.OperationalError as exc:
                    conn.close()
                    if "locked" not in str(exc) and "busy" not in str(exc):
                        raise
                    last = exc
                    log.warning("cache open retry %d on %s: %s", attempt + 1, self.path, exc)
                    time.sleep(min(0.05 * 2**attempt, 2.0))
            assert last is not None
            raise last

    def _check_or_rebuild(self) -> None:
        if not self.path.exists():
            return
        try:
            conn = sqlite3.connect(self.path, timeout=60.0)
            row = conn.execute("PRAGMA quick_check").fetchone()
            conn.close()
            ok = row is not None and row[0] == "ok"
            reason = row[0] if row else "no answer"
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                # Another process is writing; a busy database is not a corrupt one.
                log.info("cache %s busy during integrity check; skipping it", self.path)
                return
            ok, reason = False, str(exc)
        except sqlite3.DatabaseError as exc:
            ok, reason = False, str(exc)
        if not ok:
            aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
            self.path.rename(aside)
            for suffix in ("-wal", "-shm"):
                side = self.path.with_name(self.path.name + suffix)
                if side.exists():
                    side.rename(aside.with_name(aside.name + suffix))
            log.warning(
                "cache %s failed its integrity check (%s); moved to %s and starting empty", self.path, reason, aside
            )

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def get(self, key: str) -> bytes | None:
        row = self.conn.execute(f"SELECT v FROM {self.table} WHERE k=?", (key,)).fetchone()
        with self._count_lock:
            if row is None:
                self.misses += 1
            else:
                self.hits += 1
        return None if row is None else bytes(row[0])

    def peek(self, key: str) -> bytes | None:
        """The stored value, without counting a hit or a miss."""
        row = self.conn.execute(f"SELECT v FROM {self.table} WHERE k=?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def items(self) -> Iterator[tuple[str, bytes]]:
        """Every ``(key, value)`` pair, in key order."""
        for key, value in self.conn.execute(f"SELECT k, v FROM {self.table} ORDER BY k"):
            yield str(key), bytes(value)

    def put(self, key: str, value: bytes) -> None:
        for attempt in range(5):
            try:
                self.conn.execute(f"INSERT OR REPLACE INTO {self.table} (k, v) VALUES (?, ?)", (key, value))
                return
            except sqlite3.OperationalError as exc:  # "database is locked" beyond busy_timeout
                if attempt == 4:
                    raise
                log.warning("cache write retry %d on %s: %s", attempt + 1, self.path, exc)
                time.sleep(0.5 * (attempt + 1))

    def put_many(self, items: list[tuple[str, bytes]], *, replace: bool = True) -> None:
        """Write many pairs in one transaction (one fsync instead of one per row); ``replace=False`` keeps a value
        already stored under a key."""
        if not items:
            return
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        for attempt in range(5):
            try:
                with self._txn():
                    self.conn.executemany(f"{verb} INTO {self.table} (k, v) VALUES (?, ?)", items)
                return
            except sqlite3.OperationalError as exc:
                if attempt == 4:
                    raise
                log.warning("cache write retry %d on %s: %s", attempt + 1, self.path, exc)
                time.sleep(0.5 * (attempt + 1))

    @contextlib.contextmanager
    def _txn(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def __len__(self) -> int:
        return int(self.conn.execute(f"SELECT COUNT(*) FROM {self.table}").fetchone()[0])

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses}


RESPONSE_CACHE_FILE = "llm.sqlite"  # the response cache's file name under a run's ``paths.cache``
RESPONSE_TABLE = "responses"
EMBEDDINGS_FILE = "embeddings.sqlite"  # the embedding cache's (memcore.llm.embedders.CachedEmbedder)
EMBEDDINGS_TABLE = "embeddings"


class ResponseCache:
    """Chat responses keyed on model + messages + sampling params + prompt version."""

    def __init__(self, store: str | Path | KVStore) -> None:
        """``store``: the cache file (one :class:`SQLiteKV` in WAL mode), or an opened store
        (:meth:`memcore.llm.cache_shards.CacheLayout.open`)."""
        self.kv: KVStore = SQLiteKV(Path(store), table=RESPONSE_TABLE) if isinstance(store, str | Path) else store

    @staticmethod
    def key(payload: dict[str, Any]) -> str:
        return stable_hash(payload)

    @staticmethod
    def encode(value: dict[str, Any]) -> bytes:
        """The stored bytes of a reply."""
        return json.dumps(value, ensure_ascii=False).encode("utf-8")

    @staticmethod
    def decode(raw: bytes) -> dict[str, Any] | None:
        """The reply stored as ``raw``, or None when it is JSON of another shape (no object with ``text``);
        raises ``ValueError`` (UnicodeDecodeError, JSONDecodeError) when ``raw`` is not UTF-8 JSON."""
        value = json.loads(raw.decode("utf-8"))
        return value if isinstance(value, dict) and "text" in value else None

    def get(self, key: str) -> dict[str, Any] | None:
        raw = self.kv.get(key)
        if raw is None:
            return None
        try:
            return self.decode(raw)
        except ValueError:
            log.warning("cache entry %s is unreadable; ignoring it and calling the model", key[:12])
            return None

    def put(self, key: str, value: dict[str, Any]) -> None:
        self.kv.put(key, self.encode(value))

    def stats(self) -> dict[str, int]:
        return self.kv.stats()


def response_key(
    messages: Sequence[Message],
    *,
    model: str,
    temperature: float,
    max_tokens: int,
    json: bool,
    seed: int | None,
    prompt_version: str,
    extra_body: Mapping[str, Any],
    top_p: float | None = None,
) -> str:
    """The response-cache key of one request: :func:`stable_hash` of
    ``{model, messages, temperature, max_tokens, json, seed, prompt_version, extra_body}`` plus ``top_p`` only when
    given (so keys of calls without it stay what they were). ``json`` is whether JSON mode was actually sent
    (asked for and the transport's ``json_mode`` on). Changing this changes every key: existing caches stop hitting."""
    payload: dict[str, Any] = {
        "model": model,
        "messages": [dict(m) for m in messages],
        "temperature": temperature,
        "max_tokens": max_tokens,
        "json": json,
        "seed": seed,
        "prompt_version": prompt_version,
        "extra_body": dict(extra_body),
    }
    if top_p is not None:
        payload["top_p"] = float(top_p)
    return ResponseCache.key(payload)


def cacheable(temperature: float, seed: int | None) -> bool:
    """Only a request whose reply is a function of the request is cached: greedy, or sampled with a seed."""
    return temperature == 0.0 or seed is not None


class KeyedTransport(Layer, Protocol):
    """What the cache layer needs of the transport below it: the request fields it adds (part of the key)."""

    json_mode: bool
    extra_body: dict[str, Any]


class CachedBackbone(Passthrough):
    """Cache layer: serves :func:`cacheable` requests from ``cache`` (a hit: ``cached=True``, latency 0, the stored
    token counts) and stores the replies it had to fetch; other requests pass straight to ``inner``."""

    def __init__(self, inner: KeyedTransport, cache: ResponseCache) -> None:
        self.inner = inner
        self.cache = cache
        self.model = inner.model
        self.name = inner.name

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json: bool = False,
        seed: int | None = None,
        prompt_version: str = "",
        top_p: float | None = None,
    ) -> Completion:
        request: dict[str, Any] = {"temperature": temperature, "max_tokens": max_tokens, "seed": seed, "top_p": top_p}
        if not cacheable(temperature, seed):
            return self.inner.complete(messages, stage=stage, json=json, prompt_version=prompt_version, **request)
        key = response_key(
            messages,
            model=self.model,
            json=bool(json and self.inner.json_mode),
            prompt_version=prompt_version,
            extra_body=self.inner.extra_body,
            **request,
        )
        hit = self.cache.get(key)
        if hit is not None:
            return Completion(
                text=hit["text"],
                prompt_tokens=int(hit.get("prompt_tokens", 0)),
                completion_tokens=int(hit.get("completion_tokens", 0)),
                latency_s=0.0,
                cached=True,
                model=self.model,
            )
        completion = self.inner.complete(messages, stage=stage, json=json, prompt_version=prompt_version, **request)
        self.cache.put(
            key,
            {
                "text": completion.text,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
            },
        )
        return completion

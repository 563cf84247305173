"""``memcore-cache``: move the LLM response cache between machines, and fold a sweep's cache shards in.

    memcore-cache export --out results/measured/cache/NAME.jsonl.gz   # every reply in the cache
    memcore-cache import results/measured/cache/NAME.jsonl.gz         # merge into this machine's cache
    memcore-cache stats
    memcore-cache merge [--cache-dir DIR] [--keep]                    # after a sharded sweep (cache_mode)

The cache is ``$MEMCORE_RESULTS/cache/llm.sqlite`` (``results/cache/llm.sqlite`` when ``MEMCORE_RESULTS`` is unset),
the file ``memcore-run`` reads; ``--cache`` names another. After an import, rerunning the interrupted command
replays every call already made. Format and merge rules: :mod:`memcore.llm.cache_transfer`; shards:
:mod:`memcore.llm.cache_shards`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.llm.cache import RESPONSE_CACHE_FILE, RESPONSE_TABLE, ResponseCache, SQLiteKV
from memcore.llm.cache_shards import SHARDS_DIR, merge_shards, pending_shards, shared_journal
from memcore.llm.cache_transfer import CacheTransferError, export_cache, import_cache


def default_cache_dir() -> Path:
    """The cache directory (``paths.cache``) ``memcore-run`` uses with the default ``paths`` config."""
    return Path(os.environ.get("MEMCORE_RESULTS") or "results") / "cache"


def default_cache_path() -> Path:
    """The response cache ``memcore-run`` uses with the default ``paths`` config."""
    return default_cache_dir() / RESPONSE_CACHE_FILE


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memcore-cache", description="Export, import and count LLM response-cache entries."
    )
    p.add_argument(
        "--cache", type=Path, default=None, help="the cache file (default: $MEMCORE_RESULTS/cache/llm.sqlite)"
    )
    sub = p.add_subparsers(dest="command", required=True)
    ex = sub.add_parser("export", help="write every cached reply to a gzipped JSON-lines file")
    ex.add_argument("--out", type=Path, required=True, help="the file to write (e.g. NAME.jsonl.gz)")
    im = sub.add_parser("import", help="merge an export into the cache, never overwriting")
    im.add_argument("file", type=Path)
    sub.add_parser("stats", help="how many replies the cache holds")
    mg = sub.add_parser("merge", help="fold every job's cache shard into the shared cache files (after a sweep)")
    mg.add_argument(
        "--cache-dir", type=Path, default=None, help="the runs' paths.cache (default: $MEMCORE_RESULTS/cache)"
    )
    mg.add_argument("--keep", action="store_true", help="leave the shards in place after merging them")
    return p


def _merge(cache_dir: Path, keep: bool) -> int:
    """``memcore-cache merge``: one line per cache file, one per unreadable shard; 1 when a shard was left
    unmerged."""
    if not cache_dir.is_dir():
        print(f"error: no cache directory {cache_dir} (set MEMCORE_RESULTS or pass --cache-dir)", file=sys.stderr)
        return 2
    results = merge_shards(cache_dir, keep=keep)
    if not results:
        print(f"no shards under {cache_dir / SHARDS_DIR}; nothing to merge")
        return 0
    failed = 0
    for file, shards in results.items():
        merged = [r for r in shards if r.counts is not None]
        added = sum(r.counts.added for r in merged if r.counts)
        same = sum(r.counts.same for r in merged if r.counts)
        conflicts = sum(r.counts.conflicts for r in merged if r.counts)
        deleted = sum(r.deleted for r in shards)
        print(
            f"merged {len(merged)} of {len(shards)} shards into {cache_dir / file}: {added} added, {same} already"
            f" there, {conflicts} conflicting (shared kept); {deleted} shards deleted"
        )
        for r in shards:
            if r.error is not None:
                failed += 1
                print(f"error: shard {r.shard} is unreadable ({r.error}); left in place", file=sys.stderr)
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.command == "merge":
        return _merge(args.cache_dir or default_cache_dir(), args.keep)
    path = args.cache or default_cache_path()
    if args.command in ("export", "stats") and not path.is_file():
        print(f"error: no response cache at {path} (set MEMCORE_RESULTS or pass --cache)", file=sys.stderr)
        return 2
    cache = ResponseCache(SQLiteKV(path, table=RESPONSE_TABLE, journal=shared_journal(path)))
    if args.command == "export":
        n = export_cache(cache, args.out)
        print(f"exported {n} replies from {path} to {args.out}")
    elif args.command == "import":
        try:
            counts = import_cache(cache, args.file)
        except CacheTransferError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(
            f"imported {args.file} into {path}: {counts.added} added, {counts.same} already there,"
            f" {counts.conflicts} conflicting (local kept)"
        )
    else:
        shards = pending_shards(path.parent, path.name)
        pending = f"; {len(shards)} job shards not merged yet (memcore-cache merge)" if shards else ""
        print(f"{path}: {len(cache.kv)} replies{pending}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``memcore-cache``: move the LLM response cache between machines.

    memcore-cache export --out results/measured/cache/NAME.jsonl.gz   # every reply in the cache
    memcore-cache import results/measured/cache/NAME.jsonl.gz         # merge into this machine's cache
    memcore-cache stats

The cache is ``$MEMCORE_RESULTS/cache/llm.sqlite`` (``results/cache/llm.sqlite`` when ``MEMCORE_RESULTS`` is unset),
the file ``memcore-run`` reads; ``--cache`` names another. After an import, rerunning the interrupted command
replays every call already made. Format and merge rules: :mod:`memcore.llm.cache_transfer`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.llm.cache import RESPONSE_CACHE_FILE, ResponseCache
from memcore.llm.cache_transfer import CacheTransferError, export_cache, import_cache


def default_cache_path() -> Path:
    """The response cache ``memcore-run`` uses with the default ``paths`` config."""
    return Path(os.environ.get("MEMCORE_RESULTS") or "results") / "cache" / RESPONSE_CACHE_FILE


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
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    path = args.cache or default_cache_path()
    if args.command in ("export", "stats") and not path.is_file():
        print(f"error: no response cache at {path} (set MEMCORE_RESULTS or pass --cache)", file=sys.stderr)
        return 2
    cache = ResponseCache(path)
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
        print(f"{path}: {len(cache.kv)} replies")
    return 0


if __name__ == "__main__":
    sys.exit(main())

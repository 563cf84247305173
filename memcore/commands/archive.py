"""Committed runs: a finished run dir packed small enough for git, and the check that its numbers follow from its items.

``memcore-archive RUN… --out DIR [--slim] [--root ROOT]`` packs runs; ``memcore-archive --verify DIR…`` re-derives
archived runs from their items. What is packed and checked: :mod:`memcore.report.archive`, :mod:`memcore.report.verify`.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.pipeline.runlock import unwritable_line
from memcore.report.archive import archive_name, archive_run
from memcore.report.collect import ReportInputError, find_run_dirs
from memcore.report.verify import verify_run


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memcore-archive", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run dirs, sweep dirs or globs (with --verify: archived runs)")
    p.add_argument("--out", type=Path, default=None, help="directory that receives one folder per run")
    p.add_argument("--root", type=Path, action="append", default=[], help="a results root to replace by <root>")
    p.add_argument("--verify", action="store_true", help="recompute each run's metrics from its items and compare")
    p.add_argument("--slim", action="store_true", help="leave out item fields no metric or table reads")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    try:
        dirs = find_run_dirs(args.runs)
    except ReportInputError as exc:
        print(f"memcore-archive: {exc}", file=sys.stderr)
        return 2
    if args.verify:
        bad = 0
        for d in dirs:
            found = verify_run(d)
            bad += bool(found.differences)
            print(f"{'DIFFERS' if found.differences else 'ok     '} {d} ({found.items_checked} items recomputed)")
            for line in found.differences:
                print(f"    {line}")
            if found.not_recomputed:
                print(f"    not recomputed (the items do not carry it): {'; '.join(found.not_recomputed)}")
        print(f"{len(dirs) - bad} of {len(dirs)} runs re-derive from their items")
        return 1 if bad else 0
    if args.out is None:
        print("memcore-archive: --out DIR is required (or --verify)", file=sys.stderr)
        return 2
    for d in dirs:
        try:
            print(archive_run(d, args.out / archive_name(d), roots=args.root, slim=args.slim))
        except ReportInputError as exc:
            print(f"memcore-archive: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:  # --out under a read-only tree, or a file in the way
            print(f"error: {unwritable_line(exc, args.out, what='the archive dir', fix='--out')}", file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

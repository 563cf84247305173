"""``memcore-rescore``: score a finished run's ``items.jsonl`` again without re-answering (:mod:`memcore.rescore`).

    memcore-rescore RUN_DIR --out OUT_DIR [--protocol locomo] [--audited | --no-audited] [--allow-incomplete]
                    [--judge [--judge-preset mem0-judge] [--judge-runs 3] [--judge-backbone NAME]]

A run whose items do not cover its slice is scored, marked INCOMPLETE, and exits 1 unless ``--allow-incomplete``.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.commands.shared import start_logging, user_errors
from memcore.eval.judge_flags import add_judge_flags, judge_flags
from memcore.pipeline.runlock import unwritable_line
from memcore.rescore import rescore


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memcore-rescore",
        description="Score a finished run's items.jsonl again (another protocol, the audited gold, an LLM judge) "
        "without re-answering.",
    )
    p.add_argument("run_dir", type=Path, help="a run directory holding items.jsonl and config.yaml")
    p.add_argument("--out", type=Path, required=True, help="where the rescored run is written (must be new)")
    p.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="exit 0 for a run whose items do not cover its slice (the table still says it is incomplete)",
    )
    p.add_argument("--protocol", help="metric protocol to score under (amem, locomo); default: the run's")
    audit = p.add_mutually_exclusive_group()
    audit.add_argument("--audited", dest="audited", action="store_true", default=None, help="add the audit overlay")
    audit.add_argument("--no-audited", dest="audited", action="store_false", help="drop the audit overlay")
    add_judge_flags(p, judge_help="grade with the LLM judge (calls go through the cache)", preset_default="the run's")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; user errors print one line and exit 2."""
    args = _parser().parse_args(argv)
    start_logging(logging.INFO)
    try:
        flags = judge_flags(args)
        result = rescore(
            args.run_dir,
            args.out,
            protocol=args.protocol,
            audited=args.audited,
            judge=flags.judge,
            judge_preset=flags.preset,
            judge_runs=flags.runs,
            judge_backbone=flags.backbone,
            judge_server=flags.server,
        )
    except user_errors() as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out under a read-only tree, or a file in the way
        print(f"error: {unwritable_line(exc, args.out, what='the output dir', fix='--out')}", file=sys.stderr)
        return 2
    print(result.table)
    print(f"\nresults: {result.run_dir}")
    incomplete = result.metrics["run"].get("incomplete")
    if incomplete and not args.allow_incomplete:
        print(
            f"error: {args.run_dir} is incomplete ({incomplete['reason']}); pass --allow-incomplete to accept it",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``memcore-import``: a published answer file becomes a run directory.

    memcore-import PATH... --layout NAME --system NAME --out RUN_DIR   (or: memcore-import zep --out RUN_DIR) [--protocol amem|locomo] [--no-audited]
                   [--overwrite] [--answer-model M] [--vendor-judge J] [--source REPO@COMMIT] [--answer-prompt P]
                   [--judge [--judge-preset mem0-judge] [--judge-runs 3] [--judge-backbone NAME]
                    [--judge-server KEY=VALUE ...]]

Bad input (an unknown layout, a file that is not JSON or lacks a field, an index out of range or repeated,
counts that do not match the dataset, an existing run dir without ``--overwrite``) is one ``error:`` line naming
the file and the problem, exit 2, before anything is written. Layouts: ``docs/published.md``.
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
from memcore.published.importer import ImportRequest, import_published


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memcore-import",
        description="Import a published per-question LoCoMo answer file as a run (scored like any run; the "
        "vendor's grades kept as 'J as published').",
    )
    p.add_argument(
        "paths",
        nargs="+",
        type=Path,
        help="the answer file(s) (backboard: one per conversation), or a known published file's name (zep, "
        "backboard, ...: scripts/get_published.py --list), read from $MEMCORE_PUBLISHED or ../shared/data/published",
    )
    p.add_argument("--layout", help="zep, dial481, memobase, mem0-pr, backboard, jsonl (default: a known file's)")
    p.add_argument("--system", help="the system's name in tables (default: a known file's)")
    p.add_argument("--out", type=Path, required=True, help="the run directory to write")
    p.add_argument("--protocol", default="amem", help="metric protocol to score under (amem, locomo)")
    p.add_argument("--no-audited", dest="audited", action="store_false", help="skip the audited gold")
    p.add_argument("--overwrite", action="store_true", help="move an existing run in --out aside first")
    p.add_argument("--answer-model", help="the model that answered (default: what the file or its source says)")
    p.add_argument("--vendor-judge", help="the judge that gave the file's grades (default: file or source)")
    p.add_argument("--source", help="where the file comes from, 'owner/repo @ commit' (default: a known file's)")
    p.add_argument("--answer-prompt", help="the answer prompt the system used (default: file or source)")
    p.add_argument("--data", help="the LoCoMo file (default: dataset.path's search: $MEMCORE_DATA, ../shared/data)")
    add_judge_flags(p, judge_help="re-judge every answer with the harness's judge", preset_default="mem0-judge")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; user errors print one line and exit 2."""
    args = _parser().parse_args(argv)
    start_logging(logging.WARNING)
    try:
        flags = judge_flags(args)
        req = ImportRequest(
            paths=tuple(args.paths),
            layout=args.layout,
            system=args.system,
            out=args.out,
            protocol=args.protocol,
            audited=args.audited,
            overwrite=args.overwrite,
            judge=flags.judge,
            judge_preset=flags.preset or "mem0-judge",
            judge_runs=flags.runs,
            judge_backbone=flags.backbone,
            judge_server=flags.server,
            answer_model=args.answer_model,
            vendor_judge=args.vendor_judge,
            source=args.source,
            answer_prompt=args.answer_prompt,
            data_path=args.data,
        )
        result = import_published(req)
    except user_errors() as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {unwritable_line(exc, args.out, what='the run dir', fix='--out')}", file=sys.stderr)
        return 2
    print(result.table)
    print(f"\nresults: {result.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

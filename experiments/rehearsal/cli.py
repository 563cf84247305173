"""Rehearse the paper's sweep against the simulator before spending money on it.

The command line of ``python -m experiments.rehearsal`` (the package's docstring says what it runs and checks)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from experiments.rehearsal.checks import finish_checks
from experiments.rehearsal.killcheck import kill_check
from experiments.rehearsal.plan import DEFAULT_RATES, DEFAULT_RESULTS, REPO, SCALES, make_plan
from experiments.rehearsal.report import summary_markdown
from experiments.rehearsal.run import rehearse
from experiments.rehearsal.runs import read_json
from experiments.rehearsal.sweep import RehearsalError


def build_parser() -> argparse.ArgumentParser:
    """The command line's options (``--help`` prints them with their defaults)."""
    p = argparse.ArgumentParser(prog="python -m experiments.rehearsal", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", choices=sorted(SCALES), default="quick", help="tiny (tests), quick, conv or full")
    p.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help=f"results dir (default {DEFAULT_RESULTS})")
    p.add_argument("--jobs", type=int, default=2, help="jobs at once (hydra.sweeper.max_batch_size; >= 2)")
    p.add_argument("--concurrency", type=int, default=4, help="LLM requests in flight per job")
    p.add_argument("--time-scale", type=float, default=None, help="simulator latency scale (default: the scale's)")
    p.add_argument(
        "--timeout-s",
        type=float,
        default=None,
        help="client read timeout (the timeout fault outlasts it; default: max(5 s, a 4,000-token reply's latency))",
    )
    p.add_argument(
        "--fault",
        action="append",
        default=None,
        metavar="KIND=RATE",
        help=f"a fault rate (kinds {', '.join(DEFAULT_RATES)}; defaults {DEFAULT_RATES})",
    )
    p.add_argument("--kill-at", type=float, default=None, help="also run the kill -9 / resume check at this fraction")
    p.add_argument("--estimate-from", type=Path, default=None, help="a smaller rehearsal's dir to estimate tokens from")
    p.add_argument("--no-estimate", action="store_true", help="skip the token estimate check")
    p.add_argument(
        "--overhead-from",
        type=Path,
        default=None,
        help="a rehearsal of this scale at a small time scale: adds each job's harness time to the wall prediction",
    )
    p.add_argument("--fresh", action="store_true", help="delete this scale's earlier results first (else resume)")
    p.add_argument("--override", action="append", default=None, help="an extra memcore-run override (repeat)")
    p.add_argument("--quiet", action="store_true", help="no progress lines (the summary is still written)")
    p.add_argument("--work-name", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rehearsal ``argv`` asks for and write ``summary.json`` / ``summary.md``; exit 0 when the fatal checks
    pass, 1 when one fails, 2 on a bad option or a sweep that cannot run."""
    args = build_parser().parse_args(argv)
    out: Callable[[str], None] = (lambda _: None) if args.quiet else (lambda line: print(line, flush=True))
    if args.jobs < 2 or args.concurrency < 1:
        print("error: --jobs must be >= 2 and --concurrency >= 1", file=sys.stderr)
        return 2
    if args.kill_at is not None and not 0.0 < args.kill_at < 1.0:
        print("error: --kill-at must be in (0, 1)", file=sys.stderr)
        return 2
    scale = SCALES[args.scale]
    work = Path(args.results).resolve() / (args.work_name or args.scale)
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    try:
        plan = make_plan(scale, work / "root", args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    estimate_from = None
    if not args.no_estimate:
        estimate_from = args.estimate_from or (Path(args.results).resolve() / scale.smaller if scale.smaller else None)
    command = "python -m experiments.rehearsal " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith(str(REPO))
    )
    out(f"rehearsal {scale.name}: {len(plan.jobs)} runs × {plan.questions} QA = {plan.expected_items} items -> {work}")
    earlier = read_json(work / "summary.json")
    try:
        if args.kill_at is not None and earlier and (earlier.get("checks") or {}).get("items"):
            out(f"{work / 'summary.json'}: the rehearsal is complete; adding the kill -9 check against it")
            summary = {k: v for k, v in earlier.items() if k not in ("checks", "ok", "resume")}
        else:
            summary = rehearse(plan, work, out, estimate_from=estimate_from, overhead_from=args.overhead_from)
        if args.kill_at is not None:
            summary["resume"] = kill_check(plan, args, out)
    except RehearsalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary.setdefault("command", command.strip())
    if args.kill_at is not None:
        summary["resume_command"] = command.strip()
    summary = finish_checks(summary)
    (work / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    md = summary_markdown(summary)
    (work / "summary.md").write_text(md)
    if not args.quiet:
        print(md)
    return 0 if summary["ok"] else 1

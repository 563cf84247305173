"""The kill -9 / resume check: the same rehearsal in its own process group, SIGKILLed part way, run again, and
compared run by run with the uninterrupted one."""

from __future__ import annotations

import argparse
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.rehearsal.checks import check_items, compare_runs
from experiments.rehearsal.plan import REPO, Plan, rebase
from experiments.rehearsal.runs import count_lines, read_json
from experiments.rehearsal.sweep import child_env


def child_command(args: argparse.Namespace, work_name: str) -> list[str]:
    """This rehearsal without ``--kill-at``, into ``<results>/<work_name>``: what the kill check runs, kills and
    reruns."""
    cmd = [sys.executable, "-m", "experiments.rehearsal", "--scale", args.scale, "--results", str(args.results)]
    cmd += ["--jobs", str(args.jobs), "--concurrency", str(args.concurrency)]
    if args.timeout_s is not None:
        cmd += ["--timeout-s", str(args.timeout_s)]
    if args.time_scale is not None:
        cmd += ["--time-scale", str(args.time_scale)]
    for f in args.fault or []:
        cmd += ["--fault", f]
    for o in args.override or []:
        cmd += ["--override", o]
    return [*cmd, "--no-estimate", "--quiet", "--work-name", work_name]


def kill_check(plan: Plan, args: argparse.Namespace, out: Callable[[str], None]) -> dict[str, Any]:
    """Run the rehearsal into ``<results>/<scale>-killed`` in its own process group, SIGKILL the whole group
    (driver, simulator, Hydra launcher, submitit jobs) once ``--kill-at`` of all expected items are written, run
    the same command again; then compare every run with the uninterrupted rehearsal's (:func:`compare_runs`)."""
    name = f"{args.scale}-killed"
    killed = Path(args.results).resolve() / name
    shutil.rmtree(killed, ignore_errors=True)
    killed.mkdir(parents=True)
    kplan = Plan(
        **{**plan.__dict__, "root": killed / "root", "jobs": [rebase(j, plan.root, killed / "root") for j in plan.jobs]}
    )
    cmd = child_command(args, name)
    target = max(1, math.ceil(args.kill_at * kplan.expected_items))
    t0 = time.monotonic()
    with open(killed / "first_invocation.log", "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=child_env(), stdout=log, stderr=log, start_new_session=True)
        try:
            while sum(count_lines(j.run_dir / "items.jsonl") for j in kplan.jobs) < target and proc.poll() is None:
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    at_kill = sum(count_lines(j.run_dir / "items.jsonl") for j in kplan.jobs)
    first_s = time.monotonic() - t0
    out(
        f"kill -9 of the whole sweep at {at_kill}/{kplan.expected_items} items after {first_s:.0f} s; same command again"
    )
    t1 = time.monotonic()
    with open(killed / "second_invocation.log", "ab") as log:
        again = subprocess.run(cmd, cwd=REPO, env=child_env(), stdout=log, stderr=log, check=False)
    compare = compare_runs(kplan, plan.root)
    items = check_items(kplan)
    resumed = read_json(killed / "summary.json") or {}
    was_killed = proc.returncode == -signal.SIGKILL
    ok = was_killed and 0 < at_kill < kplan.expected_items and again.returncode == 0 and compare["ok"]
    ok = ok and all(r["ok"] for r in items)
    return {
        "kill_at": args.kill_at,
        "items_at_kill": at_kill,
        "items_expected": kplan.expected_items,
        "killed_by_sigkill": was_killed,
        "first_invocation_s": round(first_s, 1),
        "second_invocation_s": round(time.monotonic() - t1, 1),
        "resume_rc": again.returncode,
        "resumed_checks": resumed.get("checks"),
        "resumed_items_ok": all(r["ok"] for r in items),
        "compare": compare,
        "ok": ok,
    }

"""The harness's own time for a full LoCoMo run (10 conversations, 1,986 QA items) with
MemCoRe's cheap mode (no LLM in the memory) and a zero-latency scripted backbone answering: whatever
time this takes is harness + memory CPU, never LLM. Target: under 60 s on 2 cores.

Runs the real CLI (``python -m memcore.commands.run``) in a subprocess from an empty results root, so start-up,
imports, snapshot writes and report files are all counted.

    python -m experiments.benchmarks.harness_overhead                      # hashing embedder (no model)
    python -m experiments.benchmarks.harness_overhead --embedder minilm    # + MiniLM on CPU
    python -m experiments.benchmarks.harness_overhead --profile            # py-spy profile (top frames)
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, machine_state, write_result

_SITE_RE = re.compile(r" \(/[^()]*?/site-packages/")


def summarize_pyspy(raw: Path, top: int = 25) -> dict[str, Any]:
    """Self and inclusive shares of the top frames in a py-spy ``--format raw`` (collapsed stacks) file."""
    self_n: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        if not line.strip():
            continue
        stack, n_str = line.rsplit(" ", 1)
        n = int(n_str)
        total += n
        frames = [_SITE_RE.sub(" (", f) for f in stack.split(";") if not f.startswith(("process ", "thread "))]
        if frames:
            self_n[frames[-1]] += n
        for f in set(frames):
            incl[f] += n
    pct = (lambda n: round(100.0 * n / total, 1)) if total else (lambda n: 0.0)
    return {
        "samples": total,
        "self_pct": [[f, pct(n)] for f, n in self_n.most_common(top)],
        "inclusive_pct": [[f, pct(n)] for f, n in incl.most_common(top * 2)],
    }


def _children_cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def run_once(args: argparse.Namespace, root: Path, profile_out: Path | None) -> dict[str, Any]:
    overrides = [
        "method=memcore-cheap",
        "backbone=scripted",
        "backbone.scripted_latency_s=0.0",
        f"embedder={args.embedder}",
        f"dataset={args.dataset}",
        f"concurrency={args.concurrency}",
        "progress=false",
        "print_table=false",
        f"paths.root={root}",
        f"hydra.run.dir={root / 'run'}",
    ]
    if args.build_processes is not None:
        overrides.append(f"build_processes={args.build_processes}")
    cmd = [sys.executable, "-m", "memcore.commands.run", *overrides]
    if profile_out is not None:
        spy = shutil.which("py-spy")
        if spy is None:
            raise SystemExit("--profile needs py-spy: pip install py-spy")
        cmd = [spy, "record", "--subprocesses", "--gil", "-r", "50", "-f", "raw", "-o", str(profile_out), "--", *cmd]
    before = machine_state()
    cpu0 = _children_cpu()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"run failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    cpu = _children_cpu() - cpu0
    cost = json.loads((root / "run" / "cost.json").read_text())
    metrics = json.loads((root / "run" / "metrics.json").read_text())
    return {
        "wall_s_process": round(wall, 2),
        "cost_wall_s": cost["wall_s"],
        "cpu_s_all_processes": round(cpu, 2),
        "items": metrics["overall"]["n"],
        "conversations": metrics["run"]["n_conversations"],
        "turns": cost["memory_build"]["turns"],
        "snapshots_built": cost["memory_build"]["snapshots_built"],
        "llm_calls": cost["usage"]["total"]["llm_calls"],
        "calls_by_stage": {k: v["calls"] for k, v in cost["usage"]["by_stage"].items()},
        "loadavg_before": before["loadavg_1_5_15"],
        "loadavg_after": machine_state()["loadavg_1_5_15"],
        "overrides": overrides[:-2],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--embedder", default="hashing", choices=["hashing", "minilm"])
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--build-processes", type=int, default=None, help="0 = threads only (no worker processes)")
    ap.add_argument("--profile", action="store_true", help="record with py-spy (--gil) and keep the top frames")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--name", default=None, help="result file stem (default harness_overhead[_<embedder>])")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    runs = []
    profile: dict[str, Any] | None = None
    for i in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-harness-") as tmp:
            prof = Path(tmp) / "pyspy.txt" if args.profile and i == 0 else None
            row = run_once(args, Path(tmp), prof)
            if prof is not None and prof.exists():
                profile = summarize_pyspy(prof)
        runs.append(row)
        print(json.dumps(row), flush=True)
    name = args.name or ("harness_overhead" if args.embedder == "hashing" else f"harness_overhead_{args.embedder}")
    best = min(r["wall_s_process"] for r in runs)
    path = write_result(
        name,
        {
            "target_s": 60,
            "best_wall_s": best,
            "runs": runs,
            "profile_pyspy_gil": profile,
            "note": "wall includes interpreter start-up and imports; cpu_s sums the CLI process and its build workers",
        },
        args.out,
    )
    print(f"best wall {best:.1f}s → {path}")


if __name__ == "__main__":
    main()

"""A sweep over the nine ablations builds exactly five memories per conversation (the full model
and the four construction ablations: wo_update, wo_merge, wo_link, wo_denoise); the retrieval ablations
(wo_topic, wo_keyword, wo_neighbor, wo_ier) load the full model's snapshot.

Runs the real CLI sweep (``python -m memcore.commands.run -m … ablation=<nine>``) from an empty results root with the
scripted backbone, then counts builds three ways: snapshot manifests on disk (per conversation and switch
set), ``memory_build.snapshots_built`` in each run's cost.json, and leftover temp/lock-broken dirs (none).
``--parallel N`` sweeps with the joblib launcher (N runs at once), so runs race for the same snapshots.

    python -m experiments.benchmarks.build_once                       # sequential sweep, all 10 conversations
    python -m experiments.benchmarks.build_once --parallel 3          # 3 runs at once (file locks)
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, machine_state, md_table, write_result

ABLATIONS = "none,wo_update,wo_merge,wo_link,wo_denoise,wo_topic,wo_keyword,wo_neighbor,wo_ier"
CONSTRUCTION = ("update", "merge", "link", "denoise")


def count_builds(root: Path, method: str = "memcore") -> dict[str, Any]:
    """Builds per conversation from the snapshot manifests and from the runs' cost.json files."""
    per_conv: dict[str, list[str]] = collections.defaultdict(list)
    snap_root = root / "snapshots" / method
    for manifest in sorted(snap_root.glob("*/MANIFEST.json")):
        fields = json.loads(manifest.read_text())["fields"]
        off = [k for k in CONSTRUCTION if not fields["switches"].get(k, True)]
        per_conv[fields["conversation"]].append("wo_" + "+".join(off) if off else "full")
    leftovers = sorted(p.name for p in snap_root.iterdir() if p.is_dir() and not (p / "MANIFEST.json").is_file())
    leftovers = [n for n in leftovers if ".work" not in n]  # scratch dirs handed to methods as workdir
    runs = {}
    for cost_path in sorted((root / "runs").rglob("cost.json")):
        cost = json.loads(cost_path.read_text())
        ablation = cost_path.parent.name
        runs[ablation] = {
            "snapshots_built": cost["memory_build"]["snapshots_built"],
            "snapshots_reused": cost["memory_build"]["snapshots_reused"],
        }
    return {
        "per_conversation": {c: sorted(v) for c, v in sorted(per_conv.items())},
        "builds_per_conversation": sorted({len(v) for v in per_conv.values()}),
        "total_snapshots": sum(len(v) for v in per_conv.values()),
        "runs": runs,
        "built_according_to_runs": sum(r["snapshots_built"] for r in runs.values()),
        "leftover_dirs": leftovers,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="locomo")
    ap.add_argument("--max-qa", type=int, default=3, help="QA items per conversation (the count is about builds)")
    ap.add_argument("--parallel", type=int, default=0, help="joblib launcher with this many concurrent runs")
    ap.add_argument("--extra", nargs="*", default=[], help="more Hydra overrides")
    ap.add_argument("--quick", action="store_true", help="smoke test: do not write results")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-build-once-") as tmp:
        root = Path(tmp)
        cmd = [
            sys.executable,
            "-m",
            "memcore.commands.run",
            "-m",
            "method=memcore",
            f"ablation={ABLATIONS}",
            "backbone=scripted",
            "embedder=hashing",
            f"dataset={args.dataset}",
            f"dataset.max_qa={args.max_qa}",
            "experiment_name=build_once",
            "progress=false",
            "print_table=false",
            f"paths.root={root}",
            *args.extra,
        ]
        if args.parallel:
            cmd += ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={args.parallel}"]
        before = machine_state()
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=Path.cwd())
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise SystemExit(f"sweep failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        counts = count_builds(root)
    n_conv = len(counts["per_conversation"])
    ok = counts["builds_per_conversation"] == [5] and counts["built_according_to_runs"] == 5 * n_conv
    table = md_table(
        ["conversation", "memories built", "which"],
        [[c, len(v), ", ".join(v)] for c, v in counts["per_conversation"].items()],
    )
    print(table)
    print(f"runs: {json.dumps(counts['runs'])}")
    print(f"exactly five per conversation: {ok}; wall {wall:.1f}s")
    if not args.quick:
        name = "build_once" if not args.parallel else f"build_once_parallel{args.parallel}"
        path = write_result(
            name,
            {
                "sweep_command": " ".join(cmd[1:]).replace(str(root), "<tmp root>"),
                "wall_s": round(wall, 1),
                "machine_at_start": before,
                "exactly_five_per_conversation": ok,
                **counts,
                "table_md": table,
            },
            args.out,
        )
        print(f"wrote {path}")
    if not ok:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

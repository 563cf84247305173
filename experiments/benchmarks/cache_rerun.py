"""Rerunning a finished sweep with a warm cache spends no LLM call and takes < 5% of the cold time.

The sweep is MemCoRe (LLM mode) over the nine ablations. The backbone is a local fake OpenAI-compatible
server with a fixed latency per request (``fake_openai``), reached through the real client, so the real
response cache is in the loop and "cold" costs what the latency says. Phases, all in one results root:

- ``cold``: empty root: every build and every QA call goes to the server;
- ``warm_resume``: the same run dirs again (every item already in items.jsonl: nothing to do);
- ``warm_new_runs``: fresh run dirs, snapshots and cache kept: retrieval + answer calls come from the cache;
- ``warm_rebuild``: fresh run dirs and the snapshots deleted: memories are rebuilt, every call from the cache.

    python -m experiments.benchmarks.cache_rerun                       # locomo-mini, 200 ms per call
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import (
    RESULTS_DIR,
    compose,
    cpu_seconds,
    machine_state,
    md_table,
    pin_threads_or_reexec,
    write_result,
)
from experiments.benchmarks.fake_openai import backbone_overrides, fake_openai_server
from memcore.runner import run_config
from memcore.testing.sim_replies import structured_responder

ABLATIONS = (
    "none",
    "wo_update",
    "wo_merge",
    "wo_link",
    "wo_denoise",
    "wo_topic",
    "wo_keyword",
    "wo_neighbor",
    "wo_ier",
)


def sweep(root: Path, runs_dir: Path, base: list[str], server: Any, ablations: tuple[str, ...]) -> dict[str, Any]:
    """Run every ablation into ``runs_dir/<ablation>``; totals of calls, server requests, wall and CPU."""
    req0, cpu0, t0 = server.requests, cpu_seconds(), time.perf_counter()
    per_run = []
    for ab in ablations:
        cfg = compose([*base, f"ablation={ab}"], root)
        res = run_config(cfg, runs_dir / ab)
        total = res.cost["usage"]["total"]
        per_run.append(
            {
                "ablation": ab,
                "calls": total["calls"],
                "cached_calls": total["cached_calls"],
                "llm_calls": total["llm_calls"],
                "snapshots_built": res.cost["memory_build"]["snapshots_built"],
                "wall_s": res.cost["wall_s"]["total"],
            }
        )
    return {
        "wall_s": round(time.perf_counter() - t0, 2),
        "cpu_s": round(cpu_seconds() - cpu0, 2),
        "server_requests": server.requests - req0,
        "llm_calls": sum(r["llm_calls"] for r in per_run),
        "cached_calls": sum(r["cached_calls"] for r in per_run),
        "snapshots_built": sum(r["snapshots_built"] for r in per_run),
        "runs": per_run,
        "loadavg_after": machine_state()["loadavg_1_5_15"],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dataset", default="locomo-mini")
    ap.add_argument("--latency", type=float, default=0.2, help="seconds per request at the fake server")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--ablations", nargs="+", default=list(ABLATIONS))
    ap.add_argument("--extra", nargs="*", default=[], help="more Hydra overrides, e.g. dataset.max_qa=3")
    ap.add_argument("--keep", type=Path, default=None, help="keep the results root here instead of a temp dir")
    ap.add_argument("--quick", action="store_true", help="smoke test: do not write results")
    ap.add_argument("--name", default="cache_rerun", help="result file stem")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    pin_threads_or_reexec()
    ablations = tuple(args.ablations)
    phases: dict[str, Any] = {}
    load_before = machine_state()
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        root = args.keep or Path(tmp)
        with fake_openai_server(structured_responder, latency_s=args.latency) as server:
            base = [
                "method=memcore",
                f"dataset={args.dataset}",
                "embedder=hashing",
                f"concurrency={args.concurrency}",
                *backbone_overrides(server),
                *args.extra,
            ]
            phases["cold"] = sweep(root, root / "runs" / "cold", base, server, ablations)
            phases["warm_resume"] = sweep(root, root / "runs" / "cold", base, server, ablations)
            phases["warm_new_runs"] = sweep(root, root / "runs" / "warm", base, server, ablations)
            shutil.rmtree(root / "snapshots")
            phases["warm_rebuild"] = sweep(root, root / "runs" / "rebuild", base, server, ablations)
    cold = phases["cold"]["wall_s"]
    rows = [
        [
            name,
            p["llm_calls"],
            p["cached_calls"],
            p["server_requests"],
            p["snapshots_built"],
            p["wall_s"],
            f"{100 * p['wall_s'] / cold:.1f}%",
            p["cpu_s"],
        ]
        for name, p in phases.items()
    ]
    table = md_table(
        ["phase", "LLM calls", "cache hits", "server requests", "snapshots built", "wall s", "of cold", "CPU s"], rows
    )
    print(table)
    ok = all(phases[p]["llm_calls"] == 0 and phases[p]["server_requests"] == 0 for p in phases if p != "cold")
    print("warm phases spend no LLM call:", ok)
    if not args.quick:
        path = write_result(
            args.name,
            {
                "latency_s": args.latency,
                "dataset": args.dataset,
                "concurrency": args.concurrency,
                "ablations": list(ablations),
                "machine_at_start": load_before,
                "phases": phases,
                "warm_spend_no_llm_call": ok,
                "table_md": table,
            },
            args.out,
        )
        (args.out / f"{args.name}.md").write_text(f"command: `{json.loads(path.read_text())['command']}`\n\n{table}\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

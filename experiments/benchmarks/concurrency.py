"""With a scripted backbone of fixed latency, wall time ≈ calls × latency / concurrency.

For each method and concurrency level the run starts from an empty results root (no snapshot, no cache),
so every LLM call is made. ``predicted = calls × latency / c``; since one conversation's ingestion is
sequential (each turn's gate sees the notes before it), a run can never beat its longest per-conversation
ingest chain, so ``bound = max(predicted, longest chain × latency)`` is reported too.

    python -m experiments.benchmarks.concurrency                       # rag_bm25 + memcore, c = 1, 4, 16
    python -m experiments.benchmarks.concurrency --quick               # tiny slice, for the smoke test
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import (
    RESULTS_DIR,
    cpu_seconds,
    machine_state,
    md_table,
    pin_threads_or_reexec,
    run_scripted,
    write_result,
)
from memcore.testing.sim_replies import structured_responder

#: method → dataset overrides: every conversation, so conversations can overlap.
WORKLOADS: dict[str, list[str]] = {
    "rag_bm25": ["method=rag_bm25", "dataset=locomo", "dataset.max_qa=60"],
    "memcore": ["method=memcore", "dataset=locomo", "dataset.max_sessions=1", "dataset.max_qa=4"],
}
QUICK: dict[str, list[str]] = {
    "rag_bm25": ["method=rag_bm25", "dataset=locomo-tiny", "dataset.max_qa=4"],
    "memcore": ["method=memcore", "dataset=locomo-tiny", "dataset.max_sessions=1", "dataset.max_qa=2"],
}


def measure(method: str, overrides: list[str], concurrency: int, latency_s: float, root: Path) -> dict[str, Any]:
    """One run from an empty root; calls, wall time and the predictions."""
    load_before = machine_state()["loadavg_1_5_15"]
    cpu0 = cpu_seconds()
    result, wall = run_scripted(
        [*overrides, "embedder=hashing", f"concurrency={concurrency}"],
        root,
        root / "run",
        responder=structured_responder,
        latency_s=latency_s,
    )
    cpu = cpu_seconds() - cpu0
    usage = result.cost["usage"]["total"]
    calls = int(usage["llm_calls"])
    chains = [
        int(v["ingest_usage"].get("total", {}).get("llm_calls", 0)) for v in result.stats["conversations"].values()
    ]
    pool_wall = float(result.cost["wall_s"]["conversations_s"])
    predicted = calls * latency_s / concurrency
    bound = max(predicted, max(chains, default=0) * latency_s)
    return {
        "method": method,
        "concurrency": concurrency,
        "latency_s": latency_s,
        "conversations": len(chains),
        "items": result.n_items,
        "llm_calls": calls,
        "calls_by_stage": {k: v["llm_calls"] for k, v in result.cost["usage"]["by_stage"].items()},
        "longest_ingest_chain_calls": max(chains, default=0),
        "wall_s_run": round(wall, 3),
        "wall_s_conversations": round(pool_wall, 3),
        "predicted_s": round(predicted, 3),
        "bound_s": round(bound, 3),
        "ratio_to_predicted": round(pool_wall / predicted, 3) if predicted else None,
        "ratio_to_bound": round(pool_wall / bound, 3) if bound else None,
        "cpu_s": round(cpu, 2),
        "loadavg_before": load_before,
        "loadavg_after": machine_state()["loadavg_1_5_15"],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.2, help="scripted latency per call, seconds")
    ap.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    ap.add_argument("--methods", nargs="+", default=list(WORKLOADS), choices=list(WORKLOADS))
    ap.add_argument("--quick", action="store_true", help="tiny slice (smoke test), results not written")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    pin_threads_or_reexec()
    workloads = QUICK if args.quick else WORKLOADS
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for method in args.methods:  # warm-up: imports and lazy module loads are not the harness's steady state
        with tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp:
            measure(method, QUICK[method], 4, 0.0, Path(tmp))
    zero: dict[str, float] = {}
    for method in args.methods:
        # The harness's own time for the same workload at zero latency (data, builds, scoring, writing):
        # what remains of the wall time when the LLM costs nothing.
        with tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp:
            zero[method] = measure(method, workloads[method], max(args.levels), 0.0, Path(tmp))["wall_s_conversations"]
        for c in args.levels:
            with tempfile.TemporaryDirectory(prefix="bench-conc-") as tmp:
                row = measure(method, workloads[method], c, args.latency, Path(tmp))
            row["harness_s_at_zero_latency"] = zero[method]
            rows.append(row)
            print(json.dumps(row), flush=True)
    table = md_table(
        [
            "method",
            "c",
            "LLM calls",
            "longest chain",
            "wall s",
            "predicted s",
            "ratio",
            "bound s",
            "ratio/bound",
            "harness s at 0 latency",
            "load",
        ],
        [
            [
                r["method"],
                r["concurrency"],
                r["llm_calls"],
                r["longest_ingest_chain_calls"],
                r["wall_s_conversations"],
                r["predicted_s"],
                r["ratio_to_predicted"],
                r["bound_s"],
                r["ratio_to_bound"],
                r["harness_s_at_zero_latency"],
                r["loadavg_before"][0],
            ]
            for r in rows
        ],
    )
    print(table)
    if not args.quick:
        path = write_result(
            "concurrency",
            {
                "latency_s": args.latency,
                "workloads": {m: workloads[m] for m in args.methods},
                "rows": rows,
                "total_s": round(time.perf_counter() - t0, 1),
                "table_md": table,
            },
            args.out,
        )
        (args.out / "concurrency.md").write_text(f"command: `{json.loads(path.read_text())['command']}`\n\n{table}\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

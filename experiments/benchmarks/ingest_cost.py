"""LLM calls and tokens per ingested turn (real runs, ``backbone=local``, locomo-mini).

``run`` makes the MemCoRe runs (sequentially; each queues for the machine's one local llama.cpp server and
resumes if interrupted): the full model and ``memcore-batched`` answer all 25 questions (F1 / recall kept);
the four construction ablations answer one question only, since only their build cost is wanted here.
``report`` reads every matching run under ``results/runs`` (A-MEM and Mem0 runs made by their engineer
included) and writes the table: calls are counted from each memory build's own usage (``stats.json``:
calls, cached or not), so a warm response cache cannot hide them.

    python -m experiments.benchmarks.ingest_cost run                    # memcore variants (hours on 2 cores)
    python -m experiments.benchmarks.ingest_cost run --with-baselines   # + amem, mem0 if nobody ran them
    python -m experiments.benchmarks.ingest_cost report
    python -m experiments.benchmarks.ingest_cost batch-sizes            # calls/turn vs batch size (scripted LLM)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, command_line, machine_state, md_table, run_scripted, write_result
from memcore.testing.sim_replies import structured_responder

EXPERIMENT = "ingest_cost"
#: (method, ablation, extra overrides): the memcore variants this benchmark runs itself.
#: Questions a build-only run answers (a run needs one to finish); its F1 / recall are not reported.
BUILD_ONLY_QA = 1
RUNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("memcore", "none", ()),
    ("memcore-batched", "none", ()),
    ("memcore", "wo_update", (f"dataset.max_qa={BUILD_ONLY_QA}",)),
    ("memcore", "wo_merge", (f"dataset.max_qa={BUILD_ONLY_QA}",)),
    ("memcore", "wo_link", (f"dataset.max_qa={BUILD_ONLY_QA}",)),
    ("memcore", "wo_denoise", (f"dataset.max_qa={BUILD_ONLY_QA}",)),
)
BASELINES: tuple[tuple[str, str, tuple[str, ...]], ...] = (("amem", "none", ()), ("mem0", "none", ()))
#: Methods whose memory build calls the LLM (their rows join the table when runs exist) …
INGEST_METHODS = ("memcore", "memcore-batched", "amem", "mem0", "lightmem", "memgpt", "fluxmem-facts")
#: … and the ones whose per-turn cost the table must have (their published anchors below).
REQUIRED = ("memcore", "memcore-batched", "amem", "mem0")
#: Published anchors (LLM calls per ingested turn on LoCoMo), for the table.
ANCHORS = {"A-MEM": 2.0, "Mem0": 3.2, "LightMem": 0.05}


def run_one(method: str, ablation: str, extra: tuple[str, ...], args: argparse.Namespace) -> int:
    cmd = [
        sys.executable,
        "-m",
        "memcore.commands.run",
        f"method={method}",
        f"ablation={ablation}",
        f"backbone={args.backbone}",
        f"dataset={args.dataset}",
        f"experiment_name={EXPERIMENT}",
        "progress=false",
        *extra,
        *args.extra,
    ]
    print(f"[{time.strftime('%H:%M:%S')}] {' '.join(cmd[2:])}", flush=True)
    return subprocess.run(cmd).returncode


def find_runs(root: Path, dataset: str, backbone: str) -> list[Path]:
    """Run dirs (holding cost.json and stats.json) for ``dataset`` and ``backbone`` under ``root``."""
    out = []
    for cost in sorted(root.rglob("cost.json")):
        run = cost.parent
        parts = run.relative_to(root).parts
        if dataset in parts and backbone in parts and (run / "stats.json").is_file() and ".old-" not in str(run):
            out.append(run)
    return out


def build_cost(run: Path) -> dict[str, Any]:
    """Per-turn LLM calls and tokens of the memories this run built (or reused: their manifests keep the
    original build's usage), plus the run's answer quality."""
    stats = json.loads((run / "stats.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    cfg = (run / "config.yaml").read_text() if (run / "config.yaml").is_file() else ""
    turns = calls = prompt = completion = failures = 0
    for conv in stats["conversations"].values():
        total = conv.get("ingest_usage", {}).get("total", {})
        turns += int(conv["turns"])
        calls += int(total.get("calls", 0))
        prompt += int(total.get("prompt_tokens", 0))
        completion += int(total.get("completion_tokens", 0))
        failures += int(total.get("parse_failures", 0))
    overall = metrics.get("overall", {})
    batch = next(
        (ln.split(":")[1].strip() for ln in cfg.splitlines() if ln.strip().startswith("ingest_batch_size:")), None
    )
    return {
        "run": str(run),
        "method": metrics["run"]["method"],
        "ablation": metrics["run"]["ablation"],
        "ingest_batch_size": batch,
        "turns": turns,
        "llm_calls": calls,
        "calls_per_turn": round(calls / turns, 3) if turns else None,
        "prompt_tokens_per_turn": round(prompt / turns, 1) if turns else None,
        "completion_tokens_per_turn": round(completion / turns, 1) if turns else None,
        "tokens_per_turn": round((prompt + completion) / turns, 1) if turns else None,
        "parse_failures": failures,
        "qa_items": overall.get("n"),
        "f1": overall.get("f1"),
        "recall": overall.get("recall"),
    }


def report(args: argparse.Namespace) -> None:
    rows = [build_cost(r) for r in find_runs(Path(args.runs), args.dataset, args.backbone)]
    rows = [r for r in rows if r["method"] in INGEST_METHODS and r["turns"]]
    # One row per (method, ablation, batch size): prefer the run that answered the most questions.
    best: dict[tuple[str, str, Any], dict[str, Any]] = {}
    for r in rows:
        key = (r["method"], r["ablation"], r["ingest_batch_size"])
        if key not in best or (r["qa_items"] or 0) > (best[key]["qa_items"] or 0):
            best[key] = r
    rows = sorted(best.values(), key=lambda r: (r["method"], r["ablation"] != "none", r["ablation"]))

    def pct(r: dict[str, Any], key: str) -> str:
        if (r["qa_items"] or 0) <= BUILD_ONLY_QA:
            return "build only"  # one question answered to finish the run: not a quality figure
        return "–" if r[key] is None else f"{100 * r[key]:.1f}"

    table = md_table(
        [
            "method",
            "ablation",
            "turns",
            "LLM calls",
            "calls/turn",
            "prompt tok/turn",
            "completion tok/turn",
            "parse fallbacks",
            "QA n",
            "F1 %",
            "recall %",
        ],
        [
            [
                r["method"] + (f" (B={r['ingest_batch_size']})" if r["method"] == "memcore-batched" else ""),
                r["ablation"],
                r["turns"],
                r["llm_calls"],
                r["calls_per_turn"],
                r["prompt_tokens_per_turn"],
                r["completion_tokens_per_turn"],
                r["parse_failures"],
                r["qa_items"],
                pct(r, "f1"),
                pct(r, "recall"),
            ]
            for r in rows
        ]
        + [[f"anchor: {k}", "published", "", "", v, "", "", "", "", "", ""] for k, v in ANCHORS.items()],
    )
    print(table)
    missing = sorted(set(REQUIRED) - {r["method"] for r in rows})
    if missing:
        print(f"no runs yet for: {', '.join(missing)}")
    path = write_result(
        "ingest_cost",
        {"dataset": args.dataset, "backbone": args.backbone, "rows": rows, "anchors": ANCHORS, "table_md": table},
        args.out,
    )
    (args.out / "ingest_cost.md").write_text(
        f"command: `{command_line()}` (runs: `python -m experiments.benchmarks.ingest_cost run`)\n\n{table}\n"
    )
    print(f"wrote {path}")


def batch_sizes(args: argparse.Namespace) -> None:
    """LLM calls per turn of memcore and memcore-batched at several batch sizes, on the scripted structured
    responder (well-formed replies, so merges and links happen; call counts only — no quality)."""
    rows = []
    for method, size in [("memcore", None), *[("memcore-batched", b) for b in args.sizes]]:
        overrides = [f"method={method}", f"dataset={args.dataset}", "embedder=hashing", "dataset.max_qa=1"]
        if size is not None:
            overrides.append(f"method.ingest_batch_size={size}")
        with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
            res, _ = run_scripted(overrides, Path(tmp), Path(tmp) / "run", responder=structured_responder)
        mb = res.cost["memory_build"]
        mem = next(iter(res.stats["conversations"].values()))["memory"]
        rows.append(
            {
                "method": method,
                "ingest_batch_size": size or 1,
                "turns": mb["turns"],
                "llm_calls": mb["llm_calls"],
                "calls_per_turn": mb["llm_calls_per_turn"],
                "tokens_per_turn": mb["tokens_per_turn"],
                "notes": mem["notes"],
                "merges": mem["construction"]["merges"],
                "links": mem["construction"]["links"],
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    table = md_table(
        ["method", "batch size", "turns", "LLM calls", "calls/turn", "tokens/turn (approx.)", "notes", "merges", "links"],
        [
            [r["method"], r["ingest_batch_size"], r["turns"], r["llm_calls"], r["calls_per_turn"], r["tokens_per_turn"],
             r["notes"], r["merges"], r["links"]]
            for r in rows
        ],
    )  # fmt: skip
    print(table)
    path = write_result("ingest_batch_sizes", {"dataset": args.dataset, "rows": rows, "table_md": table}, args.out)
    (args.out / "ingest_batch_sizes.md").write_text(f"command: `{command_line()}`\n\n{table}\n")
    print(f"wrote {path}")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["run", "report", "batch-sizes"])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4, 8, 16, 32], help="batch-sizes: B values")
    ap.add_argument("--backbone", default="local")
    ap.add_argument("--dataset", default="locomo-mini")
    ap.add_argument("--with-baselines", action="store_true", help="also run amem and mem0 when no run exists")
    ap.add_argument("--only", nargs="*", default=None, help="method:ablation pairs to run (default: all)")
    ap.add_argument(
        "--extra", nargs="*", default=[], help="run: more overrides for every run, e.g. backbone.server_threads=1"
    )
    ap.add_argument("--runs", default="results/runs")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    if args.action == "report":
        report(args)
        return
    if args.action == "batch-sizes":
        batch_sizes(args)
        return
    plan = list(RUNS)
    if args.with_baselines:
        have = {build_cost(r)["method"] for r in find_runs(Path(args.runs), args.dataset, args.backbone)}
        plan += [b for b in BASELINES if b[0] not in have]
    if args.only is not None:
        plan = [p for p in plan if f"{p[0]}:{p[1]}" in set(args.only)]
    print(f"machine: {machine_state()}", flush=True)
    failed = [f"{m}:{a}" for m, a, extra in plan if run_one(m, a, extra, args) != 0]
    if failed:
        raise SystemExit(f"failed runs: {', '.join(failed)}")


if __name__ == "__main__":
    main()

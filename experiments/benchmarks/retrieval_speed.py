"""LLM-free runs against their floor: each retrieval-only method on all of LoCoMo, timed beside one batched MiniLM
pass over the same texts, in the same session.

- **floor**: a fresh process that loads MiniLM, embeds every turn (as the RAG baselines index it) and every
  question in one batched pass, and BM25-indexes each conversation's turns; once with torch on one thread and
  once on every core (the runs' default: ``embedder.threads`` null).
- **methods**: ``memcore-run method=M dataset=locomo eval.answer=false``, one process per run, cold (an empty
  results root: no cache, no snapshot) and warm (the same root again, a new run dir), with
  ``eval.token_cap`` unset and set. memcore-cheap is also run warm with the session windows off (its
  default before the packer took them) for the p95 retrieval time per question before and after, and warm with
  ``build_processes=0``: everything in the runner's process, as before its worker processes also retrieved.

Each row gives wall, CPU, peak RSS, texts encoded / served by the cache, the run's own stage split
(``stats.json`` ``timing``), p50 / p95 retrieval time per question, and the wall as a ratio to the floor on every
core. The load average is recorded before and after each row; rerun on an idle machine for numbers that mean
something.

    python -m experiments.benchmarks.retrieval_speed                       # all of LoCoMo, ~25 min
    python -m experiments.benchmarks.retrieval_speed --dataset conv-41 --methods rag_dense --budgets none
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, machine_state, md_table, write_result
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.paths import resolve_locomo_path

METHODS = ("rag_bm25", "rag_dense", "rag_hybrid", "rag_locomo", "memcore-cheap")
#: the targets the table is read against: cold wall / floor wall, warm wall, start-up before the first item
COLD_RATIO_TARGET = {"rag_dense": 1.3, "rag_hybrid": 1.3, "rag_locomo": 1.3, "memcore-cheap": 3.0}
WARM_WALL_TARGET_S = 20.0
STARTUP_TARGET_S = 2.0
WINDOWS_OFF = ("method.pack_window_bm25=0.0", "method.pack_window_dense=0.0")
IN_THREADS = ("build_processes=0",)


def floor_child(data: str, conversations: Sequence[str] | None) -> dict[str, Any]:
    """In this (fresh) process: load MiniLM, one batched pass over every turn and question, BM25 per
    conversation. Returns seconds per part and the counts."""
    t0 = time.perf_counter()
    # timed: the floor pays its imports as a run does
    from memcore.datasets.locomo.loader import load_locomo  # see above
    from memcore.llm.embedders import MiniLMEmbedder  # see above
    from memcore.packing.turns import TurnBM25  # see above

    convs = [c for c in load_locomo(data).conversations if not conversations or c.conv_id in conversations]
    turns = [[t.render() for t in c.turns] for c in convs]
    questions = [q.question for c in convs for q in c.qa]
    t_import = time.perf_counter()
    threads = int(os.environ.get("MEMCORE_FLOOR_THREADS", "0")) or os.cpu_count() or 1
    embedder = MiniLMEmbedder(threads=threads)
    embedder.load()
    t_load = time.perf_counter()
    texts = [t for conv in turns for t in conv] + questions
    embedder.encode(texts)
    t_encode = time.perf_counter()
    for conv in turns:
        TurnBM25(conv)
    t_bm25 = time.perf_counter()
    return {
        "threads": threads,
        "texts": len(texts),
        "turns": len(texts) - len(questions),
        "questions": len(questions),
        "import_and_data_s": round(t_import - t0, 3),
        "model_load_s": round(t_load - t_import, 3),
        "encode_s": round(t_encode - t_load, 3),
        "bm25_s": round(t_bm25 - t_encode, 3),
    }


def timed(cmd: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` to the end; its return code, wall seconds and output."""
    t0 = time.perf_counter()
    proc = subprocess.run(list(cmd), env=env, capture_output=True, text=True, check=False)
    return {
        "rc": proc.returncode,
        "wall_s": round(time.perf_counter() - t0, 3),
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def child_usage(before: Any) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB, the largest child so far) since ``before`` (a RUSAGE_CHILDREN snapshot)."""
    now = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (now.ru_utime - before.ru_utime) + (now.ru_stime - before.ru_stime)
    return round(cpu, 2), round(now.ru_maxrss / 1024, 1)


def run_dirs(root: Path, name: str) -> Path:
    """The one run dir of experiment ``name`` under ``root``."""
    found = sorted((root / "runs" / name).glob("*/*/*/*/*/stats.json"))
    if not found:
        raise RuntimeError(f"no finished run under {root / 'runs' / name}")
    return found[0].parent


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q / 100 * len(ordered)) - 1))]


def read_run(run_dir: Path) -> dict[str, Any]:
    """Stage split, text counts and per-question retrieval times of a finished run."""
    stats = json.loads((run_dir / "stats.json").read_text())
    timing = stats.get("timing") or {}
    lat = []
    with (run_dir / "items.jsonl").open() as fh:
        for line in fh:
            lat.append(float((json.loads(line).get("latency_s") or {}).get("retrieve", 0.0)))
    stages = timing.get("stages_s") or {}
    return {
        "stages_s": stages,
        "embed_s": timing.get("embed_s"),
        "embed_load_s": timing.get("embed_load_s"),
        "texts_computed": timing.get("texts_computed"),
        "texts_from_cache": timing.get("texts_from_cache"),
        "before_first_item_s": round(float(stages.get("start-up", 0.0)) + float(stages.get("load", 0.0)), 3),
        "items": len(lat),
        "retrieve_p50_ms": round(1000 * percentile(lat, 50), 2),
        "retrieve_p95_ms": round(1000 * percentile(lat, 95), 2),
    }


def memcore_run() -> list[str]:
    """``memcore-run`` of this interpreter's environment."""
    exe = Path(sys.executable).with_name("memcore-run")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "memcore.commands.run"]


def dataset_overrides(dataset: str, data: str) -> list[str]:
    """``locomo`` (all ten conversations) or one conversation id, read from ``data``."""
    chosen = ["dataset=locomo"] if dataset == "locomo" else ["dataset=conv", f"dataset.id={dataset}"]
    return [*chosen, f"dataset.path={data}"]


def one_run(
    root: Path, name: str, method: str, budget: str, data: tuple[str, str], extra: Sequence[str], env: dict[str, str]
) -> dict[str, Any]:
    """One ``memcore-run`` of ``method`` into ``root`` (``data``: the dataset choice and the file)."""
    cmd = [*memcore_run(), f"method={method}", *dataset_overrides(*data), "eval.answer=false"]
    cmd += [*extra, f"experiment_name={name}", "progress=false", "print_table=false"]
    if budget != "none":
        cmd.append(f"eval.token_cap={budget}")
    load_before = machine_state()["loadavg_1_5_15"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = timed(cmd, {**env, "MEMCORE_RESULTS": str(root)})
    cpu, peak = child_usage(before)
    if res["rc"] != 0:
        tail = (res["stderr"] or res["stdout"]).strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(cmd)} exited {res['rc']}: {' | '.join(tail)}")
    row = {"method": method, "budget": budget, "wall_s": res["wall_s"], "cpu_s": cpu, "peak_rss_children_mb": peak}
    row["load_before"] = load_before
    row["load_after"] = machine_state()["loadavg_1_5_15"]
    row.update(read_run(run_dirs(root, name)))
    return row


def floor(data: str, dataset: str, threads: int, env: dict[str, str]) -> dict[str, Any]:
    """The floor in a fresh process with torch on ``threads`` threads."""
    conv = "" if dataset == "locomo" else dataset
    cmd = [sys.executable, "-m", "experiments.benchmarks.retrieval_speed", "--floor-child", "--data", data]
    if conv:
        cmd += ["--dataset", conv]
    load_before = machine_state()["loadavg_1_5_15"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    res = timed(cmd, {**env, "MEMCORE_FLOOR_THREADS": str(threads)})
    cpu, peak = child_usage(before)
    if res["rc"] != 0:
        raise RuntimeError(f"the floor exited {res['rc']}: {res['stderr'].strip().splitlines()[-1:]}")
    parts = json.loads(res["stdout"].strip().splitlines()[-1])
    return {"wall_s": res["wall_s"], "cpu_s": cpu, "peak_rss_children_mb": peak, "load_before": load_before, **parts}


def render(result: dict[str, Any]) -> str:
    """The markdown table of a benchmark result."""
    fl = {f["threads"]: f for f in result["floor"]}
    ref = result["floor_reference_s"]
    lines = [
        "# LLM-free runs against their embedding floor",
        "",
        f"`{result['command']}`, dataset {result['dataset']}; machine at start {result['machine_at_start']},"
        f" at end {result['machine_at_end']['loadavg_1_5_15']} (load average 1 / 5 / 15 min, {result['cpus']} cores).",
        "",
        "## Floor: one batched MiniLM pass over every turn and question, BM25 per conversation (a fresh process)",
        "",
        md_table(
            [
                "torch threads",
                "wall s",
                "CPU s",
                "texts",
                "imports + data s",
                "model load s",
                "encode s",
                "BM25 s",
                "load before",
            ],
            [
                [
                    t,
                    f["wall_s"],
                    f["cpu_s"],
                    f["texts"],
                    f["import_and_data_s"],
                    f["model_load_s"],
                    f["encode_s"],
                    f["bm25_s"],
                    f["load_before"],
                ]
                for t, f in sorted(fl.items())
            ],
        ),
        "",
        f"Ratios below are against the floor on every core ({ref:.1f} s), the runs' default thread setting.",
        "",
        "## Runs (one `memcore-run` process each)",
        "",
    ]
    rows = []
    for r in result["runs"]:
        st = r["stages_s"]
        split = ", ".join(f"{k} {v:.1f}" for k, v in st.items() if v >= 0.05)
        target = ""
        if r["phase"] == "cold" and r["method"] in COLD_RATIO_TARGET:
            target = f"≤ {COLD_RATIO_TARGET[r['method']]}"
        elif r["phase"].startswith("warm"):
            target = f"≤ {WARM_WALL_TARGET_S:.0f} s"
        rows.append(
            [
                r["label"],
                r["phase"],
                r["budget"],
                r["wall_s"],
                f"{r['wall_s'] / ref:.2f}",
                target,
                r["cpu_s"],
                r["peak_rss_children_mb"],
                f"{r['texts_computed']} / {r['texts_from_cache']}",
                f"{r['embed_s']} (load {r['embed_load_s']})" if r.get("embed_load_s") else r["embed_s"],
                r["before_first_item_s"],
                r["retrieve_p50_ms"],
                r["retrieve_p95_ms"],
                split,
                r["load_before"],
            ]
        )
    lines.append(
        md_table(
            [
                "method",
                "phase",
                "context tokens",
                "wall s",
                "÷ floor",
                "target",
                "CPU s",
                "peak RSS MiB (children so far)",
                "texts computed / cached",
                "embed s",
                "start-up + load s",
                "retrieve p50 ms",
                "retrieve p95 ms",
                "stages s (summed over threads and worker processes)",
                "load before",
            ],
            rows,
        )
    )
    lines += [
        "",
        f"Targets: cold ÷ floor as listed; warm wall ≤ {WARM_WALL_TARGET_S:.0f} s on all of LoCoMo; start-up + load"
        f" (before the first conversation) ≤ {STARTUP_TARGET_S:.0f} s. Stages come from each run's `stats.json`"
        " `timing`; `embed s` is the model's encoding time inside build, prefetch and retrieve (in brackets: the"
        " part of it spent loading the model). Peak RSS is the largest child process so far (getrusage), so it"
        " only grows down the table.",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="retrieval_speed", description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None, help="locomo10.json (default: MEMCORE_DATA's, as the runs resolve it)")
    p.add_argument("--dataset", default="locomo", help="locomo (all ten conversations) or one conversation id")
    p.add_argument("--methods", nargs="+", default=list(METHODS))
    p.add_argument("--budgets", nargs="+", default=["none", "2000"], help="eval.token_cap values; none = unset")
    p.add_argument("--no-windows-off", action="store_true", help="skip memcore-cheap with the windows off")
    p.add_argument("--no-in-threads", action="store_true", help="skip memcore-cheap with build_processes=0")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--name", default="retrieval_speed")
    p.add_argument("--floor-child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        print(
            f"error: not a retrieval-only method this benchmark knows: {unknown}; known: {list(METHODS)}",
            file=sys.stderr,
        )
        return 2
    try:
        args.data = str(resolve_locomo_path(args.data))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.floor_child:
        conv = None if args.dataset == "locomo" else [args.dataset]
        print(json.dumps(floor_child(args.data, conv)))
        return 0
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot write {args.out} ({exc}); pass --out DIR", file=sys.stderr)
        return 2
    env = {k: v for k, v in os.environ.items() if k != "MEMCORE_RESULTS"}
    start = machine_state()
    print(f"load average at start {start['loadavg_1_5_15']}", file=sys.stderr)
    floors = [floor(args.data, args.dataset, t, env) for t in sorted({1, os.cpu_count() or 1})]
    reference = next(f for f in floors if f["threads"] == (os.cpu_count() or 1))["wall_s"]
    runs: list[dict[str, Any]] = []
    work = Path(tempfile.mkdtemp(prefix="retrieval_speed-"))
    try:
        for method in args.methods:
            for budget in args.budgets:
                root = work / f"{method}-{budget}"
                for phase in ("cold", "warm"):
                    row = one_run(root, phase, method, budget, (args.dataset, args.data), (), env)
                    runs.append({"label": method, "phase": phase, **row})
                    print(f"{method} {budget} {phase}: {row['wall_s']:.1f} s", file=sys.stderr)
                if method == "memcore-cheap" and not args.no_windows_off:
                    row = one_run(root, "warm_windows_off", method, budget, (args.dataset, args.data), WINDOWS_OFF, env)
                    runs.append({"label": "memcore-cheap, windows off", "phase": "warm", **row})
                    print(f"{method} {budget} warm, windows off: {row['wall_s']:.1f} s", file=sys.stderr)
                if method == "memcore-cheap" and not args.no_in_threads:
                    row = one_run(root, "warm_in_threads", method, budget, (args.dataset, args.data), IN_THREADS, env)
                    runs.append({"label": "memcore-cheap, build_processes=0", "phase": "warm", **row})
                    print(f"{method} {budget} warm, build_processes=0: {row['wall_s']:.1f} s", file=sys.stderr)
                shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = {
        "dataset": args.dataset,
        "cpus": os.cpu_count(),
        "machine_at_start": start["loadavg_1_5_15"],
        "floor": floors,
        "floor_reference_s": reference,
        "runs": runs,
    }
    path = write_result(args.name, result, args.out)
    body = json.loads(path.read_text())
    (args.out / f"{args.name}.md").write_text(render(body))
    print(f"wrote {path} and {args.out / (args.name + '.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What following MemGPT's and LightMem's upstream code changes in a build: the same runs, on the simulator, with
the code of a git revision (``--before``, by default ``main``) and with this checkout's.

Per side it starts ``memcore-simulate`` from that side's code (``--time-scale 0.01 --seed 1``, no faults), runs
``method=memgpt`` and ``method=lightmem`` on ``dataset=locomo-mini`` with the ``gpt-4o-mini`` preset pointed at
it and the hashing embedder (judge off), archives the runs (``memcore-archive --slim``) under ``--out/runs/<side>``
and writes ``--out/summary.json`` and ``--out/table.md``: calls and tokens by stage, and each method's build counters
(MemGPT: steps, warnings, evictions, archival entries; LightMem: extraction calls, facts, entries, updates). The
simulator's replies mean nothing, so only calls, tokens and counts are meaningful, never a score.

    python -m experiments.measure.baseline_fidelity --out results/measured/baseline_fidelity

The ``before`` code is ``git archive <rev>`` unpacked in a scratch directory (nothing of the repository changes).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from baselines.lightmem.config import LightMemConfig
from baselines.lightmem.updates import stamp_seconds, update_queues

REPO = Path(__file__).resolve().parents[2]
#: (label, method, overrides): MemGPT at its own window and at 4,096 tokens (more warnings and evictions), LightMem.
RUNS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("memgpt", "memgpt", ()),
    ("memgpt-4096", "memgpt", ("method.context_window_tokens=4096",)),
    ("lightmem", "lightmem", ()),
)
EXPERIMENT = "baseline_fidelity"
MEMGPT_COUNTERS = (
    "agent_steps",
    "alerts",
    "evictions",
    "summary_calls",
    "hidden_messages",
    "summary_covers_turns",
    "archival_entries",
    "recall_messages",
    "failed_calls",
    "step_limit_hits",
    "replies_at_max_tokens",
)
LIGHTMEM_COUNTERS = (
    "segments",
    "extraction_calls",
    "facts",
    "entries",
    "facts_without_source",
    "facts_source_clamped",
    "update_calls",
    "updated",
    "deleted",
)


#: The data file both sides read (the scratch copy of the ``before`` code has no ``../shared`` beside it).
DATA = REPO.parent / "shared" / "data" / "locomo" / "locomo10.json"


def _env(code: Path) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(code)}
    if "MEMCORE_DATA" not in env and DATA.is_file():
        env["MEMCORE_DATA"] = str(DATA)
    return env


def start_simulator(code: Path, work: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The simulator of ``code``'s revision on a free port; its base URL once it listens."""
    port_file = work / "simulator.port"
    port_file.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "memcore.commands.simulate", "--port", "0", "--port-file", str(port_file)]
    cmd += ["--time-scale", "0.01", "--seed", "1"]
    log = (work / "simulator.log").open("wb")
    proc = subprocess.Popen(cmd, cwd=code, env=_env(code), stdout=log, stderr=log)
    deadline = time.monotonic() + 300
    while not port_file.exists() or not port_file.read_text().strip():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise SystemExit(f"error: the simulator did not start; see {work / 'simulator.log'}")
        time.sleep(0.5)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}/v1"


def run_method(code: Path, root: Path, label: str, method: str, overrides: tuple[str, ...], base_url: str) -> Path:
    """One ``memcore-run`` of ``method`` with ``code`` (experiment ``baseline_fidelity_<label>``); its run dir."""
    experiment = f"{EXPERIMENT}_{label}"
    cmd = [
        sys.executable,
        "-m",
        "memcore.commands.run",
        f"method={method}",
        "dataset=locomo-mini",
        "backbone=gpt-4o-mini",
    ]
    cmd += [f"++backbone.base_url={base_url}", "++backbone.api_key_required=false", "embedder=hashing", *overrides]
    cmd += [f"paths.root={root}", f"experiment_name={experiment}", "progress=false", "concurrency=4"]
    done = subprocess.run(cmd, cwd=code, env=_env(code), capture_output=True, text=True, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"error: memcore-run {label} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return root / "runs" / experiment / "locomo-mini" / "gpt-4o-mini" / "amem" / method / "none"


def lightmem_queues(run: Path) -> dict[str, Any]:
    """On the built LightMem memory of ``run`` (its snapshot; run after the 'after' build, whose entries carry
    stamps): the update queues by upstream's rule (stamp ≤ own) against the former one (turn order ≤ own), as
    (entry, candidate) pairs, and how many of each clear the 0.9 update threshold."""
    import numpy as np

    stats = json.loads((run / "stats.json").read_text())
    snapshot = Path(stats["conversations"]["conv-26"]["snapshot"])
    entries = json.loads((snapshot / "lightmem.json").read_text())["entries"]
    vectors = np.load(snapshot / "lightmem_vectors.npy")
    cfg = LightMemConfig()
    stamps = np.array([stamp_seconds(e.get("stamp")) for e in entries], dtype=np.float64)
    orders = np.array([float(e["order"]) for e in entries])
    by_stamp = update_queues(vectors, stamps, top_k=cfg.queue_top_k, keep=cfg.queue_keep)
    by_order = update_queues(vectors, orders, top_k=cfg.queue_top_k, keep=cfg.queue_keep)

    def pairs(queues: list[list[tuple[int, float]]], threshold: float = -2.0) -> set[tuple[int, int]]:
        return {(j, i) for j, q in enumerate(queues) for i, score in q if score >= threshold}

    stamp_pairs, order_pairs = pairs(by_stamp), pairs(by_order)
    later = sum(1 for j, i in stamp_pairs if entries[i]["order"] > entries[j]["order"])
    return {
        "entries": len(entries),
        "queue_pairs_by_stamp": len(stamp_pairs),
        "queue_pairs_by_turn_order": len(order_pairs),
        "pairs_in_one_rule_only": len(stamp_pairs ^ order_pairs),
        "pairs_by_stamp_with_a_later_turn": later,
        "pairs_at_update_threshold_by_stamp": len(pairs(by_stamp, cfg.update_threshold)),
        "pairs_at_update_threshold_by_turn_order": len(pairs(by_order, cfg.update_threshold)),
    }


def row(run: Path, side: str, label: str, method: str) -> dict[str, Any]:
    """The run's calls and tokens by stage and its build counters."""
    cost = json.loads((run / "cost.json").read_text())
    stats = json.loads((run / "stats.json").read_text())
    memory = stats["conversations"]["conv-26"]["memory"]
    stages = cost["usage"]["by_stage"]
    keys = MEMGPT_COUNTERS if method == "memgpt" else LIGHTMEM_COUNTERS
    return {
        "side": side,
        "run": label,
        "method": method,
        "calls": {s: v["calls"] for s, v in stages.items()},
        "prompt_tokens": {s: v["prompt_tokens"] for s, v in stages.items()},
        "completion_tokens": {s: v["completion_tokens"] for s, v in stages.items()},
        "counters": {k: memory.get(k) for k in keys},
        "calls_by_function": memory.get("calls_by_function"),
    }


def table(rows: list[dict[str, Any]]) -> str:
    """One markdown table per method, a column per side."""
    out: list[str] = []
    for label, _, overrides in RUNS:
        mine = [r for r in rows if r["run"] == label]
        sides = [r["side"] for r in mine]
        title = f"### {label}" + (f" (`{' '.join(overrides)}`)" if overrides else "")
        out += [title, "", "| | " + " | ".join(sides) + " |", "|---|" + "---:|" * len(sides)]
        for stage in ("ingest", "retrieve", "answer"):
            out.append(f"| {stage} calls | " + " | ".join(str(r["calls"].get(stage, 0)) for r in mine) + " |")
            out.append(
                f"| {stage} prompt / completion tokens | "
                + " | ".join(
                    f"{r['prompt_tokens'].get(stage, 0):,} / {r['completion_tokens'].get(stage, 0):,}" for r in mine
                )
                + " |"
            )
        for key in mine[0]["counters"]:
            out.append(
                f"| {key} | "
                + " | ".join("—" if r["counters"][key] is None else str(r["counters"][key]) for r in mine)
                + " |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", default="main", help="git revision whose code is the 'before' side")
    ap.add_argument("--out", type=Path, required=True, help="directory for runs/, summary.json and table.md")
    args = ap.parse_args(argv)
    out = args.out.resolve()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="baseline-fidelity-") as tmp:
        scratch = Path(tmp)
        before = scratch / "code-before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.before], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
        for side, code in (("before", before), ("after", REPO)):
            work = scratch / side
            work.mkdir()
            proc, url = start_simulator(code, work)
            try:
                runs = [run_method(code, work / "root", label, m, o, url) for label, m, o in RUNS]
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            rows += [row(r, side, label, m) for r, (label, m, _) in zip(runs, RUNS)]
            if side == "after":
                queues = lightmem_queues(runs[-1])
            archived = out / "runs" / side
            pack = [sys.executable, "-m", "memcore.commands.archive", "--slim", "--out", str(archived)]
            subprocess.run(
                [*pack, "--root", str(work / "root"), *map(str, runs)],
                cwd=REPO,
                env=_env(REPO),
                check=True,
                capture_output=True,
            )
    out.mkdir(parents=True, exist_ok=True)
    summary = {
        "before": args.before,
        "dataset": "locomo-mini",
        "backbone": "gpt-4o-mini (simulator)",
        "rows": rows,
        "lightmem_update_queues": queues,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    text = table(rows) + "\n### lightmem update queues (the after build's entries)\n\n"
    text += "\n".join(f"- {k}: {v}" for k, v in queues.items()) + "\n"
    (out / "table.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

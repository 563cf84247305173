"""The fault table: inject each fault into whole runs and count how many complete with exactly the
metrics of a fault-free run, and how many QA items are lost or duplicated.

Runs use deterministic answers (``tests.fault_proxy.scripted_answer`` behind a fake OpenAI-compatible
server, or the scripted backbone), so a correct run is bit-identical to the reference and the whole
table takes minutes. ``python -m tests.test_reliability_measure --runs 5`` prints the table (markdown);
the test runs every scenario once (slow: ``--runslow``).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from memcore.itemlog import read_items
from memcore.llm.backbone import BackboneError
from memcore.runner import run_config
from memcore.snapshots import MANIFEST
from tests.fakes import upstream_backbone
from tests.fault_proxy import FakeUpstream, FaultProxy, scripted_answer
from tests.support import CHILD_OF_TEST, REPO, RESUME_OVERRIDES, compose_run, kill_and_resume

WIRE = ["dataset=locomo-mini", "embedder=hashing", "method=rag_bm25", "concurrency=4"]
FAULT_RATE = 0.3  # share of chat requests that get the fault
TRANSPORT = [
    "drop",
    "reset",
    "delay:1.5",
    "status:429",
    "status:500",
    "status:503",
    "truncate",
    "cut",
    "html",
    "empty_choices",
    "null_content",
]


@dataclass
class Outcome:
    completed: bool
    correct: bool | None  # None: the fault changes answers by design (a counted fallback)
    lost: int
    duplicated: int
    injected: int
    note: str = ""


def snapshot_of(run_dir: Path) -> dict[str, Any]:
    metrics = json.loads((run_dir / "metrics.json").read_text())
    items = read_items(run_dir / "items.jsonl")
    return {
        "overall": metrics["overall"],
        "by_category": metrics["by_category"],
        "answers": {r["item_id"]: (r["answer"], r["retrieved_dia_ids"]) for r in items},
    }


def judge(run_dir: Path, reference: dict[str, Any], *, completed: bool, injected: int, note: str = "") -> Outcome:
    items = read_items(run_dir / "items.jsonl") if (run_dir / "items.jsonl").exists() else []
    ids = [r["item_id"] for r in items]
    lost = len(set(reference["answers"]) - set(ids))
    dup = len(ids) - len(set(ids))
    correct = completed and (run_dir / "metrics.json").exists() and snapshot_of(run_dir) == reference
    return Outcome(completed, bool(correct), lost, dup, injected, note)


class References:
    """Fault-free results per configuration, computed once."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self._cache: dict[str, dict[str, Any]] = {}

    def wire(self) -> dict[str, Any]:
        if "wire" not in self._cache:
            root = self.work / "ref-wire"
            with FakeUpstream(lifetime_s=300) as up:
                run_config(compose_run(root, [*WIRE, *upstream_backbone(up.base_url)]), root / "run")
            self._cache["wire"] = snapshot_of(root / "run")
        return self._cache["wire"]

    def amem(self) -> dict[str, Any]:
        if "amem" not in self._cache:
            root = self.work / "ref-amem"
            run_config(compose_run(root, [*RESUME_OVERRIDES, "backbone.scripted_latency_s=0"]), root / "run")
            self._cache["amem"] = snapshot_of(root / "run")
        return self._cache["amem"]


Scenario = Callable[[Path, random.Random, References], Outcome]


def _wire_run(work: Path, schedule: list[str], *, attempts: int = 12) -> tuple[bool, int, FaultProxy]:
    with FakeUpstream(lifetime_s=300) as up, FaultProxy(up.base_url, schedule, lifetime_s=300) as proxy:
        try:
            run_config(compose_run(work, [*WIRE, *upstream_backbone(proxy.base_url, attempts=attempts)]), work / "run")
            completed = True
        except BackboneError:
            completed = False
    injected = sum(1 for _, a in proxy.log if a != "pass")
    return completed, injected, proxy


def wire_fault(fault: str | None) -> Scenario:
    """``fault`` on a random 30% of chat requests (``None``: a random fault each time)."""

    def scenario(work: Path, rng: random.Random, refs: References) -> Outcome:
        schedule = [(fault or rng.choice(TRANSPORT)) if rng.random() < FAULT_RATE else "pass" for _ in range(1000)]
        completed, injected, _ = _wire_run(work, schedule)
        return judge(work / "run", refs.wire(), completed=completed, injected=injected)

    return scenario


def parse_fault(work: Path, rng: random.Random, refs: References) -> Outcome:
    """Non-JSON completion text: the amem protocol's answer parser falls back to the raw text, counted."""
    schedule = ["garbage_content" if rng.random() < FAULT_RATE else "pass" for _ in range(1000)]
    completed, injected, _ = _wire_run(work, schedule)
    out = judge(work / "run", refs.wire(), completed=completed, injected=injected)
    cost = json.loads((work / "run" / "cost.json").read_text())
    counted = cost["usage"]["parse_failures_by_kind"].get("answer", {}).get("answer_raw_text", 0)
    out.correct = None
    out.note = f"fallbacks counted {counted} of {injected} injected"
    if counted != injected:
        out.completed = False
    return out


def server_restart(work: Path, rng: random.Random, refs: References) -> Outcome:
    """The upstream dies after a random number of answers (in-flight requests reset, port closed)
    and comes back on the same port after a random outage of 0.2–3 s."""
    crash_at = rng.randint(3, 20)
    outage = rng.uniform(0.2, 3.0)
    holder: dict[str, FakeUpstream] = {}
    fired = threading.Event()

    def crash() -> None:
        holder["up"].kill()
        threading.Timer(outage, holder["up"].start).start()

    def responder(messages: list[dict[str, Any]]) -> str:
        if holder["up"].chat_requests >= crash_at and not fired.is_set():
            fired.set()
            threading.Thread(target=crash).start()
        return scripted_answer(messages)

    up = FakeUpstream(responder, latency_s=0.02, lifetime_s=300)
    holder["up"] = up
    with up:
        try:
            run_config(compose_run(work, [*WIRE, *upstream_backbone(up.base_url, attempts=60)]), work / "run")
            completed = True
        except BackboneError:
            completed = False
    return judge(work / "run", refs.wire(), completed=completed, injected=1, note=f"outage {outage:.1f}s")


def exhausted_then_rerun(work: Path, rng: random.Random, refs: References) -> Outcome:
    """The server stays down longer than the retry budget: the run stops with the rerun message;
    the rerun (server back) finishes it."""
    down_from = rng.randint(2, 20)
    schedule = ["pass"] * down_from + ["status:503"] * 200
    completed, injected, _ = _wire_run(work, schedule, attempts=3)
    if completed:
        return Outcome(False, False, 0, 0, injected, "the outage did not stop the run")
    completed, more, _ = _wire_run(work, [])
    return judge(work / "run", refs.wire(), completed=completed, injected=injected + more, note="stopped, then rerun")


def sigkill(point: str) -> Scenario:
    def scenario(work: Path, rng: random.Random, refs: References) -> Outcome:
        work.mkdir(parents=True, exist_ok=True)
        before, run_dir = kill_and_resume(work, point, rng)
        ref = refs.amem()
        return judge(run_dir, ref, completed=True, injected=1, note=f"{before} items done at the kill")

    return scenario


def _complete_wire_run(work: Path, run_name: str = "run") -> None:
    with FakeUpstream(lifetime_s=300) as up:
        run_config(compose_run(work, [*WIRE, *upstream_backbone(up.base_url)]), work / run_name)


def torn_items(work: Path, rng: random.Random, refs: References) -> Outcome:
    """items.jsonl cut at a random byte (a kill mid-write), then the same command again."""
    _complete_wire_run(work)
    path = work / "run" / "items.jsonl"
    data = path.read_bytes()
    path.write_bytes(data[: rng.randint(1, len(data) - 2)])
    _complete_wire_run(work)
    return judge(work / "run", refs.wire(), completed=True, injected=1)


def corrupt_cache(work: Path, rng: random.Random, refs: References) -> Outcome:
    """The LLM response cache cut to a random length; a new run on the same results root."""
    _complete_wire_run(work, "first")
    db = work / "results" / "cache" / "llm.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    db.write_bytes(db.read_bytes()[: rng.randint(100, db.stat().st_size - 1)])
    _complete_wire_run(work)
    ok = sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    detected = any(p.name.startswith("llm.sqlite.corrupt-") for p in db.parent.iterdir())
    out = judge(
        work / "run", refs.wire(), completed=True, injected=1, note="moved aside and rebuilt" if detected else ""
    )
    out.correct = bool(out.correct and ok)
    return out


def corrupt_snapshot(work: Path, rng: random.Random, refs: References) -> Outcome:
    """One byte flipped in a random file of the built memory; a new run on the same results root."""
    _complete_wire_run(work, "first")
    snap = next(p for p in (work / "results" / "snapshots" / "rag_bm25").iterdir() if (p / MANIFEST).exists())
    victim = rng.choice(sorted(p for p in snap.rglob("*") if p.is_file() and p.name != MANIFEST))
    data = bytearray(victim.read_bytes())
    data[rng.randrange(len(data))] ^= 0xFF
    victim.write_bytes(bytes(data))
    _complete_wire_run(work)
    cost = json.loads((work / "run" / "cost.json").read_text())
    out = judge(work / "run", refs.wire(), completed=True, injected=1)
    out.correct = bool(out.correct and cost["memory_build"]["snapshots_built"] == 1)
    return out


def concurrent_runs(work: Path, rng: random.Random, refs: References) -> Outcome:
    """Two processes, one results root (cache + snapshots), started together."""
    root = work / "results"
    with FakeUpstream(latency_s=0.01, lifetime_s=600) as up:
        cmds = [
            [
                sys.executable,
                "-m",
                "memcore.commands.run",
                *WIRE,
                *upstream_backbone(up.base_url),
                "progress=false",
                "print_table=false",
                f"paths.root={root}",
                f"hydra.run.dir={work / name}",
            ]
            for name in ("a", "b")
        ]
        procs = [
            subprocess.Popen(c, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **CHILD_OF_TEST)
            for c in cmds
        ]
        codes = [p.wait(timeout=600) for p in procs]
    outs = [judge(work / n, refs.wire(), completed=c == 0, injected=0) for n, c in zip(("a", "b"), codes, strict=True)]
    built = sum(json.loads((work / n / "cost.json").read_text())["memory_build"]["snapshots_built"] for n in ("a", "b"))
    ok = all(
        sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for db in (root / "cache").glob("*.sqlite")
    )
    return Outcome(
        all(o.completed for o in outs),
        all(o.correct for o in outs) and built == 1 and ok,
        sum(o.lost for o in outs),
        sum(o.duplicated for o in outs),
        0,
        f"snapshot built {built}x, cache integrity {'ok' if ok else 'FAILED'}",
    )


SCENARIOS: list[tuple[str, Scenario]] = [
    *[(f"`{f}` on 30% of requests", wire_fault(f)) for f in TRANSPORT],
    ("a random mix of the above on 30% of requests", wire_fault(None)),
    ("non-JSON completion text on 30% of answers", parse_fault),
    ("server killed mid-run, back on the same port", server_restart),
    ("server down longer than the retry budget, then rerun", exhausted_then_rerun),
    ("SIGKILL during ingest (A-Mem build), then rerun", sigkill("ingest")),
    ("SIGKILL during QA, then rerun", sigkill("qa")),
    ("items.jsonl cut at a random byte, then rerun", torn_items),
    ("LLM cache DB cut at a random length", corrupt_cache),
    ("one byte flipped in a memory snapshot", corrupt_snapshot),
    ("two processes sharing one cache and snapshot dir", concurrent_runs),
]


def measure(runs: int, work: Path, only: list[str] | None = None, seed: int = 0) -> list[dict[str, Any]]:
    refs = References(work)
    rows = []
    for i, (name, scenario) in enumerate(SCENARIOS):
        if only and not any(o in name for o in only):
            continue
        outs = []
        t0 = time.perf_counter()
        for r in range(runs):
            run_work = work / f"s{i}-r{r}"
            outs.append(scenario(run_work, random.Random(f"{seed}-{i}-{r}"), refs))
            shutil.rmtree(run_work, ignore_errors=True)
        rows.append(
            {
                "fault": name,
                "runs": runs,
                "completed": sum(o.completed for o in outs),
                "correct": None if any(o.correct is None for o in outs) else sum(bool(o.correct) for o in outs),
                "lost": sum(o.lost for o in outs),
                "duplicated": sum(o.duplicated for o in outs),
                "injected": sum(o.injected for o in outs),
                "notes": "; ".join(sorted({o.note for o in outs if o.note}))[:160],
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
    return rows


def format_table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| fault injected | runs | faults injected | completed | identical metrics | items lost | items duplicated | notes |",
        "|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        correct = "n/a (counted fallback)" if r["correct"] is None else str(r["correct"])
        lines.append(
            f"| {r['fault']} | {r['runs']} | {r['injected']} | {r['completed']} | {correct} | {r['lost']} | "
            f"{r['duplicated']} | {r['notes']} |"
        )
    return "\n".join(lines)


@pytest.mark.slow
@pytest.mark.usefixtures("locomo_path")
def test_fault_matrix_one_run_each(tmp_path: Path) -> None:
    rows = measure(1, tmp_path)
    assert len(rows) == len(SCENARIOS)
    for r in rows:
        assert r["completed"] == 1, r
        assert r["correct"] in (1, None), r
        assert r["lost"] == 0 and r["duplicated"] == 0, r
    assert sum(r["correct"] is None for r in rows) == 1  # only the parse fault changes answers, by design


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", nargs="*", help="substrings of scenario names to run")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    import logging

    logging.basicConfig(level=logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="memcore-faults-") as tmp:
        t0 = time.perf_counter()
        rows = measure(args.runs, Path(tmp), args.only, args.seed)
        print(format_table(rows))
        print(f"\n{sum(r['runs'] for r in rows)} runs in {time.perf_counter() - t0:.0f}s (seed {args.seed})")
        print(json.dumps(rows, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()

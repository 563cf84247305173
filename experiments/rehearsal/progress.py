"""Progress while the sweeps run: one line per finished job, a sweep line with rate and ETA, and warnings only
when something needs a person."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.rehearsal.plan import BACKBONE, FAULT_KINDS, Job, Plan
from experiments.rehearsal.runs import count_lines, read_json, run_spend
from memcore.config import load_backbone_preset

FALLBACK_WARN = 0.05


class Progress:
    """Polls the run dirs: one line per finished job, a sweep line with rate and ETA, warnings that need a person."""

    def __init__(self, plan: Plan, out: Callable[[str], None], every_s: float = 30.0) -> None:
        b = load_backbone_preset(BACKBONE)
        self.prices = (float(b.price_in_per_mtok), float(b.price_out_per_mtok))
        self.plan, self.out, self.every_s = plan, out, every_s
        self.t0 = time.monotonic()
        self.start_items = self.items_done()
        self.finished: set[Path] = set()
        self.warned: set[str] = set()
        self.last_line = 0.0
        self.started_at = time.time()

    def items_done(self) -> int:
        return sum(min(count_lines(j.run_dir / "items.jsonl"), len(j.expected_ids)) for j in self.plan.jobs)

    def poll(self, sim: dict[str, Any] | None, force: bool = False) -> None:
        for job in self.plan.jobs:
            if job.run_dir in self.finished:
                continue
            metrics = job.run_dir / "metrics.json"
            if metrics.exists() and metrics.stat().st_mtime >= self.started_at - 1:
                cost = read_json(job.run_dir / "cost.json")
                if cost is None:
                    continue
                self.finished.add(job.run_dir)
                self.job_line(job, cost)
        self.fault_warnings(sim)
        now = time.monotonic()
        if force or now - self.last_line >= self.every_s:
            self.last_line = now
            self.out(self.sweep_line(now))

    def job_line(self, job: Job, cost: dict[str, Any]) -> None:
        spend = run_spend(cost, *self.prices)
        items = count_lines(job.run_dir / "items.jsonl")
        wall = (cost.get("wall_s") or {}).get("total", 0.0)
        self.out(
            f"done  {job.experiment:<14} {job.method:<13} {job.ablation:<11} items {items:>5}/{len(job.expected_ids):<5} "
            f"wall {wall:7.1f} s  calls {spend['calls']:>7,.0f}  USD {spend['usd']:8.4f}"
        )
        total = (cost.get("usage") or {}).get("total") or {}
        calls, fallbacks = int(total.get("calls", 0)), int(total.get("parse_failures", 0))
        if calls and fallbacks / calls > FALLBACK_WARN:
            self.out(
                f"WARNING {job.label}: {fallbacks} of {calls} replies ({100 * fallbacks / calls:.1f} %) fell back "
                f"(unparseable after retries; by kind: {(cost.get('usage') or {}).get('parse_failures_by_kind')}); "
                "check the prompts or the model before the paid sweep"
            )

    def fault_warnings(self, sim: dict[str, Any] | None) -> None:
        if not sim or sim.get("requests", 0) < 200:
            return
        for kind in FAULT_KINDS:
            rate = sim["faults"].get(kind, 0) / sim["requests"]
            configured = self.plan.sim[kind]
            if rate > max(3 * configured, 0.05) and kind not in self.warned:
                self.warned.add(kind)
                self.out(
                    f"WARNING faults {kind}: {100 * rate:.1f} % of requests (configured {100 * configured:.1f} %); "
                    "a real endpoint failing this often needs a person (rate limit, quota, outage)"
                )

    def sweep_line(self, now: float) -> str:
        done, total = self.items_done(), self.plan.expected_items
        elapsed = now - self.t0
        rate = (done - self.start_items) / elapsed if elapsed > 0 else 0.0
        left = total - done
        eta = f"{left / rate / 60:.1f} min" if rate > 0 else "?"
        width = 30
        fill = int(width * done / total) if total else width
        return (
            f"sweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} items ({100 * done / max(total, 1):.0f} %), "
            f"{len(self.finished)}/{len(self.plan.jobs)} jobs, {rate:.2f} items/s, {elapsed / 60:.1f} min, ETA {eta}"
        )

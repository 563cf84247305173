"""One rehearsal: the sweeps, then every check and the reports, as the summary dict."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.rehearsal.checks import check_estimate, check_faults, check_items
from experiments.rehearsal.plan import BACKBONE, Plan
from experiments.rehearsal.report import write_reports
from experiments.rehearsal.runs import read_json, run_spend
from experiments.rehearsal.sweep import run_sweeps
from experiments.rehearsal.wall import check_wall, extrapolate_full_wall
from memcore.config import load_backbone_preset


def rehearse(
    plan: Plan,
    work: Path,
    out: Callable[[str], None],
    *,
    estimate_from: Path | None,
    overhead_from: Path | None = None,
) -> dict[str, Any]:
    """One rehearsal into ``work`` (resumes whatever is there); the summary dict (not yet written)."""
    ran = run_sweeps(plan, work, out)
    sim = ran["simulator"]
    items = check_items(plan)
    b = load_backbone_preset(BACKBONE)
    spend = {
        j.label: run_spend(
            read_json(j.run_dir / "cost.json") or {}, float(b.price_in_per_mtok), float(b.price_out_per_mtok)
        )
        for j in plan.jobs
    }
    resumed = bool(ran["resumed"])
    faults = check_faults(plan, sim, counted_by_runs=not resumed)
    summary: dict[str, Any] = {
        "scale": plan.scale.name,
        "slice": {"conversations": plan.conversations, "turns": plan.turns, "questions": plan.questions},
        "time_scale": plan.time_scale,
        "fault_rates": plan.sim,
        "parallel_jobs": plan.parallel_jobs,
        "concurrency": plan.concurrency,
        "items": items,
        "faults": faults,
        "spend": spend,
        "usd_total": sum(v["usd"] for v in spend.values()),
        "resumed": resumed,
        "wall": check_wall(plan, ran["wall_s"], sim, overhead_from)
        if not resumed
        else {"ok": None, "note": "resumed: not timed"},
        "estimate": check_estimate(plan, estimate_from),
        "simulator": {k: v for k, v in sim.items() if k != "config"},
    }
    if not resumed and plan.scale.name != "full":
        summary["full_wall_extrapolated"] = extrapolate_full_wall(plan)
    summary["report"] = write_reports(plan, work)
    return summary

"""What a rehearsal writes besides its runs: ``memcore-report`` over both sweeps, and ``summary.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from experiments.rehearsal.checks import ESTIMATE_TOLERANCE
from experiments.rehearsal.plan import Plan
from experiments.rehearsal.sweep import RehearsalError
from experiments.rehearsal.wall import WALL_TOLERANCE
from memcore.commands.report import main as report_main


def write_reports(plan: Plan, work: Path) -> dict[str, str]:
    """``memcore-report`` in the main layout over paper_main and the ablation layout over paper_ablation."""
    out = {}
    for exp, layout in (("paper_main", "main"), ("paper_ablation", "ablation")):
        dest = work / "report" / exp
        args = [str(plan.root / "runs" / exp), "--layout", layout, "--out", str(dest), "--quiet", "--n-boot", "200"]
        rc = report_main([*args, "--no-plots"])
        if rc != 0:
            raise RehearsalError(f"memcore-report {' '.join(args)} exited {rc}")
        out[exp] = str(dest.relative_to(work))
    return out


def summary_markdown(s: dict[str, Any]) -> str:
    """``summary.md``: the checks with their numbers, then one row per run (answered, lost, calls, list-price USD)."""
    mark = lambda ok: "pass" if ok else ("n/a" if ok is None else "FAIL")  # noqa: E731
    lines = [f"# Rehearsal of the paper sweep, scale `{s['scale']}`", ""]
    lines += [f"Command: `{s['command']}`", ""]
    lines += [
        f"Slice: {s['slice']['conversations']} conversation(s), {s['slice']['turns']} turns, "
        f"{s['slice']['questions']} QA per run; {len(s['items'])} runs; simulator time scale {s['time_scale']}, "
        f"faults {s['fault_rates']}; {s['parallel_jobs']} jobs at once, concurrency {s['concurrency']} per job.",
        "",
        "| check | result | numbers |",
        "|---|---|---|",
    ]
    items = s["items"]
    c = s["checks"]
    lines.append(f"| every job finished | {mark(c['jobs'])} | {sum(r['finished'] for r in items)}/{len(items)} |")
    lines.append(
        f"| items answered = expected, 0 lost, 0 duplicated | {mark(c['items'])} | "
        f"{sum(r['answered'] for r in items)}/{sum(r['expected'] for r in items)} answered, "
        f"{sum(r['lost'] for r in items)} lost, {sum(r['duplicated'] for r in items)} duplicated |"
    )
    f = s["faults"]
    lines.append(
        f"| faults survived and counted | {mark(f['ok'])} | injected {f['injected']} over {f['requests']} requests; "
        f"transport retries counted {f['transport_retries_counted']}"
        + (f" {f['transport_retries_by_kind']}" if f.get("transport_retries_by_kind") is not None else "")
        + ", parse retries + fallbacks "
        f"{f['parse_retries_and_fallbacks_counted']} (fallbacks {f['fallbacks']}) |"
    )
    w = s.get("wall")
    if w and "measured_s" not in w:
        lines.append(f"| wall vs calls × latency / concurrency | n/a | {w.get('note', '')} |")
    elif w:
        lines.append(
            f"| wall vs calls × latency / concurrency (±{int(WALL_TOLERANCE * 100)} %) | {mark(w['ok'])} | "
            f"measured {w['measured_s']} s, predicted {w['predicted_s']} s (ratio {w['ratio']}; fault waits "
            f"{w['fault_waits_s']} s from the {w.get('fault_waits_from', 'expected')} faults"
            + (f", {w['fault_waits_measured_s']} s timed by the client" if w.get("fault_waits_measured_s") else "")
            + ")"
            + (
                f"; with each job's harness time from `{w['overhead_from']}`: {w['predicted_with_overhead_s']} s "
                f"(ratio {w['ratio_with_overhead']})"
                if "predicted_with_overhead_s" in w
                else ""
            )
            + " |"
        )
    if w and w.get("ratio", 0) > 1 + WALL_TOLERANCE and not w.get("ok"):
        lines.append(
            "| (reading) | | the sweep took longer than its LLM latency explains: the jobs' start-up and the "
            "harness's own CPU work, not the endpoint, bound it on this machine (raise --time-scale to rehearse a "
            "latency-bound sweep) |"
        )
    e = s.get("estimate") or {}
    lines.append(
        f"| token estimate vs actual, per method (±{int(ESTIMATE_TOLERANCE * 100)} %) | {mark(e.get('ok'))} | "
        + (
            "; ".join(
                f"{r['run']}: {100 * r['error']:+.1f} %"
                + (f" (flat rate {100 * r['flat_rate_error']:+.1f} %)" if r.get("build_growth") == "traced" else "")
                for r in e.get("rows", [])
            )
            if e.get("rows")
            else e.get("note", "")
        )
        + " |"
    )
    r = s.get("resume")
    if r:
        lines.append(
            f"| kill -9 at {r['kill_at']} of the items, rerun, metrics = uninterrupted | {mark(r['ok'])} | "
            f"killed at {r['items_at_kill']}/{r['items_expected']} items; resumed rc {r['resume_rc']}; "
            f"{sum(x['identical'] for x in r['compare']['rows'])}/{len(r['compare']['rows'])} runs identical "
            f"(excluded: {', '.join(r['compare']['excluded'])}) |"
        )
    fw = s.get("full_wall_extrapolated")
    if fw:
        lines += [
            "",
            f"Full LoCoMo on this machine at this load, extrapolated linearly from these jobs' walls (x{fw['factor']}): "
            f"about {fw['hours']} h.",
        ]
    lines += ["", "## Runs", "", "| run | answered / expected | lost | duplicated | calls | USD (list price) |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for row in items:
        sp = s["spend"].get(row["run"], {})
        lines.append(
            f"| {row['run']} | {row['answered']}/{row['expected']} | {row['lost']} | {row['duplicated']} | "
            f"{sp.get('calls', 0):,.0f} | {sp.get('usd', 0):.4f} |"
        )
    lines += [
        "",
        f"Total at list price: USD {s['usd_total']:.2f}. Replies are the simulator's: scores mean nothing.",
        "",
    ]
    return "\n".join(lines)

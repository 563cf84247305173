"""The wall-time check: what the sweeps should take if LLM latency bounds them (the simulator's latency model,
the faults' waits, Hydra's batches of jobs), against what they took; and the wall of a full rehearsal extrapolated
from a smaller one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from experiments.rehearsal.plan import EXPERIMENTS, FAULT_KINDS, Job, Plan, rebase
from experiments.rehearsal.runs import read_json, retries_by_kind
from memcore.methods import get_method
from memcore.report.estimate import LOCOMO_QUESTIONS, LOCOMO_TURNS

WALL_TOLERANCE = 0.20


#: The client's mean backoff before retrying a 500 / 503 / dropped connection (``backbone.backoff_cap_s=0.5``).
BACKOFF_S = 0.4


def fault_waits(plan: Plan) -> dict[str, float]:
    """The wait one fault of each kind adds to its call: a 429's ``Retry-After``, a read timeout's ``timeout_s``
    (the simulator hangs past it) and a backoff, a backoff after anything else (a 5xx, a dropped connection, a
    malformed body). Not scaled by the time scale: the client's timeout and backoff are real seconds."""
    return {
        "429": float(plan.retry_after_s),
        "timeout": plan.timeout_s + BACKOFF_S,
        **{k: BACKOFF_S for k in ("500", "503", "drop", "malformed", "other")},
    }


def fault_wait_per_call(plan: Plan) -> float:
    """The expected wait faults add to one call at the plan's rates (:func:`fault_waits` per kind)."""
    w = fault_waits(plan)
    return sum(plan.sim[k] * w[k] for k in FAULT_KINDS)


def measured_fault_wait(job: Job) -> float:
    """The time the faults a run met really cost its client (failed attempts plus backoff, ``retry_wait_s``
    over stages; 0 for a run whose client did not time them)."""
    stages = (((read_json(job.run_dir / "cost.json") or {}).get("usage") or {}).get("by_stage") or {}).values()
    return sum(float(s.get("retry_wait_s", 0.0)) for s in stages)


def counted_fault_wait(plan: Plan, kinds: dict[str, int]) -> float:
    """The wait the faults a run met add up to: each counted retry's kind at its :func:`fault_waits` wait."""
    w = fault_waits(plan)
    return sum(n * w.get(k, BACKOFF_S) for k, n in kinds.items())


def longest_fault_wait(plan: Plan, kinds: dict[str, int]) -> float:
    """The longest single wait among the faults counted in ``kinds`` (0 when there are none)."""
    w = fault_waits(plan)
    return max((w.get(k, BACKOFF_S) for k, n in kinds.items() if n), default=0.0)


def phase_wall(latency: float, waits: float, longest: float, lanes: int, units: int) -> float:
    """The wall of a job phase (its memory build, or its QA) whose ``units`` independent chains of calls
    (conversations, questions) take ``latency`` in all, plus ``waits`` of faults, on ``lanes`` at once: the work
    shared over the lanes, but never less than the one chain that met the ``longest`` fault (a 50 s timeout in a
    QA phase of a few seconds a lane holds that question's lane past the others)."""
    return max((latency + waits) / max(1, lanes), longest + latency / max(1, units))


def batched_wall(times: Sequence[float], parallel_jobs: int) -> float:
    """The wall of jobs taking ``times`` that Hydra launches in batches of ``parallel_jobs``, starting the next
    batch when the whole batch is done: the sum over batches of the batch's slowest job."""
    return sum(max(times[i : i + parallel_jobs]) for i in range(0, len(times), parallel_jobs))


def sweep_walls(plan: Plan, per_job: dict[str, float]) -> dict[str, float]:
    """Each sweep's wall from its jobs' times (:func:`batched_wall`)."""
    return {
        exp: batched_wall([per_job[j.label] for j in plan.jobs if j.experiment == exp], plan.parallel_jobs)
        for exp in EXPERIMENTS
    }


def predicted_wall(plan: Plan) -> dict[str, Any]:
    """The wall time the sweeps should take if LLM latency is what bounds them.

    Each call's simulated latency is ``(ttft_s + completion_tokens / tokens_per_s) × time_scale`` (the simulator's
    model), summed over the calls the endpoint served (cache hits excluded) per stage, plus each call's expected
    fault wait (:func:`fault_wait_per_call`). Within a job the memory build is sequential per conversation (each
    turn sees the notes before it) and conversations build at once, so the build takes ``build time /
    min(concurrency, conversations)``; a conversation whose snapshot another job already built (an ablation that
    does not change the build) takes none. QA runs ``concurrency`` requests in flight
    (``min(concurrency, conversations)`` for a method that answers its items in order). A phase never takes less
    than its one chain (conversation, question) that met the longest counted fault (:func:`phase_wall`). Hydra launches a sweep in
    batches of ``--jobs`` jobs and starts the next batch when the whole batch is done, so a sweep takes the sum
    over its batches of the batch's slowest job (:func:`sweep_walls`). CPU time and process start-up are not in the
    model: the check fails, honestly, when the machine rather than the endpoint bounds the sweep
    (:func:`harness_overhead` measures them)."""
    c, n_conv = plan.concurrency, plan.conversations
    wait = fault_wait_per_call(plan)
    per_job: dict[str, float] = {}
    waits: dict[str, float] = {}
    counted_jobs = 0
    for job in plan.jobs:
        cost = read_json(job.run_dir / "cost.json") or {}
        stages = (cost.get("usage") or {}).get("by_stage") or {}
        build_kinds = retries_by_kind([v for k, v in stages.items() if k == "ingest"])
        qa_kinds = retries_by_kind([v for k, v in stages.items() if k != "ingest"])
        mb = cost.get("memory_build") or {}
        share = (mb.get("llm_calls_uncached", 0) / mb["llm_calls"]) if mb.get("llm_calls") else 0.0
        built, reused = int(mb.get("snapshots_built", 1)), int(mb.get("snapshots_reused", 0))
        built_share = built / (built + reused) if built + reused else 1.0
        lat = lambda calls, completion: (calls * plan.ttft_s + completion / plan.tokens_per_s) * plan.time_scale  # noqa: E731
        if stages and all("llm_completion_tokens" in v for v in stages.values()):
            # the invocation's own count of what the endpoint served (a whole run: the wall is only checked for
            # a sweep that was not resumed): exact where cached calls' replies differ in length from the rest
            ingest = stages.get("ingest") or {}
            build_calls = float(ingest.get("llm_calls", 0))
            build = lat(build_calls, ingest.get("llm_completion_tokens", 0))
            qa_stages = [v for k, v in stages.items() if k != "ingest"]
            qa = sum(lat(v.get("llm_calls", 0), v["llm_completion_tokens"]) for v in qa_stages)
            qa_calls = float(sum(v.get("llm_calls", 0) for v in qa_stages))
        else:  # runs from before: the served calls' completion tokens taken as the cached and served calls' mean
            build_calls = mb.get("llm_calls_uncached", 0) * built_share
            build = lat(build_calls, share * mb.get("completion_tokens", 0) * built_share)
            qa, qa_calls = 0.0, 0.0
            for s in ((cost.get("items_usage") or {}).get("by_stage") or {}).values():
                frac = (s["llm_calls"] / s["calls"]) if s.get("calls") else 0.0
                qa += lat(s.get("llm_calls", 0), frac * s.get("completion_tokens", 0))
                qa_calls += s.get("llm_calls", 0)
        build_longest = qa_longest = 0.0
        if stages and build_kinds is not None and qa_kinds is not None:
            # the faults this job met (its client counted each retry's kind): a rare 50 s timeout lands on the
            # job that met it, which the expected rate spreads thin over all of them
            build_wait, qa_wait = counted_fault_wait(plan, build_kinds), counted_fault_wait(plan, qa_kinds)
            build_longest, qa_longest = longest_fault_wait(plan, build_kinds), longest_fault_wait(plan, qa_kinds)
            counted_jobs += 1
        else:
            build_wait, qa_wait = build_calls * wait, qa_calls * wait
        qa_c = min(c, n_conv) if get_method(job.method).sequential_qa else c
        per_job[job.label] = phase_wall(build, build_wait, build_longest, min(c, n_conv), n_conv) + phase_wall(
            qa, qa_wait, qa_longest, qa_c, len(job.expected_ids)
        )
        waits[job.label] = build_wait + qa_wait
    return {
        "per_job_s": per_job,
        "per_sweep_s": sweep_walls(plan, per_job),
        "fault_waits_s": sum(waits.values()),
        "fault_waits_from": {len(plan.jobs): "counted", 0: "expected"}.get(counted_jobs, "mixed"),
    }


def harness_overhead(plan: Plan, source: Path) -> dict[str, float]:
    """Per job: the harness's own time (start-up, CPU work), measured by a rehearsal of the same scale at a small
    time scale (``source``: its dir, e.g. the default 0.02): that job's wall minus the latency
    :func:`predicted_wall` gives it there. Empty when ``source`` has no summary or another scale."""
    summary = read_json(source / "summary.json") or {}
    if summary.get("scale") != plan.scale.name or "time_scale" not in summary:
        return {}
    small = replace(
        plan,
        root=source / "root",
        jobs=[rebase(j, plan.root, source / "root") for j in plan.jobs],
        time_scale=float(summary["time_scale"]),
    )
    latency = predicted_wall(small)["per_job_s"]
    out = {}
    for job in small.jobs:
        wall = (read_json(job.run_dir / "cost.json") or {}).get("wall_s", {}).get("total")
        if wall is not None:
            out[job.label] = max(0.0, float(wall) - latency[job.label])
    return out


def check_wall(
    plan: Plan, walls: dict[str, float], sim: dict[str, Any], overhead_from: Path | None = None
) -> dict[str, Any]:
    """Measured sweep wall against :func:`predicted_wall`: the latency model alone, and with ``overhead_from``
    (a rehearsal of this scale at a small time scale) plus each job's measured harness time; ``ok`` judges the
    fuller prediction when there is one."""
    pred = predicted_wall(plan)
    predicted = sum(pred["per_sweep_s"].values())
    measured = sum(walls.values())
    ratio = measured / predicted if predicted else math.inf
    out: dict[str, Any] = {
        "measured_s": round(measured, 1),
        "predicted_s": round(predicted, 1),
        "fault_waits_s": round(pred["fault_waits_s"], 1),
        "fault_waits_from": pred["fault_waits_from"],
        "fault_waits_measured_s": round(sum(measured_fault_wait(j) for j in plan.jobs), 1),
        "per_sweep_measured_s": {k: round(v, 1) for k, v in walls.items()},
        "per_sweep_predicted_s": {k: round(v, 1) for k, v in pred["per_sweep_s"].items()},
        "per_job_predicted_s": {k: round(v, 1) for k, v in pred["per_job_s"].items()},
        "per_job_measured_s": {
            j.label: (read_json(j.run_dir / "cost.json") or {}).get("wall_s", {}).get("total") for j in plan.jobs
        },
        "ratio": round(ratio, 3),
        "ok": abs(ratio - 1.0) <= WALL_TOLERANCE,
    }
    overhead = harness_overhead(plan, overhead_from) if overhead_from is not None else {}
    if overhead:
        with_overhead = {k: v + overhead.get(k, 0.0) for k, v in pred["per_job_s"].items()}
        full = sum(sweep_walls(plan, with_overhead).values())
        out["overhead_from"] = overhead_from.name
        out["overhead_s"] = {k: round(v, 1) for k, v in overhead.items()}
        out["predicted_with_overhead_s"] = round(full, 1)
        out["ratio_with_overhead"] = round(measured / full, 3) if full else math.inf
        out["ok"] = abs(out["ratio_with_overhead"] - 1.0) <= WALL_TOLERANCE
    return out


def extrapolate_full_wall(plan: Plan) -> dict[str, Any]:
    """The wall a ``--scale full`` rehearsal would take on this machine at this load, from this one's: each job's
    measured wall (``cost.json``) scaled by (LoCoMo's turns + questions) / (this slice's), the sweeps' batches of
    ``--jobs`` summed by :func:`batched_wall`. Linear in the work: right when CPU bounds the jobs (as on a
    busy 2-core machine), pessimistic when LLM latency does (full LoCoMo's ten conversations build at once)."""
    factor = (LOCOMO_TURNS + LOCOMO_QUESTIONS) / max(1, plan.turns + plan.questions)
    total = 0.0
    for exp in EXPERIMENTS:
        times = [
            float((read_json(j.run_dir / "cost.json") or {}).get("wall_s", {}).get("total") or 0.0) * factor
            for j in plan.jobs
            if j.experiment == exp
        ]
        total += batched_wall(times, plan.parallel_jobs)
    return {"factor": round(factor, 2), "wall_s": round(total), "hours": round(total / 3600, 1)}

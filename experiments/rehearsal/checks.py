"""The rehearsal's checks on what the sweeps left: items per run (none lost or duplicated), faults injected against
faults counted, the token estimate from a smaller rehearsal against the tokens really needed, and a resumed run's
metrics against an uninterrupted one's."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

from baselines.full_context import full_conversation_tokens, run_image_captions
from experiments.rehearsal.plan import BACKBONE, FAULT_KINDS, Plan, load_scale_slice
from experiments.rehearsal.runs import read_json, run_usage
from memcore.config import load_backbone_preset
from memcore.itemlog import read_run_items
from memcore.report.collect import load_run
from memcore.report.estimate import conversation_in_context, estimate, measured_rates

#: metrics.json keys that are not a function of the items: ``parse_failures`` counts the parse fallbacks of every
#: invocation of the run (items a killed invocation answered but did not write are answered, and counted, again).
VOLATILE_METRICS = ("parse_failures",)
#: Checks whose failure makes the exit status 1; ``wall`` and ``estimate`` are measurements of this machine and of
#: the estimator, marked pass/fail in the summary but not fatal.
FATAL_CHECKS = ("jobs", "items", "faults", "resume")
ESTIMATE_TOLERANCE = 0.15


def check_items(plan: Plan) -> list[dict[str, Any]]:
    """Per run: items answered vs expected, lost and duplicated ids."""
    rows = []
    for job in plan.jobs:
        ids = [r["item_id"] for r in read_run_items(job.run_dir)]
        seen: set[str] = set()
        dups = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        lost = sorted(set(job.expected_ids) - seen)
        extra = sorted(seen - set(job.expected_ids))
        rows.append(
            {
                "run": job.label,
                "finished": (job.run_dir / "metrics.json").is_file(),
                "expected": len(job.expected_ids),
                "answered": len(seen & set(job.expected_ids)),
                "lost": len(lost),
                "duplicated": len(dups),
                "unexpected": len(extra),
                "ok": (job.run_dir / "metrics.json").is_file() and not lost and not dups and not extra,
            }
        )
    return rows


def check_faults(plan: Plan, sim: dict[str, Any], counted_by_runs: bool = True) -> dict[str, Any]:
    """Faults injected per kind (simulator) against what the runs counted. ``counted_by_runs`` false (a resumed
    rehearsal: a killed invocation's retries are not in any ``cost.json``) checks only that faults were injected."""
    usage = [run_usage(j) for j in plan.jobs]
    injected = {k: int((sim.get("faults") or {}).get(k, 0)) for k in FAULT_KINDS}
    transport = sum(injected.values())
    retried = sum(u["errors_retried"] for u in usage)
    kinds = [u["retries_by_kind"] for u in usage]
    by_kind: dict[str, int] | None = None
    if all(k is not None for k in kinds):
        by_kind = {k: sum(int((u or {}).get(k, 0)) for u in kinds) for k in sorted({k for u in kinds for k in u or {}})}
    parse = sum(u["parse_retries"] + u["parse_failures"] for u in usage)
    wrong = int(sim.get("wrong_json", 0))
    every_kind = all(injected[k] > 0 for k in FAULT_KINDS if plan.sim[k] > 0) and (
        wrong > 0 or plan.sim["wrong_json"] == 0
    )
    # per kind when every run counted kinds: a 429 the client took for a timeout is a miscount, not a pass
    counted = (by_kind == {k: n for k, n in injected.items() if n}) if by_kind is not None else retried == transport
    ok = (every_kind and counted and parse >= wrong) if counted_by_runs else None
    return {
        "injected": {**injected, "wrong_json": wrong},
        "requests": int(sim.get("requests", 0)),
        "replies": int(sim.get("replies", 0)),
        "transport_retries_counted": retried,
        "transport_retries_by_kind": by_kind,
        "parse_retries_and_fallbacks_counted": parse,
        "fallbacks": sum(u["parse_failures"] for u in usage),
        "counted_by_runs": counted_by_runs,
        "ok": ok,
    }


def needed_tokens(rates: Any, turns: int, questions: int) -> float:
    """Tokens (prompt + completion) a run of ``turns`` turns and ``questions`` questions needed, from its
    :class:`memcore.report.estimate.Rates` (their mean per-turn and per-question rates)."""
    per_turn = rates.prompt_per_turn + rates.completion_per_turn
    per_question = rates.prompt_per_question + rates.completion_per_question
    return per_turn * turns + per_question * questions


def check_estimate(plan: Plan, source: Path | None) -> dict[str, Any]:
    """Per run: the token estimate :func:`memcore.report.estimate.estimate` makes from the same run of the
    ``source`` (smaller) rehearsal for this rehearsal's conversations and questions, against the tokens this
    rehearsal's run needed (build + QA calls, cache hits included on both sides: the estimate counts what a method
    needs; a run of a sweep whose calls another run already made is served by the shared cache). The build is
    estimated growth-aware from the source's per-turn trace (each target conversation: the source's measured
    prefix, then its tail rate), ``full_context``'s prompt with the mean whole-conversation context of the
    target; for ``--scale full`` that is exactly what the estimate prints for all of LoCoMo."""
    if source is None or not (source / "root" / "runs").is_dir():
        return {"ok": None, "note": "no smaller rehearsal to estimate from (--estimate-from DIR)"}
    budget = int(load_backbone_preset(BACKBONE).prompt_token_cap)
    conversations = load_scale_slice(plan.scale).conversations
    lengths = [len(c.turns) for c in conversations]
    rows = []
    fc_tokens: float | None = None
    for job in plan.jobs:
        pattern = f"{job.experiment}/*/{BACKBONE}/amem/{job.method}/{job.ablation}"
        src_dir = next(iter(sorted((source / "root" / "runs").glob(pattern))), None)
        if src_dir is None or not (src_dir / "metrics.json").is_file() or not (job.run_dir / "metrics.json").is_file():
            continue
        rates = measured_rates(load_run(src_dir))
        if job.method == "full_context" and fc_tokens is None:
            fc_tokens = full_conversation_tokens(
                budget, conversations, run_image_captions(load_run(job.run_dir).config.get("method") or {})
            )
        target = {
            "in_context": conversation_in_context(load_run(job.run_dir)),
            "context_tokens": fc_tokens if job.method == "full_context" else None,
            "conversation_turns": lengths,
            "questions": plan.questions,
        }
        est = estimate(rates, **target)
        est_tokens = est["prompt_tokens"] + est["completion_tokens"]
        flat_est = estimate(replace(rates, curves=()), **target)  # the mean per-turn rate, as before the trace
        flat = flat_est["prompt_tokens"] + flat_est["completion_tokens"]
        actual = measured_rates(load_run(job.run_dir))
        act_tokens = needed_tokens(actual, actual.turns, actual.questions)
        err = est_tokens / act_tokens - 1 if act_tokens else math.inf
        rows.append(
            {
                "run": job.label,
                "estimated_tokens": round(est_tokens),
                "estimated_tokens_upper": round(est["prompt_tokens_upper"] + est["completion_tokens_upper"]),
                "flat_rate_tokens": round(flat),
                "build_growth": "traced" if rates.curves else "flat",
                "actual_tokens": round(act_tokens),
                "error": round(err, 4),
                "flat_rate_error": round(flat / act_tokens - 1, 4) if act_tokens else None,
                "ok": abs(err) <= ESTIMATE_TOLERANCE,
            }
        )
    return {"source": source.name, "rows": rows, "ok": bool(rows) and all(r["ok"] for r in rows)}


def comparable_metrics(run_dir: Path) -> dict[str, Any]:
    """A run's ``metrics.json`` without :data:`VOLATILE_METRICS` (the rest is a function of the items)."""
    m = read_json(run_dir / "metrics.json") or {}
    return {k: v for k, v in m.items() if k not in VOLATILE_METRICS}


def compare_runs(plan: Plan, reference_root: Path) -> dict[str, Any]:
    """Every run's comparable metrics against the same run of the reference rehearsal."""
    rows = []
    for job in plan.jobs:
        ref = reference_root / job.run_dir.relative_to(plan.root)
        a, b = comparable_metrics(job.run_dir), comparable_metrics(ref)
        differ = sorted(
            k for k in set(a) | set(b) if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True)
        )
        rows.append({"run": job.label, "identical": bool(a) and not differ, "differing_keys": differ})
    return {"rows": rows, "excluded": list(VOLATILE_METRICS), "ok": all(r["identical"] for r in rows)}


def finish_checks(summary: dict[str, Any]) -> dict[str, Any]:
    """Set ``summary['checks']`` (each check's pass / fail / None) and ``summary['ok']`` (no :data:`FATAL_CHECKS`
    failed); returns the same dict."""
    items = summary["items"]
    checks = {
        "jobs": all(r["finished"] for r in items),
        "items": all(r["ok"] for r in items),
        "faults": summary["faults"]["ok"],
        "wall": (summary.get("wall") or {}).get("ok"),
        "estimate": (summary.get("estimate") or {}).get("ok"),
    }
    if summary.get("resume"):
        checks["resume"] = summary["resume"]["ok"]
    summary["checks"] = checks
    summary["ok"] = all(checks[k] is not False for k in FATAL_CHECKS if k in checks)
    return summary

"""What the rehearsal reads from a run dir: items written so far, its JSON files, its LLM spend at list price
and the retries and fallbacks its client counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.rehearsal.plan import Job
from memcore.report.estimate import usd


def count_lines(path: Path) -> int:
    """Lines in ``path`` (items written so far), 0 when it does not exist yet."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``, or None when it is missing or not (yet) complete JSON."""
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def run_spend(cost: dict[str, Any], price_in: float, price_out: float) -> dict[str, float]:
    """A run's whole LLM spend over every invocation: memory build (from ``stats.json`` via ``cost.json``) plus
    the items' own usage; calls and tokens the endpoint really served (cache hits removed pro rata) and the USD
    they cost at list price."""
    mb = cost.get("memory_build") or {}
    share = (mb.get("llm_calls_uncached", 0) / mb["llm_calls"]) if mb.get("llm_calls") else 0.0
    calls = float(mb.get("llm_calls_uncached", 0))
    prompt = share * mb.get("prompt_tokens", 0)
    completion = share * mb.get("completion_tokens", 0)
    for s in ((cost.get("items_usage") or {}).get("by_stage") or {}).values():
        frac = (s["llm_calls"] / s["calls"]) if s.get("calls") else 0.0
        calls += s.get("llm_calls", 0)
        prompt += frac * s.get("prompt_tokens", 0)
        completion += frac * s.get("completion_tokens", 0)
    return {
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "usd": usd({"prompt_tokens": prompt, "completion_tokens": completion}, price_in, price_out),
    }


def run_usage(job: Job) -> dict[str, Any]:
    """Transport retries (in all and by kind), parse retries and fallbacks a run counted (its last invocation's
    ``cost.json``). ``retries_by_kind`` is None for a run whose client did not count kinds (before it did)."""
    cost = read_json(job.run_dir / "cost.json") or {}
    stages = ((cost.get("usage") or {}).get("by_stage") or {}).values()
    return {
        "errors_retried": sum(int(s.get("errors_retried", 0)) for s in stages),
        "retries_by_kind": retries_by_kind(stages),
        "parse_retries": sum(int(s.get("parse_retries", 0)) for s in stages),
        "parse_failures": sum(int(s.get("parse_failures", 0)) for s in stages),
        "calls": sum(int(s.get("calls", 0)) for s in stages),
    }


def retries_by_kind(stages: Any) -> dict[str, int] | None:
    """The transport retries of ``stages`` (``UsageTracker.to_json()["by_stage"]`` values) summed per fault kind;
    None when a stage has no ``retries_by_kind`` (a client that did not count kinds: its zero is not a count)."""
    out: dict[str, int] = {}
    for s in stages:
        if "retries_by_kind" not in s:
            return None
        for kind, n in s["retries_by_kind"].items():
            out[kind] = out.get(kind, 0) + int(n)
    return out

"""Thread-safe accounting of LLM calls per stage: calls, tokens, latency, cache hits, parse failures."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

STAGES = ("ingest", "retrieve", "answer", "judge")


@dataclass
class StageUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latencies: list[float] = field(default_factory=list)
    parse_retries: int = 0
    parse_failures: int = 0
    errors_retried: int = 0

    def to_json(self) -> dict[str, Any]:
        lat = np.asarray(self.latencies, dtype=float)
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "llm_calls": self.calls - self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s_total": round(float(lat.sum()), 3) if lat.size else 0.0,
            "latency_s_p50": round(float(np.percentile(lat, 50)), 3) if lat.size else None,
            "latency_s_p95": round(float(np.percentile(lat, 95)), 3) if lat.size else None,
            "parse_retries": self.parse_retries,
            "parse_failures": self.parse_failures,
            "errors_retried": self.errors_retried,
        }


class UsageTracker:
    """Collects per-stage usage. ``calls`` counts every request, ``cached_calls`` those served by
    the response cache (tokens of cached calls are counted too, flagged, so cost can be estimated
    either way)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, StageUsage] = defaultdict(StageUsage)
        self._failure_kinds: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def record(self, stage: str, *, prompt_tokens: int, completion_tokens: int, latency_s: float, cached: bool) -> None:
        with self._lock:
            s = self._stages[stage]
            s.calls += 1
            s.cached_calls += int(cached)
            s.prompt_tokens += int(prompt_tokens)
            s.completion_tokens += int(completion_tokens)
            if not cached:
                s.latencies.append(float(latency_s))

    def record_transport_retry(self, stage: str) -> None:
        with self._lock:
            self._stages[stage].errors_retried += 1

    def record_parse_retry(self, stage: str) -> None:
        with self._lock:
            self._stages[stage].parse_retries += 1

    def record_parse_failure(self, stage: str, kind: str) -> None:
        """A reply that stayed unparseable after retries; ``kind`` names the fallback taken."""
        with self._lock:
            self._stages[stage].parse_failures += 1
            self._failure_kinds[stage][kind] += 1

    def stage(self, stage: str) -> StageUsage:
        with self._lock:
            return self._stages[stage]

    def parse_failures(self) -> dict[str, dict[str, int]]:
        with self._lock:
            return {k: dict(v) for k, v in self._failure_kinds.items()}

    def to_json(self) -> dict[str, Any]:
        with self._lock:
            stages = {name: s.to_json() for name, s in sorted(self._stages.items())}
            failures = {k: dict(v) for k, v in self._failure_kinds.items()}
        total = {
            key: sum(s[key] for s in stages.values())
            for key in ("calls", "cached_calls", "llm_calls", "prompt_tokens", "completion_tokens", "parse_failures")
        }
        return {"by_stage": stages, "total": total, "parse_failures_by_kind": failures}


class UsageTee:
    """Records into several trackers at once (e.g. the run's and one conversation's)."""

    def __init__(self, *trackers: UsageTracker) -> None:
        self.trackers = trackers

    def record(self, stage: str, **kw: Any) -> None:
        for t in self.trackers:
            t.record(stage, **kw)

    def record_transport_retry(self, stage: str) -> None:
        for t in self.trackers:
            t.record_transport_retry(stage)

    def record_parse_retry(self, stage: str) -> None:
        for t in self.trackers:
            t.record_parse_retry(stage)

    def record_parse_failure(self, stage: str, kind: str) -> None:
        for t in self.trackers:
            t.record_parse_failure(stage, kind)


USAGE_KEYS: tuple[str, ...] = (
    "calls",
    "cached_calls",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "parse_failures",
)


def usage_minus(total: dict[str, Any], parts: Iterable[dict[str, Any]]) -> dict[str, int]:
    """``total`` minus the sum of ``parts`` per usage counter (``USAGE_KEYS``), floored at 0."""
    parts = list(parts)
    return {k: max(0, int(total.get(k, 0)) - sum(int(p.get(k, 0)) for p in parts)) for k in USAGE_KEYS}


def updates_while_answering(ingest_stage: dict[str, Any], conversations: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Ingest-stage usage a run spent after building its memories (memory updates made while answering, e.g.
    FluxMem's consolidation): ``ingest_stage`` minus the builds made in the run. ``conversations`` are the
    per-conversation stats (``reused``, ``ingest_usage``); a reused snapshot's build is not in the run's usage."""
    builds = [(c.get("ingest_usage") or {}).get("total") or {} for c in conversations if not c.get("reused")]
    return usage_minus(ingest_stage, builds)

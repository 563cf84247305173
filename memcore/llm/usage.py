"""Thread-safe accounting of LLM calls per stage: calls, tokens, latency, cache hits, parse failures.

A :class:`UsageTracker` holds the counters. A backbone stack records into its tracker through a
:class:`ContextUsage`, which also records into every sink of the active :func:`usage_scope` blocks, so one
conversation's build is accounted on its own without a chain of wrappers teeing trackers.
"""

from __future__ import annotations

import contextlib
import threading
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

STAGES = ("ingest", "retrieve", "answer", "judge")
#: The kinds of transport fault a retry is counted under: HTTP 429, 500 and 503 (other statuses are ``http_<code>``),
#: a dropped connection, a read timeout, a 200 whose body is not a chat completion, and anything else.
TRANSPORT_FAULTS = ("429", "500", "503", "drop", "timeout", "malformed", "other")


@dataclass
class StageUsage:
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_completion_tokens: int = 0  # of the calls the endpoint served (not the cache): what its latency depends on
    latencies: list[float] = field(default_factory=list)
    parse_retries: int = 0
    parse_failures: int = 0
    errors_retried: int = 0
    retries_by_kind: dict[str, int] = field(default_factory=dict)
    retry_wait_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        lat = np.asarray(self.latencies, dtype=float)
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "llm_calls": self.calls - self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "llm_completion_tokens": self.llm_completion_tokens,
            "latency_s_total": round(float(lat.sum()), 3) if lat.size else 0.0,
            "latency_s_p50": round(float(np.percentile(lat, 50)), 3) if lat.size else None,
            "latency_s_p95": round(float(np.percentile(lat, 95)), 3) if lat.size else None,
            "parse_retries": self.parse_retries,
            "parse_failures": self.parse_failures,
            "errors_retried": self.errors_retried,
            "retries_by_kind": dict(sorted(self.retries_by_kind.items())),
            "retry_wait_s": round(self.retry_wait_s, 3),
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
                s.llm_completion_tokens += int(completion_tokens)
                s.latencies.append(float(latency_s))

    def record_transport_retry(self, stage: str, kind: str = "other", wait_s: float = 0.0) -> None:
        """A request that failed in transport and is retried: ``kind`` is a :data:`TRANSPORT_FAULTS` kind or ``http_<code>``
        (what the server or the wire did), ``wait_s`` the time the fault cost (the failed attempt plus the backoff before the
        retry)."""
        with self._lock:
            s = self._stages[stage]
            s.errors_retried += 1
            s.retries_by_kind[kind] = s.retries_by_kind.get(kind, 0) + 1
            s.retry_wait_s += float(wait_s)

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

    def totals(self) -> tuple[int, int, int]:
        """(calls, prompt tokens, completion tokens) over every stage so far; cheap (no percentiles)."""
        with self._lock:
            stages = list(self._stages.values())
            return (
                sum(s.calls for s in stages),
                sum(s.prompt_tokens for s in stages),
                sum(s.completion_tokens for s in stages),
            )

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


@runtime_checkable
class UsageSink(Protocol):
    """Where usage is recorded: one completion, a transport retry, a parse retry, a parse failure (by ``stage``)."""

    def record(
        self, stage: str, *, prompt_tokens: int, completion_tokens: int, latency_s: float, cached: bool
    ) -> None: ...

    def record_transport_retry(self, stage: str, kind: str = "other", wait_s: float = 0.0) -> None: ...

    def record_parse_retry(self, stage: str) -> None: ...

    def record_parse_failure(self, stage: str, kind: str) -> None: ...


_SCOPES: ContextVar[tuple[UsageSink, ...]] = ContextVar("memcore_usage_scopes", default=())


@contextlib.contextmanager
def usage_scope(sink: UsageSink) -> Iterator[UsageSink]:
    """Inside the block (this thread's context only: scopes do not follow work handed to other threads), whatever a
    :class:`ContextUsage` records also reaches ``sink``. Scopes nest; entering one that is already active is a no-op."""
    active = _SCOPES.get()
    if any(s is sink for s in active):
        yield sink
        return
    token = _SCOPES.set((*active, sink))
    try:
        yield sink
    finally:
        _SCOPES.reset(token)


def active_scopes() -> tuple[UsageSink, ...]:
    """The sinks of the enclosing :func:`usage_scope` blocks, outermost first."""
    return _SCOPES.get()


class ContextUsage:
    """A backbone stack's usage: records into ``tracker`` and into every active :func:`usage_scope` sink.
    Reads (``to_json``, ``parse_failures``, ``stage``) are the tracker's."""

    def __init__(self, tracker: UsageTracker) -> None:
        self.tracker = tracker

    def _sinks(self) -> tuple[UsageSink, ...]:
        return (self.tracker, *(s for s in active_scopes() if s is not self.tracker))

    def record(self, stage: str, *, prompt_tokens: int, completion_tokens: int, latency_s: float, cached: bool) -> None:
        for s in self._sinks():
            s.record(
                stage,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_s=latency_s,
                cached=cached,
            )

    def record_transport_retry(self, stage: str, kind: str = "other", wait_s: float = 0.0) -> None:
        for s in self._sinks():
            s.record_transport_retry(stage, kind, wait_s)

    def record_parse_retry(self, stage: str) -> None:
        for s in self._sinks():
            s.record_parse_retry(stage)

    def record_parse_failure(self, stage: str, kind: str) -> None:
        for s in self._sinks():
            s.record_parse_failure(stage, kind)

    def stage(self, stage: str) -> StageUsage:
        return self.tracker.stage(stage)

    def parse_failures(self) -> dict[str, dict[str, int]]:
        return self.tracker.parse_failures()

    def to_json(self) -> dict[str, Any]:
        return self.tracker.to_json()


@runtime_checkable
class ReportsUsage(Protocol):
    """A backbone that takes parse outcomes on ``usage`` (every metered stack and the views over one)."""

    usage: UsageSink


def usage_of(backbone: object) -> UsageSink | None:
    """``backbone.usage`` when the backbone reports usage (plain test fakes may not), else None."""
    return backbone.usage if isinstance(backbone, ReportsUsage) else None


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


#: The per-stage counters an item record keeps (no latencies, so a record is the same on every machine).
ITEM_USAGE_KEYS: tuple[str, ...] = (
    "calls",
    "cached_calls",
    "prompt_tokens",
    "completion_tokens",
    "parse_retries",
    "parse_failures",
)


def item_usage(tracker: UsageTracker) -> dict[str, dict[str, int]]:
    """What one QA item spent, per stage (``retrieve``, ``answer``, ``judge``, and ``ingest`` for a memory update
    made while answering it): :data:`ITEM_USAGE_KEYS` of the calls ``tracker`` saw. Stages without a call are left
    out."""
    stages = tracker.to_json()["by_stage"]
    return {name: {k: int(s[k]) for k in ITEM_USAGE_KEYS} for name, s in stages.items() if s["calls"]}


def sum_item_usage(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The usage of a whole run from its item records, across every invocation that answered some of them (a
    resumed run's ``cost.json → usage`` holds only the last invocation's calls). ``n_items`` counts all records,
    ``n_items_with_usage`` those that carry ``usage`` (records written before it existed do not)."""
    by_stage: dict[str, dict[str, int]] = {}
    n = n_with = 0
    for rec in records:
        n += 1
        usage = rec.get("usage")
        if usage is None:
            continue
        n_with += 1
        for stage, counters in usage.items():
            acc = by_stage.setdefault(stage, dict.fromkeys(ITEM_USAGE_KEYS, 0))
            for k in ITEM_USAGE_KEYS:
                acc[k] += int(counters.get(k, 0))
    for acc in by_stage.values():
        acc["llm_calls"] = acc["calls"] - acc["cached_calls"]
    return {"by_stage": dict(sorted(by_stage.items())), "n_items": n, "n_items_with_usage": n_with}


def whole_run_stages(
    items_usage: dict[str, Any], n_items: int, invocation_stages: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], int]:
    """Usage per stage of the whole run, and how many of its ``n_items`` questions that usage covers.

    ``items_usage`` (:func:`sum_item_usage`) when any item carries its usage: it covers those items exactly, over
    every invocation that answered them (a run resumed across the change that added item usage has some items
    without it; dividing their sum by all items would undercount). Else ``invocation_stages``
    (``UsageTracker.to_json()["by_stage"]`` of the last invocation, all a run made before items kept their usage
    has), taken to cover all ``n_items``."""
    n_with = int(items_usage.get("n_items_with_usage") or 0)
    if n_with:
        return items_usage.get("by_stage") or {}, n_with
    return invocation_stages, n_items

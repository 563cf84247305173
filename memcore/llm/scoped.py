"""A view of a backbone stack that also accounts its calls to a scope (one conversation's memory build)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcore.interfaces import Completion, Message
from memcore.llm.layer import MeteredStack, Passthrough
from memcore.llm.usage import UsageSink, usage_scope


class ScopedUsage:
    """``inner``'s usage sink with ``scope`` active around every record (so it reaches the stack's tracker and
    ``scope``); bound to an object, it holds in any thread (mem0 calls from its own pools)."""

    def __init__(self, inner: UsageSink, scope: UsageSink) -> None:
        self.inner = inner
        self.scope = scope

    def record(self, stage: str, **counts: Any) -> None:  # prompt_tokens, completion_tokens, latency_s, cached
        with usage_scope(self.scope):
            self.inner.record(stage, **counts)

    def record_transport_retry(self, stage: str, kind: str = "other", wait_s: float = 0.0) -> None:
        with usage_scope(self.scope):
            self.inner.record_transport_retry(stage, kind, wait_s)

    def record_parse_retry(self, stage: str) -> None:
        with usage_scope(self.scope):
            self.inner.record_parse_retry(stage)

    def record_parse_failure(self, stage: str, kind: str) -> None:
        with usage_scope(self.scope):
            self.inner.record_parse_failure(stage, kind)


class ScopedBackbone(Passthrough):
    """Forwards to ``inner`` (a metered stack) with ``scope`` active around every call: each completion is
    recorded by the stack's :class:`~memcore.llm.stack.Metered` layer into the run's tracker and ``scope``;
    parse retries and failures reported to ``.usage`` reach both as well. Transport retries stay per run."""

    def __init__(self, inner: MeteredStack, scope: UsageSink) -> None:
        self.inner = inner
        self.scope = scope
        self.model = inner.model
        self.name = inner.name
        self.usage = ScopedUsage(inner.usage, scope)

    def complete(self, messages: Sequence[Message], *, stage: str, **kw: Any) -> Completion:
        with usage_scope(self.scope):
            return self.inner.complete(messages, stage=stage, **kw)

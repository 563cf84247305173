"""A view of a backbone that also accounts its calls to a scope (one conversation's memory build)."""

from __future__ import annotations

from collections.abc import Sequence

from memcore.interfaces import ChatBackbone, Completion, Message
from memcore.llm.usage import UsageTee, UsageTracker


class ScopedBackbone:
    """Forwards to ``inner``; calls are recorded by ``inner`` (run totals) and in ``scope``.

    Parse retries/failures reported through ``.usage`` reach both trackers as well."""

    def __init__(self, inner: ChatBackbone, scope: UsageTracker) -> None:
        self.inner = inner
        self.scope = scope
        self.model = inner.model
        self.name = getattr(inner, "name", inner.model)
        inner_usage = getattr(inner, "usage", None)
        self.usage = UsageTee(scope, inner_usage) if inner_usage is not None else UsageTee(scope)

    def __getattr__(self, item: str) -> object:  # connection_kwargs(), base_url, … of the real client
        return getattr(self.inner, item)

    def complete(self, messages: Sequence[Message], *, stage: str, **kw: object) -> Completion:
        c = self.inner.complete(messages, stage=stage, **kw)  # type: ignore[arg-type]
        self.scope.record(
            stage,
            prompt_tokens=c.prompt_tokens,
            completion_tokens=c.completion_tokens,
            latency_s=c.latency_s,
            cached=c.cached,
        )
        return c

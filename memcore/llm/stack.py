"""The chat backbone as a stack of layers, each with one job (bottom to top):

1. a **transport** sends one request and retries transport faults: :class:`~memcore.llm.backbone.OpenAITransport`
   (any OpenAI-compatible server) or :class:`~memcore.llm.scripted.ScriptedTransport` (tests, benchmarks);
2. :class:`~memcore.llm.cache.CachedBackbone` serves deterministic requests from the response cache;
3. :class:`Metered` records every completion per stage (cached ones flagged) into the run's tracker and into
   the active usage scopes (:func:`~memcore.llm.usage.usage_scope`);
4. :class:`~memcore.llm.limiter.RequestLimiter` keeps at most the run's bound of requests in flight (``concurrency``
   within the backbone's limit).

:class:`~memcore.llm.scoped.ScopedBackbone` is a view over a stack that accounts its calls to one more scope
(a conversation's build). Every layer has ``model``, ``name`` and ``complete``; attributes it does not define
(``connection_kwargs()``, ``base_url``, ``extra_body``, ``check_reachable()``) are the transport's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memcore.interfaces import Completion, Message
from memcore.llm.cache import CachedBackbone, ResponseCache
from memcore.llm.layer import Layer, Passthrough
from memcore.llm.usage import ContextUsage, UsageTracker


class Metered(Passthrough):
    """Usage layer: records each completion of ``inner`` on ``usage`` (a :class:`ContextUsage` over ``tracker``:
    the tracker and every active usage scope). Callers report parse retries and failures to ``usage`` too."""

    def __init__(self, inner: Layer, tracker: UsageTracker) -> None:
        self.inner = inner
        self.model = inner.model
        self.name = inner.name
        self.usage = ContextUsage(tracker)

    def complete(self, messages: Sequence[Message], *, stage: str, **request: Any) -> Completion:
        completion = self.inner.complete(messages, stage=stage, **request)
        self.usage.record(
            stage,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_s=completion.latency_s,
            cached=completion.cached,
        )
        return completion


def build_stack(transport: Any, *, tracker: UsageTracker, cache: ResponseCache | None = None) -> Metered:
    """``transport`` → :class:`CachedBackbone` (when ``cache``) → :class:`Metered` into ``tracker``. The run's
    :class:`~memcore.llm.limiter.RequestLimiter` goes on top (one bound shared by every stack of the run)."""
    inner: Layer = CachedBackbone(transport, cache) if cache is not None else transport
    return Metered(inner, tracker)

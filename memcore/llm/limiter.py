"""The top layer of a backbone stack: at most ``limit`` requests in flight, the run's one ``concurrency`` bound.

The runner overlaps conversation builds and, inside each conversation, QA items; without a shared bound
the number of requests in flight would be conversations x items. With it, wall time of an LLM-bound run
is about calls x latency / concurrency once there is enough independent work (issue 7).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from memcore.interfaces import ChatBackbone, Completion, Message
from memcore.llm.layer import Passthrough


class RequestLimiter(Passthrough):
    """Forwards to ``inner`` with at most ``limit`` ``complete`` calls running at once (cache hits included:
    they hold a slot only for the lookup). Other attributes (``usage``, ``connection_kwargs`` …) pass through."""

    def __init__(self, inner: ChatBackbone, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"concurrency must be >= 1, got {limit}")
        self.inner = inner
        self.limit = limit
        self.model = inner.model
        self.name = getattr(inner, "name", inner.model)
        self._sem = threading.BoundedSemaphore(limit)

    def complete(self, messages: Sequence[Message], *, stage: str, **kw: Any) -> Completion:
        with self._sem:
            return self.inner.complete(messages, stage=stage, **kw)

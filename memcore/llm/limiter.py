"""The top layer of a backbone stack: at most ``limit`` requests in flight, the run's one bound on them
(``concurrency``, within the backbone's limit: :mod:`memcore.pipeline.concurrency`).

The runner overlaps conversation builds and, inside each conversation, QA items; without a shared bound
the number of requests in flight would be conversations x items. With it, wall time of an LLM-bound run
is about calls x latency / concurrency once there is enough independent work.

It is also where a stopping run stops calling: once ``stop_requested()`` is true, a call that has not started is
refused (:class:`~memcore.stopflag.StopRequested`), so Ctrl-C waits for the calls running, not for every call
the items in flight would still make (an IER question makes 2-4; on a CPU each takes a minute or two).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from memcore.interfaces import ChatBackbone, Completion, Message
from memcore.llm.layer import Passthrough
from memcore.stopflag import StopCheck, StopRequested


class RequestLimiter(Passthrough):
    """Forwards to ``inner`` with at most ``limit`` ``complete`` calls running at once (cache hits included:
    they hold a slot only for the lookup). Other attributes (``usage``, ``connection_kwargs`` …) pass through."""

    def __init__(self, inner: ChatBackbone, limit: int, stop_requested: StopCheck | None = None) -> None:
        if limit < 1:
            raise ValueError(f"concurrency must be >= 1, got {limit}")
        self.inner = inner
        self.limit = limit
        self.model = inner.model
        self.name = getattr(inner, "name", inner.model)
        self._sem = threading.BoundedSemaphore(limit)
        self._stop_requested = stop_requested

    def _refuse_if_stopping(self, stage: str) -> None:
        if self._stop_requested is not None and self._stop_requested():
            raise StopRequested(f"{stage} call not started: the run is stopping")

    def complete(self, messages: Sequence[Message], *, stage: str, **kw: Any) -> Completion:
        """Forward, unless the run is stopping (checked before and after waiting for a slot)."""
        self._refuse_if_stopping(stage)
        with self._sem:
            self._refuse_if_stopping(stage)
            return self.inner.complete(messages, stage=stage, **kw)

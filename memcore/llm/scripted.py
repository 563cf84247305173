"""A scripted chat backbone for unit tests and harness benchmarks (never for reported results).

:class:`ScriptedTransport` answers from a user-supplied function of the messages, optionally sleeping a fixed
latency; :class:`ScriptedBackbone` puts it under the same :class:`~memcore.llm.stack.Metered` layer as the real
stack, so usage is accounted exactly like the real client's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from memcore.interfaces import Completion, Message
from memcore.llm.stack import Metered
from memcore.llm.usage import UsageTracker

Responder = Callable[[Sequence[Message]], str]


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ScriptedTransport:
    """Transport layer: ``responder(messages)`` is the reply (about 4 characters a token); keeps every call."""

    def __init__(
        self, responder: Responder, *, latency_s: float = 0.0, model: str = "scripted", max_concurrency: int = 64
    ) -> None:
        self.responder = responder
        self.latency_s = latency_s
        self.model = model
        self.name = model
        self.calls: list[tuple[str, list[Message]]] = []
        self._lock = threading.Lock()
        self._sem = threading.BoundedSemaphore(max_concurrency)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json: bool = False,
        seed: int | None = None,
        prompt_version: str = "",
        top_p: float | None = None,
    ) -> Completion:
        with self._sem:
            t0 = time.perf_counter()
            if self.latency_s:
                time.sleep(self.latency_s)
            text = self.responder(messages)
            latency = time.perf_counter() - t0
        with self._lock:
            self.calls.append((stage, [dict(m) for m in messages]))
        prompt_tokens = sum(_approx_tokens(m.get("content", "")) for m in messages)
        return Completion(text, prompt_tokens, _approx_tokens(text), latency, False, self.model)

    def calls_by_stage(self) -> dict[str, int]:
        out: dict[str, int] = {}
        with self._lock:
            for stage, _ in self.calls:
                out[stage] = out.get(stage, 0) + 1
        return out


class ScriptedBackbone(Metered):
    """A :class:`ScriptedTransport` behind a :class:`~memcore.llm.stack.Metered` layer recording into ``usage``
    (a new tracker by default). ``calls``, ``calls_by_stage()`` and ``responder`` are the transport's."""

    def __init__(
        self,
        responder: Responder,
        *,
        latency_s: float = 0.0,
        model: str = "scripted",
        max_concurrency: int = 64,
        usage: UsageTracker | None = None,
    ) -> None:
        self.transport = ScriptedTransport(responder, latency_s=latency_s, model=model, max_concurrency=max_concurrency)
        super().__init__(self.transport, usage if usage is not None else UsageTracker())

    @property
    def responder(self) -> Responder:
        return self.transport.responder

    @responder.setter
    def responder(self, responder: Responder) -> None:
        self.transport.responder = responder

    @property
    def calls(self) -> list[tuple[str, list[Message]]]:
        return self.transport.calls

    def calls_by_stage(self) -> dict[str, int]:
        return self.transport.calls_by_stage()


def echo_responder(messages: Sequence[Message]) -> str:
    """A content-free stand-in for a model: ``{}`` when JSON is requested (every caller then takes
    its counted fallback), else the first five words of the last line of the last message. Used by
    ``backbone=scripted`` to measure the harness itself; never for reported results."""
    last = messages[-1].get("content", "") if messages else ""
    if "json" in " ".join(m.get("content", "") for m in messages).lower():
        return "{}"
    lines = [ln for ln in last.strip().splitlines() if ln.strip()]
    return " ".join((lines[-1] if lines else "").split()[:5])

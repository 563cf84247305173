"""What every layer of a backbone stack is (:mod:`memcore.llm.stack`): a ``ChatBackbone`` with a ``name``,
wrapping an ``inner`` layer whose extra attributes it passes through."""

from __future__ import annotations

from typing import Any, Protocol

from memcore.interfaces import ChatBackbone
from memcore.llm.usage import UsageSink


class Layer(ChatBackbone, Protocol):
    """One layer of the stack: a ``ChatBackbone`` with a display ``name``."""

    name: str


class MeteredStack(Layer, Protocol):
    """A stack with its :class:`~memcore.llm.stack.Metered` layer: ``usage`` records into the stack's tracker and
    the active usage scopes; callers report parse retries and failures there."""

    usage: UsageSink


class Passthrough:
    """Attributes a layer does not define are its ``inner`` layer's, down to the transport's
    (``connection_kwargs()``, ``base_url``, ``extra_body``, ``check_reachable()``)."""

    inner: Any

    def __getattr__(self, item: str) -> Any:
        if item == "inner" or item.startswith("__"):  # not set yet (during __init__, copy, pickle)
            raise AttributeError(item)
        return getattr(self.inner, item)

"""Content-free but schema-valid replies for every prompt a run sends, for the OpenAI-compatible simulator
(:mod:`memcore.testing.simulator`) and the scripted benchmarks. Every registered method's prompts are answered by
the responder its spec names (``MethodSpec.sim_replies``, a :class:`~memcore.testing.sim_text.SimReplies` in the
method's own folder), asked in registry order; a dataset's prompts (its answer protocols, its judges) by the
responders its package declares in a ``SIM_REPLIES`` literal (``{"<name>": "<module>:<OBJECT>"}``). A prompt text
change that breaks recognition shows up as the ``unknown`` kind in the simulator's statistics (a test checks every
kind a run sends is recognised). Replies are a pure function of the messages: timing and plumbing only, never a
result."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Sequence

from memcore.interfaces import Message
from memcore.methods import method_specs
from memcore.registry import DATASET_PACKAGES, declared_in_folder
from memcore.testing.sim_text import (
    SimReplies,
    content,
    last_text,
)

#: No responder recognised the request.
UNKNOWN = "unknown"


def _original(messages: Sequence[Message]) -> list[Message]:
    """The request without a trailing JSON-format retry note (``complete_json``'s attempt k>1)."""
    msgs = list(messages)
    if len(msgs) > 2 and content(msgs[-1]).startswith("Reply with one valid JSON object only"):
        msgs = msgs[:-1]
    return msgs


def _responders(targets: Sequence[str], what: str) -> tuple[SimReplies, ...]:
    out = []
    for target in dict.fromkeys(targets):
        module, _, attr = target.partition(":")
        responder = getattr(importlib.import_module(module), attr)
        if not isinstance(responder, SimReplies):
            raise TypeError(f"{target} (a {what}) is not a SimReplies")
        out.append(responder)
    return tuple(out)


@functools.cache
def method_responders() -> tuple[SimReplies, ...]:
    """The responders the registered methods name (``MethodSpec.sim_replies``), each once, in registry order.
    Cached: the registry does not change within a process, and a reply must not re-import every method."""
    return _responders([spec.sim_replies for spec in method_specs() if spec.sim_replies], "MethodSpec.sim_replies")


@functools.cache
def dataset_responders() -> tuple[SimReplies, ...]:
    """The responders the dataset packages declare (``SIM_REPLIES``), in folder order. Cached as the methods'."""
    return _responders(list(declared_in_folder(DATASET_PACKAGES, "SIM_REPLIES").values()), "SIM_REPLIES entry")


def responders() -> tuple[SimReplies, ...]:
    """Every responder in the order requests are matched: the methods', then the datasets'."""
    return (*method_responders(), *dataset_responders())


def kinds() -> tuple[str, ...]:
    """Every prompt kind :func:`classify` can return, :data:`UNKNOWN` last."""
    return (*(k for r in responders() for k in r.kinds), UNKNOWN)


def _match(msgs: Sequence[Message]) -> tuple[str, SimReplies | None]:
    if not msgs:
        return UNKNOWN, None
    for responder in responders():
        kind = responder.classify(msgs)
        if kind is not None:
            return kind, responder
    return UNKNOWN, None


def classify(messages: Sequence[Message]) -> str:
    """The prompt kind of ``messages`` (one of :func:`kinds`)."""
    return _match(_original(messages))[0]


def reply(messages: Sequence[Message]) -> tuple[str, str]:
    """``(kind, reply text)`` for ``messages``: a schema-valid reply for a known prompt kind, a short plain answer
    for an unknown one."""
    msgs = _original(messages)
    kind, responder = _match(msgs)
    if responder is None:
        return kind, " ".join(last_text(msgs).split()[-5:]) or "ok"
    return kind, responder.reply(kind, msgs)


def structured_responder(messages: Sequence[Message]) -> str:
    """:func:`reply`'s text: a :class:`~memcore.llm.scripted.Responder` for the scripted backbone."""
    return reply(messages)[1]

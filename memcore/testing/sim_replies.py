"""Content-free but schema-valid replies for every prompt a run sends, for the OpenAI-compatible simulator
(:mod:`memcore.testing.simulator`) and the scripted benchmarks. The harness's own prompts (LoCoMo's two answer
protocols and two judge presets) are answered here; every registered method's prompts by the responder its spec
names (``MethodSpec.sim_replies``, a :class:`~memcore.testing.sim_text.SimReplies` in the method's own folder),
asked in registry order; a dataset's own prompts by the responders its package declares in a ``SIM_REPLIES`` literal
(``{"<name>": "<module>:<OBJECT>"}``). A prompt text change that breaks recognition shows up as the ``unknown`` kind
in the simulator's statistics (a test checks every kind a run sends is recognised). Replies are a pure function of
the messages: timing and plumbing only, never a result."""

from __future__ import annotations

import functools
import importlib
import json
import re
from collections.abc import Sequence

from memcore.datasets.locomo.prompts import answer as ANSWER_PROMPT
from memcore.datasets.locomo.prompts import judge as JUDGE_PROMPT
from memcore.datasets.locomo.prompts import judge_mem0
from memcore.interfaces import Message
from memcore.methods import method_specs
from memcore.registry import DATASET_PACKAGES, declared_in_folder
from memcore.testing.sim_text import (
    SimReplies,
    between,
    content,
    first_text,
    first_words,
    last_text,
    overlap,
    system_text,
    user_text,
    words,
)

_QUESTION_RE = re.compile(r"Question:\s*(.+?)\s*(?:Short answer:|\n|$)", re.DOTALL)
_MEM0_JUDGE_HEAD = judge_mem0.ACCURACY_PROMPT[:80]

#: The harness's own prompt kinds (``unknown``: no responder recognised the request).
HARNESS_KINDS = ("answer_amem", "answer_locomo", "judge", "judge_mem0")
UNKNOWN = "unknown"


def _original(messages: Sequence[Message]) -> list[Message]:
    """The request without a trailing JSON-format retry note (``complete_json``'s attempt k>1)."""
    msgs = list(messages)
    if len(msgs) > 2 and content(msgs[-1]).startswith("Reply with one valid JSON object only"):
        msgs = msgs[:-1]
    return msgs


def short_answer(text: str) -> str:
    """The last six words of the context line sharing most words with the question (deterministic, non-trivial
    F1 on some items)."""
    found = _QUESTION_RE.findall(text)
    question = found[-1] if found else ""
    q_words = {w.lower() for w in words(question) if len(w) > 3}
    best, best_score = "", 0
    for line in text.splitlines():
        if "Question:" in line:
            continue
        score = len(q_words & {w.lower() for w in words(line)})
        if score > best_score:
            best, best_score = line, score
    return " ".join(best.split()[-6:]) or first_words(question, 4) or "unknown"


def _verdict(text: str) -> str:
    """CORRECT iff the generated answer shares a word with the gold."""
    gold = between(text, "Gold answer:", "\n")
    answer = between(text, "Generated answer:", "\n")
    return "CORRECT" if overlap(gold, answer) > 0 else "WRONG"


def _harness_classify(msgs: Sequence[Message]) -> str | None:
    """The harness's exact-marker kinds (the ``Short answer:`` fallback is asked last, after every method)."""
    system = system_text(msgs)
    if system == ANSWER_PROMPT.AMEM_SYSTEM:
        return "answer_amem"
    if system == JUDGE_PROMPT.SYSTEM:
        return "judge"
    if first_text(msgs).startswith(_MEM0_JUDGE_HEAD):
        return "judge_mem0"
    return None


def _harness_reply(kind: str, msgs: Sequence[Message]) -> str:
    user = last_text(msgs)
    if kind == "answer_amem":
        return json.dumps({"answer": short_answer(user)})
    if kind == "answer_locomo":
        return short_answer(user)
    if kind == "judge":
        return json.dumps({"reason": "simulated", "label": _verdict(user)})
    return json.dumps({"label": _verdict(first_text(msgs))})


HARNESS = SimReplies(kinds=HARNESS_KINDS, classify=_harness_classify, reply=_harness_reply)


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
    """Every responder in the order requests are matched: the methods', the datasets', then the harness's."""
    return (*method_responders(), *dataset_responders(), HARNESS)


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
    if "Short answer:" in first_text(msgs) or "Short answer:" in user_text(msgs):
        return "answer_locomo", HARNESS
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

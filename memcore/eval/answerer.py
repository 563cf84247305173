"""The answerer: one LLM call per QA item with the protocol's category prompt.

The protocol object (:mod:`memcore.eval.protocols`) supplies the messages, the sampling defaults, whether the
reply is JSON and the post-processing; this module makes the call and keeps the bookkeeping.

``protocol="amem"`` mirrors ``advancedMemAgent.answer_question`` of A-MEM's ``test_advanced.py``:
system + user message, JSON reply ``{"answer": ...}`` (parsed through
:func:`~memcore.llm.json_reply.complete_json`; an unparseable reply falls back to the raw text, as
A-MEM does, and is counted in the backbone's usage tracker), temperature 0.7 and 0.5 for
category 5 (A-MEM's ``temperature_c5`` default; the paper states the same), ``max_tokens`` 1000
(A-MEM's client). A-MEM makes one attempt; ``json_attempts`` (default 1) allows retries.

``protocol="locomo"`` mirrors ``get_gpt_answers`` of the official ``task_eval/evaluate_gpts.py``
(batch size 1): one user message, temperature 0, 32 answer tokens; a category-5 reply of just
``a``/``b``/``(a)``/``(b)`` is mapped to the option text and other replies are lower-cased, as the
official ``get_cat_5_answer`` does.

Deviations, all documented: the category-5 option order comes from a seeded RNG (seed derived
from the run seed and the item id) instead of the global ``random.random()``; the options use
``adversarial_answer`` (the official script reads ``answer``, which the released file lacks for
444 of 446 category-5 items); a leading ``Answer:`` / ``Short answer:`` label is stripped from
replies under ``protocol="amem"`` (A-MEM strips only white space). ``protocol="locomo"`` strips white space
only and hands a category-5 reply to the option mapping as it came, as the official code does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memcore.datasets.locomo.categories import Category
from memcore.eval.protocols import (
    EvalProtocol,
    adversarial_options,
    get_protocol,
    locomo_cat5_choice,
    strip_answer_label,
)
from memcore.interfaces import ChatBackbone, Completion, Message
from memcore.llm.cache import stable_hash
from memcore.llm.json_reply import complete_json
from memcore.seeding import derive_seed
from memcore.types import Evidence, QAItem

__all__ = [
    "AnswerPrompt",
    "AnswerResult",
    "Answerer",
    "adversarial_options",
    "locomo_cat5_choice",
    "strip_answer_label",
]


@dataclass(frozen=True)
class AnswerPrompt:
    """What will be sent for one item: messages, sampling, and the category-5 options in prompt order."""

    messages: list[Message]
    temperature: float
    max_tokens: int
    seed: int
    prompt_version: str
    options: tuple[str, ...] = ()

    def digest(self) -> str:
        """Hash of exactly what is sent (messages, sampling, seed): two items with the same digest got the
        same request, so a logged record can be matched with its prompt without storing the context."""
        return stable_hash(
            {
                "messages": self.messages,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "seed": self.seed,
            }
        )[:16]


@dataclass(frozen=True)
class AnswerResult:
    """The post-processed answer (``text``), the reply as received (``raw``) and bookkeeping."""

    text: str
    prompt_version: str
    cached: bool
    raw: str
    temperature: float = 0.0
    seed: int | None = None
    parse_ok: bool = True
    options: tuple[str, ...] = field(default_factory=tuple)
    prompt_hash: str = ""


class _RecordingBackbone:
    """Passes calls through and keeps the completions, so the caller learns whether they were cached."""

    def __init__(self, inner: ChatBackbone) -> None:
        self._inner = inner
        self.model = inner.model
        self.usage = getattr(inner, "usage", None)
        self.completions: list[Completion] = []

    def complete(self, messages: Any, **kwargs: Any) -> Completion:
        completion = self._inner.complete(messages, **kwargs)
        self.completions.append(completion)
        return completion


def _validate_answer(obj: Any) -> str:
    if not isinstance(obj, dict) or "answer" not in obj:
        raise ValueError('reply has no "answer" field')
    value = obj["answer"]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f'"answer" is a {type(value).__name__}, not a string')
    return str(value)


class Answerer:
    """Answers QA items from a context string under one protocol (a name or an :class:`EvalProtocol`).

    ``temperature_default`` / ``temperature_adversarial`` / ``max_tokens`` default (``None``) to the
    protocol's sampling defaults. Each call passes a per-item seed (``derive_seed(seed, "answer", item_id)``)
    and a prompt version to the backbone, so sampled answers are reproducible and cacheable. Thread-safe (no
    mutable state).
    """

    def __init__(
        self,
        backbone: ChatBackbone,
        protocol: str | EvalProtocol,
        *,
        seed: int,
        temperature_default: float | None = None,
        temperature_adversarial: float | None = None,
        max_tokens: int | None = None,
        json_attempts: int = 1,
    ) -> None:
        self.backbone = backbone
        self.spec: EvalProtocol = protocol if isinstance(protocol, EvalProtocol) else get_protocol(protocol)
        self.protocol = self.spec.name
        self.seed = int(seed)
        self.temperature_default = float(
            self.spec.temperature_default if temperature_default is None else temperature_default
        )
        self.temperature_adversarial = float(
            self.spec.temperature_adversarial if temperature_adversarial is None else temperature_adversarial
        )
        self.max_tokens = int(self.spec.max_tokens if max_tokens is None else max_tokens)
        if json_attempts < 1:
            raise ValueError(f"json_attempts must be >= 1, got {json_attempts}.")
        self.json_attempts = int(json_attempts)

    @property
    def prompt_version(self) -> str:
        return self.spec.prompt_version()

    def context_of(self, evidence: Evidence) -> str:
        """The context this answerer's prompt is filled with for ``evidence`` (:meth:`EvalProtocol.context`)."""
        return self.spec.context(evidence)

    def item_seed(self, item: QAItem) -> int:
        return derive_seed(self.seed, "answer", item.item_id)

    def build_prompt(self, item: QAItem, context: str) -> AnswerPrompt:
        """The exact messages and sampling parameters for ``item`` (no LLM call)."""
        adversarial = Category(int(item.category)) is Category.ADVERSARIAL
        options: tuple[str, ...] = adversarial_options(item, self.seed) if adversarial else ()
        return AnswerPrompt(
            messages=self.spec.messages(item, context, options),
            temperature=self.temperature_adversarial if adversarial else self.temperature_default,
            max_tokens=self.max_tokens,
            seed=self.item_seed(item),
            prompt_version=self.prompt_version,
            options=options,
        )

    def answer(self, item: QAItem, context: str) -> AnswerResult:
        """Ask the backbone (stage ``answer``) and post-process the reply per protocol."""
        spec = self.build_prompt(item, context)
        recorder = _RecordingBackbone(self.backbone)
        parse_ok = True
        if self.spec.json_reply:
            result = complete_json(
                recorder,
                spec.messages,
                stage="answer",
                validate=_validate_answer,
                fallback=None,
                fallback_kind="answer_raw_text",
                prompt_version=spec.prompt_version,
                max_attempts=self.json_attempts,
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
                seed=spec.seed,
            )
            raw = result.raw
            parse_ok = result.ok
            reply = result.value if result.ok and result.value is not None else raw
        else:
            completion = recorder.complete(
                spec.messages,
                stage="answer",
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
                seed=spec.seed,
                prompt_version=spec.prompt_version,
            )
            raw = reply = completion.text
        text = self.spec.postprocess(reply, spec.options)
        cached = bool(recorder.completions) and all(c.cached for c in recorder.completions)
        return AnswerResult(
            text=text,
            prompt_version=spec.prompt_version,
            cached=cached,
            raw=raw,
            temperature=spec.temperature,
            seed=spec.seed,
            parse_ok=parse_ok,
            options=spec.options,
            prompt_hash=spec.digest(),
        )

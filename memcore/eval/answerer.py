"""The answerer: one LLM call per QA item with the protocol's category prompt.

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
replies under both protocols (A-MEM and LoCoMo strip only white space).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from memcore.eval.metrics import check_protocol
from memcore.interfaces import ChatBackbone, Completion, Message
from memcore.llm.cache import stable_hash
from memcore.llm.json_reply import complete_json
from memcore.prompts import answer as prompts
from memcore.seeding import derive_seed
from memcore.types import Category, QAItem

PROTOCOL_DEFAULTS: dict[str, dict[str, float | int]] = {
    "amem": {"temperature_default": 0.7, "temperature_adversarial": 0.5, "max_tokens": 1000},
    "locomo": {"temperature_default": 0.0, "temperature_adversarial": 0.0, "max_tokens": 32},
}

_LABEL_RE = re.compile(r"^\s*(?:short\s+)?answer\s*:\s*", re.IGNORECASE)


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


def strip_answer_label(text: str) -> str:
    """Drop a leading ``Answer:`` / ``Short answer:`` label and surrounding white space."""
    return _LABEL_RE.sub("", text, count=1).strip()


def locomo_cat5_choice(reply: str, option_a: str, option_b: str) -> str:
    """The official ``get_cat_5_answer``: map a bare option letter to its text, else lower-case."""
    pred = reply.strip().lower()
    if len(pred) == 1:
        return option_a if "a" in pred else option_b
    if len(pred) == 3:
        return option_a if "(a)" in pred else option_b
    return pred


def adversarial_options(item: QAItem, run_seed: int) -> tuple[str, str]:
    """The two category-5 options in prompt order: "Not mentioned ..." first with probability 1/2.

    The order is ``random.Random(derive_seed(run_seed, "answer-options", item_id)).random() < 0.5``
    → (not-mentioned, adversarial answer), else the reverse -- A-MEM's and LoCoMo's coin, seeded.
    """
    adversarial = item.adversarial_answer if item.adversarial_answer is not None else (item.answer or "")
    coin = random.Random(derive_seed(run_seed, "answer-options", item.item_id)).random()
    if coin < 0.5:
        return prompts.NOT_MENTIONED, adversarial
    return adversarial, prompts.NOT_MENTIONED


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
    """Answers QA items from a context string under one protocol.

    ``temperature_default`` / ``temperature_adversarial`` / ``max_tokens`` default (``None``) to the
    protocol's values in :data:`PROTOCOL_DEFAULTS`. Each call passes a per-item seed
    (``derive_seed(seed, "answer", item_id)``) and a prompt version to the backbone, so sampled
    answers are reproducible and cacheable. Thread-safe (no mutable state).
    """

    def __init__(
        self,
        backbone: ChatBackbone,
        protocol: str,
        *,
        seed: int,
        temperature_default: float | None = None,
        temperature_adversarial: float | None = None,
        max_tokens: int | None = None,
        json_attempts: int = 1,
    ) -> None:
        self.backbone = backbone
        self.protocol = check_protocol(protocol)
        defaults = PROTOCOL_DEFAULTS[protocol]
        self.seed = int(seed)
        self.temperature_default = float(
            defaults["temperature_default"] if temperature_default is None else temperature_default
        )
        self.temperature_adversarial = float(
            defaults["temperature_adversarial"] if temperature_adversarial is None else temperature_adversarial
        )
        self.max_tokens = int(defaults["max_tokens"] if max_tokens is None else max_tokens)
        if json_attempts < 1:
            raise ValueError(f"json_attempts must be >= 1, got {json_attempts}.")
        self.json_attempts = int(json_attempts)

    @property
    def prompt_version(self) -> str:
        return f"{prompts.VERSION}/{self.protocol}"

    def item_seed(self, item: QAItem) -> int:
        return derive_seed(self.seed, "answer", item.item_id)

    def build_prompt(self, item: QAItem, context: str) -> AnswerPrompt:
        """The exact messages and sampling parameters for ``item`` (no LLM call)."""
        category = Category(int(item.category))
        adversarial = category is Category.ADVERSARIAL
        options: tuple[str, ...] = ()
        if self.protocol == "amem":
            template = prompts.AMEM_BY_CATEGORY[int(category)]
            if adversarial:
                options = adversarial_options(item, self.seed)
                user = template.format(
                    context=context, question=item.question, option_a=options[0], option_b=options[1]
                )
            else:
                user = template.format(context=context, question=item.question)
            messages: list[Message] = [
                {"role": "system", "content": prompts.AMEM_SYSTEM},
                {"role": "user", "content": user},
            ]
        else:
            question = item.question
            if category is Category.TEMPORAL:
                question += prompts.LOCOMO_TEMPORAL_SUFFIX
                template = prompts.LOCOMO_QA_PROMPT
            elif adversarial:
                options = adversarial_options(item, self.seed)
                question += prompts.LOCOMO_ADVERSARIAL_SUFFIX.format(option_a=options[0], option_b=options[1])
                template = prompts.LOCOMO_QA_PROMPT_CAT_5
            else:
                template = prompts.LOCOMO_QA_PROMPT
            query = prompts.LOCOMO_QUERY.format(context=context, prompt=template.format(question=question))
            messages = [{"role": "user", "content": query}]
        return AnswerPrompt(
            messages=messages,
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
        if self.protocol == "amem":
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
            text = strip_answer_label(result.value if result.ok and result.value is not None else raw)
        else:
            completion = recorder.complete(
                spec.messages,
                stage="answer",
                temperature=spec.temperature,
                max_tokens=spec.max_tokens,
                seed=spec.seed,
                prompt_version=spec.prompt_version,
            )
            raw = completion.text
            text = strip_answer_label(raw)
            if spec.options:
                text = locomo_cat5_choice(text, spec.options[0], spec.options[1]).strip()
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

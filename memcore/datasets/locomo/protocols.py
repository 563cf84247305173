"""LoCoMo's two evaluation protocols (``protocol.name``), registered through this package's ``PROTOCOLS``:

- ``amem``: A-MEM's evaluation (``test_advanced.py`` / ``utils.py`` of WujiangXu/AgenticMemory): system + user
  message per category, JSON reply ``{"answer": ...}``, temperature 0.7 (category 5: 0.5), 1000 tokens,
  token-set F1 and BLEU-1; category 5 is scored against the item's adversarial answer.
- ``locomo``: the official ``task_eval`` code of snap-research/locomo: one user message, temperature 0, 32
  tokens, a category-5 option letter mapped to its text and other replies lower-cased, the per-category F1 of
  ``eval_question_answering``; category 5 is scored by refusal detection.

Both offer category 5 two options in a seeded random order and answer it at ``temperature_adversarial``.

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

import random
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.judges import LOCOMO_JUDGES
from memcore.datasets.locomo.prompts import answer as prompts
from memcore.datasets.locomo.scoring import amem_f1, locomo_f1
from memcore.datasets.protocol import EvalProtocol
from memcore.interfaces import Message
from memcore.seeding import derive_seed
from memcore.types import QAItem

#: The note a table scored under ``protocol=amem`` carries about category 5.
AMEM_CAT5_NOTE = (
    "protocol=amem (the paper's): category 5 is scored against adversarial_answer, the misleading answer, so a "
    "higher category-5 score means being misled more often (the official protocol scores a refusal). "
    "Overall 1-5 is what the paper reports; overall 1-4 is what published J numbers (Mem0's judge) cover."
)


def adversarial_answer(item: QAItem) -> str | None:
    """A LoCoMo item's misleading answer (category 5), kept in its metadata by the loader."""
    value = item.metadata.get("adversarial_answer")
    return None if value is None else str(value)


def is_adversarial(item: QAItem) -> bool:
    return int(item.category) == Category.ADVERSARIAL


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
    adversarial = adversarial_answer(item)
    if adversarial is None:
        adversarial = item.answer or ""
    coin = random.Random(derive_seed(run_seed, "answer-options", item.item_id)).random()
    if coin < 0.5:
        return prompts.NOT_MENTIONED, adversarial
    return adversarial, prompts.NOT_MENTIONED


def display_gold(item: QAItem) -> str:
    """The original answer or, failing that, the adversarial answer (what is shown when no reference is scored)."""
    if item.answer is not None:
        return item.answer
    return adversarial_answer(item) or ""


@dataclass(frozen=True)
class LoCoMoEvalProtocol(EvalProtocol):
    """A protocol for LoCoMo's questions: category 5 offers two options (:func:`adversarial_options`) and is
    answered at ``temperature_adversarial``; the gold is :func:`display_gold`; LoCoMo's judge presets grade it."""

    temperature_adversarial: float = 0.0
    judges: tuple[str, ...] = LOCOMO_JUDGES

    @property
    def sampling_defaults(self) -> dict[str, float | int]:
        return {
            "temperature_default": self.temperature_default,
            "temperature_adversarial": self.temperature_adversarial,
            "max_tokens": self.max_tokens,
        }

    def temperature(self, item: QAItem, sampling: Mapping[str, float | int]) -> float:
        key = "temperature_adversarial" if is_adversarial(item) else "temperature_default"
        return float(sampling[key])

    def answer_options(self, item: QAItem, run_seed: int) -> tuple[str, ...]:
        return adversarial_options(item, run_seed) if is_adversarial(item) else ()

    def prompt_version(self) -> str:
        """``<answer prompt VERSION>/<protocol>``: what the response cache keys the answer call on."""
        return f"{prompts.VERSION}/{self.name}"

    def gold(self, item: QAItem) -> str:
        return display_gold(item)


@dataclass(frozen=True)
class AMemProtocol(LoCoMoEvalProtocol):
    """A-MEM's evaluation: category prompts after a JSON system message; token-set F1; category 5 vs the
    misleading adversarial answer."""

    def gold(self, item: QAItem) -> str:
        if is_adversarial(item):
            return adversarial_answer(item) or item.answer or ""
        return display_gold(item)

    def table_notes(self, categories: Collection[str] = ()) -> tuple[str, ...]:
        return (AMEM_CAT5_NOTE,) if not categories or str(int(Category.ADVERSARIAL)) in categories else ()

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        template = prompts.AMEM_BY_CATEGORY[int(item.category)]
        if options:
            user = template.format(context=context, question=item.question, option_a=options[0], option_b=options[1])
        else:
            user = template.format(context=context, question=item.question)
        return [{"role": "system", "content": prompts.AMEM_SYSTEM}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class LoCoMoProtocol(LoCoMoEvalProtocol):
    """The official LoCoMo evaluation: one user message; per-category F1; category 5 scored by refusal."""

    def expects_refusal(self, item: QAItem) -> bool:
        return is_adversarial(item)

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        question = item.question
        if int(item.category) == Category.TEMPORAL:
            question += prompts.LOCOMO_TEMPORAL_SUFFIX
            template = prompts.LOCOMO_QA_PROMPT
        elif options:
            question += prompts.LOCOMO_ADVERSARIAL_SUFFIX.format(option_a=options[0], option_b=options[1])
            template = prompts.LOCOMO_QA_PROMPT_CAT_5
        else:
            template = prompts.LOCOMO_QA_PROMPT
        query = prompts.LOCOMO_QUERY.format(context=context, prompt=template.format(question))
        return [{"role": "user", "content": query}]

    def postprocess(self, reply: str, options: tuple[str, ...]) -> str:
        """As ``get_gpt_answers``: the reply stripped of white space only; a category-5 reply goes to the option
        mapping as it came."""
        if options:
            return locomo_cat5_choice(reply, options[0], options[1]).strip()
        return reply.strip()


def _amem_f1(prediction: str, gold: str, category: int) -> float:
    return amem_f1(prediction, gold)  # every category the same way


def _locomo_f1(prediction: str, gold: str, category: int) -> float:
    return locomo_f1(prediction, gold, category)


AMEM = AMemProtocol(
    name="amem",
    prompt_name="A-MEM LoCoMo short-phrase prompts (test_advanced.py), JSON reply",
    temperature_default=0.7,
    temperature_adversarial=0.5,
    max_tokens=1000,
    json_reply=True,
    scorers=MappingProxyType({"f1": _amem_f1}),
)

LOCOMO = LoCoMoProtocol(
    name="locomo",
    prompt_name="official LoCoMo QA prompt (task_eval/evaluate_gpts.py), short phrase",
    temperature_default=0.0,
    temperature_adversarial=0.0,
    max_tokens=32,
    json_reply=False,
    # BLEU-1 is not part of the official code: the metric's own scorer, so both protocols' tables carry the same
    scorers=MappingProxyType({"f1": _locomo_f1}),
)

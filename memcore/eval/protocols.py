"""Evaluation protocols as objects: what a protocol decides lives here, nowhere else (DESIGN §5).

A protocol (``protocol.name``; :data:`PROTOCOLS`) owns the gold an item is scored against, the answer prompt
and its sampling defaults, whether the reply is JSON, the post-processing of the reply, the answer score, the
gold the judge sees, and the note the results table carries. Two protocols ship:

- ``amem``: A-MEM's evaluation (``test_advanced.py`` / ``utils.py`` of WujiangXu/AgenticMemory): system + user
  message per category, JSON reply ``{"answer": ...}``, temperature 0.7 (category 5: 0.5), 1000 tokens,
  token-set F1 and BLEU-1; category 5 is scored against ``adversarial_answer``.
- ``locomo``: the official ``task_eval`` code of snap-research/locomo: one user message, temperature 0, 32
  tokens, a category-5 option letter mapped to its text and other replies lower-cased, the per-category F1 of
  ``eval_question_answering``; category 5 is scored by refusal detection.

The callers (:class:`~memcore.eval.answerer.Answerer`, :func:`~memcore.eval.metrics.score_answer`,
:meth:`memcore.types.QAItem.gold`, the judge, aggregation and disclosure) look the protocol up by name and
call it; none of them branches on a protocol's name.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from memcore.datasets.locomo.categories import Category
from memcore.eval.metrics import amem_bleu1, amem_f1, locomo_f1
from memcore.interfaces import Message
from memcore.prompts import answer as prompts
from memcore.registry import Registry
from memcore.seeding import derive_seed
from memcore.types import Evidence, QAItem

_LABEL_RE = re.compile(r"^\s*(?:short\s+)?answer\s*:\s*", re.IGNORECASE)

#: The note a table scored under ``protocol=amem`` carries about category 5.
AMEM_CAT5_NOTE = (
    "protocol=amem (the paper's): category 5 is scored against adversarial_answer, the misleading answer, so a "
    "higher category-5 score means being misled more often (the official protocol scores a refusal). "
    "Overall 1-5 is what the paper reports; overall 1-4 is what published J numbers (Mem0's judge) cover."
)


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


def display_gold(item: QAItem) -> str:
    """The original answer or, failing that, ``adversarial_answer`` (what is shown when no reference is scored)."""
    if item.answer is not None:
        return item.answer
    return item.adversarial_answer or ""


@dataclass(frozen=True)
class EvalProtocol:
    """One evaluation protocol. Subclasses override the prompt, post-processing, scoring and gold rules.

    ``temperature_default`` / ``temperature_adversarial`` / ``max_tokens``: the sampling defaults a run's
    ``protocol.*`` keys override. ``json_reply``: the answer is asked for (and parsed) as ``{"answer": ...}``.
    ``prompt_name``: the answer prompt's provenance for ``metrics.json`` and the table.
    ``cat5_note``: the footnote a table under this protocol carries about how category 5 is scored (None: none)."""

    name: str
    prompt_name: str
    temperature_default: float
    temperature_adversarial: float
    max_tokens: int
    json_reply: bool
    cat5_note: str | None = None

    @property
    def sampling_defaults(self) -> dict[str, float | int]:
        return {
            "temperature_default": self.temperature_default,
            "temperature_adversarial": self.temperature_adversarial,
            "max_tokens": self.max_tokens,
        }

    def prompt_version(self) -> str:
        """``<answer prompt VERSION>/<protocol>``: what the response cache keys the answer call on."""
        return f"{prompts.VERSION}/{self.name}"

    def gold(self, item: QAItem) -> str:
        """The gold string this protocol scores ``item`` against."""
        return display_gold(item)

    def expects_refusal(self, item: QAItem) -> bool:
        """Whether the expected answer to ``item`` is a refusal (the judge then grades a refusal as correct)."""
        return False

    def context(self, evidence: Evidence) -> str:
        """The context string :meth:`messages` receives for ``evidence`` (the method's own rendering)."""
        return evidence.render()

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        """The answer prompt for ``item`` given the retrieved ``context`` (``options``: category 5's, in order)."""
        raise NotImplementedError

    def postprocess(self, reply: str, options: tuple[str, ...]) -> str:
        """The answer text from the (JSON-parsed, when ``json_reply``) reply."""
        return strip_answer_label(reply)

    def score(self, prediction: str, gold: str, category: Category) -> dict[str, float]:
        """``{"f1": ..., "bleu1": ...}`` of one answer against this protocol's gold."""
        raise NotImplementedError


@dataclass(frozen=True)
class AMemProtocol(EvalProtocol):
    """A-MEM's evaluation: category prompts after a JSON system message; token-set F1; category 5 vs the
    misleading ``adversarial_answer``."""

    def gold(self, item: QAItem) -> str:
        if item.category is Category.ADVERSARIAL:
            return item.adversarial_answer or item.answer or ""
        return display_gold(item)

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        template = prompts.AMEM_BY_CATEGORY[int(item.category)]
        if options:
            user = template.format(context=context, question=item.question, option_a=options[0], option_b=options[1])
        else:
            user = template.format(context=context, question=item.question)
        return [{"role": "system", "content": prompts.AMEM_SYSTEM}, {"role": "user", "content": user}]

    def score(self, prediction: str, gold: str, category: Category) -> dict[str, float]:
        return {"f1": amem_f1(prediction, gold), "bleu1": amem_bleu1(prediction, gold)}


@dataclass(frozen=True)
class LoCoMoProtocol(EvalProtocol):
    """The official LoCoMo evaluation: one user message; per-category F1; category 5 scored by refusal."""

    def expects_refusal(self, item: QAItem) -> bool:
        return Category(int(item.category)) is Category.ADVERSARIAL

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        question = item.question
        if Category(int(item.category)) is Category.TEMPORAL:
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
        text = strip_answer_label(reply)
        if options:
            text = locomo_cat5_choice(text, options[0], options[1]).strip()
        return text

    def score(self, prediction: str, gold: str, category: Category) -> dict[str, float]:
        # BLEU-1 is not part of the official code; both protocols' tables carry the same BLEU-1 on the uncut gold.
        return {"f1": locomo_f1(prediction, gold, category), "bleu1": amem_bleu1(prediction, gold)}


PROTOCOLS: Registry[EvalProtocol] = Registry("protocol")
PROTOCOLS.add(
    "amem",
    AMemProtocol(
        name="amem",
        prompt_name="A-MEM LoCoMo short-phrase prompts (test_advanced.py), JSON reply",
        temperature_default=0.7,
        temperature_adversarial=0.5,
        max_tokens=1000,
        json_reply=True,
        cat5_note=AMEM_CAT5_NOTE,
    ),
)
PROTOCOLS.add(
    "locomo",
    LoCoMoProtocol(
        name="locomo",
        prompt_name="official LoCoMo QA prompt (task_eval/evaluate_gpts.py), short phrase",
        temperature_default=0.0,
        temperature_adversarial=0.0,
        max_tokens=32,
        json_reply=False,
    ),
)


def get_protocol(protocol: str | EvalProtocol) -> EvalProtocol:
    """The protocol named ``protocol`` (an :class:`EvalProtocol` passes through); unknown names raise
    ValueError naming the known ones."""
    if isinstance(protocol, EvalProtocol):
        return protocol
    if protocol not in PROTOCOLS:
        raise ValueError(PROTOCOLS.unknown(str(protocol)))
    return PROTOCOLS.get(protocol)


def protocol_cat5_note(name: str) -> str | None:
    """The category-5 table note of protocol ``name`` (None for an unknown name, e.g. an old run's)."""
    return PROTOCOLS.get(name).cat5_note if name in PROTOCOLS else None


__all__ = [
    "AMEM_CAT5_NOTE",
    "PROTOCOLS",
    "EvalProtocol",
    "adversarial_options",
    "display_gold",
    "get_protocol",
    "locomo_cat5_choice",
    "protocol_cat5_note",
    "strip_answer_label",
]

"""Evaluation protocols as objects: what a protocol decides lives here, nowhere else.

A protocol (``protocol.name``; :data:`PROTOCOLS`) owns the gold an item is scored against, the answer prompt
and its sampling defaults, whether the reply is JSON, the post-processing of the reply, the metrics it scores
(``metrics``, names in :data:`memcore.metrics.METRICS`) and, where it computes a metric its own way, the scorer
(``scorers``: metric name -> scoring function), the gold the judge sees, and the note the results table
carries. Two protocols ship:

- ``amem``: A-MEM's evaluation (``test_advanced.py`` / ``utils.py`` of WujiangXu/AgenticMemory): system + user
  message per category, JSON reply ``{"answer": ...}``, temperature 0.7 (category 5: 0.5), 1000 tokens,
  token-set F1 and BLEU-1; category 5 is scored against ``adversarial_answer``.
- ``locomo``: the official ``task_eval`` code of snap-research/locomo: one user message, temperature 0, 32
  tokens, a category-5 option letter mapped to its text and other replies lower-cased, the per-category F1 of
  ``eval_question_answering``; category 5 is scored by refusal detection.

The runner resolves the run's protocol once (:func:`get_protocol`) and hands the object to the answerer, the
scorer, the judge and aggregation; none of them looks it up again or branches on a protocol's name.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from memcore.datasets.locomo.categories import Category
from memcore.interfaces import Message
from memcore.metrics import STANDARD_METRICS, Metric, get_metric, resolve_metrics
from memcore.metrics.scorers.answer import amem_f1, locomo_f1
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
    ``cat5_note``: the footnote a table under this protocol carries about how category 5 is scored (None: none).
    ``metrics``: the registered metrics a run under this protocol scores, in record order. ``scorers``: the
    protocol's own scoring function (prediction, gold, category int) for a metric it computes its own way; the
    others use the metric's generic scorer."""

    name: str
    prompt_name: str
    temperature_default: float
    temperature_adversarial: float
    max_tokens: int
    json_reply: bool
    cat5_note: str | None = None
    metrics: tuple[str, ...] = STANDARD_METRICS
    scorers: Mapping[str, Callable[[str, str, int], float]] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )

    def declared_metrics(self) -> tuple[Metric, ...]:
        """The :class:`~memcore.metrics.Metric` objects of :attr:`metrics`, in order."""
        return tuple(get_metric(name) for name in self.metrics)

    def scorer(self, metric: Metric) -> Callable[..., float | None]:
        """How this protocol scores one item for ``metric``: its own scorer, else the metric's; a metric with
        neither (e.g. ``f1``, whose tokens are the protocol's) raises ValueError."""
        own = self.scorers.get(metric.name)
        if own is not None:
            return own
        if metric.score is None:
            raise ValueError(
                f"protocol {self.name!r} has no scorer for metric {metric.name!r}, and the metric has none"
            )
        return metric.score

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
        """The answer metrics of :attr:`metrics` that need no LLM (``{"f1": ..., "bleu1": ...}`` for both shipped
        protocols), scored for one answer against this protocol's gold, in declaration order."""
        return {
            m.name: self.scorer(m)(prediction, gold, int(category))
            for m in self.declared_metrics()
            if m.target == "answer" and not m.needs_llm
        }


@dataclass(frozen=True)
class AMemProtocol(EvalProtocol):
    """A-MEM's evaluation: category prompts after a JSON system message; token-set F1; category 5 vs the
    misleading ``adversarial_answer``."""

    def gold(self, item: QAItem) -> str:
        if Category(int(item.category)) is Category.ADVERSARIAL:
            return item.adversarial_answer or item.answer or ""
        return display_gold(item)

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        template = prompts.AMEM_BY_CATEGORY[int(item.category)]
        if options:
            user = template.format(context=context, question=item.question, option_a=options[0], option_b=options[1])
        else:
            user = template.format(context=context, question=item.question)
        return [{"role": "system", "content": prompts.AMEM_SYSTEM}, {"role": "user", "content": user}]


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
        """As ``get_gpt_answers``: the reply stripped of white space only; a category-5 reply goes to the option
        mapping as it came."""
        if options:
            return locomo_cat5_choice(reply, options[0], options[1]).strip()
        return reply.strip()


def _amem_f1(prediction: str, gold: str, category: int) -> float:
    return amem_f1(prediction, gold)  # every category the same way


def _locomo_f1(prediction: str, gold: str, category: int) -> float:
    return locomo_f1(prediction, gold, category)


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
        scorers=MappingProxyType({"f1": _amem_f1}),
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
        # BLEU-1 is not part of the official code: the metric's own scorer, so both protocols' tables carry the same
        scorers=MappingProxyType({"f1": _locomo_f1}),
    ),
)


def get_protocol(name: str) -> EvalProtocol:
    """The protocol named ``name``: resolved once per run (or per stored run a report reads); unknown names raise
    ValueError naming the known ones."""
    if name not in PROTOCOLS:
        raise ValueError(PROTOCOLS.unknown(str(name)))
    return PROTOCOLS.get(name)


def recorded_protocol(name: str) -> EvalProtocol | None:
    """The protocol a stored run recorded as ``name`` (None for a name no longer registered, e.g. an old run's)."""
    return PROTOCOLS.get(name) if name in PROTOCOLS else None


def protocol_cat5_note(name: str) -> str | None:
    """The category-5 table note of the protocol a stored run recorded as ``name`` (None for an unknown name)."""
    protocol = recorded_protocol(name)
    return None if protocol is None else protocol.cat5_note


def run_metrics_of(protocol: EvalProtocol | None, extra: Sequence[str] = ()) -> tuple[Metric, ...]:
    """The metrics a run scores: its protocol's (the standard ones for an unknown protocol) and then the
    registered metrics named in ``eval.metrics`` (``extra``), without repeats."""
    names = protocol.metrics if protocol is not None else STANDARD_METRICS
    return resolve_metrics([*names, *extra])


__all__ = [
    "AMEM_CAT5_NOTE",
    "PROTOCOLS",
    "EvalProtocol",
    "adversarial_options",
    "display_gold",
    "get_protocol",
    "locomo_cat5_choice",
    "protocol_cat5_note",
    "recorded_protocol",
    "run_metrics_of",
    "strip_answer_label",
]

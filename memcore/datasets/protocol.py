"""What an evaluation protocol is: :class:`EvalProtocol`, the contract a dataset's protocols fulfil.

A protocol owns the gold an item is scored against, the answer prompt and its sampling defaults, whether the
reply is JSON, the post-processing of the reply, the metrics it scores (``metrics``, names in
:data:`memcore.metrics.METRICS`) and, where it computes a metric its own way, the scorer (``scorers``: metric
name -> scoring function), the gold the judge sees, the judge presets that grade its answers (``judges``,
:mod:`memcore.datasets.judge`), and the notes the results table carries. A dataset declares
its protocols (``DatasetSpec.protocols``) and registers them in its package's ``PROTOCOLS`` literal; the harness
finds them by name (:mod:`memcore.eval.protocols`) and never branches on a dataset's categories itself: what a
category means to a protocol (a refusal expected, its own prompt, its own temperature) is the protocol's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from memcore.interfaces import Message
from memcore.metrics import STANDARD_METRICS, Metric, get_metric
from memcore.types import Evidence, QAItem

_LABEL_RE = re.compile(r"^\s*(?:short\s+)?answer\s*:\s*", re.IGNORECASE)


def strip_answer_label(text: str) -> str:
    """Drop a leading ``Answer:`` / ``Short answer:`` label and surrounding white space."""
    return _LABEL_RE.sub("", text, count=1).strip()


@dataclass(frozen=True)
class EvalProtocol:
    """One evaluation protocol. Subclasses override the prompt, post-processing, scoring and gold rules.

    ``temperature_default`` / ``max_tokens``: the sampling defaults a run's ``protocol.*`` keys override (a
    protocol may add its own in :attr:`sampling_defaults` and pick per item in :meth:`temperature`).
    ``json_reply``: the answer is asked for (and parsed) as ``{"answer": ...}``. ``prompt_name``: the answer
    prompt's provenance for ``metrics.json`` and the table. ``metrics``: the registered metrics a run under this
    protocol scores, in record order. ``scorers``: the protocol's own scoring function (prediction, gold,
    category int) for a metric it computes its own way; the others use the metric's generic scorer. ``judges``: the
    judge presets (:class:`~memcore.datasets.judge.JudgePreset` names) that grade its answers, the default first
    (``eval.judge_preset`` unset picks it); none: its answers cannot be judged."""

    name: str
    prompt_name: str
    temperature_default: float
    max_tokens: int
    json_reply: bool
    metrics: tuple[str, ...] = STANDARD_METRICS
    scorers: Mapping[str, Callable[[str, str, int], float]] = field(
        default_factory=lambda: MappingProxyType({}), compare=False
    )
    judges: tuple[str, ...] = ()

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
        """The sampling keys this protocol reads (``protocol.<key>`` overrides them), with their defaults."""
        return {"temperature_default": self.temperature_default, "max_tokens": self.max_tokens}

    def temperature(self, item: QAItem, sampling: Mapping[str, float | int]) -> float:
        """The temperature ``item`` is answered at, given the run's resolved :attr:`sampling_defaults`."""
        return float(sampling["temperature_default"])

    def answer_options(self, item: QAItem, run_seed: int) -> tuple[str, ...]:
        """The options the prompt offers for ``item``, in order (none unless the protocol asks a choice)."""
        return ()

    def prompt_version(self) -> str:
        """What the response cache keys the answer call on."""
        return self.name

    def table_notes(self, categories: Collection[str] = ()) -> tuple[str, ...]:
        """Footnotes a table of a run under this protocol carries; ``categories``: the category ids (as strings)
        the table shows, empty when it shows none by category."""
        return ()

    def gold(self, item: QAItem) -> str:
        """The gold string this protocol scores ``item`` against."""
        return item.answer or ""

    def expects_refusal(self, item: QAItem) -> bool:
        """Whether the expected answer to ``item`` is a refusal (the judge then grades a refusal as correct)."""
        return False

    def context(self, evidence: Evidence) -> str:
        """The context string :meth:`messages` receives for ``evidence`` (the method's own rendering)."""
        return evidence.render()

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        """The answer prompt for ``item`` given the retrieved ``context`` (``options``: :meth:`answer_options`)."""
        raise NotImplementedError

    def postprocess(self, reply: str, options: tuple[str, ...]) -> str:
        """The answer text from the (JSON-parsed, when ``json_reply``) reply."""
        return strip_answer_label(reply)

    def score(self, prediction: str, gold: str, category: int) -> dict[str, float]:
        """The answer metrics of :attr:`metrics` that need no LLM (``{"f1": ..., "bleu1": ...}`` for LoCoMo's
        protocols), scored for one answer against this protocol's gold, in declaration order."""
        return {
            m.name: self.scorer(m)(prediction, gold, int(category))
            for m in self.declared_metrics()
            if m.target == "answer" and not m.needs_llm
        }

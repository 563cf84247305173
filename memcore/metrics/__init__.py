"""Metric registry: name → :class:`Metric`, one module per metric in this folder.

A metric is a module ``memcore/metrics/<name>.py`` that defines ``METRIC = Metric(name="<name>", ...)``; a
package outside the repository adds one through the entry-point group ``memcore.metrics``
(``<name> = "pkg.module:METRIC"``), and a dataset package its own in a ``METRICS = {"<name>": "module:OBJECT"}``
literal of its ``__init__.py``. Modules are found by scanning (no import) and imported on first lookup. A run scores its protocol's metrics (``EvalProtocol.metrics``) plus the registered metrics named
in ``eval.metrics``; aggregation, bootstrap intervals, tables and re-scoring loop over those.

What a metric declares: what it scores (``target``: an ``"answer"`` against the gold, or the retrieved
``"evidence"`` ids against the gold evidence ids), how it scores one item (``score``, a pure function; a
protocol may supply its own, e.g. A-MEM's token-set F1 against LoCoMo's per-category F1), how its per-item values
aggregate (``aggregate``, the mean by default, or a whole ``summarize`` of the items), its table ``label``,
whether higher is better and whether it needs an LLM (the judge, scored by its own pipeline stage).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from memcore.itemlog import LoggedItem
from memcore.registry import Registry, discover_declared

#: What an answer scorer receives: the prediction, the protocol's gold string, the item's category int.
AnswerScorer = Callable[[str, str, int], float]
#: What an evidence scorer receives: the gold evidence ids and the retrieved ids in retrieval order; ``None`` when
#: the item cannot be scored (no gold evidence).
EvidenceScorer = Callable[[Sequence[str], Sequence[str]], "float | None"]

#: The entry-point group through which installed packages add metrics.
ENTRY_POINT_GROUP = "memcore.metrics"

#: The metrics every run records, in the order of the ``metrics.json`` blocks and the item record: what the two
#: LoCoMo protocols declare.
STANDARD_METRICS: tuple[str, ...] = ("f1", "bleu1", "recall", "hit", "judge")


def mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean (None for no values): the default aggregation."""
    return sum(values) / len(values) if values else None


@dataclass(frozen=True)
class Metric:
    """One registered metric.

    ``stored``: where the item record keeps the value -- ``"scores"`` (``item["scores"][name]``), ``"item"`` (a
    top-level key of the record, ``item[name]``: evidence recall and hit) or ``"derived"`` (not stored: computed
    from the record's ``evidence`` and ``retrieved_dia_ids`` when read). ``key``: the key of the aggregate in
    ``metrics.json`` (default ``name``; ``hit`` aggregates to ``hit_rate``). ``percent``: values are fractions
    shown as percentages. ``summarize`` replaces the default ``{key: aggregate(values)}`` of a block of items
    (the judge reports its runs' spread too)."""

    name: str
    label: str
    target: Literal["answer", "evidence"]
    score: Callable[..., float | None] | None = None
    aggregate: Callable[[Sequence[float]], float | None] = mean
    summarize: Callable[[Sequence[LoggedItem]], dict[str, Any]] | None = None
    higher_is_better: bool = True
    needs_llm: bool = False
    stored: Literal["scores", "item", "derived"] = "scores"
    key: str = ""
    percent: bool = True
    description: str = ""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.name)
        if self.target not in ("answer", "evidence"):
            raise ValueError(f"metric {self.name!r}: target must be 'answer' or 'evidence', not {self.target!r}")
        if self.target == "evidence" and self.score is None:
            raise ValueError(f"metric {self.name!r}: an evidence metric needs a scorer (no protocol supplies one)")
        if self.stored == "derived" and self.target != "evidence":
            raise ValueError(f"metric {self.name!r}: only an evidence metric can be derived when read")

    def value(self, item: LoggedItem) -> float | None:
        """This metric's value in one item record (``None`` when the item carries none)."""
        if self.stored == "derived":
            assert self.score is not None
            value = self.score(item.evidence, item.retrieved_dia_ids)
        elif self.stored == "item":
            value = item.get(self.name)  # a top-level field named after the metric (recall, hit)
        else:
            value = item.scores.get(self.name)
        return None if value is None else float(value)

    def summary(self, items: Sequence[LoggedItem]) -> dict[str, Any]:
        """The aggregate over ``items`` as ``metrics.json`` block entries (items without a value are skipped)."""
        if self.summarize is not None:
            return self.summarize(items)
        return {self.key: self.aggregate([v for it in items if (v := self.value(it)) is not None])}


def _module_dirs(package: str) -> list[Path]:
    spec = importlib.util.find_spec(package)
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []


def _discover(registry: Registry[Metric]) -> None:
    for directory in _module_dirs(__name__):
        for path in sorted(directory.glob("*.py")):
            if not path.stem.startswith("_"):
                registry.add_lazy(path.stem, f"{__name__}.{path.stem}:METRIC")
    discover_declared("METRICS", ENTRY_POINT_GROUP)(registry)  # the dataset packages' own, then installed ones


def _check(target: str, obj: object) -> None:
    if not isinstance(obj, Metric):
        raise TypeError(f"{target} is not a memcore.metrics.Metric")
    registered = target.rsplit(":", 1)[0].rsplit(".", 1)[-1]
    if target.startswith(f"{__name__}.") and obj.name != registered:
        raise ValueError(f"{target} declares the metric {obj.name!r}; a metric module is named after its metric")


METRICS: Registry[Metric] = Registry("metric", check=_check, loader=_discover)


def get_metric(name: str) -> Metric:
    """The metric registered as ``name`` or aggregated as ``name`` (``hit_rate`` is ``hit``); unknown names
    raise :class:`memcore.registry.UnknownNameError` with close matches."""
    if name not in METRICS:
        for known in METRICS.names():
            if METRICS.get(known).key == name:
                return METRICS.get(known)
    return METRICS.get(name)


def resolve_metrics(names: Sequence[str]) -> tuple[Metric, ...]:
    """The metrics named, in order, without repeats."""
    return tuple(get_metric(n) for n in dict.fromkeys(names))


__all__ = [
    "ENTRY_POINT_GROUP",
    "METRICS",
    "STANDARD_METRICS",
    "AnswerScorer",
    "EvidenceScorer",
    "Metric",
    "get_metric",
    "mean",
    "resolve_metrics",
]

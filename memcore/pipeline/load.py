"""Stage 1 of the pipeline: the slice a run evaluates — the run's dataset (``dataset.kind``, from the registry of
:mod:`memcore.datasets`) located, loaded and cleaned by its own loader, then cut the same way for every dataset
(conversations, sessions, QA count, evidence inside, categories, item ids) and, with ``eval.audited``, paired
with the dataset's corrected gold."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from memcore.datasets.errors import DataError
from memcore.datasets.registry import dataset_of
from memcore.datasets.slicing import select
from memcore.datasets.spec import DatasetCategories, DatasetFile, DatasetSpec
from memcore.types import Conversation, QAItem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedSlice:
    """The conversations of a run with their QA items, in dataset order.

    ``audited`` maps item_id → the item with the audit's gold applied (every item of the slice when the
    overlay is on, empty otherwise); ``audit_changed`` maps item_id → the audit's error_type for the items it
    corrected. ``cleaning`` is the loader's cleaning report; ``categories`` the dataset's declared categories."""

    conversations: list[Conversation]
    sha256: str
    categories: DatasetCategories
    cleaning: dict[str, Any] = field(default_factory=dict)
    audited: dict[str, QAItem] = field(default_factory=dict)
    audit_changed: dict[str, str] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return sum(len(c.qa) for c in self.conversations)


def load_slice(dataset: Any, *, audited: bool = False, audit_path: str | None = None) -> LoadedSlice:
    """Load the slice described by a ``dataset`` config (``kind``, ``path``, ``conversations``, ``max_sessions``,
    ``max_qa``, ``evidence_inside``, ``categories``, ``item_ids``); with ``audited`` apply the dataset's audit
    overlay from ``audit_path``. Raises ``DataError`` (one line, what to do) for a missing or malformed file, a
    dataset without an audit asked for one, or items that break the spec's contract (an undeclared category,
    evidence naming no turn); an unknown ``kind`` raises ``UnknownNameError`` (did you mean …)."""
    spec = dataset_of(dataset)
    if audited and spec.audit is None:
        raise DataError(f"dataset {spec.kind!r} has no audit overlay: run it with eval.audited=false", hint=None)
    dataset_file = spec.load(spec.locate(dataset.path))
    check_contract(spec, dataset_file)
    if dataset_file.cleaning:
        counts = ", ".join(f"{k}={v['count']}" for k, v in dataset_file.cleaning.items())
        log.info("%s cleaning applied: %s", spec.kind, counts)
    convs = select(
        dataset_file,
        conversations=list(dataset.conversations) if dataset.conversations else None,
        max_sessions=dataset.max_sessions,
        max_qa=dataset.max_qa,
        evidence_inside=bool(dataset.evidence_inside),
    )
    if dataset.categories:
        keep = {int(c) for c in dataset.categories}
        convs = [replace(c, qa=tuple(q for q in c.qa if int(q.category) in keep)) for c in convs]
    if getattr(dataset, "item_ids", None):
        convs = keep_items(convs, [str(i) for i in dataset.item_ids])
    audited_items: dict[str, QAItem] = {}
    changed: dict[str, str] = {}
    if audited and spec.audit is not None:
        overlay = spec.audit(convs, audit_path)
        audited_items = {q.item_id: q for conv in overlay.conversations for q in conv.qa}
        log.info("audited overlay: %s", overlay.summary)
        changed = dict(overlay.changed)
    return LoadedSlice(convs, dataset_file.sha256, spec.categories, dataset_file.cleaning, audited_items, changed)


def check_contract(spec: DatasetSpec, dataset_file: DatasetFile) -> None:
    """Raise ``DataError`` for the first QA item whose category ``spec`` does not declare or whose evidence names
    no turn of its conversation: every per-category number and every recall depends on both."""
    for conv in dataset_file.conversations:
        turn_ids = conv.turn_ids
        for item in conv.qa:
            if int(item.category) not in spec.categories:
                raise DataError(
                    f"item {item.item_id} has category {int(item.category)}, which dataset {spec.kind!r} does not "
                    f"declare ({spec.categories.describe()})",
                    hint=None,
                )
            stray = [e for e in item.evidence if e not in turn_ids]
            if stray:
                raise DataError(
                    f"item {item.item_id} cites evidence {stray[0]!r}, no turn of {conv.conv_id} "
                    f"(evidence names {spec.evidence_unit})",
                    hint=None,
                )


def keep_items(convs: list[Conversation], wanted: list[str]) -> list[Conversation]:
    """Keep only the QA items whose id is in ``wanted`` (conversation and dataset order kept). An id that is not in
    the slice (after the other cuts) raises ``DataError`` naming it."""
    have = {q.item_id for c in convs for q in c.qa}
    missing = [i for i in wanted if i not in have]
    if missing:
        shown = ", ".join(missing[:5]) + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else "")
        raise DataError(
            f"{len(missing)} item id(s) not in this slice: {shown}; ids look like 'conv-26#3' "
            "(an items.jsonl's item_id) and must survive the slice's other cuts (conversations, sessions, categories)",
            field="dataset.item_ids",
            hint=None,
        )
    keep = set(wanted)
    return [replace(c, qa=tuple(q for q in c.qa if q.item_id in keep)) for c in convs]

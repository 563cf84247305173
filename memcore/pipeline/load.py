"""Stage 1 of the pipeline: the slice a run evaluates — the run's dataset (``dataset.kind``, from the registry of
:mod:`memcore.datasets`) located, loaded and cleaned by its own loader, then cut the same way for every dataset
(conversations, sessions, QA count, evidence inside, categories, item ids) and, with ``eval.audited``, paired
with the dataset's corrected gold."""

from __future__ import annotations

import difflib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memcore.datasets.errors import DataError
from memcore.datasets.registry import dataset_of
from memcore.datasets.slicing import check_cuts, select
from memcore.datasets.spec import DatasetCategories, DatasetFile, DatasetSpec
from memcore.errors import ConfigError
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
    dataset without an audit asked for one, an unknown conversation, or items that break the spec's contract (an
    undeclared category, evidence naming no turn); ``ConfigError`` (one line naming the knob) for a selection
    that is empty (:func:`~memcore.datasets.slicing.check_cuts`, or cuts that together leave no QA item); an
    unknown ``kind`` raises ``UnknownNameError`` (did you mean …). Item ids that match only in part are kept, with
    one warning line naming the ones that matched no item of the slice and why."""
    check_cuts(dataset)
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
        conversations=list(dataset.conversations) if dataset.conversations is not None else None,
        max_sessions=dataset.max_sessions,
        max_qa=dataset.max_qa,
        evidence_inside=bool(dataset.evidence_inside),
    )
    name = str(dataset.get("name") or spec.kind)
    if not any(c.qa for c in convs):
        raise ConfigError(f"dataset {name} selects no QA item: {_cuts_line(dataset)} leave none")
    categories = {int(c) for c in dataset.categories} if dataset.categories is not None else None
    if categories is not None:
        kept = [replace(c, qa=tuple(q for q in c.qa if int(q.category) in categories)) for c in convs]
        if not any(c.qa for c in kept):
            present = sorted({int(q.category) for c in convs for q in c.qa})
            raise ConfigError(
                f"dataset.categories={sorted(categories)} selects no QA item of dataset {name}: its "
                f"{sum(len(c.qa) for c in convs)} items are of categories {', '.join(map(str, present))}"
            )
        convs = kept
    if dataset.get("item_ids") is not None:
        convs = keep_items(convs, [str(i) for i in dataset.item_ids], dataset_file.conversations, categories)
    audited_items: dict[str, QAItem] = {}
    changed: dict[str, str] = {}
    if audited and spec.audit is not None:
        overlay = spec.audit(convs, audit_path)
        audited_items = {q.item_id: q for conv in overlay.conversations for q in conv.qa}
        log.info("audited overlay: %s", overlay.summary)
        changed = dict(overlay.changed)
    return LoadedSlice(convs, dataset_file.sha256, spec.categories, dataset_file.cleaning, audited_items, changed)


def _cuts_line(dataset: Any) -> str:
    """The cuts a dataset config sets, as ``key=value`` pairs (what an empty slice is blamed on)."""
    keys = ("conversations", "max_sessions", "evidence_inside", "max_qa")
    shown = [
        f"dataset.{k}={_plain(dataset.get(k))}"
        for k in keys
        if dataset.get(k) is not None and dataset.get(k) is not False
    ]
    return ", ".join(shown) if shown else "its cuts"


def _plain(value: Any) -> str:
    """A config value as an override writes it: ``[conv-26, conv-30]``, ``true``, ``3``."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    return "[" + ", ".join(str(v) for v in value) + "]"


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


def keep_items(
    convs: list[Conversation],
    wanted: list[str],
    whole: Sequence[Conversation] = (),
    categories: set[int] | None = None,
) -> list[Conversation]:
    """Keep only the QA items whose id is in ``wanted`` (conversation and dataset order kept). ``whole``, the
    dataset's uncut conversations, and ``categories``, the category filter applied, say why an id did not match.
    No id matching raises ``ConfigError`` naming them; some not matching logs one warning naming those."""
    have = {q.item_id for c in convs for q in c.qa}
    given = list(dict.fromkeys(wanted))
    missing = [i for i in given if i not in have]
    if missing:
        why = _why_unmatched(missing, convs, whole, categories)
        if len(missing) == len(given):
            raise ConfigError(f"dataset.item_ids selects no QA item of this slice: {why}")
        log.warning(
            "dataset.item_ids: %d of %d ids match no QA item of this slice and are left out: %s",
            len(missing),
            len(given),
            why,
        )
    keep = set(given)
    return [replace(c, qa=tuple(q for q in c.qa if q.item_id in keep)) for c in convs]


def _why_unmatched(
    missing: list[str], convs: list[Conversation], whole: Sequence[Conversation], categories: set[int] | None
) -> str:
    """``id (reason)`` for the first few ids in ``missing``: not in the dataset (with the closest id), its
    conversation not in the slice, its category filtered out, or cut by the slice's session / QA limits."""
    items = {q.item_id: (c.conv_id, q) for c in whole for q in c.qa}
    in_slice = {c.conv_id for c in convs}
    parts = []
    for item_id in missing[:5]:
        if item_id not in items:
            close = difflib.get_close_matches(item_id, list(items), n=1, cutoff=0.8)
            reason = "not in the dataset" + (f"; closest: {close[0]}" if close else "; ids look like 'conv-26#3'")
        else:
            conv_id, item = items[item_id]
            if conv_id not in in_slice:
                reason = f"conversation {conv_id} is not in the slice"
            elif categories is not None and int(item.category) not in categories:
                reason = f"category {int(item.category)} is filtered out"
            else:
                reason = "cut by the slice's sessions or QA limit"
        parts.append(f"{item_id} ({reason})")
    more = f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""
    return ", ".join(parts) + more

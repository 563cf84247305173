"""Stage 1 of the pipeline: the LoCoMo slice a run evaluates — loaded, cleaned, selected, category-filtered and,
with ``eval.audited``, paired with the audit's corrected gold."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from memcore.data.audit import apply_audit, load_audit
from memcore.data.errors import DataError
from memcore.data.locomo import load_locomo
from memcore.data.paths import resolve_audit_path, resolve_locomo_path
from memcore.data.slices import select
from memcore.types import Conversation, QAItem

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LoadedSlice:
    """The conversations of a run with their QA items, in dataset order.

    ``audited`` maps item_id → the item with the audit's gold applied (every item of the slice when the
    overlay is on, empty otherwise); ``audit_changed`` maps item_id → the audit's error_type for the items it
    corrected. ``cleaning`` is the loader's cleaning report (``CleaningReport.to_dict()``)."""

    conversations: list[Conversation]
    sha256: str
    cleaning: dict[str, Any] = field(default_factory=dict)
    audited: dict[str, QAItem] = field(default_factory=dict)
    audit_changed: dict[str, str] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return sum(len(c.qa) for c in self.conversations)


def load_slice(dataset: Any, *, audited: bool = False, audit_path: str | None = None) -> LoadedSlice:
    """Load the slice described by a ``dataset`` config (``path``, ``conversations``, ``max_sessions``,
    ``max_qa``, ``evidence_inside``, ``categories``, ``item_ids``); with ``audited`` apply the audit overlay from
    ``audit_path``. Raises ``DataError`` (one line, what to do) for a missing or malformed file."""
    dataset_file = load_locomo(resolve_locomo_path(dataset.path))
    if dataset_file.report.counts:
        log.info("LoCoMo cleaning applied: %s", ", ".join(f"{k}={v}" for k, v in dataset_file.report.counts.items()))
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
    if audited:
        overlaid, report = apply_audit(convs, load_audit(resolve_audit_path(audit_path)))
        audited_items = {q.item_id: q for conv in overlaid for q in conv.qa}
        log.info("audited overlay: %s", report.to_dict())
        changed = dict(report.changed)
    return LoadedSlice(convs, dataset_file.sha256, dataset_file.report.to_dict(), audited_items, changed)


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

"""LoCoMo as the harness sees it: its file, loader, categories, evidence unit, protocols and audit overlay."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memcore.datasets.locomo.audit import apply_audit, load_audit
from memcore.datasets.locomo.categories import CATEGORY_NAME_NOTE, LOCOMO_CATEGORIES
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_audit_path, resolve_locomo_path
from memcore.datasets.spec import AuditOverlay, DatasetFile, DatasetSpec
from memcore.types import Conversation


def locate(path: str | None) -> Path:
    """``dataset.path``, ``$MEMCORE_DATA``, ``../shared/data/locomo/locomo10.json``, the download location."""
    return resolve_locomo_path(path)


def load(path: Path) -> DatasetFile:
    """locomo10.json, validated and cleaned (``README.md`` beside this module lists every rule)."""
    ds = load_locomo(path)
    return DatasetFile(ds.conversations, ds.sha256, ds.report.to_dict())


def audit(conversations: Sequence[Conversation], audit_path: str | None) -> AuditOverlay:
    """The locomo-audit's corrected gold (``eval.audit_path``, ``$MEMCORE_AUDIT``, ``../shared/data/locomo-audit``)."""
    overlaid, report = apply_audit(conversations, load_audit(resolve_audit_path(audit_path)))
    return AuditOverlay(overlaid, dict(report.changed), report.to_dict())


LOCOMO = DatasetSpec(
    kind="locomo",
    description="LoCoMo (Maharana et al., 2024): 10 long conversations, 1,986 questions in five categories",
    locate=locate,
    load=load,
    categories=LOCOMO_CATEGORIES,
    evidence_unit="a turn's dia_id (D<session>:<turn>)",
    protocols=("amem", "locomo"),
    audit=audit,
    evidence_levels=("turn",),
    table_notes=(CATEGORY_NAME_NOTE,),
)

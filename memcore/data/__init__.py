"""LoCoMo data layer: loading and validation, evidence cleaning, slices, path resolution, audit overlay."""

from memcore.data.audit import OFFICIAL_CONV_ORDER, AuditEntry, AuditReport, apply_audit, load_audit
from memcore.data.download import (
    LOCOMO_SHA256,
    LOCOMO_URL,
    default_locomo_destination,
    download_locomo,
    sha256_file,
    verify_locomo,
)
from memcore.data.errors import DataError
from memcore.data.evidence import EVIDENCE_FIX_KINDS, CleanedEvidence, clean_evidence
from memcore.data.locomo import LoCoMoDataset, load_locomo, parse_session_time, with_image_caption
from memcore.data.paths import resolve_audit_path, resolve_locomo_path
from memcore.data.report import KIND_DESCRIPTIONS, CleaningReport
from memcore.data.slices import select

__all__ = [
    "EVIDENCE_FIX_KINDS",
    "KIND_DESCRIPTIONS",
    "LOCOMO_SHA256",
    "LOCOMO_URL",
    "OFFICIAL_CONV_ORDER",
    "AuditEntry",
    "AuditReport",
    "CleanedEvidence",
    "CleaningReport",
    "DataError",
    "LoCoMoDataset",
    "apply_audit",
    "clean_evidence",
    "default_locomo_destination",
    "download_locomo",
    "load_audit",
    "load_locomo",
    "parse_session_time",
    "resolve_audit_path",
    "resolve_locomo_path",
    "select",
    "sha256_file",
    "verify_locomo",
    "with_image_caption",
]

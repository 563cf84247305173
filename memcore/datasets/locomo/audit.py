"""The locomo-audit overlay: corrected gold answers and evidence for 156 LoCoMo items.

``errors.json`` names items as ``locomo_<conversation index>_qa<qa index>``, both 0-based positions in
the official locomo10.json; :data:`OFFICIAL_CONV_ORDER` maps the conversation index to its sample_id.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.cleaning import CleaningReport
from memcore.datasets.locomo.evidence import clean_evidence
from memcore.types import Conversation, QAItem

# sample_ids of the official locomo10.json in file order (the audit's conversation indices refer to it).
OFFICIAL_CONV_ORDER: tuple[str, ...] = (
    "conv-26",
    "conv-30",
    "conv-41",
    "conv-42",
    "conv-43",
    "conv-44",
    "conv-47",
    "conv-48",
    "conv-49",
    "conv-50",
)

_QUESTION_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
_AUDIT_HINT = "Use the errors.json of https://github.com/dial481/locomo-audit unchanged."


@dataclass(frozen=True)
class AuditEntry:
    """One audited item. Evidence tuples hold the audit's raw strings; cleaning happens in :func:`apply_audit`."""

    question_id: str
    conv_index: int
    qa_index: int
    question: str
    category: int
    error_type: str
    golden_answer: str
    correct_answer: str
    cited_evidence: tuple[str, ...]
    correct_evidence: tuple[str, ...]
    reasoning: str = ""


@dataclass
class AuditReport:
    """What :func:`apply_audit` did. ``changed`` maps item_id → error_type for every applied entry."""

    entries: int = 0
    applied: int = 0
    answer_changed: int = 0
    evidence_changed: int = 0
    not_selected: int = 0
    unknown_conversation: int = 0
    question_mismatch: int = 0
    category_mismatch: int = 0
    by_error_type: Counter[str] = field(default_factory=Counter)
    changed: dict[str, str] = field(default_factory=dict)
    mismatches: list[str] = field(default_factory=list)
    cleaning: CleaningReport = field(default_factory=CleaningReport)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": self.entries,
            "applied": self.applied,
            "answer_changed": self.answer_changed,
            "evidence_changed": self.evidence_changed,
            "not_selected": self.not_selected,
            "unknown_conversation": self.unknown_conversation,
            "question_mismatch": self.question_mismatch,
            "category_mismatch": self.category_mismatch,
            "by_error_type": dict(sorted(self.by_error_type.items())),
            "mismatches": list(self.mismatches),
            "evidence_cleaning": self.cleaning.to_dict(),
        }


def load_audit(path: Path | str) -> tuple[AuditEntry, ...]:
    """Parse ``errors.json``; :class:`DataError` names the entry and field when something is off."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError("audit file not found", path=path, hint=f"Set MEMCORE_AUDIT to it. {_AUDIT_HINT}")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"not valid UTF-8 JSON: {exc}", path=path, hint=_AUDIT_HINT) from None
    if not isinstance(raw, list):
        raise DataError("top level must be a list of audit entries", path=path, hint=_AUDIT_HINT)
    return tuple(_entry(path, i, obj) for i, obj in enumerate(raw))


def _entry(path: Path, i: int, obj: Any) -> AuditEntry:
    def fail(fld: str, problem: str) -> DataError:
        return DataError(problem, path=path, field=f"[{i}].{fld}" if fld else f"[{i}]", hint=_AUDIT_HINT)

    if not isinstance(obj, dict):
        raise fail("", "entry is not an object")

    def text(key: str) -> str:
        value = obj.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if not isinstance(value, str):
            raise fail(key, "missing or not a string")
        return value.strip()

    def ids(key: str) -> tuple[str, ...]:
        value = obj.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(key, "must be a list of strings")
        return tuple(value)

    qid = text("question_id")
    m = _QUESTION_ID.fullmatch(qid)
    if m is None:
        raise fail("question_id", f"{qid!r} is not of the form locomo_<conv index>_qa<qa index>")
    category = obj.get("category")
    if isinstance(category, bool) or not isinstance(category, int):
        raise fail("category", "missing or not an integer")
    return AuditEntry(
        question_id=qid,
        conv_index=int(m.group(1)),
        qa_index=int(m.group(2)),
        question=text("question"),
        category=category,
        error_type=text("error_type"),
        golden_answer=text("golden_answer"),
        correct_answer=text("correct_answer"),
        cited_evidence=ids("cited_evidence"),
        correct_evidence=ids("correct_evidence"),
        reasoning=obj.get("reasoning") if isinstance(obj.get("reasoning"), str) else "",
    )


def apply_audit(
    conversations: Sequence[Conversation],
    entries: Sequence[AuditEntry],
    *,
    conv_order: Sequence[str] = OFFICIAL_CONV_ORDER,
) -> tuple[list[Conversation], AuditReport]:
    """Copies of ``conversations`` whose audited QA items carry the corrected answer and cleaned evidence.

    ``conv_order`` maps the audit's conversation index to a sample_id (pass ``dataset.conv_ids`` for a
    file other than the official one). An entry is applied only when its question text equals the loaded
    item's; mismatches are counted and listed instead. Entries for items outside ``conversations`` (a slice)
    are counted as ``not_selected``. Corrected evidence goes through :func:`clean_evidence`.
    """
    report = AuditReport(entries=len(entries))
    by_conv: dict[str, dict[int, list[AuditEntry]]] = {}
    present = {c.conv_id for c in conversations}
    for e in entries:
        if not 0 <= e.conv_index < len(conv_order):
            report.unknown_conversation += 1
            report.mismatches.append(f"{e.question_id}: no conversation index {e.conv_index}")
            continue
        conv_id = conv_order[e.conv_index]
        if conv_id not in present:
            report.not_selected += 1
            continue
        by_conv.setdefault(conv_id, {}).setdefault(e.qa_index, []).append(e)

    out: list[Conversation] = []
    for conv in conversations:
        todo = by_conv.get(conv.conv_id)
        if not todo:
            out.append(conv)
            continue
        turn_ids = conv.turn_ids
        items: list[QAItem] = []
        for item in conv.qa:
            for e in todo.pop(item.index, []):
                item = _apply_one(item, e, turn_ids, report)
            items.append(item)
        report.not_selected += sum(len(v) for v in todo.values())  # items cut from this slice
        out.append(dataclasses.replace(conv, qa=tuple(items)))
    return out, report


def _apply_one(item: QAItem, e: AuditEntry, turn_ids: frozenset[str], report: AuditReport) -> QAItem:
    if e.question != item.question:
        report.question_mismatch += 1
        report.mismatches.append(f"{e.question_id}: audit asks {e.question!r}, {item.item_id} asks {item.question!r}")
        return item
    if e.category != int(item.category):
        report.category_mismatch += 1
        report.mismatches.append(f"{e.question_id}: audit category {e.category}, {item.item_id} {int(item.category)}")
    cleaned = clean_evidence(e.correct_evidence, turn_ids)
    report.cleaning.add_all(cleaned.fixes, where=e.question_id)
    report.applied += 1
    report.by_error_type[e.error_type] += 1
    report.changed[item.item_id] = e.error_type
    answer = e.correct_answer or item.answer
    report.answer_changed += int(answer != item.answer)
    report.evidence_changed += int(cleaned.ids != item.evidence)
    return dataclasses.replace(item, answer=answer, evidence=cleaned.ids, raw_evidence=e.correct_evidence)

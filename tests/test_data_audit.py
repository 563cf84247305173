"""The locomo-audit overlay on the real errors.json (facts from ../shared/data/locomo-audit/PROVENANCE.md)."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.audit import OFFICIAL_CONV_ORDER, AuditEntry, apply_audit, load_audit
from memcore.datasets.locomo.evidence import clean_evidence
from memcore.datasets.locomo.loader import LoCoMoDataset
from memcore.datasets.slicing import select


@pytest.fixture(scope="module")
def ds(locomo: LoCoMoDataset) -> LoCoMoDataset:
    return locomo


@pytest.fixture(scope="module")
def entries(audit_path: Path) -> tuple[AuditEntry, ...]:
    return load_audit(audit_path)


@pytest.fixture(scope="module")
def raw_audit(audit_path: Path) -> list[dict[str, Any]]:
    return json.loads(audit_path.read_text(encoding="utf-8"))


def test_entries(entries: tuple[AuditEntry, ...]) -> None:
    assert len(entries) == 156
    assert Counter(e.error_type for e in entries) == {
        "WRONG_CITATION": 57,
        "HALLUCINATION": 33,
        "TEMPORAL_ERROR": 26,
        "ATTRIBUTION_ERROR": 24,
        "AMBIGUOUS": 13,
        "INCOMPLETE": 3,
    }
    assert {e.category for e in entries} <= {1, 2, 3, 4}
    first = entries[0]
    assert (first.question_id, first.conv_index, first.qa_index) == ("locomo_0_qa1", 0, 1)
    assert (first.cited_evidence, first.correct_evidence, first.correct_answer) == (("D1:12",), ("D1:14",), "2022")


def test_conv_order_is_the_official_file(ds: LoCoMoDataset) -> None:
    if not ds.is_official:
        pytest.skip("not the official locomo10.json")
    assert ds.conv_ids == OFFICIAL_CONV_ORDER


def test_apply_full(ds: LoCoMoDataset, entries: tuple[AuditEntry, ...], raw_audit: list[dict[str, Any]]) -> None:
    out, rep = apply_audit(ds.conversations, entries)
    assert (rep.entries, rep.applied, rep.question_mismatch, rep.category_mismatch) == (156, 156, 0, 0)
    assert (rep.not_selected, rep.unknown_conversation) == (0, 0)
    assert rep.by_error_type == Counter(e["error_type"] for e in raw_audit)
    # independent count from the raw files: answers and cleaned evidence that differ from the loaded gold
    expected_answers = expected_evidence = 0
    for e in raw_audit:
        conv_index, qa_index = (int(x) for x in e["question_id"].removeprefix("locomo_").split("_qa"))
        original = ds.conversations[conv_index].qa[qa_index]
        assert original.question == e["question"]
        expected_answers += e["correct_answer"].strip() != original.answer
        fixed = clean_evidence(e["correct_evidence"], ds.conversations[conv_index].turn_ids).ids
        expected_evidence += fixed != original.evidence
        audited = out[conv_index].qa[qa_index]
        assert audited.answer == e["correct_answer"].strip()
        assert audited.evidence == fixed
        assert audited.raw_evidence == tuple(e["correct_evidence"])
    assert (rep.answer_changed, rep.evidence_changed) == (expected_answers, expected_evidence) == (120, 94)
    assert len(rep.changed) == 156
    assert rep.changed["conv-26#1"] == "WRONG_CITATION"
    # one entry has empty corrected evidence
    assert out[6].qa[11].evidence == ()
    assert ds.conversations[6].qa[11].evidence == ("D6:7",)
    # untouched items are the same objects; the input dataset keeps its gold
    assert out[0].qa[0] is ds.conversations[0].qa[0]
    assert ds.conversations[0].qa[1].evidence == ("D1:12",)
    assert out[0].qa[1].evidence == ("D1:14",)
    assert json.loads(json.dumps(rep.to_dict()))["applied"] == 156


def test_apply_to_slice(ds: LoCoMoDataset, entries: tuple[AuditEntry, ...]) -> None:
    mini = select(ds, conversations=["conv-26"], max_sessions=3)
    kept = {q.index for q in mini[0].qa}
    inside = [e for e in entries if e.conv_index == 0 and e.qa_index in kept]
    assert inside  # the mini slice holds audited items
    out, rep = apply_audit(mini, entries)
    assert rep.applied == len(inside)
    assert rep.not_selected == 156 - len(inside)
    assert [c.conv_id for c in out] == ["conv-26"]


def test_wrong_order_is_caught_not_applied(ds: LoCoMoDataset, entries: tuple[AuditEntry, ...]) -> None:
    out, rep = apply_audit(ds.conversations, entries, conv_order=tuple(reversed(OFFICIAL_CONV_ORDER)))
    assert rep.applied == 0
    assert rep.question_mismatch > 0
    assert rep.question_mismatch + rep.not_selected == 156
    assert "audit asks" in rep.mismatches[0]
    assert all(a.qa == b.qa for a, b in zip(out, ds.conversations, strict=True))


def test_unknown_conversation_index(ds: LoCoMoDataset, entries: tuple[AuditEntry, ...]) -> None:
    stray = dataclasses.replace(entries[0], question_id="locomo_12_qa1", conv_index=12)
    _, rep = apply_audit(ds.conversations, [stray, entries[1]])
    assert (rep.unknown_conversation, rep.applied) == (1, 1)
    assert rep.mismatches == ["locomo_12_qa1: no conversation index 12"]


def test_malformed_audit_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="audit file not found"):
        load_audit(tmp_path / "errors.json")
    p = tmp_path / "errors.json"
    p.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(DataError, match="top level must be a list"):
        load_audit(p)
    p.write_text('[{"question_id": "q7"}]', encoding="utf-8")
    with pytest.raises(DataError, match="is not of the form locomo_<conv index>_qa<qa index>") as info:
        load_audit(p)
    assert info.value.field == "[0].question_id"
    p.write_bytes(b"\xff[]")
    with pytest.raises(DataError, match="not valid UTF-8 JSON"):
        load_audit(p)

"""clean_evidence: the pure evidence-id cleaner."""

from __future__ import annotations

from memcore.datasets.locomo.cleaning import CleaningReport
from memcore.datasets.locomo.evidence import EVIDENCE_FIX_KINDS, clean_evidence

TURNS = frozenset({"D1:1", "D1:2", "D2:1", "D11:26", "D30:5"})


def kinds(raw: list[str]) -> list[str]:
    return [k for k, _ in clean_evidence(raw, TURNS).fixes]


def test_clean_input_passes_unchanged() -> None:
    out = clean_evidence(["D1:2", "D1:1"], TURNS)
    assert out.ids == ("D1:2", "D1:1")
    assert out.fixes == ()


def test_each_rule() -> None:
    assert clean_evidence(["D1:1; D2:1"], TURNS).ids == ("D1:1", "D2:1")
    assert kinds(["D1:1; D2:1"]) == ["split"]
    assert kinds(["D1:1,D2:1"]) == ["split"]
    assert kinds(["D1:1\tD2:1"]) == ["split"]
    assert clean_evidence(["D:11:26"], TURNS).ids == ("D11:26",)
    assert kinds(["D:11:26"]) == ["colon_fixed"]
    assert clean_evidence(["D30:05"], TURNS).ids == ("D30:5",)
    assert kinds(["D30:05"]) == ["zero_stripped"]
    assert kinds(["D"]) == ["garbage_dropped"]
    assert kinds(["d1:1"]) == ["garbage_dropped"]
    assert kinds(["D9:9"]) == ["unknown_dropped"]
    assert kinds(["D1:1", "D1:1"]) == ["duplicate_dropped"]


def test_fixes_compose_in_order() -> None:
    out = clean_evidence(["D:011:26; D1:1 D1:1", "D1:01", "", "  "], TURNS)
    assert out.ids == ("D11:26", "D1:1")
    assert [k for k, _ in out.fixes] == [
        "split",
        "colon_fixed",
        "zero_stripped",
        "duplicate_dropped",
        "zero_stripped",
        "duplicate_dropped",
    ]
    assert out.fixes[1] == ("colon_fixed", "'D:011:26' -> 'D11:26'")


def test_zero_stripped_id_can_still_be_unknown() -> None:
    out = clean_evidence(["D04:07"], TURNS)
    assert out.ids == ()
    assert [k for k, _ in out.fixes] == ["zero_stripped", "unknown_dropped"]


def test_pure() -> None:
    raw = ["D1:1; D9:9"]
    a = clean_evidence(raw, TURNS)
    b = clean_evidence(raw, TURNS)
    assert a == b
    assert raw == ["D1:1; D9:9"]


def test_report_counts_by_kind_with_examples() -> None:
    report = CleaningReport(max_examples=2)
    for raw in (["D1:1;D2:1"], ["D1:2 D1:1"], ["D2:1,D9:9"]):
        report.add_all(clean_evidence(raw, TURNS).fixes, where="conv-x qa[0]")
    assert report.counts == {"split": 3, "unknown_dropped": 1}
    assert report.examples["split"] == [
        "conv-x qa[0]: 'D1:1;D2:1' -> D1:1, D2:1",
        "conv-x qa[0]: 'D1:2 D1:1' -> D1:2, D1:1",
    ]
    assert report.total == 4
    assert set(report.counts) <= set(EVIDENCE_FIX_KINDS)

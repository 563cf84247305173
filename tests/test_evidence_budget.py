"""``eval.note_cap`` means the same number of notes for every method, and every run says how much evidence its
questions got (methods compared at their own defaults read very different amounts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.eval.disclosure import evidence_cell, evidence_disclosure, evidence_line
from memcore.itemlog import read_items
from memcore.methods import get_method
from memcore.runner import run_config
from tests.support import REPO, compose_run

METHODS = sorted(p.stem for p in (REPO / "configs" / "method").glob("*.yaml"))
#: With the content-free scripted backbone, Mem0's extraction stores nothing, so its evidence is empty here;
#: its budget over both speakers' searches is tested with a scripted extractor in test_baseline_mem0*.py.
NO_NOTES_ON_SCRIPTED = {"mem0", "mem0-two-phase"}
#: Methods that pack raw turns by default: eval.note_cap=K is the K notes whose whole-note tokens the turns fill.
PACKS_TURNS = {"memcore-cheap"}


def test_evidence_disclosure_by_hand() -> None:
    items = [
        {"notes": [{}, {}, {}], "tokens_used": 300},
        {"notes": [{}], "tokens_used": 100},
        {"notes": [], "context_tokens": 0},  # items written before the rename
        {"notes": [{}, {}], "context_tokens": 200},
    ]
    info = evidence_disclosure(3, "notes", items)
    assert info == {
        "budget": 3,
        "budget_counts": "notes",
        "mean_notes": 1.5,  # (3 + 1 + 0 + 2) / 4
        "max_notes": 3,
        "mean_context_tokens": 150.0,  # 600 / 4
        "n_items": 4,
    }
    assert evidence_cell(info) == "budget 3 notes; 1.5 notes (max 3), 150 tok"
    assert evidence_line(info) == (
        "Evidence: eval.note_cap=3: at most 3 notes of evidence per question; per question 1.5 notes (max 3),"
        " 150 context tokens, n=4."
    )
    default = evidence_disclosure(None, "most recent turns", [])
    assert default["mean_notes"] is None and default["budget"] is None
    assert evidence_cell(default) == "own default"
    assert evidence_line(default).startswith("Evidence: eval.note_cap unset: the method's own retrieval default")


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("method", METHODS)
def test_every_method_gives_at_most_budget_notes(method: str, tmp_path: Path) -> None:
    overrides = [
        f"method={method}",
        "dataset=locomo-tiny",
        "dataset.max_qa=4",
        "embedder=hashing",
        "backbone=scripted",
        "eval.note_cap=3",
        "concurrency=1",
    ]
    run_config(compose_run(tmp_path, overrides), tmp_path / "run")
    items = read_items(tmp_path / "run" / "items.jsonl")
    counts = [len(r["notes"]) for r in items]
    assert len(counts) == 4
    if method in PACKS_TURNS:  # the turns fill what the top 3 whole notes cost, never more
        packing = [r["extra"]["packing"] for r in items]
        assert all(p["tokens"] == p["whole_note_tokens"] and 0 < p["used"] <= p["tokens"] for p in packing)
        assert all(r["tokens_used"] <= p["tokens"] for r, p in zip(items, packing, strict=True))
        return
    assert max(counts) <= 3
    if method not in NO_NOTES_ON_SCRIPTED:
        assert max(counts) == 3  # the budget is reached (locomo-tiny holds far more than 3 notes), not undershot
    info = json.loads((tmp_path / "run" / "metrics.json").read_text())["run"]["evidence"]
    assert info["budget"] == 3 and info["max_notes"] == max(counts)
    assert info["budget_counts"] == get_method(method).budget_counts

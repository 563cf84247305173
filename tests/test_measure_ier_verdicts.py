"""experiments/measure/ier_verdicts.py: the IER judge's confusion against the round-1 pool, by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from experiments.measure.ier_verdicts import ier_verdicts, main, round1_verdict


def _item(item_id: str, recall: float | None, *, verdict: bool | None = None, rounds: int = 1, cat: int = 1) -> Any:
    log = [{"round": 1, "plan": {}}] if verdict is None else [{"round": 1, "plan": {}, "sufficient": verdict}]
    return {"item_id": item_id, "category": cat, "recall": recall, "rounds": rounds, "extra": {"rounds_log": log}}


ON = {
    "a": _item("a", 1.0, verdict=True),  # sufficient, complete pool: right
    "b": _item("b", 0.0, verdict=True),  # sufficient, gold missing: wrong
    "c": _item("c", 1.0, verdict=False, rounds=2),  # insufficient, refinement found the gold: right verdict
    "d": _item("d", 0.5, verdict=False, rounds=3),  # insufficient, complete pool: wrong verdict
    "e": _item("e", None, verdict=True),  # no gold evidence: left out
    "f": _item("f", 1.0, verdict=True, cat=5),  # category 5: left out
    "g": _item("g", 1.0),  # no LLM judge ran: left out
}
OFF = {k: _item(k, r) for k, r in {"a": 1.0, "b": 0.0, "c": 0.0, "d": 1.0, "e": None, "f": 1.0, "g": 1.0}.items()}


def test_confusion_and_recalls_by_hand() -> None:
    res = ier_verdicts(ON, OFF)
    assert res["n"] == 4
    assert res["confusion"] == {
        "sufficient": {"complete": 1, "incomplete": 1},
        "insufficient": {"complete": 1, "incomplete": 1},
    }
    assert res["judge_accuracy"] == 50.0  # a and c
    assert res["recall_round1"] == 50.0  # (1 + 0 + 0 + 1) / 4
    assert res["recall_after_ier"] == 62.5  # (1 + 0 + 1 + 0.5) / 4
    assert (res["n_insufficient"], res["recall_round1_insufficient"], res["recall_after_ier_insufficient"]) == (
        2,
        50.0,
        75.0,
    )
    assert res["mean_rounds"] == 1.75


def test_the_command_writes_markdown_and_json(tmp_path: Path, capsys: Any) -> None:
    for name, items in (("on", ON), ("off", OFF)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items.values()))
    assert main(["--on", str(tmp_path / "on"), "--off", str(tmp_path / "off"), "--out", str(tmp_path / "v.md")]) == 0
    assert "| sufficient | 1 | 1 |" in capsys.readouterr().out
    assert json.loads((tmp_path / "v.json").read_text())["n"] == 4


def test_an_unparsed_judge_reply_is_no_verdict() -> None:
    """An unparseable reply is logged ``judge: "unparsed"`` with ``sufficient`` false (the coverage rule
    stood in); it is neither a "sufficient" nor an "insufficient" verdict of the judge."""
    unparsed = {"extra": {"rounds_log": [{"round": 1, "judge": "unparsed", "sufficient": False}]}}
    assert round1_verdict(unparsed) is None
    assert round1_verdict({"extra": {"rounds_log": [{"round": 1, "sufficient": False}]}}) is False

"""The link-provenance measurement: the three credit rules on a hand-built memory."""

from __future__ import annotations

from experiments.measure.link_provenance import note_credits, score


def _raw(dia: str) -> dict:
    return {"dia_id": dia, "speaker": "A", "text": "t", "time": "1 May 2023"}


NOTES = [
    {"nid": 0, "raws": [_raw("D1:1")], "linked_sources": ["D1:3"], "updates": 1},
    {"nid": 1, "raws": [_raw("D1:2"), _raw("D1:3"), _raw("D1:4")], "linked_sources": [], "updates": 0},
]


def test_each_rule_credits_what_it_says() -> None:
    c = note_credits(NOTES)
    assert c["n0"]["none"] == ["D1:1"]
    assert c["n0"]["causing turn"] == ["D1:1", "D1:3"]
    assert sorted(set(c["n0"]["holder's turns"])) == ["D1:1", "D1:2", "D1:3", "D1:4"]
    assert c["n1"]["none"] == c["n1"]["causing turn"] == ["D1:2", "D1:3", "D1:4"]


def test_recall_per_rule_over_the_retrieved_notes() -> None:
    items = [
        {"category": 1, "evidence": ["D1:3"], "notes": [{"note_id": "n0"}]},
        {"category": 4, "evidence": ["D1:2", "D1:1"], "notes": [{"note_id": "n0"}]},
        {"category": 5, "evidence": ["D1:2"], "notes": [{"note_id": "n0"}]},  # adversarial: not scored
    ]
    s = score(items, note_credits(NOTES))
    assert s["none"] == {"recall": 25.0, "hit": 50.0, "n": 2}  # (0 + 1/2) / 2; hit on the second only
    assert s["causing turn"] == {"recall": 75.0, "hit": 100.0, "n": 2}  # (1 + 1/2) / 2
    assert s["holder's turns"] == {"recall": 100.0, "hit": 100.0, "n": 2}


def test_a_packed_entry_is_credited_with_its_own_turn_under_every_rule() -> None:
    """Packing shows a note's raw turns (``n<nid>.<k>``), not its context, so a link update credits nothing."""
    items = [{"category": 1, "evidence": ["D1:3"], "notes": [{"note_id": "n0.0", "dia_ids": ["D1:1"]}]}]
    s = score(items, note_credits(NOTES))
    assert s["none"] == s["causing turn"] == s["holder's turns"] == {"recall": 0.0, "hit": 0.0, "n": 1}
    items[0]["notes"].append({"note_id": "n1.1", "dia_ids": ["D1:3"]})
    assert score(items, note_credits(NOTES))["holder's turns"] == {"recall": 100.0, "hit": 100.0, "n": 1}

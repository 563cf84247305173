"""The gate's labelled candidate pairs (tests/data/gate_pairs.jsonl): shape, label counts, and
every reference resolving to a real LoCoMo turn (skipped when the data file is absent)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from experiments.benchmarks import gate_agreement as ga
from memcore.datasets.locomo.loader import LoCoMoDataset
from memcore.llm.scripted import ScriptedBackbone
from memcore.types import Turn

PAIRS = Path(__file__).parent / "data" / "gate_pairs.jsonl"
LABELS = {"redundant", "complementary", "novel"}
DIA_ID = re.compile(r"D\d+:\d+")
KEYS = {"sample_id", "new", "candidate", "cosine", "label", "rationale"}


@pytest.fixture(scope="module")
def pairs() -> list[dict[str, Any]]:
    return [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def turns(locomo: LoCoMoDataset) -> dict[tuple[str, str], tuple[int, Turn]]:
    """(sample_id, dia_id) -> (position in the conversation, turn)."""
    ds = locomo
    out: dict[tuple[str, str], tuple[int, Turn]] = {}
    for conv in ds.conversations:
        flat = [t for s in conv.sessions for t in s.turns]
        out.update({(conv.conv_id, t.dia_id): (i, t) for i, t in enumerate(flat)})
    return out


def test_pairs_shape_and_label_counts(pairs: list[dict[str, Any]]) -> None:
    assert len(pairs) >= 60
    for p in pairs:
        assert set(p) >= KEYS, p
        assert p["label"] in LABELS, p
        assert DIA_ID.fullmatch(p["new"]) and DIA_ID.fullmatch(p["candidate"]), p
        assert p["new"] != p["candidate"], p
        assert -1.0 <= p["cosine"] <= 1.0, p
        assert isinstance(p["rationale"], str) and len(p["rationale"].split()) >= 3, p
    keys = [(p["sample_id"], p["new"], p["candidate"]) for p in pairs]
    assert len(keys) == len(set(keys)), "duplicate pairs"
    counts = Counter(p["label"] for p in pairs)
    assert all(counts[lab] >= 15 for lab in LABELS), counts


def test_every_dia_id_exists_and_candidate_is_earlier(
    pairs: list[dict[str, Any]], turns: dict[tuple[str, str], tuple[int, Turn]]
) -> None:
    for p in pairs:
        new, cand = (p["sample_id"], p["new"]), (p["sample_id"], p["candidate"])
        assert new in turns, f"{new} is not a LoCoMo turn"
        assert cand in turns, f"{cand} is not a LoCoMo turn"
        assert turns[cand][0] < turns[new][0], f"candidate {cand} does not precede {new} (the pre-screen looks back)"


def test_rationales_do_not_copy_turn_text(
    pairs: list[dict[str, Any]], turns: dict[tuple[str, str], tuple[int, Turn]]
) -> None:
    """The file stores references and labels, never LoCoMo text: no rationale repeats 7 words of its turns."""

    def shingles(text: str, n: int = 7) -> set[tuple[str, ...]]:
        w = re.findall(r"[a-z0-9']+", text.lower())
        return {tuple(w[i : i + n]) for i in range(len(w) - n + 1)}

    for p in pairs:
        own = shingles(p["rationale"])
        for dia in (p["new"], p["candidate"]):
            assert not own & shingles(turns[(p["sample_id"], dia)][1].text), (p["sample_id"], dia)


def test_agreement_script_runs_the_current_gate(turns: dict[tuple[str, str], tuple[int, Turn]]) -> None:
    """experiments/benchmarks/gate_agreement.py drives the importable gate (judge + decide) end to end; a
    scripted reply stands in for the model, so this checks the plumbing and the scores, not a model."""
    seen: list[str] = []

    def reply(messages: Any) -> str:
        seen.append(messages[-1]["content"])
        return json.dumps({"judgements": [{"id": 1, "relation": "redundant", "strength": 0.9, "edge": "Supports"}]})

    backbone = ScriptedBackbone(reply)
    new = ga.make_note(turns[("conv-26", "D4:11")][1], 1)
    cand = ga.make_note(turns[("conv-26", "D1:11")][1], 0)
    out = ga.judge_pair(backbone, new, cand, 0.84)
    assert out["action"] == "merge" and out["relation"] == "redundant" and out["ok"]
    assert "Caroline:" in seen[0]
    if ga.judges_dates():  # v2 on: both notes carry their session dates
        assert "8 May, 2023" in seen[0] and "27 June, 2023" in seen[0]


def test_agreement_scores() -> None:
    gold = ["redundant", "complementary", "novel", "novel"]
    s = ga.scores(gold, ["redundant", "novel", "novel", "novel"])
    assert s["accuracy"] == 0.75 and s["recall"]["complementary"] == 0.0
    assert s["confusion_gold_rows_pred_cols"]["complementary"]["novel"] == 1
    assert abs(s["cohen_kappa"] - 5 / 9) < 1e-9  # po = 3/4, pe = (1*1 + 1*0 + 2*3) / 16 = 7/16
    order = ga.balanced_order([{"label": lab, "i": i} for i, lab in enumerate(["novel"] * 5 + ["redundant"] * 2)])
    assert [p["label"] for p in order[:3]] == ["redundant", "novel", "redundant"]


def test_agreement_script_takes_a_backbone_preset(tmp_path: Path, locomo_path: Path, capsys) -> None:
    """``--backbone <preset>`` composes the preset like ``backbone=<name>`` and names the files by its model; the
    scripted preset answers no gate JSON, so every pair takes the counted append fallback."""
    ckpt = tmp_path / "rows.jsonl"
    ga.main(["--backbone", "scripted", "--limit", "3", "--out-dir", str(tmp_path), "--checkpoint", str(ckpt)])
    payload = json.loads(next(tmp_path.glob("gate_agreement_scripted_*.json")).read_text())
    assert payload["model"] == "scripted" and payload["pairs_judged"] == 3
    assert payload["parse_failures"] == 3 and {r["action"] for r in payload["rows"]} == {"append"}
    assert len(ckpt.read_text().splitlines()) == 3

    with pytest.raises(SystemExit) as exc:
        ga.main(["--backbone", "gpt-5-nano", "--out-dir", str(tmp_path)])
    assert exc.value.code == 2
    assert "error: --backbone gpt-5-nano" in capsys.readouterr().err

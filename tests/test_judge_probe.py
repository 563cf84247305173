"""The judge leniency probe (cases with a known verdict, rates with n), the gold-error ceiling
and the answer disclosure."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from memcore.commands import judge_probe
from memcore.datasets.locomo.categories import Category
from memcore.datasets.registry import get_dataset
from memcore.eval import probe
from memcore.eval.ceiling import gold_ceiling, is_gold_error
from memcore.eval.disclosure import answer_disclosure, disclosure_line
from memcore.eval.judge import Judge
from memcore.eval.protocols import get_protocol
from memcore.llm.scripted import ScriptedBackbone
from memcore.types import Conversation, QAItem


def test_dates_move_by_one_unit_and_reformat_without_changing_the_day() -> None:
    assert probe.shift_date("7 May 2023", 1) == "8 May 2023"
    assert probe.shift_date("The sunday before 1 January 2023", -1) == "The sunday before 31 December 2022"
    assert probe.shift_date("May 31, 2023", 1) == "June 1, 2023"
    assert probe.shift_date("December 2022", 1) == "January 2023"
    assert probe.shift_date("2022", -1) == "2021"
    assert probe.shift_date("by dancing", 1) is None
    rng = random.Random(0)
    for _ in range(5):
        text = probe.reformat_date("7 May 2023", rng)
        assert text in ("May 7, 2023", "2023-05-07", "7th May 2023")
    assert probe.reformat_date("May 2023", rng) is None  # day-level dates only
    assert probe.vague_answer("What did Caroline research?") == "It had something to do with Caroline research."
    assert probe.vague_answer("When did Mel paint?") == "At some point, when Mel paint."


def test_cases_are_balanced_deterministic_and_have_known_verdicts(locomo) -> None:
    ds = locomo
    cases = probe.build_cases(ds, n_wrong=30, n_right=28, seed=3)
    assert cases == probe.build_cases(ds, n_wrong=30, n_right=28, seed=3)
    wrong = [c for c in cases if c.expected == "WRONG"]
    right = [c for c in cases if c.expected == "CORRECT"]
    assert len(wrong) == 30 and len(right) == 28
    assert {c.kind for c in wrong} == set(probe.WRONG_KINDS) and {c.kind for c in right} == set(probe.RIGHT_KINDS)
    assert all(c.category in (1, 2, 3, 4) and c.answer != c.gold for c in cases)
    for c in cases:
        if c.kind == "other_gold":
            assert not (probe._tokens(c.answer) & probe._tokens(c.gold))
        if c.kind == "case":
            assert c.answer.lower() == c.gold.lower()
    # a smaller probe is a prefix per kind of a larger one, so its judge calls are already cached
    small = probe.build_cases(ds, n_wrong=9, n_right=8, seed=3)
    assert set(small) <= set(cases)


def test_rates_count_false_accepts_and_false_rejects_with_n() -> None:
    mk = probe.ProbeCase
    cases = [
        mk("a", 1, "q", "g", "x", "other_gold", "WRONG"),
        mk("b", 1, "q", "g", "y", "vague", "WRONG"),
        mk("c", 1, "q", "g", "G", "case", "CORRECT"),
        mk("d", 1, "q", "g", "g.", "punctuation", "CORRECT"),
    ]
    rates = probe.summarize_probe(cases, ["CORRECT", "WRONG", "WRONG", "CORRECT"])
    assert rates["false_accept"]["all"]["k"] == 1 and rates["false_accept"]["all"]["n"] == 2
    assert rates["false_accept"]["other_gold"]["rate"] == 1.0 and rates["false_accept"]["vague"]["rate"] == 0.0
    assert rates["false_reject"]["all"]["rate"] == 0.5 and rates["false_reject"]["case"]["k"] == 1
    low, high = rates["false_accept"]["all"]["ci95"]
    assert 0.0 < low < 0.5 < high < 1.0
    assert probe.wilson(0, 0) is None


def test_probe_run_grades_with_the_judge_and_the_file_accumulates(tmp_path: Path) -> None:
    mk = probe.ProbeCase
    cases = [mk("a", 1, "q", "7 May", "8 May", "date_shift", "WRONG"), mk("b", 1, "q", "g", "G", "case", "CORRECT")]
    bb = ScriptedBackbone(lambda messages: '{"label": "CORRECT"}')  # a judge that accepts everything
    labels, unparsed = probe.run_probe(Judge(bb, judge_preset="mem0-judge"), cases)
    assert labels == ["CORRECT", "CORRECT"] and unparsed == 0 and bb.calls_by_stage() == {"judge": 2}
    rec = {"judge_preset": "mem0-judge", "backbone": "x", "model": "m", "seed": 0, "n_cases": 2}
    rec["rates"] = probe.summarize_probe(cases, labels)
    out = tmp_path / "judge_probe"
    probe.save_probe(out, [rec], "cmd one")
    probe.save_probe(out, [dict(rec, judge_preset="judge-v1")], "cmd two")
    results = probe.load_probe(out.with_suffix(".json"))
    assert [r["judge_preset"] for r in results] == ["judge-v1", "mem0-judge"]
    md = out.with_suffix(".md").read_text()
    assert "| mem0-judge | m (x) | 100.0 [" in md and "(1/1)" in md and "cmd one" in md and "cmd two" in md
    assert probe.load_probe(tmp_path / "absent.json") == []


def test_probe_cli_rejects_bad_values_with_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert judge_probe.main(["--preset", "mem0", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Did you mean 'mem0-judge'" in err
    assert judge_probe.main(["--backbone", "gpt-5", "--dry-run"]) == 2
    assert "no backbone preset" in capsys.readouterr().err
    assert judge_probe.main(["--set", "exclusive", "--dry-run"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err


@pytest.mark.usefixtures("locomo_path")
def test_probe_dry_run_prints_the_cases(capsys: pytest.CaptureFixture[str]) -> None:
    assert judge_probe.main(["--dry-run", "--n", "14", "--backbone", "local-small"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(lines) == 14 and {ln["expected"] for ln in lines} == {"WRONG", "CORRECT"}


def _qa(i: int, cat: Category, answer: str) -> QAItem:
    return QAItem("conv-x", i, f"q{i}?", cat, answer, ("D1:1",))


def test_gold_ceiling_counts_wrong_gold_answers_not_citation_fixes() -> None:
    items = (
        _qa(0, Category.MULTI_HOP, "Paris"),
        _qa(1, Category.MULTI_HOP, "a red car"),
        _qa(2, Category.SINGLE_HOP, "beagle"),
        _qa(3, Category.ADVERSARIAL, "x"),
    )
    conv = Conversation("conv-x", "A", "B", (), items)
    changed = {items[1].item_id: "HALLUCINATION", items[2].item_id: "WRONG_CITATION"}
    audited = {items[1].item_id: _qa(1, Category.MULTI_HOP, "a blue car"), items[2].item_id: items[2]}
    c = gold_ceiling([conv], changed, audited, get_protocol("amem"), get_dataset("locomo").categories)
    assert c["by_category"]["1"]["n"] == 2 and c["by_category"]["1"]["n_gold_errors"] == 1
    assert c["by_category"]["1"]["judge"] == 0.5
    assert c["by_category"]["1"]["f1"] == pytest.approx((1.0 + 2 / 3) / 2)  # {a, car} of {a, blue, car}/{a, red, car}
    assert c["by_category"]["4"] == {"n": 1, "n_gold_errors": 0, "judge": 1.0, "f1": 1.0}
    assert "5" not in c["by_category"] and c["overall_no_adv"]["n"] == 3
    assert is_gold_error("TEMPORAL_ERROR") and not is_gold_error("WRONG_CITATION") and not is_gold_error(None)


def test_answer_disclosure_names_prompt_temperature_and_length() -> None:
    items = [
        {"category": 1, "answer": "a red car", "prompt_version": "answer-v1/amem"},
        {"category": 5, "answer": "Not mentioned in the conversation", "prompt_version": "answer-v1/amem"},
        {"category": 2, "answer": None, "prompt_version": ""},
    ]
    info = answer_disclosure({"name": "amem", "temperature": 0.7, "temperature_adversarial": 0.5}, items)
    assert info["prompt"] == "answer-v1/amem" and info["max_tokens"] == 1000 and info["n_answers"] == 2
    assert info["mean_words"] == 4.0 and info["mean_words_no_adv"] == 3.0
    line = disclosure_line(info)
    assert "temperature 0.7 (category 5: 0.5)" in line and "mean length 4.0 words (3.0 over categories 1-4)" in line


def test_answer_disclosure_says_the_datasets_own_words() -> None:
    """A dataset whose headline is every category and a protocol with one temperature: no category-5 wording."""
    items = [
        {"category": 6, "answer": "two weeks", "prompt_version": "p"},
        {"category": 3, "answer": "x", "prompt_version": "p"},
    ]
    cats = get_dataset("longmemeval").categories
    info = answer_disclosure(
        {"name": "longmemeval", "temperature": 0.0, "temperature_adversarial": 0.5}, items, categories=cats
    )
    assert "temperature_adversarial" not in info and "mean_words_no_adv" not in info and info["mean_words"] == 1.5
    line = disclosure_line(info, cats)
    assert "temperature 0.0, max_tokens 500, mean length 1.5 words, n=2." in line
    assert "category" not in line and "1-4" not in line

"""LLM judge (metric J): verdict parsing, fallbacks, gold per protocol, pinned presets, runner integration."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from memcore.config import validate
from memcore.data import resolve_locomo_path
from memcore.data.errors import DataError
from memcore.eval import judge as judge_mod
from memcore.eval.judge import Judge, JudgeConfigError, judge_gold, label_from_text, load_backbone_preset
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.prompts import judge as prompts
from memcore.runner import Runner
from memcore.types import Category, QAItem
from tests.runner_utils import compose_run


def _reply(text: str) -> ScriptedBackbone:
    return ScriptedBackbone(lambda messages: text)


def _item(
    category: Category = Category.SINGLE_HOP, answer: str | None = "a beagle", adversarial: str | None = None
) -> QAItem:
    return QAItem("conv-x", 0, "What breed is Rex?", category, answer, adversarial, ("D1:3",))


def test_correct_verdict_is_one_call_on_stage_judge() -> None:
    bb = _reply('{"reason": "same breed", "label": "CORRECT"}')
    v = Judge(bb).judge("What breed is Rex?", "a beagle", "Rex is a beagle.")
    assert (v.label, v.score, v.reason, v.parsed) == ("CORRECT", 1.0, "same breed", True)
    assert bb.calls_by_stage() == {"judge": 1}
    system, user = bb.calls[0][1]
    assert system["content"] == prompts.SYSTEM
    assert "Gold answer: a beagle" in user["content"] and "Generated answer: Rex is a beagle." in user["content"]


def test_lower_case_label_and_wrong() -> None:
    assert Judge(_reply('{"label": " wrong "}')).judge("q", "g", "a").score == 0.0
    assert Judge(_reply('```json\n{"reason": "x", "label": "correct"}\n```')).judge("q", "g", "a").label == "CORRECT"


def test_unparseable_reply_reads_the_label_from_text_and_counts_the_failure() -> None:
    bb = _reply("I think this answer is CORRECT.")
    v = Judge(bb).judge("q", "g", "a")
    assert (v.label, v.parsed) == ("CORRECT", False)
    assert bb.calls_by_stage() == {"judge": 2}  # first try + one retry
    assert bb.usage.parse_failures() == {"judge": {judge_mod.FALLBACK_KIND: 1}}


def test_ambiguous_unparseable_reply_is_wrong() -> None:
    v = Judge(_reply("CORRECT or WRONG, hard to say")).judge("q", "g", "a")
    assert (v.label, v.score, v.parsed) == ("WRONG", 0.0, False)
    assert label_from_text("nothing here") is None
    assert label_from_text("wrong") == "WRONG"


def test_empty_answer_is_wrong_without_a_call() -> None:
    bb = _reply('{"label": "CORRECT"}')
    assert Judge(bb).judge("q", "g", "  ").label == "WRONG"
    assert bb.calls == []


def test_gold_follows_the_protocol() -> None:
    adv = _item(Category.ADVERSARIAL, answer=None, adversarial="self-care is important")
    assert judge_gold(adv, "amem") == ("self-care is important", False)
    assert judge_gold(adv, "locomo") == (prompts.REFUSAL_GOLD, True)
    assert judge_gold(_item(), "locomo") == ("a beagle", False)
    bb = _reply('{"label": "CORRECT"}')
    Judge(bb).judge_item(adv, "Not mentioned in the conversation", "locomo")
    assert "false premise" in bb.calls[0][1][1]["content"]
    audited = _item(answer="a basset hound")
    Judge(bb).judge_item(_item(), "a beagle", "amem", gold_item=audited)
    assert "Gold answer: a basset hound" in bb.calls[1][1][1]["content"]


def test_prompt_hash_pins_the_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    h = judge_mod.prompt_hash()
    assert len(h) == 16 and h == judge_mod.prompt_hash()
    assert judge_mod.prompt_version() == f"{prompts.VERSION}@{h}"
    monkeypatch.setattr(prompts, "USER", prompts.USER + " ")
    assert judge_mod.prompt_hash() != h


def test_backbone_presets_resolve_their_defaults_chain() -> None:
    gpt4o = load_backbone_preset("gpt-4o")
    assert (gpt4o.name, gpt4o.model, gpt4o.kind) == ("gpt-4o", "gpt-4o-2024-08-06", "openai_compatible")
    assert gpt4o.base_url == "https://api.openai.com/v1" and gpt4o.price_in_per_mtok == 2.5
    q14 = load_backbone_preset("qwen3-14b")
    assert (q14.model, q14.thinking, q14.api_key_env) == ("qwen3-14b", False, "VLLM_API_KEY")
    with pytest.raises(JudgeConfigError, match=r"known presets: .*gpt-4o-mini"):
        load_backbone_preset("gpt-5")


def _data_or_skip() -> None:
    try:
        resolve_locomo_path(None)
    except DataError:
        pytest.skip("LoCoMo data not found (set MEMCORE_DATA)")


def _responder(messages: Sequence[dict[str, str]]) -> str:
    """Answers every question with 'beagle'; the judge says CORRECT iff the gold contains a digit."""
    if messages[0]["content"] == prompts.SYSTEM:
        gold = messages[1]["content"].split("Gold answer: ", 1)[1].split("\n", 1)[0]
        label = "CORRECT" if any(ch.isdigit() for ch in gold) else "WRONG"
        return json.dumps({"reason": "scripted", "label": label})
    return json.dumps({"answer": "beagle"})


def test_runner_adds_judge_scores_and_records_the_preset(tmp_path) -> None:
    _data_or_skip()
    cfg = compose_run(tmp_path, ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.judge=true"])
    runner = Runner(validate(cfg), tmp_path / "run")
    bb = ScriptedBackbone(_responder, usage=runner.usage)  # the run's tracker, so cost.json sees the calls
    runner.backbone_override = bb
    result = runner.run()
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8
    for r in items:
        expected = 1.0 if any(ch.isdigit() for ch in r["gold"]) else 0.0
        assert r["scores"]["judge"] == expected
        assert r["judge"]["label"] == ("CORRECT" if expected else "WRONG")
    assert bb.calls_by_stage() == {"answer": 8, "judge": 8}
    mean = sum(r["scores"]["judge"] for r in items) / 8
    assert result.metrics["overall"]["judge"] == pytest.approx(mean)
    info = result.metrics["run"]["judge"]
    assert info == {
        "preset": "local",
        "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "prompt_version": judge_mod.prompt_version(),
        "prompt_hash": judge_mod.prompt_hash(),
    }
    assert result.cost["per_question"]["judge"] == 1.0
    assert result.cost["usage"]["by_stage"]["judge"]["calls"] == 8


def test_bad_judge_preset_fails_before_any_work(tmp_path) -> None:
    _data_or_skip()
    cfg = compose_run(
        tmp_path,
        ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.judge=true", "eval.judge_backbone=gpt-5"],
    )
    runner = Runner(validate(cfg), tmp_path / "run", backbone_override=ScriptedBackbone(_responder))
    with pytest.raises(JudgeConfigError, match="no backbone preset"):
        runner.run()
    assert not (tmp_path / "run" / "items.jsonl").exists()

"""LLM judge (metric J): verdict parsing, fallbacks, gold per protocol, pinned presets, runner integration."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest

from memcore.config import validate
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.judges import judge_gold
from memcore.datasets.locomo.prompts import judge as prompts
from memcore.datasets.locomo.prompts import judge_mem0
from memcore.eval import judge as judge_mod
from memcore.eval.judge import Judge, JudgeConfigError, label_from_text, load_backbone_preset
from memcore.eval.protocols import get_protocol
from memcore.itemlog import read_items
from memcore.registry import UnknownNameError
from memcore.runner import Runner
from memcore.types import QAItem
from tests.fakes import JudgeLLM

AMEM, LOCOMO = get_protocol("amem"), get_protocol("locomo")


def _item(
    category: Category = Category.SINGLE_HOP, answer: str | None = "a beagle", adversarial: str | None = None
) -> QAItem:
    return QAItem(
        "conv-x",
        0,
        "What breed is Rex?",
        category,
        answer,
        ("D1:3",),
        metadata={} if adversarial is None else {"adversarial_answer": adversarial},
    )


def test_correct_verdict_is_one_call_on_stage_judge(scripted) -> None:
    bb = scripted('{"reason": "same breed", "label": "CORRECT"}')
    v = Judge(bb, judge_preset="judge-v1").judge("What breed is Rex?", "a beagle", "Rex is a beagle.")
    assert (v.label, v.score, v.reason, v.parsed) == ("CORRECT", 1.0, "same breed", True)
    assert bb.calls_by_stage() == {"judge": 1}
    system, user = bb.calls[0][1]
    assert system["content"] == prompts.SYSTEM
    assert "Gold answer: a beagle" in user["content"] and "Generated answer: Rex is a beagle." in user["content"]


def test_lower_case_label_and_wrong(scripted) -> None:
    assert Judge(scripted('{"label": " wrong "}'), judge_preset="judge-v1").judge("q", "g", "a").score == 0.0
    assert (
        Judge(scripted('```json\n{"reason": "x", "label": "correct"}\n```'), judge_preset="judge-v1")
        .judge("q", "g", "a")
        .label
        == "CORRECT"
    )


def test_unparseable_reply_reads_the_label_from_text_and_counts_the_failure(scripted) -> None:
    bb = scripted("I think this answer is CORRECT.")
    v = Judge(bb, judge_preset="judge-v1").judge("q", "g", "a")
    assert (v.label, v.parsed) == ("CORRECT", False)
    assert bb.calls_by_stage() == {"judge": 2}  # first try + one retry
    assert bb.usage.parse_failures() == {"judge": {judge_mod.FALLBACK_KIND: 1}}


def test_ambiguous_unparseable_reply_is_wrong(scripted) -> None:
    v = Judge(scripted("CORRECT or WRONG, hard to say"), judge_preset="judge-v1").judge("q", "g", "a")
    assert (v.label, v.score, v.parsed) == ("WRONG", 0.0, False)
    assert label_from_text("nothing here") is None
    assert label_from_text("wrong") == "WRONG"


def test_empty_answer_is_wrong_without_a_call(scripted) -> None:
    bb = scripted('{"label": "CORRECT"}')
    assert Judge(bb, judge_preset="judge-v1").judge("q", "g", "  ").label == "WRONG"
    assert bb.calls == []


def test_gold_follows_the_protocol(scripted) -> None:
    adv = _item(Category.ADVERSARIAL, answer=None, adversarial="self-care is important")
    assert judge_gold(adv, AMEM) == ("self-care is important", False)
    assert judge_gold(adv, LOCOMO) == (prompts.REFUSAL_GOLD, True)
    assert judge_gold(_item(), LOCOMO) == ("a beagle", False)
    bb = scripted('{"label": "CORRECT"}')
    Judge(bb, judge_preset="judge-v1").judge_item(adv, "Not mentioned in the conversation", LOCOMO)
    assert "false premise" in bb.calls[0][1][1]["content"]
    audited = _item(answer="a basset hound")
    Judge(bb, judge_preset="judge-v1").judge_item(_item(), "a beagle", AMEM, gold_item=audited)
    assert "Gold answer: a basset hound" in bb.calls[1][1][1]["content"]


def test_prompt_hash_pins_the_wording(monkeypatch: pytest.MonkeyPatch) -> None:
    h = judge_mod.prompt_hash("judge-v1")
    assert len(h) == 16 and h == judge_mod.prompt_hash("judge-v1")
    assert judge_mod.prompt_version("judge-v1") == f"{prompts.VERSION}@{h}"
    monkeypatch.setattr(prompts, "USER", prompts.USER + " ")
    assert judge_mod.prompt_hash("judge-v1") != h


def test_each_protocol_names_its_judges_and_the_first_is_its_default() -> None:
    assert AMEM.judges == LOCOMO.judges == ("judge-v1", "mem0-judge")
    assert judge_mod.protocol_judge(LOCOMO).name == "judge-v1"
    assert judge_mod.protocol_judge(AMEM, "mem0-judge").name == "mem0-judge"
    lme = get_protocol("longmemeval")
    assert judge_mod.protocol_judge(lme).name == "longmemeval-judge"
    with pytest.raises(
        JudgeConfigError,
        match=r"judge-v1 does not grade protocol longmemeval: its judge presets are longmemeval-judge \(",
    ):
        judge_mod.protocol_judge(lme, "judge-v1")
    with pytest.raises(
        JudgeConfigError, match=r"longmemeval-judge does not grade protocol amem: .* judge-v1, mem0-judge"
    ):
        judge_mod.protocol_judge(AMEM, "longmemeval-judge")
    with pytest.raises(UnknownNameError, match=r"unknown judge preset 'judge-v2'"):
        judge_mod.protocol_judge(AMEM, "judge-v2")
    bare = dataclasses.replace(AMEM, judges=())
    with pytest.raises(JudgeConfigError, match=r"names no judge preset .*eval.judge=false"):
        judge_mod.protocol_judge(bare)
    assert judge_mod.JUDGE_PRESETS.names() == ["judge-v1", "longmemeval-judge", "mem0-judge"]


def test_locomo_judge_prompt_versions_are_unchanged() -> None:
    """The response cache keys LoCoMo's verdicts on these: a change would re-judge every cached run."""
    assert judge_mod.prompt_version("judge-v1") == "judge-v1@ab3dcb235812fc7c"
    assert judge_mod.prompt_version("mem0-judge") == "mem0-judge-v1@d7edcfdef7b36b98"


def test_backbone_presets_resolve_their_defaults_chain() -> None:
    gpt4o = load_backbone_preset("gpt-4o")
    assert (gpt4o.name, gpt4o.model, gpt4o.kind) == ("gpt-4o", "gpt-4o-2024-08-06", "openai_compatible")
    assert gpt4o.base_url == "https://api.openai.com/v1" and gpt4o.price_in_per_mtok == 2.5
    q14 = load_backbone_preset("qwen3-14b")
    assert (q14.model, q14.thinking, q14.api_key_env) == ("qwen3-14b", False, "VLLM_API_KEY")
    with pytest.raises(JudgeConfigError, match=r"known presets: .*gpt-4o-mini"):
        load_backbone_preset("gpt-5")


@pytest.mark.usefixtures("locomo_path")
def test_runner_adds_judge_scores_and_records_the_preset(tmp_path, compose) -> None:
    cfg = compose(["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.judge=true"])
    runner = Runner(validate(cfg), tmp_path / "run")
    bb = JudgeLLM().backbone(usage=runner.usage)  # the run's tracker, so cost.json sees the calls
    runner.backbone_override = bb
    result = runner.run()
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8
    assert result.metrics["run"]["answer"]["prompt"] == "answer-v1/amem"
    assert result.metrics["run"]["answer"]["mean_words"] == 1.0  # every answer is "beagle"
    for r in items:
        expected = 1.0 if any(ch.isdigit() for ch in r["gold"]) else 0.0
        assert r["scores"]["judge"] == expected
        assert r["judge"]["majority"] == ("CORRECT" if expected else "WRONG")
    assert bb.calls_by_stage() == {"answer": 8, "judge": 8}
    mean = sum(r["scores"]["judge"] for r in items) / 8
    assert result.metrics["overall"]["judge"] == pytest.approx(mean)
    info = result.metrics["run"]["judge"]
    assert {k: info[k] for k in ("judge_preset", "preset", "model", "prompt_version", "prompt_hash", "runs")} == {
        "judge_preset": "judge-v1",
        "preset": "local",
        "model": "qwen2.5-coder-1.5b-instruct-q4_k_m",
        "prompt_version": judge_mod.prompt_version("judge-v1"),
        "prompt_hash": judge_mod.prompt_hash("judge-v1"),
        "runs": 1,
    }
    assert items[0]["judge"]["preset"] == "judge-v1" and len(items[0]["judge"]["runs"]) == 1
    assert result.cost["per_question"]["judge"] == 1.0
    assert result.cost["usage"]["by_stage"]["judge"]["calls"] == 8


@pytest.mark.usefixtures("locomo_path")
def test_bad_judge_preset_fails_before_any_work(tmp_path, compose) -> None:
    cfg = compose(
        ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.judge=true", "eval.judge_backbone=gpt-5"],
    )
    runner = Runner(validate(cfg), tmp_path / "run", backbone_override=JudgeLLM().backbone())
    with pytest.raises(JudgeConfigError, match="no backbone preset"):
        runner.run()
    assert not (tmp_path / "run" / "items.jsonl").exists()


# --------------------------------------------------------------------------- the mem0-judge preset
MEM0_PHRASES = (
    "Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’.",
    "    (1) a question (posed by one user to another user), \n",
    "Gold answer: A shell necklace\n",
    'Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it\'s the same date.',
    "Now it's time for the real question:",
    "Question: {question}\nGold answer: {gold_answer}\nGenerated answer: {generated_answer}\n",
    'Just return the label CORRECT or WRONG in a json format with the key as "label".\n',
)


def test_mem0_accuracy_prompt_is_the_original_text() -> None:
    """sha256 computed from mem0ai/mem0 evaluation/metrics/llm_judge.py at aae5989 (git show <commit>:<path>)."""
    text = judge_mem0.ACCURACY_PROMPT
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == (
        "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0"
    )
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == judge_mem0.ACCURACY_PROMPT_SHA256
    for phrase in MEM0_PHRASES:
        assert phrase in text, phrase
    assert text.startswith("\nYour task") and text.count("’") == 6 and len(text) == 1657
    assert judge_mem0.SOURCE_COMMIT == "aae5989e78a6188b3b047c104d960c9ad0927e75"


def test_mem0_preset_sends_one_user_message_and_reads_the_label_as_mem0_does(scripted) -> None:
    bb = scripted('{"label": "CORRECT"}')
    judge = Judge(bb, judge_preset="mem0-judge")
    assert judge.runs == 3
    assert judge.judge("When?", "7 May 2023", "May 7th").label == "CORRECT"
    ((_, msgs),) = bb.calls
    assert msgs == [
        {
            "role": "user",
            "content": judge_mem0.ACCURACY_PROMPT.format(
                question="When?", gold_answer="7 May 2023", generated_answer="May 7th"
            ),
        }
    ]
    # Mem0 scores 1 iff label == "CORRECT" exactly: "correct" is 0 there, and here
    assert Judge(scripted('{"label": "correct"}'), judge_preset="mem0-judge").judge("q", "g", "a").label == "WRONG"
    no_label = scripted('{"verdict": "CORRECT"}')
    v = Judge(no_label, judge_preset="mem0-judge").judge("q", "g", "a")
    assert (v.label, v.parsed) == ("CORRECT", False)  # retried once, then the counted text fallback
    assert no_label.usage.parse_failures() == {"judge": {judge_mod.FALLBACK_KIND: 1}}


def test_mem0_preset_skips_category_5_and_grades_the_raw_answer(scripted) -> None:
    bb = scripted('{"label": "CORRECT"}')
    judge = Judge(bb, judge_preset="mem0-judge", runs=2)
    adv = _item(Category.ADVERSARIAL, answer=None, adversarial="self-care is important")
    assert judge.judge_runs(adv, "Not mentioned", AMEM) is None and bb.calls == []
    verdicts = judge.judge_runs(_item(), "a beagle", LOCOMO)
    assert verdicts is not None and [v.label for v in verdicts] == ["CORRECT", "CORRECT"]
    assert "Gold answer: a beagle" in bb.calls[0][1][0]["content"]


def test_each_run_index_is_its_own_cache_entry_and_majority_is_kept(scripted) -> None:
    bb = scripted([json.dumps({"label": label}) for label in ["CORRECT", "WRONG", "CORRECT"]])
    verdicts = Judge(bb, judge_preset="mem0-judge").judge_runs(_item(), "beagle", AMEM)
    assert verdicts is not None
    base = judge_mod.get_preset("mem0-judge").prompt_version()
    assert bb.prompt_versions == [base, f"{base}#run-1", f"{base}#run-2"]
    scores = judge_mod.verdict_scores(verdicts)
    assert scores == {"judge": pytest.approx(2 / 3), "judge_runs": [1.0, 0.0, 1.0], "judge_majority": 1.0}
    rec = judge_mod.verdict_record("mem0-judge", verdicts)
    assert [r["label"] for r in rec["runs"]] == ["CORRECT", "WRONG", "CORRECT"] and rec["majority"] == "CORRECT"
    assert judge_mod.majority_label(verdicts[:2]) == "WRONG"  # a tie is WRONG


def test_unknown_judge_preset_and_bad_runs_fail_with_one_line(scripted) -> None:
    with pytest.raises(UnknownNameError, match=r"unknown judge preset 'mem0'\. Did you mean 'mem0-judge'"):
        judge_mod.get_preset("mem0")
    with pytest.raises(JudgeConfigError, match="judge_runs must be >= 1"):
        Judge(scripted("{}"), judge_preset="judge-v1", runs=0)


@pytest.mark.usefixtures("locomo_path")
def test_mem0_preset_without_a_key_fails_before_any_work(tmp_path, monkeypatch: pytest.MonkeyPatch, compose) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    cfg = compose(
        [
            "dataset=locomo-tiny",
            "embedder=hashing",
            "method=rag_bm25",
            "eval.judge=true",
            "eval.judge_preset=mem0-judge",
        ],
    )
    runner = Runner(validate(cfg), tmp_path / "run", backbone_override=JudgeLLM().backbone())
    with pytest.raises(JudgeConfigError, match=r"needs \$OPENAI_API_KEY.*eval.judge_backbone"):
        runner.run()
    assert not (tmp_path / "run" / "items.jsonl").exists()


@pytest.mark.usefixtures("locomo_path")
def test_runner_with_mem0_judge_three_runs_on_a_local_judge(tmp_path, compose) -> None:
    cfg = compose(
        [
            "dataset=locomo-tiny",
            "embedder=hashing",
            "method=rag_bm25",
            "eval.judge=true",
            "eval.judge_preset=mem0-judge",
            "eval.judge_backbone=local",
        ],
    )
    runner = Runner(validate(cfg), tmp_path / "run")
    bb = JudgeLLM(preset="mem0-judge").backbone(usage=runner.usage)
    runner.backbone_override = bb
    result = runner.run()
    items = read_items(tmp_path / "run" / "items.jsonl")
    judged = [r for r in items if r["category"] != 5]
    assert bb.calls_by_stage()["judge"] == 3 * len(judged)
    for r in items:
        if r["category"] == 5:
            assert "judge" not in r["scores"] and "judge" not in r
        else:
            assert len(r["judge"]["runs"]) == 3 and r["scores"]["judge_runs"] == [r["scores"]["judge"]] * 3
    overall = result.metrics["overall"]
    assert overall["n_judged"] == len(judged) and overall["judge_n_runs"] == 3
    assert overall["judge_std"] == 0.0 and overall["judge_agreement"] == 1.0
    assert result.metrics["overall_no_adv"]["judge"] == pytest.approx(overall["judge"])
    assert result.metrics["run"]["judge"]["judge_preset"] == "mem0-judge"
    table = (tmp_path / "run" / "table.md").read_text()
    assert "J % (mean ± std over runs)" in table and "J majority %" in table
    assert "judge preset mem0-judge (mem0ai/mem0 evaluation/metrics/llm_judge.py @ aae5989" in table
    assert "all runs agreed on 100.0% of items" in table
    assert "Answers: prompt answer-v1/amem" in table


def test_judge_server_sets_only_how_the_judges_server_runs(compose) -> None:
    plain = load_backbone_preset("local")
    set_ = load_backbone_preset("local", {"server_threads": 1, "exclusive": False})
    assert (set_.server_threads, set_.exclusive) == (1, False)
    assert (set_.model, set_.n_ctx) == (plain.model, plain.n_ctx)
    cfg = compose(["eval.judge=true", "eval.judge_backbone=local-small", "+eval.judge_server.server_thread=1"])
    with pytest.raises(
        JudgeConfigError, match=r"eval.judge_server: unknown setting 'server_thread'\. Did you mean 'server_threads'"
    ):
        judge_mod.judge_run_info(cfg)
    cfg = compose(["eval.judge=true", "eval.judge_backbone=local-small", "+eval.judge_server.model=other"])
    with pytest.raises(JudgeConfigError, match=r"unknown setting 'model'"):  # what the judge answers stays pinned
        judge_mod.judge_run_info(cfg)
    with pytest.raises(JudgeConfigError, match=r"eval.judge_server.server_threads: .*could not be converted"):
        load_backbone_preset("local", {"server_threads": "many"})

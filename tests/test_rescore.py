"""Rescoring a finished run: the logged answers and evidence scored again under another protocol,
the audit overlay or the LLM judge, without re-answering."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.commands.rescore import main
from memcore.config import ConfigError
from memcore.eval.judge_flags import key_values
from memcore.eval.protocols import get_protocol
from memcore.eval.scoring import score_answer
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.pipeline.record import RECORD_VERSION, ItemRecord
from memcore.rescore import rescore
from memcore.runner import run_config
from tests.fakes import JudgeLLM

SLICE = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "concurrency=1"]


def _answers() -> JudgeLLM:
    """Answers every question with 'beagle' (and option (a) of a category-5 choice); the judge says CORRECT."""
    return JudgeLLM(answer="beagle", correct=lambda gold: True)


@pytest.fixture()
def finished_run(tmp_path: Path, compose, locomo_path: Path) -> Path:
    run_config(compose([*SLICE, "protocol=amem"]), tmp_path / "run", backbone_override=ScriptedBackbone(_answers()))
    return tmp_path / "run"


def test_rescoring_under_the_same_protocol_reproduces_every_score(finished_run: Path, tmp_path: Path) -> None:
    result = rescore(finished_run, tmp_path / "same")
    before = read_items(finished_run / "items.jsonl")
    after = read_items(tmp_path / "same" / "items.jsonl")
    assert [r["item_id"] for r in after] == [r["item_id"] for r in before]
    assert [r["scores"] for r in after] == [r["scores"] for r in before]
    assert [(r["recall"], r["hit"], r["answer"]) for r in after] == [
        (r["recall"], r["hit"], r["answer"]) for r in before
    ]
    original = json.loads((finished_run / "metrics.json").read_text())
    assert result.metrics["overall"] == original["overall"]
    assert result.metrics["run"]["rescored"]["answered_protocol"] == "amem"
    assert result.metrics["run"]["rescored"]["judge_calls"] == 0
    assert (tmp_path / "same" / "table.md").read_text().startswith(result.table.splitlines()[0])


def test_rescoring_under_the_official_protocol_scores_the_logged_answers_with_its_metric(
    finished_run: Path, tmp_path: Path
) -> None:
    result = rescore(finished_run, tmp_path / "locomo", protocol="locomo")
    before = {r["item_id"]: r for r in read_items(finished_run / "items.jsonl")}
    after = read_items(tmp_path / "locomo" / "items.jsonl")
    assert len(after) == len(before) == 8
    for rec in after:
        old = before[rec["item_id"]]
        assert rec["answer"] == old["answer"] == "beagle"
        assert rec["scores"] == score_answer(rec["answer"], rec["gold"], rec["category"], get_protocol("locomo"))
    assert result.metrics["run"]["protocol"] == "locomo"
    assert result.metrics["run"]["rescored"] == {
        "from": str(finished_run),
        "answered_protocol": "amem",
        "scored_protocol": "locomo",
        "judge_calls": 0,
    }
    assert result.metrics["run"]["answer"]["prompt"] == "answer-v1/amem"  # how the answers were made
    assert (finished_run / "items.jsonl").read_text().count("\n") == 8  # the source run is untouched


def test_rescoring_with_the_judge_grades_every_logged_answer(finished_run: Path, tmp_path: Path) -> None:
    judge = ScriptedBackbone(_answers())
    result = rescore(finished_run, tmp_path / "judged", judge=True, backbone_override=judge, usage=judge.usage)
    items = read_items(tmp_path / "judged" / "items.jsonl")
    judged = [r for r in items if "judge" in r["scores"]]
    assert judged and all(r["scores"]["judge"] == 1.0 for r in judged)
    assert result.metrics["run"]["rescored"]["judge_calls"] == len(judged)
    source = {r["item_id"]: r for r in read_items(finished_run / "items.jsonl")}
    for r in judged:  # each record's usage: the source's answer calls, plus this judging
        assert r["usage"]["judge"]["calls"] == 1
        assert r["usage"]["answer"] == source[r["item_id"]]["usage"]["answer"]
    assert result.metrics["run"]["judge"]["judge_preset"] == "judge-v1"


def test_rescoring_refuses_to_write_into_the_source_or_over_results(finished_run: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="another directory"):
        rescore(finished_run, finished_run)
    rescore(finished_run, tmp_path / "once")
    with pytest.raises(ConfigError, match=r"already holds items\.jsonl"):
        rescore(finished_run, tmp_path / "once")
    with pytest.raises(ConfigError, match=r"unknown protocol 'offical'\. Known: amem, locomo"):
        rescore(finished_run, tmp_path / "typo", protocol="offical")


def test_cli_prints_one_line_and_exits_2_for_a_directory_that_is_no_run(tmp_path: Path, capsys) -> None:
    assert main([str(tmp_path / "nothing"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "is not a finished run" in err[0]


def test_item_records_round_trip_and_carry_the_raw_reply_and_prompt_hash(finished_run: Path) -> None:
    for rec in read_items(finished_run / "items.jsonl"):
        assert ItemRecord.from_json(rec).to_json() == rec
        assert rec["record_version"] == RECORD_VERSION
        assert rec["answer_raw"] == '{"answer": "beagle"}' and len(rec["prompt_hash"]) == 16


def test_judge_server_pairs_parse_as_yaml_values_and_a_bad_pair_is_one_error() -> None:
    flag = {"flag": "--judge-server", "example": "server_threads=1"}
    assert key_values(["server_threads=1", "exclusive=false"], **flag) == {"server_threads": 1, "exclusive": False}
    with pytest.raises(ConfigError, match="expected KEY=VALUE"):
        key_values(["server_threads"], **flag)
    with pytest.raises(ConfigError, match="not readable"):
        key_values(["server_threads=[1"], **flag)


def test_rescoring_with_the_judge_on_the_runs_own_backbone_builds_it_from_the_recorded_config(
    tmp_path: Path, compose, locomo_path: Path
) -> None:
    run_config(compose([*SLICE, "protocol=amem", "backbone=scripted"]), tmp_path / "run")
    result = rescore(tmp_path / "run", tmp_path / "judged", judge=True)  # config.yaml read back: a plain config
    items = read_items(tmp_path / "judged" / "items.jsonl")
    assert items and all(r["judge"]["preset"] == "judge-v1" for r in items)
    # the scripted preset's replies are no verdicts: each is retried once, then counted as a parse failure
    assert result.metrics["run"]["rescored"]["judge_calls"] == sum(r["usage"]["judge"]["calls"] for r in items)
    assert all(r["usage"]["judge"]["parse_failures"] == 1 for r in items)

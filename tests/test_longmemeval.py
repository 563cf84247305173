"""LongMemEval as one folder: the loader of the official release format (on a fixture the project writes in that
format), its bad-input errors (one line naming the question id, exit 2 before any work), its question types, its
official judge and answer prompts (checked against their sha256), its recall_all@k as the official retrieval
evaluation computes it, and retrieval-only runs reporting session- and turn-level recall by question type."""

from __future__ import annotations

import copy
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memcore.config import validate
from memcore.datasets.errors import DataError
from memcore.datasets.longmemeval import recall
from memcore.datasets.longmemeval.categories import QUESTION_TYPES
from memcore.datasets.longmemeval.loader import load_longmemeval
from memcore.datasets.longmemeval.prompts import answer as answer_prompt
from memcore.datasets.longmemeval.prompts import judge
from memcore.datasets.registry import get_dataset
from memcore.eval.judge import Judge, get_preset, load_backbone_preset
from memcore.eval.protocols import get_protocol
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.metrics import get_metric
from memcore.runner import Runner
from memcore.testing.sim_replies import reply as sim_reply
from memcore.testing.sim_replies import structured_responder
from tests.fixture_longmemeval import fixture_records, write_fixture

REPO = Path(__file__).resolve().parents[1]


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / "longmemeval_s_cleaned.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    return path


def test_release_format_loads_one_conversation_per_question(tmp_path: Path) -> None:
    data = load_longmemeval(write_fixture(tmp_path / "lme.json"))
    assert [c.conv_id for c in data.conversations] == [r["question_id"] for r in fixture_records()]
    conv = data.conversations[0]
    (item,) = conv.qa
    assert item.item_id == "q-ssu-1#0" and item.category == 1 and item.answer == "beagle"
    assert item.question_date == "2023/06/01 (Thu) 10:00"
    assert conv.sessions[0].turns[0].dia_id == "D1:1" and conv.sessions[0].time.isoformat() == "2023-05-01T09:00:00"
    assert item.evidence == ("D2:3",)  # the user turn marked has_answer in the answer session
    assert item.metadata["evidence_sessions"] == ["D2"] and item.metadata["question_type"] == "single-session-user"
    by_id = {c.conv_id: c.qa[0] for c in data.conversations}
    assert by_id["q-ssa-1"].evidence == ()  # evidence on the assistant's side only: no user target, as upstream
    assert by_id["q-ssu-2_abs"].metadata["abstention"] and by_id["q-ssu-2_abs"].evidence == ()
    assert get_protocol("longmemeval").expects_refusal(by_id["q-ssu-2_abs"])
    spec = get_dataset("longmemeval")
    assert [c.title for c in spec.categories] == list(QUESTION_TYPES)
    assert spec.evidence_levels == ("turn", "session") and spec.protocols == ("longmemeval",)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda r: r.pop("question_date"), "question q-ms-1, field 'question_date': missing field"),
        (
            lambda r: r["haystack_dates"].pop(),
            "question q-ms-1, field 'haystack_session_ids': haystack_session_ids has",
        ),
        (
            lambda r: r.update(question_type="multi-hop"),
            "question q-ms-1, field 'question_type': unknown question_type",
        ),
        (lambda r: r.update(answer_session_ids=["nowhere"]), "question q-ms-1, field 'answer_session_ids'"),
        (
            lambda r: r["haystack_sessions"][0].append({"role": "bot"}),
            "question q-ms-1, field 'haystack_sessions[0][2]'",
        ),
    ],
)
def test_bad_input_is_one_line_naming_the_question(tmp_path: Path, mutate: Any, expected: str) -> None:
    records = copy.deepcopy(fixture_records())
    mutate(records[3])
    with pytest.raises(DataError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        load_longmemeval(_write(tmp_path, records))


def test_bad_input_exits_2_before_any_work(tmp_path: Path) -> None:
    records = copy.deepcopy(fixture_records())
    records[5]["haystack_session_ids"].append("extra")
    path = _write(tmp_path, records)
    argv = [
        sys.executable,
        "-m",
        "memcore.commands.run",
        "method=rag_bm25",
        "dataset=longmemeval",
        f"dataset.path={path}",
    ]
    run = subprocess.run([*argv, "eval.answer=false", "embedder=hashing"], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and "question q-tr-1" in lines[0] and "haystack_session_ids" in lines[0]
    written = [p.name for p in (tmp_path / "results").rglob("*") if p.is_file()]
    assert written == []  # a run refused before any work leaves no run dir (memcore/refused_run.py)


#: sha256 of each reproduced upstream prompt (xiaowu0162/LongMemEval @ 9e0b455; README.md of the dataset folder).
PROMPT_SHA256 = {
    "GENERAL": "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
    "TEMPORAL_REASONING": "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
    "KNOWLEDGE_UPDATE": "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
    "SINGLE_SESSION_PREFERENCE": "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
    "ABSTENTION": "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
}


def test_official_prompts_are_reproduced_exactly() -> None:
    for name, digest in PROMPT_SHA256.items():
        assert hashlib.sha256(getattr(judge, name).encode()).hexdigest() == digest, name
    assert (
        hashlib.sha256(answer_prompt.ANSWER_PROMPT.encode()).hexdigest()
        == "e427ff913456e51a132ec865b1b5038d562bdc36890976943ad421cc9b365c9d"
    )
    readme = (REPO / "memcore" / "datasets" / "longmemeval" / "README.md").read_text()
    assert all(d in readme for d in PROMPT_SHA256.values())
    assert set(judge.BY_TYPE) == set(QUESTION_TYPES)
    text = judge.anscheck_prompt("temporal-reasoning", "Q?", "18 days", "19 days")
    assert text.startswith("I will give you a question") and "off-by-one" in text and "Model Response: 19 days" in text
    assert judge.anscheck_prompt("multi-session", "Q?", "why", "r", abstention=True).startswith(
        "I will give you an unanswerable question"
    )
    assert judge.judged_correct("Yes.") and not judge.judged_correct("No")


def test_recall_all_at_k_follows_the_official_evaluation() -> None:
    gold = ["D2:3", "D5:1"]
    ranked = ["D1:1", "D2:3", "D2:1", "D3:1", "D4:1", "D5:1"]
    assert recall.recall_all_at(gold, ranked, 5) == 0.0 and recall.recall_all_at(gold, ranked, 6) == 1.0
    # session level: the first k distinct sessions (turn2session widens k until it holds k sessions)
    assert get_metric("session_recall_all_5").score(gold, ranked) == 1.0
    assert get_metric("turn_recall_all_5").score(gold, ranked) == 0.0
    assert get_metric("session_recall_all_10").score([], ranked) is None  # no target: skipped, as upstream


@pytest.mark.parametrize("method", ["rag_bm25", "memcore-cheap"])
def test_retrieval_only_run_reports_session_and_turn_recall_by_type(tmp_path: Path, method: str) -> None:
    path = write_fixture(tmp_path / "lme.json")
    argv = [
        sys.executable,
        "-m",
        "memcore.commands.run",
        f"method={method}",
        "dataset=longmemeval",
        f"dataset.path={path}",
    ]
    argv += ["eval.answer=false", "embedder=hashing", "progress=false", f"hydra.run.dir={tmp_path / 'run'}"]
    run = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["run"]["protocol"] == "longmemeval" and metrics["run"]["dataset_kind"] == "longmemeval"
    assert {int(k) for k in metrics["by_category"]} == set(range(1, 7))
    for key in ("recall", "session_recall_all_5", "session_recall_all_10", "turn_recall_all_5", "turn_recall_all_10"):
        assert metrics["overall"][key] is not None, key
    table = (tmp_path / "run" / "table.md").read_text()
    assert "| 6 temporal-reasoning (n=2) |" in table and "Session R_all@5 %" in table and "Turn R_all@10 %" in table
    assert "Recall and hit rate exclude 3 item(s) without gold evidence." in table  # 2 abstention, 1 assistant-side


#: Which template upstream's ``get_anscheck_prompt`` picks for each question type (its if / elif branches), by the
#: name this project's module gives the text; an abstention question takes ``ABSTENTION`` whatever its type.
UPSTREAM_BRANCH = {
    "single-session-user": "GENERAL",
    "single-session-assistant": "GENERAL",
    "multi-session": "GENERAL",
    "temporal-reasoning": "TEMPORAL_REASONING",
    "knowledge-update": "KNOWLEDGE_UPDATE",
    "single-session-preference": "SINGLE_SESSION_PREFERENCE",
}


def test_judge_messages_are_upstreams_template_for_each_type(tmp_path: Path) -> None:
    """One user message: the type's template (the abstention one for an ``_abs`` id) filled, in order, with the
    question, the reference answer and the model's response, as ``evaluate_qa.py`` sends it."""
    data = load_longmemeval(write_fixture(tmp_path / "lme.json"))
    protocol = get_protocol("longmemeval")
    preset = get_preset("longmemeval-judge")
    seen: set[str] = set()
    for conv in data.conversations:
        (item,) = conv.qa
        name = "ABSTENTION" if "_abs" in item.conv_id else UPSTREAM_BRANCH[item.metadata["question_type"]]
        template = getattr(judge, name)
        assert hashlib.sha256(template.encode()).hexdigest() == PROMPT_SHA256[name]
        response = f"my answer to {item.conv_id}"
        expected = [{"role": "user", "content": template.format(item.question, item.answer, response)}]
        assert preset.messages(item, item, response, protocol) == expected, item.conv_id
        kind, text = sim_reply(expected)  # the simulator knows the prompt and answers as the judge would
        assert kind == "judge_longmemeval" and text in ("yes", "no"), item.conv_id
        seen.add(name if name == "ABSTENTION" else item.metadata["question_type"])
    assert seen == {*QUESTION_TYPES, "ABSTENTION"}  # the fixture has every type and an abstention question


def test_judge_reads_yes_as_upstream_one_call_of_10_tokens_at_temperature_0(scripted: Any, tmp_path: Path) -> None:
    preset = get_preset("longmemeval-judge")
    assert [preset.read(r)[0] for r in ("Yes.", " yes", "YES, it is", "No.", "no", "Not sure")] == [
        "CORRECT", "CORRECT", "CORRECT", "WRONG", "WRONG", "WRONG",
    ]  # fmt: skip
    (item,) = load_longmemeval(write_fixture(tmp_path / "lme.json")).conversations[0].qa
    bb = scripted("Yes")
    judge_ = Judge(bb, judge_preset="longmemeval-judge")
    verdicts = judge_.judge_runs(item, "a beagle", get_protocol("longmemeval"))
    assert verdicts is not None and [(v.label, v.reason, v.parsed) for v in verdicts] == [("CORRECT", "Yes", True)]
    ((stage, _),) = bb.calls
    (kwargs,) = bb.kwargs
    assert stage == "judge" and kwargs["max_tokens"] == 10 and kwargs["temperature"] == 0.0
    assert not kwargs.get("json") and kwargs["prompt_version"] == preset.prompt_version()
    assert judge_.info()["categories"] == [1, 2, 3, 4, 5, 6] and judge_.info()["model"] == "scripted"
    assert preset.default_backbone == "gpt-4o" and load_backbone_preset("gpt-4o").model == "gpt-4o-2024-08-06"


def test_judged_run_reports_j_by_question_type(tmp_path: Path, compose: Any) -> None:
    """``eval.judge=true`` on a LongMemEval run: its protocol's judge grades every answer (the simulator's replies,
    so the numbers mean nothing), J by question type in the table, the judge's calls in the run's cost."""
    path = write_fixture(tmp_path / "lme.json")
    cfg = compose(
        ["method=rag_bm25", "dataset=longmemeval", f"dataset.path={path}", "embedder=hashing", "eval.judge=true",
         "eval.judge_backbone=local"]
    )  # fmt: skip
    runner = Runner(validate(cfg), tmp_path / "run")
    bb = ScriptedBackbone(structured_responder, usage=runner.usage)
    runner.backbone_override = bb
    result = runner.run()
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8 and bb.calls_by_stage() == {"answer": 8, "judge": 8}
    assert all(r["judge"]["preset"] == "longmemeval-judge" and r["scores"]["judge"] in (0.0, 1.0) for r in items)
    prompts = [msgs[0]["content"] for stage, msgs in bb.calls if stage == "judge"]
    assert sum(p.startswith("I will give you an unanswerable question") for p in prompts) == 2
    info = result.metrics["run"]["judge"]
    assert info["judge_preset"] == "longmemeval-judge" and info["categories"] == [1, 2, 3, 4, 5, 6]
    assert all(result.metrics["by_category"][str(c)]["judge"] is not None for c in range(1, 7))
    assert result.cost["usage"]["by_stage"]["judge"]["calls"] == 8
    table = (tmp_path / "run" / "table.md").read_text()
    assert "| Category |" in table and "J %" in table and "| 6 temporal-reasoning (n=2) |" in table
    assert "J: judge preset longmemeval-judge (xiaowu0162/LongMemEval" in table
    assert "category 5" not in table and "1-4" not in table and "adversarial" not in table
    answers = result.metrics["run"]["answer"]
    assert "temperature_adversarial" not in answers and "mean_words_no_adv" not in answers

"""full_context's batch mode: the official QA_PROMPT_BATCH (snap-research/locomo task_eval @ 9228632), the reply
split per item as the official code reads it, a malformed reply retried and then answered item by item (counted,
logged); default batch_size 1 leaves the per-question path untouched."""

from __future__ import annotations

import hashlib
import json
import logging

import pytest

from baselines.full_context import SPEC, BatchedFullContext, FullContext, FullContextConfig, parse_batch_reply
from baselines.locomo_batch_prompt import QA_PROMPT_BATCH
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.prompts import answer as answer_prompts
from memcore.interfaces import SelfAnsweringMemory
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from tests.support import method_context, story_conversation


def test_prompt_is_the_official_text() -> None:
    # sha256 of QA_PROMPT_BATCH's value in snap-research/locomo task_eval/evaluate_gpts.py @ 9228632
    assert hashlib.sha256(QA_PROMPT_BATCH.encode()).hexdigest() == (
        "b5fdfd98e371668491994977a945b384d2858b8a57cf413ed13e096408d8a18c"
    )
    assert "in a few words. \nWrite the answers" in QA_PROMPT_BATCH  # the trailing space is upstream's


def test_reply_is_split_as_the_official_code_reads_it() -> None:
    assert parse_batch_reply('{"0": "beagle", "1": "March 2023"}', 2) == ["beagle", "March 2023"]
    assert parse_batch_reply('```json\n{"0": "a", "1": "b"}\n```', 2) == ["a", "b"]
    # more single than double quotes: single quotes are the JSON quotes (process_ouput)
    assert parse_batch_reply("{'0': 'Rex', '1': 'Lisbon'}", 2) == ["Rex", "Lisbon"]
    assert parse_batch_reply('{"0": {"city": "Lisbon", "year": 2023}}', 1) == ["Lisbon, 2023"]
    assert parse_batch_reply('{"0": 7, "1": "x", "2": "extra"}', 2) == ["7", "x"]
    for bad, why in (("not json at all", "not JSON"), ('["a", "b"]', "not an object"), ('{"0": "a"}', "1")):
        with pytest.raises(ValueError, match=why):
            parse_batch_reply(bad, 2)


def _system(tmp_path, responder, batch_size: int, **cfg) -> tuple[BatchedFullContext, ScriptedBackbone]:
    bb = ScriptedBackbone(responder)
    conv = story_conversation(n_sessions=2)
    ctx = method_context(
        {"name": "full_context", "batch_size": batch_size, "protocol": "locomo", **cfg},
        conv,
        tmp_path,
        backbone=lambda: bb,
        extras={"prompt_token_cap": 6000, "seed": 7},
    )
    system = SPEC.factory(ctx)
    assert isinstance(system, BatchedFullContext) and isinstance(system, SelfAnsweringMemory)
    for t in conv.turns:
        system.ingest(t)
    system.finalize()
    return system, bb


def _numbered(query: str) -> list[str]:
    return [ln for ln in query.split(QA_PROMPT_BATCH, 1)[1].split("\n") if ln]


def test_batches_are_one_call_each_and_split_per_item(tmp_path) -> None:
    queries: list[str] = []

    def responder(messages) -> str:
        queries.append(messages[0]["content"])
        n = len(_numbered(messages[0]["content"]))
        return json.dumps({"0": "beagle (a)", "1": "March"} if n == 2 else {"0": "b"})

    system, bb = _system(tmp_path, responder, batch_size=2)
    qa = system.qa  # three items: single-hop, temporal, adversarial
    got = [system.answer(item, pytest.fail) for item in qa]  # the per-item answerer is never needed
    assert bb.calls_by_stage() == {"answer": 2}  # items 0-1 in one call, item 2 in another
    first, second = queries
    assert first.startswith(system.build(0).context[:200]) and "\n" + QA_PROMPT_BATCH + "0: What breed" in first
    assert _numbered(first) == [
        "0: What breed is Rex?",
        "1: When did Bob start the violin?" + answer_prompts.LOCOMO_TEMPORAL_SUFFIX,
    ]
    options = system._options(qa[2])
    assert _numbered(second) == [
        "0: What did Alice name her cat?"
        + answer_prompts.LOCOMO_ADVERSARIAL_SUFFIX.format(option_a=options[0], option_b=options[1])
    ]
    # (a)/(b) removed from ordinary answers; category 5's bare letter maps to its option (get_cat_5_answer)
    assert [text for text, _ in got] == ["beagle", "March", options[1]]
    assert qa[2].category is Category.ADVERSARIAL
    ev = got[1][1]
    assert ev.extra["batch"] == {
        "batch": 0, "position": 1, "size": 2, "attempts": 1, "fallback": False,
        "reply": ev.extra["batch"]["reply"], "prompt_version": "locomo-qa-batch-9228632",
    }  # fmt: skip
    stats = system.stats()
    assert (stats["batches"], stats["batch_calls"], stats["batch_fallbacks"], stats["items_answered_singly"]) == (
        2, 2, 0, 0,
    )  # fmt: skip


def test_a_malformed_batch_is_retried_then_answered_item_by_item(tmp_path, caplog) -> None:
    def responder(messages) -> str:
        return "Sorry, I cannot answer in JSON."

    system, bb = _system(tmp_path, responder, batch_size=3, batch_attempts=2)
    contexts: list[str] = []

    def single(context: str) -> str:
        contexts.append(context)
        return f"single {len(contexts)}"

    with caplog.at_level(logging.WARNING, logger="baselines.full_context"):
        got = [system.answer(item, single) for item in system.qa]
    assert [t for t, _ in got] == ["single 1", "single 2", "single 3"]
    assert bb.calls_by_stage() == {"answer": 2}  # two batch attempts; the single answers are the answerer's
    assert [c[0] for c in bb.calls] == ["answer", "answer"]
    assert contexts[0] == system.retrieve(system.qa[0].question).context
    assert all(ev.extra["batch"]["fallback"] for _, ev in got)
    stats = system.stats()
    assert (stats["batch_calls"], stats["batch_fallbacks"], stats["items_answered_singly"]) == (2, 1, 3)
    assert bb.usage.to_json()["parse_failures_by_kind"] == {"answer": {"batch_item_by_item": 1}}
    assert "did not split into answers after 2 attempts" in caplog.text


def test_batch_size_one_is_the_per_question_path_and_batching_needs_the_locomo_protocol(tmp_path) -> None:
    ctx = method_context({"name": "full_context"}, story_conversation(), tmp_path)
    system = SPEC.factory(ctx)
    assert type(system) is FullContext and not isinstance(system, SelfAnsweringMemory)
    assert FullContextConfig().batch_size == 1 and FullContextConfig().image_captions == "none"
    with pytest.raises(ValueError, match="protocol=locomo"):
        FullContextConfig(batch_size=20, protocol="amem")
    with pytest.raises(ValueError, match="batch_size"):
        FullContextConfig(batch_size=0)


@pytest.mark.usefixtures("locomo_path")
def test_runner_scores_each_batched_item(tmp_path, compose) -> None:
    def responder(messages) -> str:
        query = messages[-1]["content"]
        assert QA_PROMPT_BATCH in query  # every answer comes from a batch
        return json.dumps({str(k): f"ans{k}" for k in range(len(_numbered(query)))})

    bb = ScriptedBackbone(responder)
    base = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=full_context", "protocol=locomo"]
    result = run_config(compose([*base, "method.batch_size=3"]), tmp_path / "run", backbone_override=bb)
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert result.n_items == len(items) == 8
    by_conv: dict[str, int] = {}
    for r in items:
        by_conv[r["conv_id"]] = by_conv.get(r["conv_id"], 0) + 1
        batch = r["extra"]["batch"]
        assert r["answer"] == f"ans{batch['position']}" and not batch["fallback"]
        assert "f1" in r["scores"]  # scored per item
    assert bb.calls_by_stage()["answer"] == sum(-(-n // 3) for n in by_conv.values())

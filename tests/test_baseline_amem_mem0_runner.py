"""A-MEM and Mem0 through the real runner (scripted backbone, hashing embedder, locomo-tiny):
provenance in items.jsonl, per-stage cost, snapshot reuse without LLM calls."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from memcore.data import resolve_locomo_path
from memcore.data.errors import DataError
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from tests.runner_utils import compose_run

BASE = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted"]


def _data_or_skip() -> None:
    try:
        resolve_locomo_path(None)
    except DataError:
        pytest.skip("LoCoMo data not found (set MEMCORE_DATA)")


def responder(messages: Sequence[dict[str, str]]) -> str:
    """A-MEM analysis/evolution/query prompts, mem0's extraction prompt, and the answer prompt."""
    user = messages[-1]["content"]
    if user.startswith("Generate a structured analysis"):
        content = user.split("Content for analysis:\n", 1)[1]
        return json.dumps({"keywords": content.split()[2:5], "context": content[:60], "tags": ["dialogue"]})
    if "memory evolution agent" in user:
        return json.dumps({"should_evolve": True, "actions": ["strengthen"], "suggested_connections": [0]})
    if "generate several keywords" in user:
        return json.dumps({"keywords": user.split("Question: ", 1)[1].split("\n", 1)[0]})
    if "Memory Extractor" in messages[0]["content"]:
        new = user.split("## New Messages\n", 1)[1].split("\n\n#", 1)[0]
        lines = [ln for ln in new.splitlines() if ln.startswith("user: ")]
        return json.dumps({"memory": [{"id": str(i), "text": ln[6:]} for i, ln in enumerate(lines)]})
    return json.dumps({"answer": "a guess"})


def test_amem_through_the_runner(tmp_path: Path) -> None:
    _data_or_skip()
    backbone = ScriptedBackbone(responder)
    result = run_config(compose_run(tmp_path, [*BASE, "method=amem"]), tmp_path / "run", backbone_override=backbone)
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8 == result.n_items
    for rec in items:
        assert rec["retrieved_dia_ids"] and rec["recall"] is not None
        assert all(len(n["dia_ids"]) == 1 for n in rec["notes"])  # notes are never merged
        assert rec["extra"]["amem_query"]
    calls = backbone.calls_by_stage()
    assert calls["retrieve"] == 8  # one query-keyword call per question
    cost = json.loads((tmp_path / "run" / "cost.json").read_text())
    assert cost["memory_build"]["llm_calls_per_turn"] == 2.0  # analysis + evolution
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    conv = next(iter(stats["conversations"].values()))
    assert conv["memory"]["notes"] == conv["turns"] == 35
    assert conv["memory"]["evolutions"] == 35 and conv["memory"]["links"] == 34  # the first note has no note 0 yet

    n_ingest = calls["ingest"]
    run_config(compose_run(tmp_path, [*BASE, "method=amem"]), tmp_path / "run2", backbone_override=backbone)
    assert backbone.calls_by_stage()["ingest"] == n_ingest  # snapshot reused: no construction calls


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
@pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai is the optional extra 'mem0'")
def test_mem0_through_the_runner(tmp_path: Path) -> None:
    _data_or_skip()
    backbone = ScriptedBackbone(responder)
    overrides = [*BASE, "method=mem0", "method.embedder_route=run"]
    result = run_config(compose_run(tmp_path, overrides), tmp_path / "run", backbone_override=backbone)
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8 == result.n_items
    for rec in items:
        assert rec["retrieved_dia_ids"] and rec["recall"] is not None
        assert all(1 <= len(n["dia_ids"]) <= 2 for n in rec["notes"])  # the turns of one add() call
        assert {n["channels"][0] for n in rec["notes"]} == {"mem0:Caroline", "mem0:Melanie"}
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    mem = next(iter(stats["conversations"].values()))["memory"]
    # every turn is its speaker's "user" message once → one memory per turn
    assert mem["memories"] == 35 and mem["memories_with_provenance"] == 35
    assert mem["add_calls"] == backbone.calls_by_stage()["ingest"]

    n_ingest = backbone.calls_by_stage()["ingest"]
    again = run_config(compose_run(tmp_path, overrides), tmp_path / "run2", backbone_override=backbone)
    assert backbone.calls_by_stage()["ingest"] == n_ingest  # reloaded faiss + history DB, no LLM
    assert again.metrics["overall"] == result.metrics["overall"]

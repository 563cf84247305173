"""A-MEM and Mem0 through the real runner (scripted backbone, hashing embedder, locomo-tiny):
provenance in items.jsonl, per-stage cost, snapshot reuse without LLM calls."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from tests.fakes import AMemMem0RunnerLLM

BASE = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted"]


@pytest.mark.usefixtures("locomo_path")
def test_amem_through_the_runner(tmp_path: Path, compose) -> None:
    backbone = ScriptedBackbone(AMemMem0RunnerLLM())
    result = run_config(compose([*BASE, "method=amem"]), tmp_path / "run", backbone_override=backbone)
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
    run_config(compose([*BASE, "method=amem"]), tmp_path / "run2", backbone_override=backbone)
    assert backbone.calls_by_stage()["ingest"] == n_ingest  # snapshot reused: no construction calls


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
@pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai is the optional extra 'mem0'")
@pytest.mark.usefixtures("locomo_path")
def test_mem0_through_the_runner(tmp_path: Path, compose) -> None:
    backbone = ScriptedBackbone(AMemMem0RunnerLLM())
    overrides = [*BASE, "method=mem0", "method.embedder_route=run"]
    result = run_config(compose(overrides), tmp_path / "run", backbone_override=backbone)
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
    again = run_config(compose(overrides), tmp_path / "run2", backbone_override=backbone)
    assert backbone.calls_by_stage()["ingest"] == n_ingest  # reloaded faiss + history DB, no LLM
    assert again.metrics["overall"] == result.metrics["overall"]

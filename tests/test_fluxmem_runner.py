"""FluxMem through the real runner (scripted backbone, hashing embedder, locomo-tiny): the
self-answering path, provenance in items.jsonl, per-stage cost, resume, and the variants."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.config import validate
from memcore.itemlog import read_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import Runner, run_config
from tests.fakes import FluxMemRunnerLLM

BASE = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted"]


@pytest.mark.usefixtures("locomo_path")
def test_fluxmem_runs_through_the_runner_and_resumes(tmp_path: Path, compose) -> None:
    # T=2 pinned (the default follows upstream's 5 rounds); fact units and one listing verification call
    facts = [*BASE, "method=fluxmem-facts", "method.T=2", "method.verify_mode=listed"]
    runner = Runner(validate(compose(facts)), tmp_path / "run")
    backbone = ScriptedBackbone(
        FluxMemRunnerLLM(), usage=runner.usage
    )  # the run's tracker, so cost.json sees the calls
    runner.backbone_override = backbone
    result = runner.run()
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 8 == result.n_items
    for rec in items:
        info = rec["extra"]["fluxmem"]
        assert rec["rounds"] == len(info["answers"]) == 3 and info["attributions"] == ["under_connection"] * 2
        assert rec["retrieved_dia_ids"] and rec["recall"] is not None
        assert all(
            n["dia_ids"] for n in rec["notes"] if not n["channels"] or n["channels"][0] not in ("episode", "skill")
        )
    calls = backbone.calls_by_stage()
    # per item: 3 answers; 1 verification + 3 support checks; facts: 1 call per turn
    assert calls["answer"] == 3 * 8 and calls["retrieve"] == 4 * 8
    cost = json.loads((tmp_path / "run" / "cost.json").read_text())
    assert cost["memory_build"]["llm_calls_per_turn"] == 1.0
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    conv = next(iter(stats["conversations"].values()))
    assert conv["memory"]["episodes"] == 0 and conv["memory_after_qa"]["episodes"] == 8
    assert conv["memory"]["semantic_nodes"] == conv["turns"]
    # consolidation runs after the conversation's QA under the ingest stage: a per-question memory update
    updates = calls["ingest"] - conv["turns"]
    assert updates > 0 and cost["per_question"]["memory_update"] == round(updates / 8, 4)

    n_calls = len(backbone.calls)
    again = run_config(compose(facts), tmp_path / "run", backbone_override=backbone)
    assert len(backbone.calls) == n_calls and again.metrics["overall"] == result.metrics["overall"]


@pytest.mark.usefixtures("locomo_path")
def test_default_fluxmem_builds_chunks_without_an_llm_and_grades_each_candidate(tmp_path: Path, compose) -> None:
    backbone = ScriptedBackbone(FluxMemRunnerLLM())
    result = run_config(compose([*BASE, "method=fluxmem", "method.T=2"]), tmp_path / "run", backbone_override=backbone)
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    conv = next(iter(stats["conversations"].values()))
    chunks = conv["memory"]["semantic_nodes"]
    assert conv["memory"]["semantic_by_origin"] == {"chunk": chunks} and conv["memory"]["turns_without_nodes"] == 0
    assert chunks < conv["turns"]  # several turns per 512-character chunk
    assert result.cost["memory_build"]["llm_calls_per_turn"] == 0.0
    # per item: one graded call per candidate of the pool (the 15 dense best, or every chunk when fewer) + 3 checks
    per_item = min(15, chunks) + 3
    assert backbone.calls_by_stage()["retrieve"] == per_item * result.n_items


@pytest.mark.usefixtures("locomo_path")
def test_variants_run_and_skip_their_stage(tmp_path: Path, compose) -> None:
    for name in ("fluxmem-no-refine", "fluxmem-no-consolidate"):
        backbone = ScriptedBackbone(FluxMemRunnerLLM())
        run_config(compose([*BASE, f"method={name}"]), tmp_path / name, backbone_override=backbone)
        items = read_items(tmp_path / name / "items.jsonl")
        stats = json.loads((tmp_path / name / "stats.json").read_text())
        after = next(iter(stats["conversations"].values()))["memory_after_qa"]
        if name == "fluxmem-no-refine":
            assert all(r["rounds"] == 1 for r in items) and after["attributions"] == {}
        else:
            assert after["skills"] == 0 and not any(k.startswith("calls_skill") for k in after["counters"])

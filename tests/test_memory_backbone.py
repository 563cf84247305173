"""``memory_backbone``: a run reads the memories another backbone model built, never builds one under that name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.config import ConfigError
from memcore.llm.scripted import ScriptedBackbone
from memcore.pipeline.rundir import result_fields
from memcore.runner import run_config
from tests.fakes import AMemMem0RunnerLLM

BASE = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=amem", "concurrency=1"]


@pytest.mark.usefixtures("locomo_path")
def test_a_run_reads_the_memory_another_model_built_and_builds_none(tmp_path: Path, compose) -> None:
    backbone = ScriptedBackbone(AMemMem0RunnerLLM())
    snapshots = f"paths.snapshots={tmp_path / 'snapshots'}"
    run_config(compose([*BASE, snapshots, "backbone.model=small"]), tmp_path / "small", backbone_override=backbone)
    built = backbone.calls_by_stage()["ingest"]
    assert built > 0

    strong = [*BASE, snapshots, "backbone.model=strong"]
    result = run_config(compose([*strong, "memory_backbone=small"]), tmp_path / "mixed", backbone_override=backbone)
    assert backbone.calls_by_stage()["ingest"] == built  # the small model's memory, loaded: no construction call
    assert result.n_items == 8
    stats = json.loads((tmp_path / "mixed" / "stats.json").read_text())
    assert [c["reused"] for c in stats["conversations"].values()] == [True]
    assert json.loads((tmp_path / "mixed" / "metrics.json").read_text())["run"]["memory_backbone"] == "small"
    assert "Memory: built by small (memory_backbone); backbone scripted retrieved" in result.table
    state = json.loads((tmp_path / "mixed" / "run_state.json").read_text())
    assert state["fields"]["memory_backbone"] == "small"
    assert "memory_backbone" not in json.loads((tmp_path / "small" / "run_state.json").read_text())["fields"]

    with pytest.raises(ConfigError, match=r"memory_backbone=tiny: no amem memory built by that model .* conv-26"):
        run_config(compose([*strong, "memory_backbone=tiny"]), tmp_path / "none", backbone_override=backbone)
    assert not (tmp_path / "none" / "items.jsonl").exists()
    assert backbone.calls_by_stage()["ingest"] == built


def test_memory_backbone_naming_the_runs_own_model_is_the_same_run(compose) -> None:
    plain = compose([*BASE, "backbone.model=small"])
    own = compose([*BASE, "backbone.model=small", "memory_backbone=small"])
    other = compose([*BASE, "backbone.model=small", "memory_backbone=strong"])
    assert result_fields(own, "sha") == result_fields(plain, "sha")
    assert "memory_backbone" not in result_fields(own, "sha")
    assert result_fields(other, "sha")["memory_backbone"] == "strong"

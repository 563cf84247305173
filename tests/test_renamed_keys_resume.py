"""A run dir recorded before the budget keys were renamed (``eval.budget``, ``eval.context_tokens``,
``backbone.context_budget_tokens``, ...) resumes under the new names: nothing is re-run, its items stay as they are,
and its ``run_state.json`` is migrated to the new names and hash.

The run is a copy of a committed one (``results/examples/retrieval_report``: memcore-cheap under a 500-token cap,
retrieval only); ``fixture_run_state_before_rename.json`` is the ``run_state.json`` the code before the rename wrote
when it resumed that same copy."""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf, open_dict

from memcore.config_aliases import RENAMED
from memcore.llm.cache import stable_hash
from memcore.pipeline.rundir import RUN_STATE, RunConflictError
from memcore.runner import run_config
from tests.support import REPO

COMMITTED = REPO / "results/examples/retrieval_report/runs/example_500tok/locomo-mini/none/amem/memcore-cheap/none"
OLD_STATE = Path(__file__).parent / "fixture_run_state_before_rename.json"


def _old_run_dir(tmp_path: Path) -> Path:
    """The committed run as a live run dir the code before the rename left: items.jsonl and its run_state.json."""
    run = tmp_path / "run"
    shutil.copytree(COMMITTED, run)
    (run / "items.jsonl").write_bytes(gzip.decompress((run / "items.jsonl.gz").read_bytes()))
    (run / "items.jsonl.gz").unlink()
    shutil.copy(OLD_STATE, run / RUN_STATE)
    return run


def _recorded_config(run: Path, root: Path, **changes: object) -> DictConfig:
    """The run's own ``config.yaml`` (written under the old names) with this machine's paths."""
    cfg = OmegaConf.load(run / "config.yaml")
    assert isinstance(cfg, DictConfig)
    with open_dict(cfg):
        cfg.paths.root = str(root)
        cfg.paths.runs = str(root / "runs")
        cfg.paths.cache = str(root / "cache")
        cfg.paths.snapshots = str(root / "snapshots")
        cfg.run_dir = str(run)
        cfg.progress = False
        cfg.print_table = False
        for key, value in changes.items():
            OmegaConf.update(cfg, key, value, force_add=True)
    return cfg


def _old_names_in(fields: dict) -> list[str]:
    return [old for old in RENAMED if old.split(".")[1] in (fields.get(old.split(".")[0]) or {})]


@pytest.mark.usefixtures("locomo_path")
def test_a_run_recorded_under_the_old_names_resumes_and_its_state_is_migrated(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    run = _old_run_dir(tmp_path)
    old_state = json.loads(OLD_STATE.read_text())
    assert _old_names_in(old_state["fields"]) == [
        "eval.budget",
        "eval.context_tokens",
        "backbone.context_budget_tokens",
    ]
    items_before = (run / "items.jsonl").read_bytes()
    with caplog.at_level(logging.INFO):
        run_config(_recorded_config(run, tmp_path / "results"), run)
    assert (run / "items.jsonl").read_bytes() == items_before  # nothing re-run, nothing added
    assert not any((tmp_path / "results" / "snapshots").rglob("*"))  # no memory built
    assert any("run_state.json migrated" in r.getMessage() for r in caplog.records)
    state = json.loads((run / RUN_STATE).read_text())
    assert state["result_hash"] == stable_hash(state["fields"]) != old_state["result_hash"]
    assert _old_names_in(state["fields"]) == []
    assert state["fields"]["eval"]["token_cap"] == 500 and state["fields"]["eval"]["note_cap"] is None
    assert state["fields"]["backbone"]["prompt_token_cap"] == 6000
    # the report over the same items: the same numbers, the cap under its new name
    committed = json.loads((COMMITTED / "metrics.json").read_text())
    metrics = json.loads((run / "metrics.json").read_text())
    for key in ("overall", "by_category", "recall_at_budget", "recall_at_k"):
        assert metrics[key] == committed[key], key
    evidence = dict(committed["run"]["evidence"])
    evidence["token_cap"] = evidence.pop("context_tokens")
    assert metrics["run"]["evidence"] == evidence
    # and the migrated state resumes again as it is
    run_config(_recorded_config(run, tmp_path / "results"), run)
    assert json.loads((run / RUN_STATE).read_text()) == state


@pytest.mark.usefixtures("locomo_path")
def test_a_different_cap_into_a_run_recorded_under_the_old_names_is_still_refused(tmp_path: Path) -> None:
    run = _old_run_dir(tmp_path)
    cfg = _recorded_config(run, tmp_path / "results", **{"eval.context_tokens": 250})
    with pytest.raises(RunConflictError, match=r"changed: eval\)"):
        run_config(cfg, run)
    assert json.loads((run / RUN_STATE).read_text()) == json.loads(OLD_STATE.read_text())

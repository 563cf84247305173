"""Renamed config keys (``memcore/config_aliases.py``): an old spelling keeps working wherever a user types it, with
one line naming the new key; the new names are the ones the schema, the method configs and the records use."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
from omegaconf import OmegaConf, open_dict

from baselines.memgpt.agent import SPEC as MEMGPT
from memcore.config import BackboneConfig, ConfigError, EvalConfig, validate, with_new_key_names
from memcore.config_aliases import (
    RENAMED,
    RenameConflictError,
    evidence_token_cap,
    rename_config_keys,
    rename_overrides,
    rename_result_fields,
    renamed_line,
    snapshot_spelling,
    tokens_used,
)
from memcore.hydra_aliases import RenamedSweepKeys
from memcore.methods import method_specs
from memcore.pipeline.record import ItemRecord
from memcore.snapshots import construction_fields
from tests.support import REPO, compose_run, conversation

SECTIONS = {"eval": EvalConfig, "backbone": BackboneConfig}


def _keys_of(section: str) -> set[str]:
    if section in SECTIONS:
        return {f.name for f in dataclasses.fields(SECTIONS[section])}
    return {k for spec in method_specs() for k in spec.config_keys()}


def test_every_new_name_is_a_key_and_no_old_name_is_one() -> None:
    for old, new in RENAMED.items():
        section, old_key = old.split(".")
        new_section, new_key = new.split(".")
        assert section == new_section, old
        assert new_key in _keys_of(section), new
        assert old_key not in _keys_of(section), old


def test_no_shipped_config_spells_a_key_the_old_way() -> None:
    """configs/ (run.yaml, every preset) uses the new names only; run.yaml names an old one in a comment."""
    for path in sorted((REPO / "configs").rglob("*.yaml")):
        tree = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
        section = path.parent.name if path.parent.name in ("method", "backbone") else None
        wrapped = {section: tree} if section else tree
        assert isinstance(wrapped, dict)
        assert rename_config_keys(wrapped)[1] == [], path.relative_to(REPO)


def test_an_override_of_an_old_key_is_respelled_once() -> None:
    argv = ["method=memcore", "eval.budget=5", "+eval.context_tokens=500", "~method.pack_tokens", "eval.budget=3"]
    got, lines = rename_overrides(argv)
    assert got == ["method=memcore", "eval.note_cap=5", "+eval.token_cap=500", "~method.token_cap", "eval.note_cap=3"]
    assert lines == [
        "eval.budget is renamed: use eval.note_cap",
        "eval.context_tokens is renamed: use eval.token_cap",
        "method.pack_tokens is renamed: use method.token_cap",
    ]


def test_overrides_without_an_old_key_are_left_as_they_are() -> None:
    argv = ["-m", "method=rag_bm25,rag_dense", "eval.note_cap=5", "eval.budgets=1", "hydra.run.dir=x", "eval"]
    assert rename_overrides(argv) == (argv, [])


def test_a_sweep_of_an_old_key_on_the_command_line_keeps_its_values() -> None:
    got, _ = rename_overrides(["eval.context_tokens=250,500,1000", "backbone.context_budget_tokens=choice(1,2)"])
    assert got == ["eval.token_cap=250,500,1000", "backbone.prompt_token_cap=choice(1,2)"]


def test_a_yaml_tree_with_old_keys_moves_their_values_to_the_new_names() -> None:
    tree = {
        "eval": {"budget": 5, "note_cap": None, "token_budgets": [100]},
        "backbone": {"context_budget_tokens": 3000},
        "method": {"name": "full_context", "context_budget_tokens": 900},
        "seed": 1,
    }
    got, lines = rename_config_keys(tree, {"eval.note_cap": None, "eval.report_token_caps": [500, 1000, 2000]})
    assert got == {
        "eval": {"note_cap": 5, "report_token_caps": [100]},
        "backbone": {"prompt_token_cap": 3000},
        "method": {"name": "full_context", "prompt_token_cap": 900},
        "seed": 1,
    }
    assert lines == [
        renamed_line(k) for k in ("eval.budget", "eval.token_budgets", "backbone.context_budget_tokens")
    ] + [renamed_line("method.context_budget_tokens")]
    assert tree["eval"] == {"budget": 5, "note_cap": None, "token_budgets": [100]}  # the input is not changed


def test_both_spellings_set_to_different_values_is_an_error() -> None:
    with pytest.raises(RenameConflictError, match=r"eval\.budget=5 and eval\.note_cap=3 are both set"):
        rename_config_keys({"eval": {"budget": 5, "note_cap": 3}}, {"eval.note_cap": None})
    same, _ = rename_config_keys({"eval": {"budget": 5, "note_cap": 5}}, {"eval.note_cap": None})
    assert same == {"eval": {"note_cap": 5}}


def test_recorded_result_fields_are_respelled_and_new_ones_kept() -> None:
    old = {
        "eval": {"answer": False, "budget": None, "context_tokens": 500},
        "backbone": {"name": "local", "context_budget_tokens": 6000},
        "method": {"name": "memgpt", "backbone_window_tokens": 6000},
    }
    new = rename_result_fields(old)
    assert new == {
        "eval": {"answer": False, "note_cap": None, "token_cap": 500},
        "backbone": {"name": "local", "prompt_token_cap": 6000},
        "method": {"name": "memgpt", "prompt_token_cap": 6000},
    }
    assert rename_result_fields(new) == new


def test_a_yaml_preset_with_an_old_key_validates_under_the_new_name(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = compose_run(tmp_path, ["method=memcore-cheap", "eval.answer=false"])
    with open_dict(cfg):  # as an experiment preset written before the rename composes it
        cfg.eval.budget = 7
        cfg.method.pack_tokens = 400
    with caplog.at_level(logging.WARNING):
        got = validate(cfg)
    assert got.eval.note_cap == 7 and "budget" not in got.eval
    assert got.method.token_cap == 400 and "pack_tokens" not in got.method
    assert [r.getMessage() for r in caplog.records] == [
        "eval.budget is renamed: use eval.note_cap",
        "method.pack_tokens is renamed: use method.token_cap",
    ]


def test_an_experiment_file_of_ones_own_written_with_old_keys_runs_under_the_new_names(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An experiment preset outside configs/ (on Hydra's search path), written before the rename."""
    (tmp_path / "configs" / "experiment").mkdir(parents=True)
    (tmp_path / "configs" / "experiment" / "old_names.yaml").write_text(
        "# @package _global_\neval:\n  budget: 4\n  context_tokens: 800\nbackbone:\n  context_budget_tokens: 5000\n"
    )
    search = f"hydra.searchpath=[file://{tmp_path / 'configs'}]"
    cfg = compose_run(tmp_path, ["method=rag_bm25", "eval.answer=false", search, "experiment=old_names"])
    with caplog.at_level(logging.WARNING):
        got = validate(cfg)
    assert (got.eval.note_cap, got.eval.token_cap, got.backbone.prompt_token_cap) == (4, 800, 5000)
    assert len(caplog.records) == 3


def test_a_preset_setting_both_spellings_differently_is_a_config_error(tmp_path: Path) -> None:
    cfg = compose_run(tmp_path, ["method=rag_bm25", "eval.answer=false", "eval.note_cap=3"])
    with open_dict(cfg):
        cfg.eval.budget = 5
    with pytest.raises(ConfigError, match=r"keep eval\.note_cap only"):
        with_new_key_names(cfg)


def test_a_sweep_file_with_an_old_key_is_respelled_in_order(caplog: pytest.LogCaptureFixture) -> None:
    cfg = OmegaConf.create({"hydra": {"sweeper": {"params": {"method": "a,b", "eval.budget": "3,5", "seed": "1"}}}})
    OmegaConf.set_readonly(cfg.hydra, True)
    with caplog.at_level(logging.WARNING):
        RenamedSweepKeys().on_multirun_start(cfg)
    assert list(cfg.hydra.sweeper.params.items()) == [("method", "a,b"), ("eval.note_cap", "3,5"), ("seed", "1")]
    assert [r.getMessage() for r in caplog.records] == ["eval.budget is renamed: use eval.note_cap"]


def test_memgpts_snapshot_key_keeps_the_spelling_it_was_built_under() -> None:
    """``prompt_token_cap`` is a MemGPT build knob: its snapshot key names it ``backbone_window_tokens``, as every
    memory built before the rename was keyed, so no memory is rebuilt."""
    assert "prompt_token_cap" in MEMGPT.construction_keys
    assert snapshot_spelling("prompt_token_cap") == "backbone_window_tokens"
    conv = conversation([])
    fields = construction_fields(
        MEMGPT, {"prompt_token_cap": 6000}, {}, backbone_model="m", embedder_name="e", conversation=conv
    )
    assert fields["construction"]["backbone_window_tokens"] == 6000
    assert "prompt_token_cap" not in fields["construction"]


def test_tokens_used_reads_either_spelling_of_a_record() -> None:
    assert tokens_used({"tokens_used": 12}) == 12
    assert tokens_used({"context_tokens": 7}) == 7
    assert tokens_used({}) == 0
    assert evidence_token_cap({"token_cap": 500}) == 500
    assert evidence_token_cap({"context_tokens": 250}) == 250
    assert evidence_token_cap({"mean_context_tokens": 3.0}) is None


def test_an_item_line_written_before_the_rename_reads_and_writes_back_with_the_new_name() -> None:
    line = {
        "item_id": "conv-1#0", "conv_id": "conv-1", "qa_index": 0, "category": 1, "category_name": "multi-hop",
        "question": "q", "gold": "g", "evidence": [], "scores": {}, "recall": None, "hit": None, "answer": None,
        "retrieved_dia_ids": [], "notes": [], "context_tokens": 42, "rounds": 1, "prompt_version": "v",
        "cached": {}, "latency_s": {},
    }  # fmt: skip
    rec = ItemRecord.from_json(line)
    assert rec.tokens_used == 42
    out = rec.to_json()
    assert out["tokens_used"] == 42 and "context_tokens" not in out
    with pytest.raises(KeyError, match="tokens_used"):
        ItemRecord.from_json({k: v for k, v in line.items() if k != "context_tokens"})

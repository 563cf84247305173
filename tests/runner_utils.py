"""Compose real Hydra configs for runner tests."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, open_dict

from memcore.cli import CONFIG_PATH


def compose_run(tmp_path: Path, overrides: list[str]) -> DictConfig:
    """The run config as ``memcore-run`` would compose it, with results under ``tmp_path``."""
    with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
        cfg = compose(
            config_name="run", overrides=[*overrides, "progress=false", "print_table=false"], return_hydra_config=False
        )
    with open_dict(cfg):
        cfg.paths.root = str(tmp_path / "results")
        cfg.paths.runs = str(tmp_path / "results" / "runs")
        cfg.paths.cache = str(tmp_path / "results" / "cache")
        cfg.paths.snapshots = str(tmp_path / "results" / "snapshots")
        cfg.run_dir = str(tmp_path / "run")
    return cfg

"""A-MEM's k end to end: memcore-report --layout k_sweep renders a sweep (F1 / BLEU-1 / recall by k and category),
picks the k with the best F1 per backbone, and --write-amem-k writes it into the map paper_main reads."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from memcore.commands.report import main as report_main
from memcore.config import CONFIG_DIR
from tests.support import run_item, write_run


def _sweep(root: Path, backbone: str, f1_by_k: dict[int, float]) -> None:
    for k, f1 in f1_by_k.items():
        items = [
            run_item("c1", 0, 1, f1, f1 / 2, recall=0.5, evidence=["D1:1"]),
            run_item("c1", 1, 2, f1, f1 / 2, recall=1.0, evidence=["D1:2"]),
        ]
        path = write_run(root / f"k{k}", backbone=backbone, method="amem", items=items, dataset="locomo-mini")
        cfg = {"experiment_name": "amem_k_sweep", "method": {"name": "amem", "retrieve_k": k}}
        (path / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_k_sweep_layout_renders_and_chooses_the_best_f1_per_backbone(tmp_path: Path, capsys) -> None:
    _sweep(tmp_path / "runs", "local-small", {10: 0.4, 15: 0.6, 20: 0.6})
    _sweep(tmp_path / "runs", "local", {10: 0.5, 15: 0.3})
    out = tmp_path / "report"
    assert report_main([str(tmp_path / "runs"), "--layout", "k_sweep", "--out", str(out), "--no-plots"]) == 0
    md = (out / "k_sweep.md").read_text()
    # ties (15 and 20 at F1 60) go to the smaller k; local keeps 10
    assert "| local-small | 15 | chosen | 60.00 | 30.00 | 50.00 |" in md
    assert "| local-small | 20 |  | 60.00 |" in md and "| local | 10 | chosen | 50.00 |" in md
    assert "F1 2 temporal" in md and "Recall overall" in md
    choice = json.loads((out / "k_choice.json").read_text())
    assert choice["chosen_k"] == {"local": 10, "local-small": 15}
    assert "written" not in choice


def test_write_amem_k_edits_the_map_paper_main_reads(tmp_path: Path, compose) -> None:
    _sweep(tmp_path / "runs", "local-small", {10: 0.4, 25: 0.7})
    config = tmp_path / "amem.yaml"
    shutil.copy(CONFIG_DIR / "method" / "amem.yaml", config)
    before = config.read_text()
    args = [str(tmp_path / "runs"), "--layout", "k_sweep", "--out", str(tmp_path / "r"), "--no-plots", "--quiet"]
    assert report_main([*args, "--write-amem-k", "--amem-config", str(config)]) == 0
    after = yaml.safe_load(config.read_text())
    assert after["retrieve_k_by_backbone"]["local-small"] == 25
    assert after["retrieve_k_by_backbone"]["gpt-4o-mini"] == 10  # other backbones untouched
    changed = [a for a, b in zip(before.splitlines(), config.read_text().splitlines(), strict=True) if a != b]
    assert len(changed) == 1 and changed[0].strip().startswith("local-small: 10")
    assert "# chosen by memcore-report --layout k_sweep" in config.read_text()
    # a run composed with that map records the chosen k in its config (method.retrieve_k)
    shutil.copytree(CONFIG_DIR, tmp_path / "configs")
    shutil.copy(config, tmp_path / "configs" / "method" / "amem.yaml")
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(tmp_path / "configs"), version_base="1.3"):
        cfg = hydra_compose(config_name="run", overrides=["method=amem", "backbone=local-small"])
    assert OmegaConf.to_container(cfg.method, resolve=True)["retrieve_k"] == 25


def test_k_sweep_input_errors_are_one_line(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "runs", backbone="local", method="memcore", items=[run_item("c1", 0, 1, 0.5, 0.5)])
    assert report_main([str(tmp_path / "runs"), "--layout", "k_sweep", "--out", str(tmp_path / "r")]) == 2
    assert "no answered amem runs" in capsys.readouterr().err
    assert report_main([str(tmp_path / "runs"), "--write-amem-k", "--out", str(tmp_path / "r")]) == 2
    assert "--write-amem-k needs --layout k_sweep" in capsys.readouterr().err

"""Experiment sweeps: the paper_* sweep definitions, a real joblib multirun sharing snapshots and caches
across processes, and memcore-report over the sweep dir (tables and plots checked by content)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import matplotlib.image as mpimg
import pytest
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import open_dict

from memcore.commands.report import main as report_main
from memcore.commands.run import CONFIG_PATH
from memcore.config import validate
from memcore.validation import validate_run
from tests.support import CHILD_OF_TEST, compose_config

PAPER_BACKBONES = ["gpt-4o-mini", "gpt-4o", "qwen3-8b", "qwen3-14b"]
PAPER_METHODS = ["full_context", "memgpt", "amem", "mem0-two-phase", "lightmem", "memcore"]
ABLATIONS = [
    "none",
    "wo_update",
    "wo_merge",
    "wo_link",
    "wo_denoise",
    "wo_topic",
    "wo_keyword",
    "wo_neighbor",
    "wo_ier",
]


def sweep_jobs(experiment: str, cli: list[str]) -> list[dict[str, str]]:
    """The jobs ``memcore-run -m experiment=<experiment> <cli…>`` launches, computed the way Hydra's
    BasicSweeper does (config params first, then the command line; a CLI key replaces a config list)."""
    cfg = compose_config([f"experiment={experiment}", *cli], hydra=True)
    params = [f"{k}={v}" for k, v in cfg.hydra.sweeper.params.items()]
    overrides = OverridesParser.create().parse_overrides([*params, f"experiment={experiment}", *cli])
    (batch,) = BasicSweeper.split_arguments(overrides, None)
    return [dict(o.split("=", 1) for o in job) for job in batch]


def test_paper_main_sweeps_backbones_by_methods() -> None:
    jobs = sweep_jobs("paper_main", [])
    assert len(jobs) == 24
    assert {(j["backbone"], j["method"]) for j in jobs} == {(b, m) for b in PAPER_BACKBONES for m in PAPER_METHODS}
    cfg = compose_config(["experiment=paper_main"])
    assert (cfg.experiment_name, cfg.dataset.name, cfg.protocol.name) == ("paper_main", "locomo", "amem")


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
@pytest.mark.parametrize("experiment", ["paper_main", "paper_ablation"])
def test_every_job_of_the_paper_sweeps_composes_and_validates(experiment: str) -> None:
    """What Hydra's validate_batch_is_legal does before launching: each job's config composes (every
    method / ablation / backbone file exists) and passes the run schema and every knob check."""
    jobs = sweep_jobs(experiment, [])
    for job in jobs:
        cfg = compose_config([f"{k}={v}" for k, v in job.items()])
        with open_dict(cfg):
            cfg.run_dir = "unused"
        checked = validate(cfg)
        validate_run(checked)
        assert (checked.backbone.name, checked.method.name, checked.ablation.name) == (
            job.get("backbone", "qwen3-8b"),
            job.get("method", "memcore"),
            job.get("ablation", "none"),
        )
        assert checked.dataset.name == "locomo" and checked.experiment_name == experiment


def test_one_cli_override_repoints_a_sweep() -> None:
    jobs = sweep_jobs("paper_main", ["backbone=local"])
    assert len(jobs) == 6 and {j["backbone"] for j in jobs} == {"local"}
    jobs = sweep_jobs("paper_ablation", ["backbone=gpt-4o-mini"])
    assert len(jobs) == 9 and {j["ablation"] for j in jobs} == set(ABLATIONS)
    cfg = compose_config(["experiment=paper_ablation", "backbone=gpt-4o-mini"])
    assert (cfg.backbone.name, cfg.method.name, cfg.experiment_name) == ("gpt-4o-mini", "memcore", "paper_ablation")


def test_paper_ablation_sweeps_nine_settings_on_qwen3_8b() -> None:
    jobs = sweep_jobs("paper_ablation", [])
    assert [j["ablation"] for j in jobs] == ABLATIONS
    cfg = compose_config(["experiment=paper_ablation"])
    assert (cfg.backbone.name, cfg.method.name) == ("qwen3-8b", "memcore")


@pytest.mark.filterwarnings(
    "ignore:(?s).*validated against ConfigStore schema with the same name"
)  # documented, harmless
def test_launcher_configs_compose() -> None:
    jl = compose_config(["hydra/launcher=joblib"], hydra=True).hydra.launcher
    sl = compose_config(["hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu"], hydra=True).hydra.launcher
    lo = compose_config(["hydra/launcher=submitit_local"], hydra=True)
    assert lo.hydra.launcher._target_.endswith("LocalLauncher") and lo.hydra.launcher.gpus_per_node == 0
    assert jl._target_.endswith("JoblibLauncher") and jl.n_jobs == 2
    assert sl._target_.endswith("SlurmLauncher") and sl.partition == "gpu" and sl.timeout_min == 360 and sl.mem_gb == 16


def run_sweep(results: Path, args: list[str], timeout: int) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, MEMCORE_RESULTS=str(results), PYTHONPATH=str(Path(CONFIG_PATH).parent))
    cmd = [
        sys.executable,
        "-c",
        "from memcore.commands.run import run_main; run_main()",
        "-m",
        *args,
        "progress=false",
        "print_table=false",
    ]
    proc = subprocess.run(
        cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=results.parent, **CHILD_OF_TEST
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_joblib_sweep_shares_snapshots_and_caches_then_reports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results"
    run_sweep(
        results,
        [
            "experiment=quickstart",  # backbone local-small, never used: retrieval only, so filed under "none"
            "experiment_name=sweep_demo",
            "dataset=locomo-tiny",
            "embedder=hashing",
            "eval.answer=false",
            "method=rag_bm25,rag_dense",
            "protocol=amem,locomo",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
        ],
        timeout=600,
    )
    sweep = results / "runs" / "sweep_demo"
    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    assert [r.relative_to(sweep).parts for r in runs] == [
        ("locomo-tiny", "none", protocol, method, "none")
        for protocol in ("amem", "locomo")
        for method in ("rag_bm25", "rag_dense")
    ]
    # The two protocols share one memory per method: built once, loaded once, even when both jobs ran at once.
    for method in ("rag_bm25", "rag_dense"):
        costs = [
            json.loads((sweep / "locomo-tiny" / "none" / p / method / "none" / "cost.json").read_text())
            for p in ("amem", "locomo")
        ]
        assert sorted((c["memory_build"]["snapshots_built"], c["memory_build"]["snapshots_reused"]) for c in costs) == [
            (0, 1),
            (1, 0),
        ]
        snaps = [p for p in (results / "snapshots" / method).iterdir() if p.is_dir() and not p.name.endswith(".work")]
        assert len(snaps) == 1 and (snaps[0] / "MANIFEST.json").is_file()
    # Same memory, same retrieval: the protocol changes nothing without answers.
    for method in ("rag_bm25", "rag_dense"):
        a, b = (
            json.loads((sweep / "locomo-tiny" / "none" / p / method / "none" / "metrics.json").read_text())
            for p in ("amem", "locomo")
        )
        assert a["overall"]["recall"] == b["overall"]["recall"]

    out = tmp_path / "report"
    monkeypatch.chdir(tmp_path)  # the report names runs relative to its working dir, never by machine path
    assert report_main([str(sweep), "--out", str(out), "--n-boot", "200", "--quiet"]) == 0
    # nothing answered and no ablation: the retrieval layout (recall, hit rate, no change columns) only
    assert not (out / "main_table.md").exists() and not (out / "ablation_table.md").exists()
    md = (out / "retrieval_table.md").read_text()
    assert md.startswith("### Methods compared (") and "Δ" not in md.splitlines()[2]
    rows = list(csv.DictReader((out / "retrieval_table.csv").open()))
    assert len(rows) == 4
    assert sorted((tmp_path / r["run_dir"]).resolve() for r in rows) == [r.resolve() for r in runs]
    for row in rows:
        run = tmp_path / row["run_dir"]
        metrics = json.loads((run / "metrics.json").read_text())
        recall = 100 * metrics["overall"]["recall"]
        assert float(row["recall"]) == pytest.approx(recall, abs=1e-4)
        assert row["f1"] == "" and row["method"] == run.parts[-2] and row["protocol"] == run.parts[-3]
        assert float(row["recall_ci_low"]) <= float(row["recall"]) <= float(row["recall_ci_high"])
        assert f"{recall:.2f} [" in md
    assert "| Protocol |" in md  # the varying setting gets its own column
    curve = list(csv.DictReader((out / "plots" / "recall_vs_budget.csv").open()))
    assert len(curve) == 4
    for row in curve:
        values = [float(row[f"recall_at_{b}"]) for b in (250, 500, 1000, 2000, 4000)]
        assert values == sorted(values)  # a bigger budget never loses evidence
    img = mpimg.imread(out / "plots" / "recall_vs_budget.png")
    assert img.shape[0] >= 500 and img.shape[1] >= 800 and img.std() > 0.01
    assert (out / "plots" / "recall_vs_budget.pdf").read_bytes()[:4] == b"%PDF"
    assert not (out / "plots" / "cost_vs_f1.png").exists()  # no answers: no F1 to plot, and it says so
    assert "cost_vs_f1: not drawn, no run answered" in (out / "plots" / "omitted.md").read_text()


@pytest.mark.parametrize(
    "backbone",
    [
        # The content-free scripted backbone (every JSON reply falls back): the whole path in seconds; it
        # launches processes, so make test runs it, make test-fast does not.
        pytest.param("scripted", marks=pytest.mark.e2e),
        # The local 0.5B model: MemCoRe's LLM gate on 18 turns is make run's 10 minutes by itself, so only
        # make test-all runs it (slow, not e2e). make test keeps MemCoRe's LLM mode on the real model through
        # test_e2e_local.py::test_memcore_llm_mode_end_to_end (six real turns).
        pytest.param("local-small", marks=pytest.mark.slow),
    ],
)
@pytest.mark.usefixtures("locomo_path")
def test_sweep_two_methods_two_ablations_then_report(
    tmp_path: Path, backbone: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """memcore and memcore-cheap × none / wo_ier on conv-26's first session (18 turns, 4 QA; wo_ier reuses
    the full model's snapshot), then the report: main table, ablation table, all plots, checked by content."""
    results = tmp_path / "results"
    run_sweep(
        results,
        [
            "experiment=quickstart",
            "experiment_name=sweep_local",
            f"backbone={backbone}",
            "dataset=locomo-tiny",
            "dataset.max_sessions=1",
            "embedder=hashing",
            "method=memcore,memcore-cheap",
            "ablation=none,wo_ier",
        ],
        timeout=5400,
    )
    sweep = results / "runs" / "sweep_local"
    runs = sorted(p.parent for p in sweep.rglob("metrics.json"))
    assert len(runs) == 4
    for method in ("memcore", "memcore-cheap"):  # wo_ier is a retrieval ablation: the full model's memory is reused
        base = sweep / "locomo-tiny" / backbone / "amem" / method
        built = [json.loads((base / a / "cost.json").read_text())["memory_build"] for a in ("none", "wo_ier")]
        assert [(b["snapshots_built"], b["snapshots_reused"]) for b in built] == [(1, 0), (0, 1)]
    out = tmp_path / "report"
    monkeypatch.chdir(tmp_path)  # the report names runs relative to its working dir, never by machine path
    assert report_main([str(sweep), "--out", str(out), "--n-boot", "200", "--quiet"]) == 0
    main = list(csv.DictReader((out / "main_table.csv").open()))
    assert {(r["method"], r["ablation"]) for r in main} == {
        (m, a) for m in ("memcore", "memcore-cheap") for a in ("none", "wo_ier")
    }
    for row in main:
        metrics = json.loads((tmp_path / row["run_dir"] / "metrics.json").read_text())
        assert float(row["f1"]) == pytest.approx(100 * metrics["overall"]["f1"], abs=1e-4)
        assert float(row["f1_ci_low"]) <= float(row["f1"]) <= float(row["f1_ci_high"])
        assert row["variant_of"] == ("memcore" if row["method"] == "memcore-cheap" else "")
    assert "memcore-cheap (variant of memcore)" in (out / "main_table.md").read_text()
    abl = {(r["method"], r["ablation"]): r for r in csv.DictReader((out / "ablation_table.csv").open())}
    for m in ("memcore", "memcore-cheap"):
        d = float(abl[(m, "wo_ier")]["f1"]) - float(abl[(m, "none")]["f1"])
        assert float(abl[(m, "wo_ier")]["f1_vs_full"]) == pytest.approx(d, abs=1e-3)
    for stem in ("category_f1", "ablation_deltas", "cost_vs_f1", "recall_vs_budget"):
        assert mpimg.imread(out / "plots" / f"{stem}.png").std() > 0.01


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.filterwarnings("ignore:(?s).*validated against ConfigStore schema with the same name")
@pytest.mark.usefixtures("locomo_path")
def test_submitit_local_sweep_runs_both_jobs_through_submitit(tmp_path: Path) -> None:
    """The cluster path for real: submitit's local executor pickles each job, starts it in its own
    process and collects its result exactly as on SLURM, minus sbatch. Both runs' items and metrics must be
    complete, and submitit's own records (submitted job, result pickle) must exist for each job."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    results = tmp_path / "results"
    proc = run_sweep(
        results,
        [
            "experiment_name=submitit_demo",
            "dataset=locomo-tiny",
            "backbone=scripted",
            "embedder=hashing",
            "method=rag_bm25,rag_dense",
            "hydra/launcher=submitit_local",
        ],
        timeout=600,
    )
    assert "Submitit 'local' sweep output dir" in proc.stdout + proc.stderr
    assert "ConfigStore schema" not in proc.stderr  # Hydra's harmless schema-matching note is not shown
    sweep = results / "runs" / "submitit_demo"
    for method in ("rag_bm25", "rag_dense"):
        run = sweep / "locomo-tiny" / "scripted" / "amem" / method / "none"
        items = [json.loads(line) for line in (run / "items.jsonl").read_text().splitlines()]
        assert len(items) == 8 and len({r["item_id"] for r in items}) == 8
        assert all(r["answer"] is not None and "f1" in r["scores"] for r in items)
        metrics = json.loads((run / "metrics.json").read_text())
        assert metrics["run"]["method"] == method and metrics["overall"]["n"] == 8
    jobs = [d for d in (sweep / ".submitit").iterdir() if d.is_dir() and d.name.isdigit()]
    assert len(jobs) == 2
    for job in jobs:
        assert (job / f"{job.name}_submitted.pkl").is_file() and (job / f"{job.name}_0_result.pkl").is_file()

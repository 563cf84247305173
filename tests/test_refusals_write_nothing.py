"""A refused ``memcore-run`` leaves nothing behind: a secret passed as an override is refused before Hydra writes
it anywhere, and a run refused before any work removes the run dir Hydra made for it (never one that was there)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memcore.commands.run import run_main
from memcore.redact import is_secret, redact_config, secret_overrides
from memcore.refused_run import HYDRA_FILES, HYDRA_SUBDIR, remove_refused_run_dir

RETRIEVAL = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.answer=false", "concurrency=1"]
SECRET = "sk-abcdefghijklmnop0123456789"


def _run(tmp_path: Path, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    flags = [a for a in argv if a.startswith("-")]
    overrides = [a for a in argv if not a.startswith("-")]
    monkeypatch.setattr(sys, "argv", ["memcore-run", *flags, "progress=false", "print_table=false", *overrides])
    monkeypatch.chdir(tmp_path)  # a sweep dir or a default results root lands here, where the grep looks
    try:
        run_main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


def _files_holding(root: Path, text: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and text.encode() in p.read_bytes()]


def test_secret_overrides_are_the_key_like_names_with_a_value_that_is_not_a_number() -> None:
    argv = [
        "-m",
        f"++backbone.api_key={SECRET}",
        "+backbone.token=abc123",
        "++eval.judge_server.password=hunter2",
        "++x.client_secret=s3cr3t",
        "++hydra.job.env_set.OPENAI_API_KEY=xyz",
        f"++backbone.extra_body.note=use {SECRET}",
        "backbone.api_key_env=OPENAI_API_KEY",  # names a variable
        "method.k_key=10",  # keywords taken by the keyword channel
        "eval.token_cap=2000",
        "~backbone.api_key",
        "backbone.token=null",
    ]
    assert secret_overrides(argv) == [
        "backbone.api_key",
        "backbone.token",
        "eval.judge_server.password",
        "x.client_secret",
        "hydra.job.env_set.OPENAI_API_KEY",
        "backbone.extra_body.note",
    ]
    assert not is_secret("k_key", 10) and is_secret("api_key", "abc") and not is_secret("api_key_env", "X")
    assert redact_config({"method": {"k_key": 10}, "backbone": {"api_key": "abc"}}) == {
        "method": {"k_key": 10},
        "backbone": {"api_key": "***"},
    }


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize(
    "override",
    [
        f"++backbone.api_key={SECRET}",
        f"++backbone.extra_body.api_key={SECRET}",  # a key the schema would accept: the run would have gone ahead
        f"++eval.judge_server.password={SECRET}",
    ],
    ids=["refused-by-schema", "accepted-by-schema", "password"],
)
@pytest.mark.parametrize("mode", [[], ["-m"]], ids=["run", "sweep"])
def test_a_secret_override_is_refused_before_anything_is_written(
    tmp_path: Path, override: str, mode: list[str], monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    root = tmp_path / "results"
    code = _run(tmp_path, [*mode, *RETRIEVAL, f"paths.root={root}", override], monkeypatch)
    out, err = capfd.readouterr()
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "=***" in line and "api_key_env" in line
    assert SECRET not in out + err
    assert not root.exists()
    assert _files_holding(tmp_path, SECRET) == []


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize(
    ("override", "fragment"),
    [
        ("dataset.item_ids=[]", "dataset.item_ids=[]"),
        ("eval.token_cap=-3", "eval.token_cap=-3"),
        ("concurrency=0", "concurrency=0"),
    ],
    ids=["empty-selection", "context-tokens", "concurrency"],
)
def test_a_refused_run_leaves_no_run_dir_and_a_refused_rerun_keeps_the_run(
    tmp_path: Path, override: str, fragment: str, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    root = tmp_path / "results"
    code = _run(tmp_path, [*RETRIEVAL, f"paths.root={root}", override], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    assert err.strip().splitlines()[-1].startswith(f"error: {fragment}")
    assert sorted(root.rglob("*")) == []  # no run dir, no .hydra/, no cli.log, no empty parents

    # a run dir that holds a run keeps every file (a refused rerun moves, removes and adds nothing)
    run_dir = tmp_path / "run"
    assert _run(tmp_path, [*RETRIEVAL, f"paths.root={root}", f"hydra.run.dir={run_dir}"], monkeypatch) == 0
    before = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.parent.name != ".hydra"}
    capfd.readouterr()
    code = _run(tmp_path, [*RETRIEVAL, f"paths.root={root}", f"hydra.run.dir={run_dir}", override], monkeypatch)
    assert code == 2
    after = {p: p.read_bytes() for p in run_dir.rglob("*") if p.is_file() and p.parent.name != ".hydra"}
    assert after.keys() == before.keys()
    assert {p: b for p, b in after.items() if p.suffix != ".log"} == {
        p: b for p, b in before.items() if p.suffix != ".log"
    }
    (log,) = [p for p in after if p.suffix == ".log"]
    assert after[log].startswith(before[log]) and fragment.encode() in after[log][len(before[log]) :]


@pytest.mark.usefixtures("locomo_path")
def test_a_refused_job_of_a_sweep_leaves_no_run_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    root = tmp_path / "results"
    code = _run(tmp_path, ["-m", *RETRIEVAL, f"paths.root={root}", "concurrency=0"], monkeypatch)
    assert code == 2, capfd.readouterr().err
    # the sweep dir keeps Hydra's record of the sweep (multirun.yaml); no job dir is left
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "runs",
        "runs/default",
        "runs/default/multirun.yaml",
    ]


def test_only_a_run_dir_holding_nothing_but_hydras_files_is_removed(tmp_path: Path) -> None:
    root = tmp_path / "results"
    run_dir = root / "runs" / "x" / "run"
    (run_dir / HYDRA_SUBDIR).mkdir(parents=True)
    for name in HYDRA_FILES:
        (run_dir / HYDRA_SUBDIR / name).write_text("{}")
    (root / "runs" / "other").mkdir()
    (run_dir / "items.jsonl").write_text("{}\n")  # an earlier run's
    assert not remove_refused_run_dir(run_dir, root)
    assert (run_dir / "items.jsonl").exists() and (run_dir / HYDRA_SUBDIR / "config.yaml").exists()
    (run_dir / "items.jsonl").unlink()
    (run_dir / HYDRA_SUBDIR / "notes.txt").write_text("mine")  # not Hydra's
    assert not remove_refused_run_dir(run_dir, root)
    (run_dir / HYDRA_SUBDIR / "notes.txt").unlink()
    assert remove_refused_run_dir(run_dir, root)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == ["runs", "runs/other"]

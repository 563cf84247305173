"""A refused ``memcore-run`` leaves nothing behind: a secret passed as an override is refused before Hydra writes
it anywhere."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from memcore.cli import run_main
from memcore.redact import is_secret, redact_config, secret_overrides

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
        "eval.context_tokens=2000",
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

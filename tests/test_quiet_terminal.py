"""A quiet terminal: no third-party DEBUG lines, one line per error, progress bars only on a terminal, retries
summarised once a minute, Hydra's schema-matching note hidden, retrieval-only runs filed without a backbone."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from memcore.commands.run import (
    SCHEMA_MATCH_WARNING,
    _backbone_dir,
    earlier_run_dir,
    hide_schema_match_warning,
    point_to_earlier_run,
    quiet_handlers,
)
from memcore.llm.backbone import RetryLog
from memcore.methods import backbone_label, run_uses_llm
from memcore.pipeline.progress import StageBars
from tests.support import CHILD_OF_TEST, REPO


def test_a_library_that_sets_its_logger_to_debug_prints_nothing_unless_verbose() -> None:
    import bm25s  # noqa: F401  (its import sets logging.getLogger("bm25s") to DEBUG)

    lib = logging.getLogger("bm25s")
    assert lib.level == logging.DEBUG  # why a logger level alone cannot keep it quiet
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        quiet_handlers(verbose=False)
        lib.debug("Building index from IDs objects")
        lib.warning("a real warning")
        assert stream.getvalue() == "a real warning\n"
        quiet_handlers(verbose=True)
        lib.debug("Building index from IDs objects")
        assert stream.getvalue().endswith("Building index from IDs objects\n")
    finally:
        root.removeHandler(handler)


@pytest.mark.e2e  # launches a process
def test_an_error_is_one_line_on_the_terminal_and_kept_in_the_run_log(tmp_path: Path) -> None:
    """A refused run in a run dir that already holds a file of the user's keeps it, and its log gets the error; a
    fresh run dir a refusal made holds only Hydra's files and is removed (memcore/refused_run.py)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "notes.txt").write_text("the user's\n")
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "method=rag_bm25", "dataset=locomo-tiny", "embedder=hashing",
        "eval.answer=false", f"dataset.path={tmp_path / 'missing.json'}", f"paths.root={tmp_path / 'root'}",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO, **CHILD_OF_TEST)
    assert proc.returncode == 2
    said = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "missing.json" in ln]
    assert len(said) == 1 and said[0].startswith("error: dataset.path")
    assert "[ERROR]" not in proc.stderr
    (log,) = run_dir.glob("*.log")
    assert "[ERROR] memcore: dataset.path" in log.read_text()
    assert (run_dir / "notes.txt").read_text() == "the user's\n"
    fresh = tmp_path / "fresh"
    cmd[-1] = f"hydra.run.dir={fresh}"
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=REPO, **CHILD_OF_TEST)
    assert proc.returncode == 2 and not fresh.exists()


def test_progress_bars_only_on_a_terminal(caplog) -> None:
    piped = StageBars(True, turns=4, items=2, log_every_s=0.0, tty=False)
    assert not piped.drawn
    with caplog.at_level(logging.INFO, logger="memcore.pipeline.progress"):
        piped.build(4)
    assert [r.getMessage()[:38] for r in caplog.records] == ["progress: build 4/4 turns, qa 0/2 item"]
    on_tty = StageBars(True, turns=4, items=2, tty=True)
    assert on_tty.drawn
    on_tty.close()
    assert not StageBars(False, turns=4, items=2, tty=True).drawn  # progress=false wins


def test_retries_are_summarised_once_a_minute(caplog) -> None:
    now = [0.0]
    retries = RetryLog("http://h/v1", clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="memcore.llm.backbone"):
        for i in range(200):  # 200 retries over 100 s: the first, the note, then one summary at 60 s
            now[0] = i * 0.5
            retries.retry("answer", "429" if i % 2 else "drop", "HTTP 429", 1, 7, 1.0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 3
    assert lines[0].startswith("answer call to http://h/v1 failed (HTTP 429); retry 1/7")
    assert lines[1] == "further retries against http://h/v1 are summarised once a minute"
    # retries 1..120 (t = 0.5 .. 60 s) are summarised at t = 60 s
    assert (
        lines[2] == "120 retries against http://h/v1 in the last 60 s (answer 429: 60, answer drop: 60); last: HTTP 429"
    )


def test_hydras_schema_matching_note_is_hidden() -> None:
    text = "\n'hydra/launcher/submitit_local' is validated against ConfigStore schema with the same name.\nmore"
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        hide_schema_match_warning()
        warnings.warn(text, UserWarning, stacklevel=1)
        warnings.warn("another warning", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["another warning"]
    assert SCHEMA_MATCH_WARNING.startswith(r"\s*")  # Hydra's message starts with a newline


@pytest.mark.parametrize(
    ("overrides", "label"),
    [
        (["method=rag_hybrid", "eval.answer=false"], "none"),
        (["method=memcore-cheap", "eval.answer=false"], "none"),
        (["method=full_context", "eval.answer=false"], "none"),
        (["method=memcore", "eval.answer=false"], "local"),  # its retrieval decomposes the query with the LLM
        (["method=amem", "eval.answer=false"], "local"),  # its build calls the LLM
        (["method=rag_hybrid"], "local"),  # answers
        (["method=rag_hybrid", "eval.answer=false", "eval.judge=true"], "local"),
    ],
)
def test_a_run_that_calls_no_llm_is_filed_without_a_backbone(compose, overrides: list[str], label: str) -> None:
    cfg = compose(["backbone=local", *overrides])
    assert backbone_label(cfg) == label and run_uses_llm(cfg) == (label != "none")
    assert _backbone_dir(_root_=cfg) == label


def test_an_unknown_method_keeps_the_backbone_in_the_path_and_fails_in_the_run(compose) -> None:
    cfg = compose(["backbone=local", "eval.answer=false"])
    cfg.method.name = "no-such-method"
    assert _backbone_dir(_root_=cfg) == "local"


@pytest.mark.e2e  # launches a process
@pytest.mark.usefixtures("locomo_path")
def test_a_retrieval_only_run_dir_and_title_name_no_backbone(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "method=rag_bm25", "dataset=locomo-tiny", "embedder=hashing",
        "eval.answer=false", f"paths.root={tmp_path}", "progress=false",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path, **CHILD_OF_TEST)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = tmp_path / "runs" / "default" / "locomo-tiny" / "none" / "amem" / "rag_bm25" / "none"
    assert (run / "metrics.json").is_file()
    assert "### rag_bm25 / none / - / locomo-tiny (amem protocol)" in proc.stdout
    assert (run / "table.md").read_text().startswith("### rag_bm25 / none / - / locomo-tiny")
    assert "DEBUG" not in proc.stderr


def test_a_run_filed_under_its_backbone_before_is_pointed_to(compose, tmp_path: Path, caplog) -> None:
    cfg = compose(["backbone=local", "method=rag_hybrid", "eval.answer=false"])
    new = tmp_path / "runs" / "default" / "locomo" / "none" / "amem" / "rag_hybrid" / "none"
    old = tmp_path / "runs" / "default" / "locomo" / "local" / "amem" / "rag_hybrid" / "none"
    assert earlier_run_dir(cfg, new) is None  # nothing recorded there
    old.mkdir(parents=True)
    (old / "run_state.json").write_text("{}")
    assert earlier_run_dir(cfg, new) == old
    with caplog.at_level(logging.WARNING, logger="memcore"):
        point_to_earlier_run(cfg, new)
    assert f"hydra.run.dir={old}" in caplog.text
    new.mkdir(parents=True)
    (new / "run_state.json").write_text("{}")
    assert earlier_run_dir(cfg, new) is None  # the new dir has its own run
    answered = compose(["backbone=local", "method=rag_hybrid"])
    assert earlier_run_dir(answered, old) is None

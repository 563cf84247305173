"""Committed tables follow from committed items (issue 28): the equal-token table of results/measured/equal_tokens
is regenerated from its committed per-item runs with the command its note gives, and must match byte for byte."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memcore.report.cli import main as report_main
from tests.support import REPO

EQUAL_TOKENS = REPO / "results" / "measured" / "equal_tokens"
RUNS = [f"runs/eqtok_{b}{w}" for w in ("", "_whole") for b in (250, 500, 1000, 2000)]


@pytest.mark.skipif(not (EQUAL_TOKENS / "runs").is_dir(), reason="no committed equal-token runs")
def test_the_equal_token_tables_regenerate_from_their_committed_items(tmp_path: Path) -> None:
    cwd = Path.cwd()
    os.chdir(EQUAL_TOKENS)  # the note's command runs there, so runs.txt names the runs relative to it
    try:
        rc = report_main(
            [*RUNS, "--out", str(tmp_path), "--no-reference", "--layout", "detail", "--no-plots", "--quiet"]
        )
    finally:
        os.chdir(cwd)
    assert rc == 0
    for name in ("equal_tokens.md", "equal_tokens.csv", "equal_tokens_by_category.md"):
        committed = (EQUAL_TOKENS / "report" / name).read_text()
        assert (tmp_path / name).read_text() == committed, f"{name} does not follow from the committed items"


FIRST_RUN = REPO / "results" / "measured" / "first_run" / "runs"


@pytest.mark.skipif(not FIRST_RUN.is_dir(), reason="no committed first-run archive")
def test_the_committed_first_run_re_derives_from_its_items() -> None:
    from memcore.report.archive import rederive
    from memcore.report.collect import find_run_dirs
    from tests.support import data_file_or_skip

    data_file_or_skip()
    runs = find_run_dirs([FIRST_RUN])
    assert runs
    for run in runs:
        assert rederive(run) == [], run


MEM0_ALIGNMENT = REPO / "results" / "measured" / "baseline_alignment_mem0"


@pytest.mark.skipif(not (MEM0_ALIGNMENT / "runs").is_dir(), reason="no committed mem0 alignment run")
def test_the_mem0_alignment_table_regenerates_from_its_replayed_items(tmp_path: Path) -> None:
    cwd = Path.cwd()
    os.chdir(MEM0_ALIGNMENT)
    try:
        rc = report_main(
            ["runs/alignment", "--layout", "detail", "--no-plots", "--formats", "md,csv", "--out", str(tmp_path)]
            + ["--quiet"]
        )
    finally:
        os.chdir(cwd)
    assert rc == 0
    for name in ("detail_table.md", "detail_table.csv"):
        assert (tmp_path / name).read_text() == (MEM0_ALIGNMENT / name).read_text(), name

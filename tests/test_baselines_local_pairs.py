"""experiments.measure.baselines_local_pairs: the manifest of the local baseline tables and its CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.measure.baselines_local_pairs import GROUPS, PAIRS, Pair, main
from tests.test_paired_runs import A, B, _run


def test_each_pair_names_two_distinct_runs_and_labels_under_a_known_group() -> None:
    assert GROUPS == ("memgpt", "lightmem", "fluxmem")
    assert len({p.table for p in PAIRS}) == len(PAIRS)
    for pair in PAIRS:
        assert pair.run_a != pair.run_b and pair.label_a != pair.label_b
    runs = Path("archive")
    a, b = PAIRS[0].run_dirs(runs)
    assert a == runs / "i38_local/locomo-mini/local/amem/memgpt-full-window/none"
    assert b == runs / "i38_local/locomo-mini/local/amem/memgpt/none"


def test_the_cli_writes_the_table_of_a_group_whose_runs_are_archived(tmp_path: Path, capsys) -> None:
    pair = next(p for p in PAIRS if p.group == "fluxmem")
    for run_dir, items in zip(pair.run_dirs(tmp_path / "runs"), (A, B), strict=True):
        run_dir.parent.mkdir(parents=True)
        (_run(run_dir.parent, run_dir.name, items, calls=3, evictions=0) / "metrics.json").write_text("{}")
    out = tmp_path / "tables"  # created by the CLI
    assert main(["--runs", str(tmp_path / "runs"), "--out", str(out), "--pairs", "fluxmem"]) == 0
    assert "| facts | **total** |" in (out / "fluxmem.md").read_text()
    assert main(["--runs", str(tmp_path / "runs"), "--out", str(out), "--pairs", "memgpt"]) == 2
    err = capsys.readouterr().err
    assert "no table memgpt.md: a run of the pair is not archived" in err and not (out / "memgpt.md").exists()


def test_an_unknown_group_is_one_line_with_the_known_ones(tmp_path: Path, capsys) -> None:
    assert main(["--runs", str(tmp_path), "--out", str(tmp_path), "--pairs", "memgpt", "mem0"]) == 2
    assert capsys.readouterr().err.strip() == "error: unknown pair group mem0; known: memgpt, lightmem, fluxmem"


@pytest.mark.parametrize("pair", PAIRS, ids=[p.table for p in PAIRS])
def test_argv_writes_into_the_out_dir(pair: Pair) -> None:
    argv = pair.argv(Path("r"), Path("o"))
    assert argv[-2:] == ["--out", str(Path("o") / pair.table)]
    assert argv[argv.index("--label-a") + 1] == pair.label_a

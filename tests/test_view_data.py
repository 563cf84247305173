"""memcore-view without a browser: the data the site is built from, and the command's handling of bad input."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from memcore.commands.report import main as report_main
from memcore.commands.shared import view_command, viewer_hint
from memcore.commands.view import main
from memcore.eval.aggregate import format_table
from memcore.eval.bootstrap import paired_delta_ci
from memcore.itemlog import LoggedItem
from memcore.view.data import (
    INDEX_COLUMNS,
    build_site_data,
    dataset_config,
    decode_ids,
    encode_ids,
    encode_ints,
    gold_ranks,
    load_view_run,
    run_lengths,
)
from memcore.view.site import MARKER, _js, find_plots
from tests.support import CHILD_OF_TEST

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "results/measured/first_run/runs/quickstart/locomo-quick/local-small/amem/memcore/none"
QUICK = REPO / "results/measured/rehearsal_quick/runs"
QUICK_FULL = QUICK / "paper_main/rehearsal-quick/gpt-4o-mini/amem/full_context/none"
QUICK_MEMCORE = QUICK / "paper_main/rehearsal-quick/gpt-4o-mini/amem/memcore/none"


def test_encode_ids_round_trip_with_runs_and_unknown_ids() -> None:
    turns = [f"D1:{i}" for i in range(1, 11)]
    index = {t: i for i, t in enumerate(turns)}
    ids = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:7", "D9:9", "D1:8", "D1:5", "D1:6"]
    enc = encode_ids(ids, index)
    assert enc == [[0, 3], 6, "D9:9", 7, 4, 5]
    assert decode_ids(enc, turns) == ids
    assert encode_ints(list(range(0, 374))) == [[0, 373]]


def test_run_lengths() -> None:
    assert run_lengths(["fifo", "fifo", "core", "fifo"]) == [["fifo", 2], ["core", 1], ["fifo", 1]]
    assert run_lengths([]) == []


def test_gold_ranks_rank_tokens_before_and_missing() -> None:
    item = LoggedItem(
        evidence=["D1:5", "D2:1", "D3:3", "D4:4"],
        notes=[
            {"dia_ids": ["D1:1"], "tokens": 40},
            {"dia_ids": ["D1:2", "D1:5"], "tokens": 60},
            {"dia_ids": ["D1:5", "D2:1"], "tokens": 10},
        ],
        retrieved_dia_ids=["D1:1", "D1:2", "D1:5", "D2:1", "D4:4"],
        extra={"round1_dia_ids": ["D3:3"]},
    )
    ranks = {g["dia_id"]: g for g in gold_ranks(item)}
    assert (ranks["D1:5"]["rank"], ranks["D1:5"]["tokens_before"]) == (2, 40)
    assert (ranks["D2:1"]["rank"], ranks["D2:1"]["tokens_before"]) == (3, 100)
    assert ranks["D3:3"]["rank"] is None and ranks["D3:3"]["in_round1"] and not ranks["D3:3"]["in_retrieved"]
    assert ranks["D4:4"]["rank"] is None and ranks["D4:4"]["in_retrieved"]
    assert all(g["n_notes"] == 3 for g in ranks.values())


def test_site_data_of_the_quickstart_run(locomo_path: Path) -> None:
    vr = load_view_run(QUICKSTART)
    data = build_site_data([vr])
    run = data.runs[0]
    assert run["cols"] == list(INDEX_COLUMNS)
    assert len(run["rows"]) == len(vr.items) == 4
    # The overview's table is memcore-run's own table of the run's metrics, not a recomputation.
    assert run["table"] == format_table(vr.run.metrics, f"{vr.label} on {vr.run.dataset}")
    turns = [t[0] for t in data.convs["conv-26"]["turns"]]
    assert turns[0] == "D1:1" and all(t.startswith("D1:") for t in turns)  # the slice holds session 1 only
    chunk = data.details[0]["conv-26"]
    for item, row in zip(vr.items, run["rows"]):
        rec = dict(zip(run["cols"], row))
        assert (
            rec["id"] == item["item_id"]
            and rec["q"] == item["question"]
            and rec["f1"] == pytest.approx(item["scores"]["f1"], abs=1e-4)
        )
        detail = chunk["items"][item["item_id"]]
        refs = [r for e in detail["n"] for r in (range(e[0], e[1] + 1) if isinstance(e, list) else [e])]
        notes = [chunk["notes"][r] for r in refs]
        assert [n[0] for n in notes] == [n["note_id"] for n in item["notes"]]
        assert [decode_ids(n[1], turns) for n in notes] == [n["dia_ids"] for n in item["notes"]]
        assert detail["ev"] == item["evidence"]
        assert detail["extra"]["rounds_log"] == item["extra"]["rounds_log"]


def test_two_run_deltas_are_the_reports_paired_intervals(locomo_path: Path) -> None:
    a, b = load_view_run(QUICK_FULL), load_view_run(QUICK_MEMCORE)
    data = build_site_data([a, b])
    assert data.diff is not None
    rows = {r["group"]: r for r in data.diff["deltas"]}
    want = paired_delta_ci(b.items, a.items, "f1", n_boot=1000, seed=0, alpha=0.05, categories=(1,))
    assert want is not None
    assert rows["1 multi-hop"]["f1"] == pytest.approx([100 * want[0], 100 * want[1], 100 * want[2], want[3]])
    assert "recall" in rows["overall"] and "| full_context" in data.diff["detail"]


def test_view_command_line() -> None:
    assert view_command(["a/run"], "a/run/view") == "memcore-view a/run --out a/run/view"


# ------------------------------------------------------------------------------------------------ bad input
def _live_copy(tmp_path: Path) -> Path:
    """The quickstart run as a live run dir (plain items.jsonl)."""
    run = tmp_path / "run"
    shutil.copytree(QUICKSTART, run)
    with gzip.open(run / "items.jsonl.gz", "rt") as fh:
        (run / "items.jsonl").write_text(fh.read())
    (run / "items.jsonl.gz").unlink()
    return run


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], needle: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: ") and needle in err, err
    return err


def _no_leftovers(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if p.name.endswith(".tmp") or ".old-" in p.name]


def test_run_without_items(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _live_copy(tmp_path)
    (run / "items.jsonl").write_text("")
    _fails([str(run), "--out", str(tmp_path / "site")], capsys, "no items")
    assert not (tmp_path / "site").exists()
    _no_leftovers(tmp_path)


def test_torn_item_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _live_copy(tmp_path)
    text = (run / "items.jsonl").read_text()
    (run / "items.jsonl").write_text(text[: len(text) - 40])
    _fails([str(run), "--out", str(tmp_path / "site")], capsys, "torn")
    (run / "items.jsonl").write_text("".join(text.splitlines(keepends=True)[:3]))  # whole lines, one missing
    _fails([str(run), "--out", str(tmp_path / "site")], capsys, "metrics.json counts 4")
    assert not (tmp_path / "site").exists()
    _no_leftovers(tmp_path)


def test_runs_on_different_slices(tmp_path: Path, capsys: pytest.CaptureFixture[str], locomo_path: Path) -> None:
    _fails([str(QUICKSTART), str(QUICK_MEMCORE), "--out", str(tmp_path / "site")], capsys, "different slices")
    assert not (tmp_path / "site").exists()


def test_unwritable_or_foreign_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    _fails([str(QUICKSTART), "--out", str(blocker / "site")], capsys, "cannot be written")
    _fails([str(QUICKSTART), "--out", str(blocker)], capsys, "is a file")
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    _fails([str(QUICKSTART), "--out", str(foreign)], capsys, "not a memcore-view site")
    assert (foreign / "keep.txt").read_text() == "mine"
    _no_leftovers(tmp_path)


def test_build_then_rebuild_replaces_the_site(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], locomo_path: Path
) -> None:
    out = tmp_path / "site"
    assert main([str(QUICKSTART), "--out", str(out)]) == 0
    assert (out / MARKER).is_file() and (out / "index.html").is_file() and (out / "data/run0.js").is_file()
    (out / "stale.txt").write_text("from an earlier build")
    run = _live_copy(tmp_path)
    (run / "items.jsonl").write_text("")
    assert main([str(run), "--out", str(out)]) == 2  # a failed rebuild keeps the earlier site whole
    assert (out / "stale.txt").exists() and (out / "data/run0.js").is_file()
    assert main([str(QUICKSTART), "--out", str(out)]) == 0
    assert not (out / "stale.txt").exists()
    payload = (out / "data/run0.js").read_text()
    assert payload.startswith("MV.run(0,")
    body = json.loads(payload[len("MV.run(0,") : payload.rindex(")")])
    assert body["n_items"] == 4 and len(body["rows"]) == 4
    assert str(REPO) not in payload  # no machine path in the site
    _no_leftovers(tmp_path)
    capsys.readouterr()


def test_viewer_hint_names_the_runs_or_the_form() -> None:
    assert viewer_hint(["r1"], "out/view") == "look at it item by item: memcore-view r1 --out out/view"
    assert viewer_hint(["r1", "r2"], "v").endswith("memcore-view r1 r2 --out v")
    assert "memcore-view RUN [RUN2] --out v" in viewer_hint(["a", "b", "c"], "v")


def test_memcore_report_closes_with_the_viewer_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "report"
    assert report_main([str(QUICKSTART), "--out", str(out), "--no-plots", "--no-reference", "--n-boot", "10"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("look at it item by item: memcore-view ") and "first_run/runs/quickstart" in last
    assert last.endswith(f" --out {out / 'view'}")


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_memcore_run_closes_with_the_viewer_command_that_works(tmp_path: Path, locomo_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "progress=false", "dataset=locomo-tiny", "backbone=scripted",
        "embedder=hashing", "method=rag_bm25", f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'run'}",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=REPO, env=env, **CHILD_OF_TEST)
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("look at it item by item: memcore-view "), last
    args = last.split("memcore-view ", 1)[1].split()
    view = [sys.executable, "-m", "memcore.commands.view", *args]
    done = subprocess.run(view, capture_output=True, text=True, timeout=240, cwd=REPO, env=env, **CHILD_OF_TEST)
    assert done.returncode == 0, done.stderr[-2000:]
    assert (Path(args[-1]) / "index.html").is_file()


def test_dataset_config_fills_an_old_archives_sparse_block() -> None:
    from omegaconf import OmegaConf

    merged = dataset_config(OmegaConf.create({"dataset": {"name": "locomo-quick", "max_qa": 3}}))
    assert merged.name == "locomo-quick" and merged.max_qa == 3
    assert merged.path is None and merged.max_sessions == 1 and list(merged.conversations) == ["conv-26"]


@pytest.mark.e2e  # launches a process: make test, not make test-fast
def test_serve_answers_on_localhost(tmp_path: Path, locomo_path: Path) -> None:
    import re
    import subprocess
    import sys
    import urllib.request

    cmd = [
        sys.executable,
        "-u",
        "-m",
        "memcore.commands.view",
        str(QUICKSTART),
        "--out",
        str(tmp_path / "s"),
        "--serve",
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=REPO, **CHILD_OF_TEST
    )
    try:
        url = None
        for line in proc.stdout or []:
            m = re.search(r"serving on (http://127\.0\.0\.1:\d+/)", line)
            if m:
                url = m.group(1)
                break
        assert url, "memcore-view --serve printed no URL"
        with urllib.request.urlopen(url + "data/run0.js", timeout=30) as resp:
            assert resp.read().startswith(b"MV.run(0,")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_data_files_hold_no_nan() -> None:
    assert _js("MV.x", {"a": [float("nan"), 1.5, float("inf")], "b": "t"}) == 'MV.x({"a":[null,1.5,null],"b":"t"});\n'


def test_committed_example_uses_the_current_page() -> None:
    """results/examples/view is made by ``python -m experiments.view_example``; rerun it after changing the page."""
    static = REPO / "memcore/view/static"
    for site in ("quickstart", "two_runs"):
        for name in ("index.html", "app.js", "style.css"):
            assert (REPO / "results/examples/view" / site / name).read_bytes() == (static / name).read_bytes(), name


def test_corrupt_gzipped_item_log(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(QUICKSTART, run)
    data = (run / "items.jsonl.gz").read_bytes()
    (run / "items.jsonl.gz").write_bytes(data[: len(data) // 2])
    _fails([str(run), "--out", str(tmp_path / "site")], capsys, "not a readable item log")
    assert not (tmp_path / "site").exists()
    _no_leftovers(tmp_path)


def test_missing_dataset_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMCORE_DATA", str(tmp_path / "no-such-dir"))
    _fails([str(QUICKSTART), "--out", str(tmp_path / "site")], capsys, "cannot load the run's LoCoMo slice")
    assert not (tmp_path / "site").exists()
    _no_leftovers(tmp_path)


def test_plots_come_from_a_report_that_names_the_run(tmp_path: Path) -> None:
    run = tmp_path / "exp/runs/a/locomo/m/none"
    run.mkdir(parents=True)
    plots = tmp_path / "exp/report/plots"
    plots.mkdir(parents=True)
    (plots / "category_f1.png").write_bytes(b"png")
    assert find_plots(run) == []  # a report of other runs
    (tmp_path / "exp/report/runs.txt").write_text("runs/b/locomo/m/none\nruns/a/locomo/m/none\n")
    assert find_plots(run) == [plots / "category_f1.png"]

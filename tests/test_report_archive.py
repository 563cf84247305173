"""Committed runs: an archived run names no machine path, is byte-stable, reads like a live run in the
report, and its metrics re-derive from its items; a changed item is caught."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from experiments.measure.archive_rehearsal import archive
from memcore.commands.archive import main
from memcore.commands.report import main as report_main
from memcore.itemlog import ITEMS_GZ, read_items, read_run_items
from memcore.llm.scripted import ScriptedBackbone
from memcore.report.archive import archive_name, archive_run, rederive
from memcore.report.collect import load_run
from memcore.runner import run_config
from tests.fakes import JudgeLLM

SLICE = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "concurrency=1", "eval.audited=true"]


@pytest.fixture()
def finished_run(tmp_path: Path, compose, locomo_path: Path, audit_path: Path) -> Path:
    answers = ScriptedBackbone(JudgeLLM(answer="beagle", correct=lambda gold: True))
    run_config(compose(SLICE), tmp_path / "run", backbone_override=answers)
    return tmp_path / "run"


def test_an_archived_run_names_no_machine_path_and_reads_like_the_live_one(finished_run: Path, tmp_path: Path) -> None:
    out = archive_run(finished_run, tmp_path / "archive" / "one", roots=[tmp_path / "results"])
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml", "cost.json", ITEMS_GZ, "metrics.json", "stats.json"]
    texts = [(out / n).read_text() for n in ("config.yaml", "cost.json", "metrics.json", "stats.json")]
    texts.append(gzip.decompress((out / ITEMS_GZ).read_bytes()).decode())
    for text in texts:
        assert str(tmp_path) not in text
    assert "<root>" in (out / "config.yaml").read_text()
    live, packed = load_run(finished_run), load_run(out)
    assert [r["item_id"] for r in packed.items] == [r["item_id"] for r in live.items]
    assert [r["scores"] for r in packed.items] == [r["scores"] for r in live.items]
    assert packed.metrics["overall"] == live.metrics["overall"]


def test_archiving_is_byte_stable(finished_run: Path, tmp_path: Path) -> None:
    a = archive_run(finished_run, tmp_path / "a")
    b = archive_run(finished_run, tmp_path / "b")
    assert (a / ITEMS_GZ).read_bytes() == (b / ITEMS_GZ).read_bytes()


def test_metrics_re_derive_from_the_archived_items_and_a_changed_item_is_caught(
    finished_run: Path, tmp_path: Path
) -> None:
    out = archive_run(finished_run, tmp_path / "archive", roots=[tmp_path / "results"])
    assert rederive(out) == []
    assert main(["--verify", str(out)]) == 0
    items = read_run_items(out)
    items[0]["scores"] = {k: (1.0 if v is not None else v) for k, v in items[0]["scores"].items()}
    items[0]["recall"] = 0.0 if items[0].get("recall") else items[0].get("recall")
    body = "".join(json.dumps(r) + "\n" for r in items).encode()
    (out / ITEMS_GZ).write_bytes(gzip.compress(body, mtime=0))
    assert "overall" in rederive(out)
    assert main(["--verify", str(out)]) == 1


def test_a_slim_archive_drops_unread_fields_and_still_re_derives_and_reports_the_same(
    finished_run: Path, tmp_path: Path
) -> None:
    full = archive_run(finished_run, tmp_path / "full")
    slim = archive_run(finished_run, tmp_path / "slim", slim=True)
    slim_items = read_run_items(slim)
    assert slim_items and all("question" not in r and "prompt_hash" not in r for r in slim_items)
    assert all("rounds_log" not in (r.get("extra") or {}) for r in slim_items)
    assert len((slim / ITEMS_GZ).read_bytes()) < len((full / ITEMS_GZ).read_bytes())
    assert rederive(slim) == []
    assert load_run(slim).metrics == load_run(full).metrics
    assert [r["scores"] for r in slim_items] == [r["scores"] for r in read_run_items(full)]
    tables = []
    for run in (full, slim):
        out = tmp_path / f"report_{run.name}"
        assert (
            report_main([str(run), "--out", str(out), "--no-reference", "--layout", "detail", "--no-plots", "--quiet"])
            == 0
        )
        tables.append((out / "detail_table.md").read_text())
    assert tables[0] == tables[1]


def test_archive_name_keeps_the_layout_below_runs(tmp_path: Path) -> None:
    run = tmp_path / "results" / "runs" / "exp" / "locomo" / "local" / "amem" / "memcore" / "none"
    assert archive_name(run) == Path("exp/locomo/local/amem/memcore/none")
    assert archive_name(tmp_path / "somewhere") == Path("somewhere")


def test_archiving_an_unfinished_run_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert read_items(tmp_path / "none.jsonl") == []


def test_a_rehearsal_work_dir_is_archived_with_no_machine_path(finished_run: Path, tmp_path: Path) -> None:
    """``experiments.measure.archive_rehearsal``: the summary names ``<results>`` for the results dir, the runs
    re-derive; a dir that is not a finished rehearsal is exit 2 and writes nothing."""
    import shutil

    work = tmp_path / "results" / "quick"
    shutil.copytree(finished_run, work / "root" / "runs" / "paper_main" / "run")
    (work / "summary.json").write_text(json.dumps({"log": str(work / "logs" / "paper_main.log"), "ok": True}))
    measured = tmp_path / "measured"
    assert archive(work, "rehearsal_x", measured=measured) == 0
    out = measured / "rehearsal_x"
    assert json.loads((out / "summary.json").read_text())["log"] == "<results>/quick/logs/paper_main.log"
    assert (out / "root" / "runs" / "paper_main" / "run" / ITEMS_GZ).is_file()
    assert str(tmp_path) not in (out / "root" / "runs" / "paper_main" / "run" / "config.yaml").read_text()
    assert archive(tmp_path / "nothing", "rehearsal_y", measured=measured) == 2
    assert not (measured / "rehearsal_y").exists()

"""The typed item log every reader reads (memcore.itemlog), and one policy for a torn or short log: memcore-report,
memcore-view, memcore-archive and ``--verify`` refuse it in one line naming the fix, and a rerun makes it whole."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from memcore import itemlog
from memcore.commands.archive import main as archive_main
from memcore.commands.report import main as report_main
from memcore.commands.view import main as view_main
from memcore.itemlog import (
    ITEMS,
    ITEMS_GZ,
    IncompleteItemLogError,
    ItemLogError,
    LoggedItem,
    read_finished_run,
    read_log,
    read_run_log,
)
from memcore.pipeline.record import ItemRecord
from memcore.runner import run_config

#: A run that calls no LLM: 8 items of locomo-tiny in seconds.
RETRIEVAL = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.answer=false", "concurrency=1"]


def _line(item_id: str, **extra: object) -> str:
    return json.dumps({"item_id": item_id, "category": 1, "scores": {}, **extra}) + "\n"


def test_a_log_reads_as_typed_items_that_are_the_lines_as_written(tmp_path: Path) -> None:
    path = tmp_path / ITEMS
    path.write_text(_line("c#0", recall=0.5, retrieved_dia_ids=["D1:1"], context_tokens=12) + _line("c#1"))
    got = read_log(path)
    assert got.torn_bytes == 0 and [type(r) for r in got.items] == [LoggedItem, LoggedItem]
    first = got.items[0]
    assert (first.item_id, first.category, first.recall, first.retrieved_dia_ids, first.tokens_used) == (
        "c#0",
        1,
        0.5,
        ["D1:1"],
        12,
    )
    assert json.dumps(first) == _line("c#0", recall=0.5, retrieved_dia_ids=["D1:1"], context_tokens=12).strip()
    assert got.items[1].recall is None and got.items[1].extra == {}


def test_the_accessors_read_every_field_the_readers_aggregate_and_the_audited_view_swaps_the_scores() -> None:
    audited = {"gold": "b", "evidence": ["D1:2"], "scores": {"f1": 1.0}, "recall": 1.0, "hit": 1.0}
    item = LoggedItem(
        item_id="c#0", conv_id="c", category=2, question="q?", gold="a", answer="b", evidence=["D1:1"],
        notes=[{"dia_ids": ["D1:1"], "tokens": 3}], scores={"f1": 0.0}, recall=0.0, hit=0.0, audited=audited,
    )  # fmt: skip
    assert (item.question, item.gold, item.answer, item.evidence, item.notes) == (
        "q?", "a", "b", ["D1:1"], [{"dia_ids": ["D1:1"], "tokens": 3}],
    )  # fmt: skip
    view = item.under_audit()
    assert (view.scores, view.recall, view.hit, view.item_id) == ({"f1": 1.0}, 1.0, 1.0, "c#0")
    assert list(view) == list(item) and item.scores == {"f1": 0.0}  # same keys in the same order; item untouched
    plain = LoggedItem(item_id="c#1", category=1)
    assert plain.under_audit() is plain and plain.evidence == [] and plain.notes == [] and plain.judge is None


def test_an_archive_reads_like_the_live_log(tmp_path: Path) -> None:
    (tmp_path / ITEMS_GZ).write_bytes(gzip.compress((_line("c#0") + _line("c#1")).encode(), mtime=0))
    assert [r.item_id for r in read_run_log(tmp_path).items] == ["c#0", "c#1"]
    (tmp_path / ITEMS_GZ).write_bytes(b"not gzip")
    with pytest.raises(ItemLogError, match="not a readable item log"):
        read_run_log(tmp_path)


def test_an_extra_optional_field_is_kept_and_a_declared_one_is_type_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ITEMS
    path.write_text(_line("c#0", answer_tokens=7, vendor_grade="A") + _line("c#1"))
    items = read_log(path).items
    assert items[0].get("vendor_grade") == "A" and items[0].get("answer_tokens") == 7
    assert items[1].get("vendor_grade") is None
    # declared in OPTIONAL_FIELDS: still read the same way, and a value of another type is refused
    monkeypatch.setitem(itemlog.OPTIONAL_FIELDS, "answer_tokens", int)
    assert read_log(path).items[0].get("answer_tokens") == 7
    path.write_text(_line("c#0", answer_tokens="seven"))
    with pytest.raises(ItemLogError, match=r"line 1: answer_tokens is 'seven', not int"):
        read_log(path)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ('["c#0"]\n', "line 1 is not a JSON object"),
        ('{"category": 1}\n', "line 1 has no item_id"),
        (_line("c#0") + '{"item_id": "c#1", "category": "one"}\n', "line 2: category is 'one', not int"),
        ('{"item_id": "c#0", "category": true}\n', "category is True, not int"),
    ],
)
def test_a_line_that_is_not_an_item_names_its_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / ITEMS
    path.write_text(text)
    with pytest.raises(ItemLogError, match=match):
        read_log(path)


def test_a_torn_last_line_is_counted_and_cut_only_on_repair(tmp_path: Path) -> None:
    path = tmp_path / ITEMS
    path.write_text(_line("c#0") + '{"item_id": "c#1", "cat')
    got = read_log(path)
    assert [r.item_id for r in got.items] == ["c#0"] and got.torn_bytes == len('{"item_id": "c#1", "cat')
    assert read_log(path).torn_bytes  # reading leaves the file alone
    assert read_log(path, repair=True).torn_bytes and path.read_text() == _line("c#0")
    assert read_log(path).torn_bytes == 0


def test_a_finished_run_with_a_torn_or_short_log_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / ITEMS
    path.write_text(_line("c#0") + _line("c#1") + '{"item_id": "c#2"')
    with pytest.raises(IncompleteItemLogError, match=r"last line is torn .*rerun the run's command to resume it"):
        read_finished_run(tmp_path, 3)
    path.write_text(_line("c#0") + _line("c#1"))
    with pytest.raises(IncompleteItemLogError, match=r"holds 2 items but metrics.json counts 3.*rerun"):
        read_finished_run(tmp_path, 3)
    assert [r.item_id for r in read_finished_run(tmp_path, 2)] == ["c#0", "c#1"]
    assert len(read_finished_run(tmp_path, None)) == 2  # a run from before metrics.json counted its items


@pytest.fixture
def finished_run(tmp_path: Path, compose, locomo_path: Path) -> Path:
    """A finished retrieval-only run of locomo-tiny's 8 items."""
    run_config(compose(RETRIEVAL), tmp_path / "run")
    return tmp_path / "run"


def _one_error_line(capsys: pytest.CaptureFixture[str], *needles: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err  # no "dropping a torn last line" before the refusal
    for needle in needles:
        assert needle in err, err
    return err


def test_report_view_and_archive_agree_on_a_torn_run_and_a_rerun_makes_it_whole(
    tmp_path: Path, finished_run: Path, compose, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = finished_run
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["n_items"] == 8
    whole = (run_dir / ITEMS).read_bytes()
    (run_dir / ITEMS).write_bytes(whole[:-40])  # the last line torn, as a kill mid-write leaves it
    capsys.readouterr()

    assert report_main([str(run_dir), "--out", str(tmp_path / "report"), "--quiet"]) == 2
    _one_error_line(capsys, "error: ", "the last line is torn", "rerun the run's command to resume it")
    assert not (tmp_path / "report").exists()
    assert view_main([str(run_dir), "--out", str(tmp_path / "site")]) == 2
    _one_error_line(capsys, "error: ", "the last line is torn", "rerun the run's command to resume it")
    assert archive_main([str(run_dir), "--out", str(tmp_path / "archive")]) == 2
    _one_error_line(capsys, "the last line is torn", "rerun the run's command to resume it")
    assert not (tmp_path / "archive").exists()
    assert archive_main(["--verify", str(run_dir)]) == 1
    assert "the last line is torn" in capsys.readouterr().out

    # whole lines but one missing: metrics.json counts 8, the log holds 7
    (run_dir / ITEMS).write_bytes(b"".join(whole.splitlines(keepends=True)[:7]))
    assert report_main([str(run_dir), "--out", str(tmp_path / "report"), "--quiet"]) == 2
    _one_error_line(capsys, "holds 7 items but metrics.json counts 8", "rerun the run's command")
    assert view_main([str(run_dir), "--out", str(tmp_path / "site")]) == 2
    _one_error_line(capsys, "holds 7 items but metrics.json counts 8")
    assert archive_main([str(run_dir), "--out", str(tmp_path / "archive")]) == 2
    _one_error_line(capsys, "holds 7 items but metrics.json counts 8")

    # the fix the line names: rerun the same command; the missing item is redone and every reader agrees again
    (run_dir / ITEMS).write_bytes(whole[:-40])
    run_config(compose(RETRIEVAL), run_dir)
    again = json.loads((run_dir / "metrics.json").read_text())
    assert again["n_items"] == 8 and again["overall"] == metrics["overall"]
    assert report_main([str(run_dir), "--out", str(tmp_path / "report"), "--quiet"]) == 0
    assert archive_main([str(run_dir), "--out", str(tmp_path / "archive")]) == 0
    assert archive_main(["--verify", str(tmp_path / "archive")]) == 0


def test_every_logged_item_of_a_run_is_an_item_record(finished_run: Path) -> None:
    items = read_finished_run(finished_run, 8)
    assert [ItemRecord.from_json(r).to_json() for r in items] == [r.to_json() for r in items]


def test_verify_names_repeated_items_rather_than_a_count(
    finished_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (finished_run / ITEMS).write_text((finished_run / ITEMS).read_text() * 2)
    capsys.readouterr()
    assert archive_main(["--verify", str(finished_run)]) == 1
    assert "items repeat 8 item ids" in capsys.readouterr().out

"""memcore-import end to end on generic files the tests write from LoCoMo itself (one conversation): the run dir it
writes is read by memcore-rescore, memcore-report, memcore-view and memcore-archive --verify like any run; each bad
input is one ``error:`` line naming the file, exit 2, nothing written; an existing run is kept unless --overwrite;
and re-judging prints its calls and price before the first call, rehearsed against memcore-simulate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from memcore.commands.import_ import main as import_main
from memcore.commands.report import main as report_main
from memcore.commands.rescore import main as rescore_main
from memcore.datasets.locomo.loader import load_locomo
from memcore.published.importer import ImportRequest, import_published
from memcore.report.archive import rederive
from memcore.testing.simulator import SimulatorConfig, running_simulator
from memcore.view.site import build as build_view
from tests.support import REPO, data_file_or_skip

CONV = 1  # conv-30: the conversation with the fewest category 1-4 items (81)


@pytest.fixture(scope="module")
def locomo_conv() -> object:
    return load_locomo(data_file_or_skip()).conversations[CONV]


def generic_records(conv: object) -> list[dict]:
    """Every category 1-4 item of ``conv`` answered with its own gold (every third one wrong), graded by a fake
    vendor judge: the grade says correct for the gold answers."""
    out = []
    for n, q in enumerate(x for x in conv.qa if int(x.category) != 5):
        right = n % 3 != 0
        out.append(
            {
                "sample_id": conv.conv_id,
                "qa_index": q.index,
                "answer": str(q.answer) if right else "I do not know",
                "grade": right,
                "question": q.question,
                "judge": "vendor-judge-x",
            }
        )
    return out


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run_import(tmp_path: Path, path: Path, out: Path, *extra: str) -> int:
    return import_main([str(path), "--layout", "jsonl", "--system", "vendor-x", "--out", str(out), *extra])


def test_a_generic_file_becomes_a_run_every_tool_reads(
    locomo_conv: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    records = generic_records(locomo_conv)
    records[4]["question"] = "A question the vendor rephrased?"
    path = write(tmp_path / "answers.jsonl", records)
    out = tmp_path / "runs" / "vendor-x"
    assert run_import(tmp_path, path, out, "--answer-model", "model-y", "--source", "vendor/repo @ abc123") == 0
    printed = capsys.readouterr().out
    for name in ("items.jsonl", "metrics.json", "table.md", "config.yaml", "stats.json", "cost.json"):
        assert (out / name).is_file(), name
    items = [json.loads(line) for line in (out / "items.jsonl").read_text().splitlines()]
    assert len(items) == len(records) == 81
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["run"]["published"]["files"][0]["name"] == "answers.jsonl"  # plain JSON, not a config's repr
    n_right = sum(r["grade"] for r in records)
    assert metrics["published"]["overall_no_adv"]["judge"] == pytest.approx(n_right / 81)
    assert metrics["published"]["judge_name"] == "vendor-judge-x"
    assert all("judge" not in it["scores"] for it in items)  # the vendor's grade is never the harness's J
    assert metrics["run"]["missing_categories"] == [5] and "audited" in metrics
    right = [it for it, r in zip(items, records, strict=True) if r["grade"]]
    assert all(it["scores"]["f1"] == 1.0 for it in right)  # gold answers score 1 against the original gold
    config = yaml.safe_load((out / "config.yaml").read_text())
    pub = config["published"]
    assert pub["answer_model"] == "model-y" and pub["source"] == "vendor/repo @ abc123"
    assert pub["files"][0]["sha256"] and pub["question_mismatches"] == 1
    mismatch = items[4]["item_id"]
    assert pub["question_mismatch_items"] == [mismatch]
    table = (out / "table.md").read_text()
    assert f"differ from the dataset's (mapped by index, never by text): 1 ({mismatch})" in table
    assert "Category 5 is not in the published file" in table and pub["files"][0]["sha256"] in table
    assert "J as published" in printed and "vendor-judge-x" in table

    assert rederive(out) == []  # memcore-archive --verify
    assert rescore_main([str(out), "--out", str(tmp_path / "rescored"), "--protocol", "locomo"]) == 0
    rescored = json.loads((tmp_path / "rescored" / "metrics.json").read_text())
    assert rescored["run"]["protocol"] == "locomo" and rescored["published"] == metrics["published"]
    assert report_main([str(out), "--no-plots", "--quiet", "--out", str(tmp_path / "report")]) == 0
    main_table = (tmp_path / "report" / "main_table.md").read_text()
    assert "vendor-x (published answers)" in main_table and "J as published cat. 1-4" in main_table
    csv_text = (tmp_path / "report" / "main_table.csv").read_text()
    assert (
        "j_published_no_adv" in csv_text
        and "vendor/repo @ abc123" in csv_text
        and pub["files"][0]["sha256"] in csv_text
    )
    site = build_view([out], tmp_path / "site")
    data = "".join(p.read_text() for p in site.rglob("*.js") if p.name != "app.js")
    assert "J as published" in data and '"grade"' in data


@pytest.mark.parametrize(
    ("case", "problem"),
    [
        ("not_json", r"answers.jsonl: line 1 is not JSON"),
        ("duplicate", r"qa_index \d+ of conv-30 repeats"),
        ("out_of_range", r"qa_index 999 is out of range for conv-30"),
        ("no_answer", r"line 1 has no answer field 'answer'"),
        ("other_slice", r"counts that do not match"),
    ],
)
def test_bad_input_is_one_error_line_naming_the_file_and_nothing_is_written(
    locomo_conv: object, tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, problem: str
) -> None:
    records = generic_records(locomo_conv)
    if case == "duplicate":
        records[1]["qa_index"] = records[0]["qa_index"]
    elif case == "out_of_range":
        records[0]["qa_index"] = 999
    elif case == "no_answer":
        del records[0]["answer"]
    elif case == "other_slice":
        records = records[:-3]
    path = write(tmp_path / "answers.jsonl", records)
    if case == "not_json":
        path.write_text("sample_id,qa_index,answer\nconv-30,0,x\n")
    out = tmp_path / "run"
    assert run_import(tmp_path, path, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {path}") and __import__("re").search(problem, err[0])
    assert not out.exists()


def test_an_unknown_layout_says_what_it_meant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "answers.jsonl", [{"sample_id": "conv-30", "qa_index": 0, "answer": "x"}])
    assert import_main([str(path), "--layout", "memobse", "--system", "x", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: unknown layout 'memobse'") and "memobase" in err[0]
    assert not (tmp_path / "run").exists()


def test_an_existing_run_is_never_overwritten_without_overwrite(
    locomo_conv: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path / "answers.jsonl", generic_records(locomo_conv))
    out = tmp_path / "run"
    assert run_import(tmp_path, path, out, "--no-audited") == 0
    before = (out / "items.jsonl").read_bytes()
    capsys.readouterr()
    assert run_import(tmp_path, path, out, "--no-audited") == 2
    assert "already holds a run" in capsys.readouterr().err and (out / "items.jsonl").read_bytes() == before
    assert run_import(tmp_path, path, out, "--no-audited", "--overwrite") == 0
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert len(aside) == 1 and (aside[0] / "items.jsonl").read_bytes() == before


def test_rejudging_prints_calls_and_price_before_any_call_against_the_simulator(
    locomo_conv: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the response cache lives under results/cache
    monkeypatch.setenv("OPENAI_API_KEY", "sk-simulated")
    path = write(tmp_path / "answers.jsonl", generic_records(locomo_conv))
    said: list[tuple[str, int]] = []
    with running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0)) as sim:

        def say(line: str) -> None:
            said.append((line, sim.stats_json()["requests"]))

        req = ImportRequest(
            paths=(path,),
            layout="jsonl",
            system="vendor-x",
            out=tmp_path / "run",
            audited=False,
            judge=True,
            judge_runs=2,
            judge_server={"base_url": sim.base_url},
        )
        result = import_published(req, say=say)
        requests = sim.stats_json()["requests"]
    assert len(said) == 1 and said[0][1] == 0  # printed before the first request
    line = said[0][0]
    assert line.startswith("judge mem0-judge on gpt-4o-mini") and "162 calls" in line and "at list price" in line
    assert requests == 162  # 81 items × 2 runs, as printed
    items = [json.loads(x) for x in (tmp_path / "run" / "items.jsonl").read_text().splitlines()]
    assert all(len(it["scores"]["judge_runs"]) == 2 and "grade" in it["extra"]["published"] for it in items)
    judged = result.metrics["overall_no_adv"]
    assert judged["judge_n_runs"] == 2 and result.metrics["run"]["judge"]["judge_preset"] == "mem0-judge"
    assert result.metrics["published"]["judge_name"] == "vendor-judge-x"  # both, apart


def test_rescoring_an_imported_run_with_the_judge_prints_its_cost_first(
    locomo_conv: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-simulated")
    records = generic_records(locomo_conv)
    records[0]["answer"] = ""  # judged WRONG without a call
    path = write(tmp_path / "answers.jsonl", records)
    assert run_import(tmp_path, path, tmp_path / "run", "--no-audited") == 0
    capsys.readouterr()
    with running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0)) as sim:
        argv = [str(tmp_path / "run"), "--out", str(tmp_path / "judged"), "--judge-preset", "mem0-judge"]
        assert rescore_main([*argv, "--judge-runs", "1", "--judge-server", f"base_url={sim.base_url}"]) == 0
        requests = sim.stats_json()["requests"]
    out = capsys.readouterr().out
    assert "judge mem0-judge on gpt-4o-mini (gpt-4o-mini-2024-07-18): 80 calls" in out and requests == 80
    assert out.index("80 calls") < out.index("###")  # the estimate comes before the table
    metrics = json.loads((tmp_path / "judged" / "metrics.json").read_text())
    assert metrics["overall_no_adv"]["n_judged"] == 81 and metrics["published"]["judge_name"] == "vendor-judge-x"


def test_imported_runs_are_rows_of_the_main_table_beside_the_harness_runs(
    locomo_conv: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.chdir(tmp_path)
    path = write(tmp_path / "answers.jsonl", generic_records(locomo_conv))
    assert run_import(tmp_path, path, tmp_path / "run", "--no-audited") == 0
    harness = REPO / "results/measured/first_run/runs/quickstart/locomo-quick/local-small/amem/memcore/none"
    assert report_main([str(tmp_path / "run"), str(harness), "--no-plots", "--quiet", "--out", "report"]) == 0
    table = (tmp_path / "report" / "main_table.md").read_text()
    rows = [r for r in table.splitlines() if "| ours |" in r]
    assert len(rows) == 2 and any("vendor-x (published answers)" in r for r in rows)
    harness_row = next(r for r in rows if "published answers" not in r)
    assert "| – |" in harness_row  # no J as published for the harness's own run

"""experiments.measure.paired_runs: two runs of one slice, item by item, with usage and memory counters."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from experiments.measure.paired_runs import counters_markdown, main, memory_counters, paired_rows, run_usage
from memcore.itemlog import LoggedItem


def _rec(i: int, cat: int, f1: float, recall: float | None, answer: str) -> LoggedItem:
    return LoggedItem(
        item_id=f"c#{i}",
        conv_id="c",
        category=cat,
        answer=answer,
        scores={"f1": f1, "bleu1": f1 / 2},
        recall=recall,
        hit=None if recall is None else float(recall > 0),
    )


def _run(tmp: Path, name: str, items: list[dict[str, Any]], calls: int, evictions: int) -> Path:
    run = tmp / name
    run.mkdir()
    (run / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in items))
    stage = {"llm_calls": calls, "cached_calls": 1, "prompt_tokens": 100 * calls, "completion_tokens": 7 * calls}
    cost = {"usage": {"by_stage": {"ingest": stage, "answer": dict(stage, llm_calls=2)}}, "memory_build": {}}
    (run / "cost.json").write_text(json.dumps(cost))
    stats = {
        "conversations": {
            "c": {"memory": {"evictions": evictions, "turns": 5, "window_source": "memgpt", "alerted": True}},
            "d": {"memory": {"evictions": 1, "turns": 3}},
        }
    }
    (run / "stats.json").write_text(json.dumps(stats))
    return run


A = [_rec(0, 2, 1.0, 1.0, "7 May"), _rec(1, 4, 0.5, 0.0, "a dog"), _rec(2, 4, 0.0, None, "no")]
B = [_rec(0, 2, 0.5, 0.5, "it was 7 May 2023"), _rec(1, 4, 0.5, 1.0, "a big dog")]  # item 2 unanswered


def test_rows_pair_the_items_both_runs_answered() -> None:
    rows = {r["group"]: r for r in paired_rows(A, B, ("full", "paged"))}
    r = rows["overall 1-4"]
    assert r["n"] == 2
    assert (r["f1_full"], r["f1_paged"]) == (75.0, 50.0)
    assert r["f1_delta"][0] == -25.0
    assert (r["recall_full"], r["recall_paged"]) == (50.0, 75.0)
    assert r["recall_delta"][0] == 25.0
    assert (r["hit_full"], r["hit_paged"]) == (50.0, 100.0)
    assert (r["words_full"], r["words_paged"]) == (2.0, 4.0)
    assert rows["3 open-domain"]["n"] == 0 and rows["3 open-domain"]["f1_full"] is None


def test_usage_and_counters_are_read_from_the_run(tmp_path: Path) -> None:
    run = _run(tmp_path, "a", A, calls=4, evictions=2)
    usage = run_usage(run)
    assert usage["ingest"]["llm_calls"] == 4 and usage["ingest"]["prompt_tokens"] == 400
    assert usage["answer"]["llm_calls"] == 2 and usage["answer"]["parse_failures"] == 0
    assert memory_counters(run) == {"evictions": 3, "turns": 8}  # strings and booleans are not counters


def test_the_cli_writes_markdown_and_json(tmp_path: Path) -> None:
    a, b = _run(tmp_path, "a", A, 4, 0), _run(tmp_path, "b", B, 9, 3)
    out = tmp_path / "cmp.md"
    assert main(["--a", str(a), "--b", str(b), "--label-a", "full", "--label-b", "paged", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| 2 temporal | 1 | 100.00 | 50.00 | -50.00" in text
    assert "| paged | **total** | 11 | 2 | 1,800 | 126 | 0 |" in text
    assert "| evictions | 1 | 4 |" in text
    payload = json.loads(out.with_suffix(".json").read_text())
    assert payload["labels"] == ["full", "paged"] and payload["counters"]["paged"]["evictions"] == 4


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--label-b", "x"], "must differ"), (["--label-b", "y", "--b", "nowhere"], "no answered items")],
)
def test_bad_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    a = _run(tmp_path, "a", A, 4, 0)
    args = ["--a", str(a), "--b", str(a), "--label-a", "x", "--out", str(tmp_path / "o.md"), *extra]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "o.md").exists()


def test_counters_print_whole_numbers_in_full_and_fractions_to_four_digits() -> None:
    text = counters_markdown({"a": {"window": 30000.0, "rate": 0.83142}, "b": {"window": 8192}}, ["window", "rate"])
    assert "| window | 30,000 | 8,192 |" in text
    assert "| rate | 0.8314 | – |" in text

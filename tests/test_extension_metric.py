"""A new metric is one file: added to a copy of the tree as ``memcore/metrics/<name>.py`` and named in
``eval.metrics``, it is scored for every item, aggregated into ``metrics.json``, shown in ``table.md`` and in
``memcore-report``'s tables, with no other file edited. Plus the metric registry's own contracts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from memcore.config import ConfigError
from memcore.eval.aggregate import aggregate, summarize
from memcore.eval.bootstrap import metric_value
from memcore.eval.protocols import get_protocol
from memcore.eval.scoring import score_answer, score_evidence
from memcore.metrics import METRICS, STANDARD_METRICS, Metric, get_metric, resolve_metrics
from memcore.pipeline.score import run_extra_metrics
from memcore.registry import UnknownNameError
from tests.extension_support import copy_tree, edited_files, run_module, write
from tests.support import data_file_or_skip

NEW_METRIC = "memcore/metrics/answer_words.py"
NEW_METRIC_SOURCE = '''"""Answer length in words: how long the answers a method's context leads to are."""

from memcore.metrics import Metric


def answer_words(prediction: str, gold: str, category: int) -> float:
    return float(len(prediction.split()))


METRIC = Metric(
    name="answer_words",
    label="Answer words",
    target="answer",
    score=answer_words,
    higher_is_better=False,
    percent=False,
)
'''


def _items(run_dir: Path) -> list[dict]:
    plain = run_dir / "items.jsonl"
    if plain.is_file():
        return [json.loads(line) for line in plain.read_text().splitlines() if line.strip()]
    with gzip.open(run_dir / "items.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_new_metric_is_one_file(tmp_path: Path) -> None:
    data = data_file_or_skip("locomo")
    tree = copy_tree(tmp_path / "tree")
    write(tree, NEW_METRIC, NEW_METRIC_SOURCE)
    run = run_module(
        tree,
        "memcore.cli",
        [
            "dataset=locomo-tiny",
            "dataset.max_qa=4",
            f"dataset.path={data}",
            "embedder=hashing",
            "backbone=scripted",
            "method=rag_bm25",
            "eval.metrics=[answer_words]",
            "experiment_name=ext_metric",
            "progress=false",
            "concurrency=1",
        ],
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (metrics_path,) = (tree / "results" / "runs" / "ext_metric").rglob("metrics.json")
    run_dir = metrics_path.parent
    items = _items(run_dir)
    assert items and all(it["scores"]["answer_words"] == float(len((it["answer"] or "").split())) for it in items)
    assert list(items[0]["scores"])[:2] == ["f1", "bleu1"]  # the protocol's scores keep their place
    metrics = json.loads(metrics_path.read_text())
    want = sum(it["scores"]["answer_words"] for it in items) / len(items)
    assert metrics["overall"]["answer_words"] == pytest.approx(want)
    assert metrics["run"]["metrics"] == ["answer_words"]
    assert "Answer words |" in (run_dir / "table.md").read_text()

    report = run_module(
        tree, "memcore.report.cli", [str(tree / "results" / "runs"), "--n-boot", "50", "--no-plots", "--no-reference"]
    )
    assert report.returncode == 0, report.stderr[-3000:]
    detail = (tree / "results" / "runs" / "report" / "detail_table.md").read_text()
    assert "| Answer words |" in detail and f"{want:.2f}" in detail
    assert edited_files(tree, [NEW_METRIC]) == []


# --------------------------------------------------------------------------------------------- registry
def test_unknown_metric_gets_did_you_mean() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'recall'"):
        get_metric("recal")
    assert get_metric("hit_rate") is get_metric("hit")  # a metric is found by its aggregate's key too
    assert {"f1", "bleu1", "recall", "hit", "session_hit", "judge"} <= set(METRICS.names())
    assert [m.name for m in get_protocol("amem").declared_metrics()] == list(STANDARD_METRICS)


def test_a_metric_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="needs a scorer"):
        Metric(name="x", label="X", target="evidence")
    with pytest.raises(ValueError, match="target"):
        Metric(name="x", label="X", target="sessions")  # type: ignore[arg-type]


def test_declared_aggregation_is_used() -> None:
    def median(values: list[float]) -> float | None:
        ordered = sorted(values)
        return ordered[len(ordered) // 2] if ordered else None

    longest = Metric(name="longest", label="Longest", target="answer", aggregate=median, percent=False)
    items = [{"category": 1, "scores": {"longest": v}} for v in (1.0, 2.0, 9.0)]
    assert longest.summary(items) == {"longest": 2.0}  # the median, not the mean (4.0)
    block = summarize(items, (*resolve_metrics(["f1"]), longest))
    assert block == {"n": 3, "f1": None, "longest": 2.0, "n_with_evidence": 0}
    assert aggregate(items, (longest,))["overall"]["longest"] == 2.0


def test_built_in_metrics_by_hand() -> None:
    locomo, amem = get_protocol("locomo"), get_protocol("amem")
    # LoCoMo's f1: stemmed multiset overlap; A-MEM's: token sets ("running" and "runs" differ there)
    assert score_answer("running", "runs", 4, locomo)["f1"] == 1.0
    assert score_answer("running", "runs", 4, amem)["f1"] == 0.0
    # bleu1 is the metric's own scorer under both protocols: 1 for an exact single-token answer
    assert score_answer("Paris", "Paris", 4, locomo)["bleu1"] == score_answer("Paris", "Paris", 4, amem)["bleu1"] == 1.0
    # evidence: recall 1 of 2 gold turns, hit 1; session hit on D2 among the first five sessions
    evidence = score_evidence(["D1:1", "D2:7"], ["D1:1", "D3:2"], resolve_metrics(["recall", "hit", "session_hit"]))
    assert evidence == {"recall": 0.5, "hit": 1.0}  # session hit is derived when read, not stored
    item = {"evidence": ["D2:7"], "retrieved_dia_ids": ["D1:1", "D2:1"], "recall": 0.0, "hit": 0.0}
    assert metric_value(item, "session_hit") == 1.0 and metric_value(item, "hit_rate") == 0.0
    judged = [{"scores": {"judge": 1.0, "judge_runs": [1.0, 1.0], "judge_majority": 1.0}},
              {"scores": {"judge": 0.5, "judge_runs": [1.0, 0.0], "judge_majority": 0.0}}]  # fmt: skip
    j = get_metric("judge").summary(judged)
    assert j["judge"] == 0.75 and j["judge_per_run"] == [1.0, 0.5] and j["judge_std"] == 0.25
    assert j["judge_majority"] == 0.5 and j["judge_agreement"] == 0.5 and j["n_judged"] == 2


def test_extra_metrics_are_scored_after_the_protocols() -> None:
    words = Metric(name="words", label="Words", target="answer", score=lambda p, g, c: float(len(p.split())))
    scores = score_answer("in May 2023", "May 2023", 2, get_protocol("locomo"), (words,))
    assert list(scores) == ["f1", "bleu1", "words"] and scores["words"] == 3.0


def test_eval_metrics_names_are_checked_before_any_work() -> None:
    def cfg(names: list[str]) -> DictConfig:
        return OmegaConf.create({"eval": {"metrics": names}})

    assert [m.name for m in run_extra_metrics(cfg(["session_hit"]))] == ["session_hit"]
    assert run_extra_metrics(OmegaConf.create({"eval": {}})) == ()  # a run recorded before the key existed
    with pytest.raises(ConfigError, match="Did you mean 'session_hit'"):
        run_extra_metrics(cfg(["session_hits"]))
    with pytest.raises(ConfigError, match=r"eval\.judge"):
        run_extra_metrics(cfg(["judge"]))

"""Tables and plots that read right: nothing above a run's context-token cap, IER compared under one cap, a layout
chosen from what the runs differ in, empty change columns that say what they need, no figure that means nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import matplotlib.image as mpimg
import pytest
import yaml

from memcore.commands.report import auto_layout
from memcore.commands.report import main as report_main
from memcore.eval.aggregate import budgets_within_cap, format_table
from memcore.memory.ier_summary import ier_line, ier_refinement, ier_shown
from memcore.report import load_runs, summarize_run
from memcore.report.ablation_table import ablation_table
from memcore.report.detail_table import detail_table
from memcore.report.equal_tokens import equal_token_table, plot_recall_vs_context_tokens
from memcore.report.plots import plot_cost_vs_f1, plot_recall_vs_budget, recall_budget_curve
from memcore.report.table_rows import cost_cells
from tests.support import run_item, write_run

METHODS = ("rag_bm25", "rag_dense", "rag_hybrid", "memcore-cheap")


def _note(dia: str, tokens: int) -> dict[str, Any]:
    return {"dia_ids": [dia], "tokens": tokens}


def retrieval_items(hit_first: bool) -> list[dict[str, Any]]:
    """Two items with gold evidence; the gold turn is the first note (recall 1 at 100 tokens) or the second."""
    notes = [_note("D1:1", 100), _note("D1:2", 100)] if hit_first else [_note("D1:2", 100), _note("D1:1", 100)]
    return [
        run_item(
            "c1", i, 4, None, None, evidence=["D1:1"], notes=notes, recall=1.0, hit=1.0, retrieved_dia_ids=["D1:1"]
        )
        for i in range(2)
    ]


def _set_cap(run: Path, cap: int | None, method: str) -> None:
    """Give a synthetic run the ``eval.token_cap`` cap in its config and its metrics' evidence disclosure."""
    (run / "config.yaml").write_text(
        yaml.safe_dump({"experiment_name": "synthetic", "method": {"name": method}, "eval": {"context_tokens": cap}})
    )
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["run"]["evidence"] = {"context_tokens": cap}
    metrics["recall_at_budget"] = {"100": {"recall": 0.5}, "200": {"recall": 1.0}, "400": {"recall": 1.0}}
    (run / "metrics.json").write_text(json.dumps(metrics))


def test_budgets_above_the_cap_are_not_printed_in_table_md_nor_the_detail_table(tmp_path: Path) -> None:
    capped = {
        "recall_at_budget": {"500": {"recall": 0.4544}, "1000": {"recall": 0.4544}, "2000": {"recall": 0.4544}},
        "run": {"evidence": {"context_tokens": 500}},
    }
    assert list(budgets_within_cap(capped)) == ["500"]
    assert list(budgets_within_cap({"recall_at_budget": capped["recall_at_budget"]})) == ["500", "1000", "2000"]
    metrics = {
        "by_category": {},
        "overall": {"n": 0},
        "overall_no_adv": {"n": 0},
        **capped,
    }
    table = format_table(metrics, "t")
    assert "500 tok 45.44." in table and "1,000 tok" not in table and "2,000 tok" not in table

    for cap, name in ((None, "rag_bm25"), (200, "rag_dense")):
        run = write_run(tmp_path, backbone="none", method=name, items=retrieval_items(True), answered=False)
        _set_cap(run, cap, name)
    summaries = [summarize_run(r, n_boot=20) for r in load_runs([tmp_path])]
    records = {r["method"]: r for r in detail_table(summaries).records if r["category"] == "overall"}
    assert records["rag_bm25"]["recall_at_400"] == pytest.approx(100.0)
    assert records["rag_dense"]["recall_at_400"] is None  # above its 200-token cap
    assert records["rag_dense"]["recall_at_200"] == pytest.approx(100.0)
    assert "'–' above a run's token cap (eval.token_cap)" in detail_table(summaries).to_markdown()


def _ier_item(i: int, *, capped: bool, final_pool: list[str] | None) -> dict[str, Any]:
    """Gold D1:1 and D1:2. Round 1 found D1:1; refinement added D1:2 to the pool; the 500-token cap kept none."""
    extra: dict[str, Any] = {"ier_stop": "sufficient", "round1_dia_ids": ["D1:1"]}
    if capped:
        extra["context_budget"] = {"tokens": 500}
    if final_pool is not None:
        extra["final_pool_dia_ids"] = final_pool
    retrieved = [] if capped else ["D1:1", "D1:2"]
    return run_item("c1", i, 1, None, None, evidence=["D1:1", "D1:2"], retrieved_dia_ids=retrieved, extra=extra)


def test_the_ier_line_compares_round_one_with_the_final_pool_under_the_same_cap() -> None:
    uncapped = [_ier_item(0, capped=False, final_pool=None)]
    info = ier_refinement(uncapped)
    assert info is not None and (info["recall_round1"], info["recall_final"]) == (0.5, 1.0)
    assert ier_shown({"ier_refinement": info, "run": {}}) == (info, None)

    capped = [_ier_item(0, capped=True, final_pool=["D1:1", "D1:2"])]
    assert ier_refinement(capped)["recall_final"] == 0.0  # the old comparison: the cap, not IER, lowered recall
    same = ier_refinement(capped, same_cap=True)
    assert same is not None and (same["recall_round1"], same["recall_final"], same["n_unpaired"]) == (0.5, 1.0, 0)
    metrics = {"ier_refinement": ier_refinement(capped), "ier_refinement_same_cap": same}
    metrics["run"] = {"evidence": {"context_tokens": 500}}
    line = ier_line(*ier_shown(metrics))
    assert "recall 50.00 at round 1 → 100.00 after refinement (both rounds' top K before the 500-token cap)" in line

    old = [_ier_item(0, capped=True, final_pool=None)]  # a capped run made before the final pool was recorded
    unpaired = ier_refinement(old, same_cap=True)
    assert unpaired is not None and unpaired["n_unpaired"] == 1
    for shown in (unpaired, None):
        text = ier_line(shown, 500)
        assert "not comparable" in text and "→" not in text


def _four_methods(tmp_path: Path, answered: bool = False) -> list[Any]:
    for m in METHODS:
        write_run(tmp_path, backbone="none", method=m, items=retrieval_items(m != "rag_bm25"), answered=answered)
    return load_runs([tmp_path])


def test_four_retrieval_only_methods_get_a_methods_table_not_ablations(tmp_path: Path) -> None:
    runs = _four_methods(tmp_path)
    assert auto_layout(runs) == "retrieval"
    summaries = [summarize_run(r, n_boot=20) for r in runs]
    table = ablation_table(summaries, None, deltas=False)
    md = table.to_markdown()
    assert md.startswith("### Methods compared (") and "Ablations" not in md
    assert "(full)" not in md and not any("vs full" in c for c in table.columns)
    assert not any(k.endswith("_vs_full") for rec in table.records for k in rec)
    # forced into the ablation layout, rows nothing is compared with say what a change would need
    forced = ablation_table(summaries, None).to_markdown()
    assert "(full)" not in forced and "no ablation of it is in this report" in forced


def test_auto_layout_follows_what_the_runs_differ_in(tmp_path: Path) -> None:
    answered = _four_methods(tmp_path / "a", answered=True)
    assert auto_layout(answered) == "main"
    write_run(tmp_path / "b", backbone="none", method="memcore-cheap", items=retrieval_items(True), answered=False)
    write_run(
        tmp_path / "b", backbone="none", method="memcore-cheap", ablation="wo_ier", items=retrieval_items(False),
        answered=False,
    )  # fmt: skip
    ablations = load_runs([tmp_path / "b"])
    assert auto_layout(ablations) == "ablation"
    md = ablation_table([summarize_run(r, n_boot=20) for r in ablations], None).to_markdown()
    assert md.startswith("### Ablations (") and "(full)" in md


def test_an_ablation_without_its_full_model_says_what_it_needs(tmp_path: Path) -> None:
    write_run(tmp_path, backbone="none", method="memcore-cheap", ablation="wo_ier", items=retrieval_items(True))
    summaries = [summarize_run(r, n_boot=20) for r in load_runs([tmp_path])]
    md = ablation_table(summaries, None).to_markdown()
    assert "it needs the full model, a run with ablation=none" in md


def test_an_empty_equal_token_delta_names_the_run_it_needs(tmp_path: Path) -> None:
    run = write_run(tmp_path, backbone="none", method="rag_bm25", items=retrieval_items(True), answered=False)
    _set_cap(run, 200, "rag_bm25")
    table = equal_token_table(load_runs([tmp_path]), n_boot=20)
    assert table is not None
    assert "it needs a rag_hybrid run at the same budget" in table.to_markdown()
    assert "Δ '–' at 200 tokens" in table.to_markdown()


def test_cost_vs_f1_plots_f1_only_and_says_when_it_is_omitted(tmp_path: Path) -> None:
    cost = {"usage": {"by_stage": {}}, "wall_s": {"total": 1.0}}
    retrieval = [
        summarize_run(r, n_boot=20)
        for r in (write_run(tmp_path / "r", backbone="none", method=m, items=retrieval_items(True), cost=cost, answered=False) for m in METHODS[:2])
        for r in load_runs([r])
    ]  # fmt: skip
    omitted: list[str] = []
    assert plot_cost_vs_f1(retrieval, tmp_path / "plots", omitted=omitted) == []
    assert omitted and omitted[0].startswith("cost_vs_f1: not drawn, no run answered")
    answered_items = [run_item("c1", i, 4, 0.5, 0.5) for i in range(2)]
    answered = [
        summarize_run(r, n_boot=20)
        for r in load_runs(
            [write_run(tmp_path / "a", backbone="b", method="rag_bm25", items=answered_items, cost=cost)]
        )
    ]
    written = plot_cost_vs_f1(answered, tmp_path / "plots")
    assert written and mpimg.imread(written[0]).std() > 0.01


def test_a_capped_run_ends_at_its_cap_and_one_point_curves_are_not_drawn(tmp_path: Path) -> None:
    capped = write_run(tmp_path, backbone="none", method="rag_dense", items=retrieval_items(False), answered=False)
    _set_cap(capped, 100, "rag_dense")
    free = write_run(tmp_path, backbone="none", method="rag_bm25", items=retrieval_items(False), answered=False)
    _set_cap(free, None, "rag_bm25")
    runs = {r.method_label: r for r in load_runs([tmp_path])}
    assert recall_budget_curve(runs["rag_bm25"], (100, 200)) == {100: 0.0, 200: 100.0}
    assert recall_budget_curve(runs["rag_dense"], (100, 200)) == {100: 0.0, 200: None}  # nothing above its cap
    omitted: list[str] = []
    written = plot_recall_vs_budget(list(runs.values()), tmp_path / "plots", (100, 200), omitted=omitted)
    assert any(p.suffix == ".png" for p in written)
    assert omitted == [
        "recall_vs_budget: left out (one point, no curve; see recall_vs_budget.csv): rag_dense (cap 100)"
    ]
    omitted = []
    assert [p.suffix for p in plot_recall_vs_context_tokens([runs["rag_dense"]], tmp_path / "eq", omitted=omitted)] == [
        ".csv"
    ]
    assert "not drawn, every run has the one cap eval.token_cap=100" in omitted[0]


def test_the_report_cli_writes_the_omitted_figures_down(tmp_path: Path, capsys) -> None:
    _four_methods(tmp_path / "runs")
    assert report_main([str(tmp_path / "runs"), "--out", str(tmp_path / "out"), "--n-boot", "20"]) == 0
    out = capsys.readouterr().out
    assert "plot cost_vs_f1: not drawn" in out
    assert (tmp_path / "out" / "retrieval_table.md").is_file() and not (tmp_path / "out" / "ablation_table.md").exists()
    assert "cost_vs_f1" in (tmp_path / "out" / "plots" / "omitted.md").read_text()


@pytest.mark.parametrize(("counts", "mark"), [({"computed": 12, "from_cache": 3}, " (emb. computed)"), ({"computed": 0, "from_cache": 15}, " (emb. cached)"), ({}, "")])  # fmt: skip
def test_wall_time_says_whether_embeddings_were_computed_or_cached(tmp_path: Path, counts: dict, mark: str) -> None:
    cost = {"usage": {"by_stage": {}}, "wall_s": {"total": 8.0}, "resources": {"embeddings": counts}}
    run = write_run(tmp_path, backbone="none", method="rag_bm25", items=retrieval_items(True), cost=cost)
    (s,) = [summarize_run(r, n_boot=20) for r in load_runs([run])]
    assert cost_cells(s)[-1] == "8.0" + mark

"""memcore-report on synthetic run dirs: the numbers in Markdown / CSV / LaTeX equal hand-computed values."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from memcore.commands.report import main as report_main
from memcore.eval import probe
from memcore.eval.bootstrap import paired_delta_ci
from memcore.itemlog import LoggedItem
from memcore.report import ReportInputError, find_run_dirs, load_paper_numbers, load_runs, summarize_run
from memcore.report.ablation_table import ablation_table, full_model_of, run_k
from memcore.report.detail_table import detail_table
from memcore.report.main_table import main_table
from memcore.report.plots import make_plots, recall_budget_curve
from memcore.report.reference import default_reference_dir
from memcore.report.summary import cost_summary
from tests.support import run_item, write_run

COST = {
    "usage": {
        "by_stage": {
            "ingest": {"calls": 30, "prompt_tokens": 3000, "completion_tokens": 300},
            "retrieve": {"calls": 10, "prompt_tokens": 300, "completion_tokens": 30},
            "answer": {"calls": 5, "prompt_tokens": 500, "completion_tokens": 50},
        }
    },
    "wall_s": {"total": 40.0},
    "usd_estimate_this_run": 0.0012,
}
STATS = {
    "conversations": {
        "c1": {"ingest_usage": {"total": {"calls": 10, "prompt_tokens": 1000, "completion_tokens": 100}}},
        "c2": {"ingest_usage": {"total": {"calls": 20, "prompt_tokens": 2000, "completion_tokens": 200}}},
    }
}


def main_items(audited: bool = False) -> list[dict[str, Any]]:
    # weighted F1 = (0.5 + 1 + 0 + 1 + 1) / 5 = 0.70; BLEU-1 = (0.4 + 1 + 0 + 0.5 + 1) / 5 = 0.58
    # category 1 F1 = (0.5 + 0) / 2 = 0.25
    rows = [
        run_item("c1", 0, 1, 0.5, 0.4),
        run_item("c1", 1, 4, 1.0, 1.0),
        run_item("c2", 0, 1, 0.0, 0.0),
        run_item("c2", 1, 2, 1.0, 0.5),
        run_item("c2", 2, 5, 1.0, 1.0),
    ]
    if audited:  # the audit corrects c2#0's gold: the same answer now scores F1 1.0
        rows[2]["audited"] = {"scores": {"f1": 1.0, "bleu1": 1.0}, "recall": None, "hit": None}
    return rows


@pytest.fixture
def paper():
    return load_paper_numbers(default_reference_dir())


def test_main_table_numbers_deltas_and_cis(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="memcore", items=main_items(), cost=COST, stats=STATS)
    (run,) = load_runs([tmp_path])
    s = summarize_run(run, n_boot=1000, seed=0)
    assert s.values["f1"] == pytest.approx(70.0)
    assert s.values["bleu1"] == pytest.approx(58.0)
    assert s.values["cat1"] == pytest.approx(25.0)
    assert s.values["cat3"] is None
    # Two conversations: a resample is {c1,c1} → 1.5/2, {c2,c2} → 2/3 or mixed → 3.5/5; each pure draw has p=1/4.
    low, high = s.ci["f1"]
    assert low == pytest.approx(200 / 3) and high == pytest.approx(75.0)
    assert low <= s.values["f1"] <= high
    # cost: (build 30 calls + retrieve 10 + answer 5) / 2 conversations; tokens (3300 + 330 + 550) / 2
    assert s.cost["llm_calls_per_conv"] == pytest.approx(22.5)
    assert s.cost["tokens_per_conv"] == pytest.approx(2090.0)
    assert s.cost["wall_s_per_conv"] == pytest.approx(20.0)

    table = main_table([s], paper)
    md = table.to_markdown()
    assert (
        "| 1 multi-hop (n=2) | 2 temporal (n=1) | 3 open-domain (n=0) | 4 single-hop (n=1) | 5 adversarial (n=1) |"
        in md
    )
    ours = next(line for line in md.splitlines() if "| ours |" in line)
    # the paper's overall (categories 1-5) and categories 1-4 side by side
    assert "| 25.00 | 100.00 | – | 100.00 | 100.00 | 70.00 [66.67, 75.00] | 62.50 [50.00, 75.00] | 58.00 [" in ours
    assert "| 22.5 | 2,090 | 20.0 |" in ours
    # paper (gpt-4o-mini, memcore): 32.11 46.61 23.98 44.74 51.48 | 43.76 37.27
    assert "| paper | 32.11 | 46.61 | 23.98 | 44.74 | 51.48 | 43.76 | – | 37.27 |" in md
    assert "| Δ ours−paper | -7.11 | +53.39 | – | +55.26 | +48.52 | +26.24 | – | +20.73 |" in md
    assert "F1 cat. 1-5 (paper's overall) (95% CI)" in md and "F1 cat. 1-4 (95% CI)" in md
    assert "category 5 is scored against adversarial_answer, the misleading answer" in md

    rec = next(csv.DictReader(io.StringIO(table.to_csv())))
    assert rec["f1"] == "70.0000" and rec["f1_paper"] == "43.7600" and rec["f1_delta"] == "26.2400"
    assert rec["cat1_delta"] == "-7.1100" and rec["cat3"] == "" and rec["cat3_paper"] == "23.9800"
    assert float(rec["f1_ci_low"]) == pytest.approx(66.6667, abs=1e-4) and rec["f1_ci_high"] == "75.0000"
    assert rec["llm_calls_per_conv"] == "22.5000" and rec["method"] == "memcore" and rec["variant_of"] == ""

    tex = table.to_latex()
    assert "\\toprule" in tex and "\\bottomrule" in tex
    assert "70.00 [66.67, 75.00]" in tex and "$\\Delta$ ours$-$paper" in tex and "+26.24" in tex


def test_not_comparable_runs_are_flagged(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="qwen3-8b", method="memcore", items=main_items(), dataset="locomo-mini")
    md = main_table([summarize_run(r, n_boot=50) for r in load_runs([tmp_path])], paper).to_markdown()
    assert "Δ ours−paper †" in md and "locomo-mini/amem" in md
    assert "| paper | 28.24 | 38.39 | 15.43 | 42.09 | 43.79 | 38.62 | – | 34.51 |" in md


def test_reimplemented_methods_are_labelled(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="memgpt", items=main_items())
    write_run(tmp_path, backbone="gpt-4o-mini", method="memgpt-full-window", items=main_items())
    write_run(tmp_path, backbone="gpt-4o-mini", method="memcore", items=main_items())
    md = main_table([summarize_run(r, n_boot=50) for r in load_runs([tmp_path])], paper).to_markdown()
    assert "| memgpt (reimplementation) |" in md
    assert "memgpt-full-window (reimplementation) (variant of memgpt)" in md
    assert "| memcore |" in md and "memcore (reimplementation)" not in md
    assert (
        "(reimplementation): this harness's reimplementation, not the authors' code: memgpt: cpacker/MemGPT 0.2.6" in md
    )


def test_variant_is_labelled_and_never_compared(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="memcore", items=main_items())
    write_run(tmp_path, backbone="gpt-4o-mini", method="memcore-cheap", items=main_items())
    write_run(tmp_path, backbone="gpt-4o-mini", method="rag_bm25", items=main_items())
    runs = load_runs([tmp_path])
    assert [r.method_label for r in runs] == ["memcore", "memcore-cheap", "rag_bm25"]
    assert [r.variant_of for r in runs] == [None, "memcore", None]
    table = main_table([summarize_run(r, n_boot=50) for r in runs], paper)
    md = table.to_markdown()
    assert "memcore-cheap (variant of memcore)" in md
    assert md.count("| paper |") == 1  # only the real memcore run
    recs = list(csv.DictReader(io.StringIO(table.to_csv())))
    cheap = next(r for r in recs if r["method"] == "memcore-cheap")
    assert cheap["variant_of"] == "memcore" and cheap["f1_paper"] == "" and cheap["f1"] == "70.0000"
    rag = next(r for r in recs if r["method"] == "rag_bm25")
    assert rag["variant_of"] == "" and rag["f1_paper"] == ""


def test_lightmem_row_names_its_published_setting_and_the_compressor_that_ran(tmp_path: Path, paper) -> None:
    path = write_run(tmp_path, backbone="gpt-4o-mini", method="lightmem", items=main_items())
    (run,) = load_runs([tmp_path])
    assert run.label() == "lightmem (768-0.8, idf)"  # the shipped default: LightMem(768, 0.8), idf stand-in
    (path / "config.yaml").write_text(
        yaml.safe_dump({"method": {"name": "lightmem", "preset": "512-0.7", "compressor": "llmlingua2"}})
    )
    (run,) = load_runs([tmp_path])
    assert run.method_label == "lightmem" and run.label() == "lightmem (512-0.7, llmlingua2)"
    assert "lightmem (512-0.7, llmlingua2)" in main_table([summarize_run(run, n_boot=20)], paper).to_markdown()


def test_fluxmem_rows_point_to_the_category_1_4_headline(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="fluxmem", items=main_items())
    (s,) = [summarize_run(r, n_boot=20) for r in load_runs([tmp_path])]
    table = main_table([s], paper)
    assert any(n.startswith("FluxMem: its paper reports LoCoMo over categories 1-4") for n in table.notes)
    # categories 1-4 only: F1 (0.5 + 1 + 0 + 1) / 4 = 62.5 %, beside the 1-5 overall of 70 %
    rec = table.records[0]
    assert float(rec["f1_no_adv"]) == pytest.approx(62.5) and float(rec["f1"]) == pytest.approx(70.0)


def test_audited_shown_beside_original(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="memcore", items=main_items(audited=True))
    (s,) = [summarize_run(r, n_boot=200) for r in load_runs([tmp_path])]
    assert s.audited is not None and s.n_audited_changed == 1
    assert s.audited["f1"] == pytest.approx(90.0) and s.audited["cat1"] == pytest.approx(75.0)
    table = main_table([s], paper)
    md = table.to_markdown()
    audited = next(line for line in md.splitlines() if "audited gold" in line)
    assert "ours, audited gold (1 item changed) | 75.00 | 100.00 | – | 100.00 | 100.00 | 90.00 [" in audited
    rec = next(csv.DictReader(io.StringIO(table.to_csv())))
    assert rec["f1"] == "70.0000" and rec["f1_audited"] == "90.0000" and rec["f1_audited_minus_original"] == "20.0000"


def ablation_items(f1: float, recall: float) -> list[dict[str, Any]]:
    return [
        run_item(c, i, 4, f1, f1, recall=recall, hit=1.0 if recall > 0 else 0.0, evidence=["D1:1"])
        for c in ("c1", "c2")
        for i in range(2)
    ]


def test_ablation_table_deltas_vs_full_and_paper(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="qwen3-8b", method="memcore", items=ablation_items(0.4, 0.6))
    write_run(tmp_path, backbone="qwen3-8b", method="memcore", ablation="wo_ier", items=ablation_items(0.3, 0.5))
    runs = load_runs([tmp_path])
    assert [r.ablation for r in runs] == ["none", "wo_ier"]
    table = ablation_table([summarize_run(r, n_boot=50) for r in runs], paper)
    md = table.to_markdown()
    lines = md.splitlines()
    wo = lines.index(next(line for line in lines if "memcore [wo_ier]" in line))
    # ours: F1 30, recall 50; 10 points below the full model on both
    # F1, F1 1-4, BLEU-1, recall, hit; then ΔF1, ΔF1 1-4, Δrecall with their paired intervals (every item -10)
    assert (
        "| ours | 30.00 [30.00, 30.00] | 30.00 [30.00, 30.00] | 30.00 [30.00, 30.00] | 50.00 [50.00, 50.00] "
        "| 100.00 [100.00, 100.00] | -10.00 [-10.00, -10.00] | -10.00 [-10.00, -10.00] | -10.00 [-10.00, -10.00] |"
        in lines[wo]
    )
    # paper wo_ier 32.94 / 30.86 / 46.29 / 51.26 (no F1 1-4); vs the paper's full model: F1 -5.68, recall -15.93
    assert "| paper | 32.94 | – | 30.86 | 46.29 | 51.26 | -5.68 |  | -15.93 |" in lines[wo + 1]
    assert "| Δ ours−paper | -2.94 | – | -0.86 | +3.71 | +48.74 |" in lines[wo + 2]
    full_row = next(line for line in lines if "| qwen3-8b | memcore | ours |" in line)
    assert "(full) | (full)" in full_row
    recs = {r["ablation"]: r for r in csv.DictReader(io.StringIO(table.to_csv()))}
    assert recs["wo_ier"]["f1_vs_full"] == "-10.0000" and recs["wo_ier"]["recall_paper_vs_full"] == "-15.9300"
    assert recs["wo_ier"]["f1_no_adv_vs_full_ci_low"] == "-10.0000" and recs["wo_ier"]["recall_vs_full_n_paired"] == "4"
    assert recs["none"]["recall_paper"] == "62.2200"


def test_cost_falls_back_to_memory_build_without_stats(tmp_path: Path) -> None:
    cost = {
        "usage": {"by_stage": {"answer": {"calls": 4, "prompt_tokens": 40, "completion_tokens": 4}}},
        "memory_build": {"llm_calls": 6, "prompt_tokens": 60, "completion_tokens": 6},
        "wall_s": {"total": 3.0},
    }
    write_run(tmp_path, backbone="local", method="amem", items=[run_item("c1", 0, 1, 1.0, 1.0)], cost=cost)
    (run,) = load_runs([tmp_path])
    c = cost_summary(run)
    assert (c["llm_calls_per_conv"], c["tokens_per_conv"], c["wall_s_per_conv"]) == (10.0, 110.0, 3.0)


def test_find_run_dirs_globs_and_errors(tmp_path: Path) -> None:
    a = write_run(tmp_path / "x", backbone="local", method="amem", items=[run_item("c1", 0, 1, 1.0, 1.0)])
    b = write_run(tmp_path / "y", backbone="local", method="mem0", items=[run_item("c1", 0, 1, 1.0, 1.0)])
    old = a.with_name("none.old-20260101-120000")
    old.mkdir()
    (old / "metrics.json").write_text((a / "metrics.json").read_text())
    assert find_run_dirs([tmp_path]) == sorted([a.resolve(), b.resolve()])
    assert len(find_run_dirs([tmp_path], include_old=True)) == 3
    assert find_run_dirs([str(tmp_path / "*" / "locomo" / "local" / "amem" / "mem0" / "none")]) == [b.resolve()]
    assert find_run_dirs([b / "metrics.json"]) == [b.resolve()]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ReportInputError, match="no run found"):
        find_run_dirs([empty])
    with pytest.raises(ReportInputError, match="does not exist"):
        find_run_dirs([tmp_path / "missing"])
    with pytest.raises(ReportInputError, match="no file or directory matches"):
        find_run_dirs([str(tmp_path / "nope*")])


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
def test_cli_writes_all_formats_and_plots(tmp_path: Path, capsys) -> None:
    write_run(tmp_path / "runs", backbone="qwen3-8b", method="memcore", items=ablation_items(0.4, 0.6))
    write_run(
        tmp_path / "runs", backbone="qwen3-8b", method="memcore", ablation="wo_ier", items=ablation_items(0.3, 0.5)
    )
    out = tmp_path / "report"
    assert report_main([str(tmp_path / "runs"), "--out", str(out), "--n-boot", "50"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        "ablation_table.csv",
        "ablation_table.md",
        "ablation_table.tex",
        "detail_table.csv",
        "detail_table.md",
        "detail_table.tex",
        "main_table.csv",
        "main_table.md",
        "main_table.tex",
        "plots",
        "runs.txt",
    ]
    assert "-10.00" in (out / "ablation_table.md").read_text()
    assert len((out / "runs.txt").read_text().splitlines()) == 2
    assert "### Ablations" in capsys.readouterr().out
    assert report_main([str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert report_main([str(tmp_path / "runs"), "--formats", "md,xls"]) == 2


def test_reference_backbone_compares_a_local_run_with_the_papers_row(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="local", method="memcore", items=main_items(), dataset="locomo-mini")
    (s,) = [summarize_run(r, n_boot=50) for r in load_runs([tmp_path])]
    assert "| paper" not in main_table([s], paper).to_markdown()  # the paper has no 'local' backbone
    md = main_table([s], paper, reference_backbone="qwen3-8b").to_markdown()
    assert "| paper (qwen3-8b) | 28.24 | 38.39 | 15.43 | 42.09 | 43.79 | 38.62 | – | 34.51 |" in md
    assert "| Δ ours−paper † | -3.24 |" in md  # 25.00 - 28.24, flagged: locomo-mini is not the paper's setting
    assert "Paper rows are the paper's qwen3-8b numbers" in md


def test_judge_column_appears_when_items_were_judged(tmp_path: Path, paper) -> None:
    rows = main_items()
    for r, j in zip(rows, (1.0, 1.0, 0.0, 1.0, 0.0)):  # J = 3/5
        r["scores"]["judge"] = j
    write_run(tmp_path, backbone="gpt-4o-mini", method="amem", items=rows)
    table = main_table([summarize_run(r, n_boot=50) for r in load_runs([tmp_path])], paper)
    md = table.to_markdown()
    assert "| J cat. 1-4 (95% CI) |" in md  # published J numbers cover categories 1-4
    ours = next(line for line in md.splitlines() if "| ours |" in line)
    assert "| 75.00 [50.00, 100.00] | – | – |" in ours  # no run.judge / run.answer in this synthetic run
    paper_row = next(line for line in md.splitlines() if "| paper |" in line)
    assert paper_row.rstrip().endswith("| 41.97 | – | 36.16 | – |  |  |  |  |  |  |")  # the paper reports no J
    # A run written before run.evidence existed: computed from items.jsonl.
    assert "| own default; " in ours
    rec = next(csv.DictReader(io.StringIO(table.to_csv())))
    assert rec["judge_no_adv"] == "75.0000"


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
def test_plots_from_synthetic_runs(tmp_path: Path, paper) -> None:
    import matplotlib.image as mpimg

    notes = [
        {"dia_ids": ["D1:1"], "tokens": 200},
        {"dia_ids": ["D1:5"], "tokens": 300},
        {"dia_ids": ["D1:2"], "tokens": 600},
    ]
    rows = [
        run_item(c, i, cat, 0.5, 0.5, recall=1.0, hit=1.0, evidence=["D1:1", "D1:2"], notes=notes)
        for c in ("c1", "c2")
        for i, cat in enumerate((1, 2, 4))
    ]
    write_run(tmp_path / "runs", backbone="qwen3-8b", method="memcore", items=rows, cost=COST, stats=STATS)
    write_run(
        tmp_path / "runs", backbone="qwen3-8b", method="memcore", ablation="wo_link", items=ablation_items(0.3, 0.5)
    )
    write_run(tmp_path / "runs", backbone="qwen3-8b", method="amem", items=main_items(), cost=COST)
    runs = load_runs([tmp_path / "runs"])
    # budget 250 and 500 keep D1:1 only (500 = 200 + 300), 1000 still stops before the 600-token note
    full = next(r for r in runs if r.label() == "memcore")
    assert recall_budget_curve(full, (250, 500, 1000, 2000, 4000)) == {
        250: 50.0,
        500: 50.0,
        1000: 50.0,
        2000: 100.0,
        4000: 100.0,
    }
    written = make_plots([summarize_run(r, n_boot=50) for r in runs], paper, tmp_path / "plots")
    names = sorted(p.name for p in written)
    stems = ("ablation_deltas", "category_f1", "cost_vs_f1", "recall_vs_budget")
    assert names == sorted([f"{s}.{ext}" for s in stems for ext in ("png", "pdf")] + ["recall_vs_budget.csv"])
    for stem in stems:
        img = mpimg.imread(tmp_path / "plots" / f"{stem}.png")
        assert img.shape[0] >= 400 and img.shape[1] >= 900, stem  # 150 dpi: at least ~6 x 2.7 inches
        assert img[..., :3].std() > 0.02, stem  # not a blank canvas
        assert (tmp_path / "plots" / f"{stem}.pdf").read_bytes()[:4] == b"%PDF"
    curve = {
        r["method"] + "/" + r["ablation"]: r
        for r in csv.DictReader((tmp_path / "plots" / "recall_vs_budget.csv").open())
    }
    assert (
        curve["memcore/none"]["recall_at_1000"] == "50.0000" and curve["memcore/none"]["recall_at_2000"] == "100.0000"
    )


def test_detail_table_per_category_and_unit_costs(tmp_path: Path) -> None:
    stats = {
        "conversations": {
            "c1": {
                "turns": 20,
                "ingest_usage": {"total": {"calls": 10, "prompt_tokens": 1000, "completion_tokens": 100}},
            },
            "c2": {
                "turns": 40,
                "ingest_usage": {"total": {"calls": 20, "prompt_tokens": 2000, "completion_tokens": 200}},
            },
        }
    }
    rows = main_items()
    rows[0].update(recall=1.0, hit=1.0)
    rows[2].update(recall=0.5, hit=1.0)
    run_dir = write_run(
        tmp_path, backbone="local-small", method="amem", items=rows, cost=COST, stats=stats, dataset="locomo-mini"
    )
    metrics = json.loads((run_dir / "metrics.json").read_text())
    metrics["recall_at_budget"] = {"500": {"recall": 0.25, "hit_rate": 0.5, "mean_tokens_used": 10.0, "n": 2}}
    (run_dir / "metrics.json").write_text(json.dumps(metrics))
    table = detail_table([summarize_run(r, n_boot=20) for r in load_runs([tmp_path])])
    md = table.to_markdown()
    assert "backbone local-small, dataset locomo-mini, protocol amem" in table.title
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")][1:]
    # category 1: F1 (0.5 + 0) / 2, BLEU-1 (0.4 + 0) / 2, recall (1 + 0.5) / 2, hit 1
    assert lines[0].startswith("| amem | 1 multi-hop | 2 | 25.00 | 20.00 | 75.00 | 100.00 |")
    # overall: F1 70, BLEU 58; build 30 calls / 60 turns, 3,300 tokens / 60 turns; QA 15 calls / 5 questions
    overall = next(line for line in lines if "| overall |" in line)
    assert overall.startswith(
        "|  | overall | 5 | 70.00 | 58.00 | 75.00 | 100.00 | 25.00 | – | – | 0.50 | 55 | 3.00 | 176 | 0 | 40 |"
    )  # recall @5 / @10 notes: "–", these hand-written items list no retrieved notes
    assert "Recall @500 tok %" in md and "Recall @5 notes %" in md
    recs = list(csv.DictReader(io.StringIO(table.to_csv())))
    assert [r["category"] for r in recs] == [
        "1 multi-hop",
        "2 temporal",
        "4 single-hop",
        "5 adversarial",
        "overall",
        "overall 1-4",
    ]
    assert recs[-2]["calls_per_turn"] == "0.5000"  # the overall row carries the unit costs


def test_report_prints_the_judge_probe_beside_j(tmp_path: Path, capsys) -> None:
    rows = main_items()
    for r, j in zip(rows, (1.0, 1.0, 0.0, 1.0, 0.0)):
        r["scores"]["judge"] = j
    write_run(tmp_path / "runs", backbone="local-small", method="amem", items=rows, dataset="locomo-mini")
    cases = [probe.ProbeCase("a", 1, "q", "g", "x", "vague", "WRONG")]
    rec = {"judge_preset": "mem0-judge", "backbone": "local-small", "model": "m", "seed": 0, "n_cases": 1}
    probe.save_probe(tmp_path / "probe", [dict(rec, rates=probe.summarize_probe(cases, ["CORRECT"]))], "cmd")
    out = tmp_path / "report"
    args = [str(tmp_path / "runs"), "--out", str(out), "--no-plots", "--formats", "md"]
    assert report_main([*args, "--probe", str(tmp_path / "probe.json")]) == 0
    printed = capsys.readouterr().out
    main_at, probe_at = printed.index("### LoCoMo main table"), printed.index("### Judge leniency probe")
    assert main_at < probe_at < printed.index("### Methods side by side")  # right after the table with J
    assert "| mem0-judge | m (local-small) | 100.0 [" in (out / "judge_probe.md").read_text()
    assert report_main([*args, "--probe", str(tmp_path / "absent.json")]) == 0  # no probe file: no probe table
    assert "Judge leniency probe" not in capsys.readouterr().out


def test_paired_delta_interval_by_hand() -> None:
    def item(qid: str, f1: float, cat: int = 4) -> LoggedItem:
        return LoggedItem(item_id=qid, category=cat, scores={"f1": f1})

    full = [item("a", 0.5), item("b", 0.0), item("c", 1.0), item("x", 0.2, cat=5)]
    ablated = [item("b", 1.0), item("a", 0.5), item("z", 0.9)]  # paired by id: differences 0 (a) and +1 (b)
    d, low, high, n = paired_delta_ci(ablated, full, "f1", categories=(1, 2, 3, 4))
    # resampled means are 0, 0.5 or 1 with probability 1/4, 1/2, 1/4: the 95% interval is [0, 1]
    assert (d, low, high, n) == (0.5, 0.0, 1.0, 2)
    assert paired_delta_ci(ablated, full, "f1", categories=(5,)) is None  # no item pairs
    many = [item(f"q{i}", (i % 3) / 2) for i in range(30)]
    other = [item(f"q{i}", (i % 5) / 4) for i in range(30)]
    assert paired_delta_ci(many, other, "f1") == paired_delta_ci(many[::-1], other, "f1")  # file order is irrelevant
    with pytest.raises(ValueError, match="n_boot"):
        paired_delta_ci(ablated, full, "f1", n_boot=0)


def _set_config(path: Path, *, experiment: str, budget: int, ier: bool, ablation: str) -> None:
    """The run's config.yaml as the runner writes it: experiment, K (eval.note_cap) and the ablation switches."""
    switches = {s: True for s in ("update", "merge", "link", "denoise", "topic", "keyword", "neighbor", "ier")}
    if ablation != "none":
        switches[ablation.removeprefix("wo_")] = False
    switches["ier"] = switches["ier"] and ier
    cfg = {
        "experiment_name": experiment,
        "method": {"name": "memcore", "k_final": 20},
        "eval": {"budget": budget},
        "ablation": {"name": ablation, **switches},
    }
    (path / "config.yaml").write_text(yaml.safe_dump(cfg))


def test_ablation_rows_pair_with_the_full_model_of_their_experiment_ier_switch_and_k(tmp_path: Path) -> None:
    """An IER-off row is paired with the IER-off full model of its experiment and K, not the IER-on one: a row's
    full model shares its experiment, K and every switch but the ablated one."""
    rows = [  # (root, experiment, K, ier, ablation, F1 = recall)
        ("k5", "abl_k5", 5, True, "none", 0.5),
        ("k5", "abl_k5", 5, True, "wo_ier", 0.4),
        ("k20", "abl_k5", 20, True, "none", 0.9),  # the same experiment at another K
        ("noier", "abl_k5_noier", 5, False, "none", 0.4),
        ("noier", "abl_k5_noier", 5, False, "wo_update", 0.3),
    ]
    for root, exp, k, ier, abl, score in rows:
        path = write_run(
            tmp_path / root, backbone="local", method="memcore", ablation=abl, items=ablation_items(score, score)
        )
        _set_config(path, experiment=exp, budget=k, ier=ier, ablation=abl)
    summaries = [summarize_run(r, n_boot=20) for r in load_runs([tmp_path])]
    by = {(s.run.experiment, s.run.ablation, run_k(s.run)): s for s in summaries}
    assert full_model_of(by[("abl_k5_noier", "wo_update", 5)], summaries) is by[("abl_k5_noier", "none", 5)]
    assert full_model_of(by[("abl_k5", "wo_ier", 5)], summaries) is by[("abl_k5", "none", 5)]
    assert full_model_of(by[("abl_k5_noier", "none", 5)], summaries) is by[("abl_k5_noier", "none", 5)]
    assert full_model_of(by[("abl_k5", "none", 20)], summaries) is by[("abl_k5", "none", 20)]
    recs = {
        (r["experiment"], r["ablation"]): r
        for r in csv.DictReader(io.StringIO(ablation_table(summaries, None).to_csv()))
    }
    assert recs[("abl_k5_noier", "wo_update")]["f1_vs_full"] == "-10.0000"  # vs the IER-off full model, not -20
    assert recs[("abl_k5", "wo_ier")]["f1_vs_full"] == "-10.0000"  # vs K = 5, not K = 20 (-50)
    # a full model of another experiment is not taken: no pairing
    lone = write_run(
        tmp_path / "lone", backbone="local", method="memcore", ablation="wo_link", items=ablation_items(0.2, 0.2)
    )
    _set_config(lone, experiment="other", budget=5, ier=True, ablation="wo_link")
    summaries = [summarize_run(r, n_boot=20) for r in load_runs([tmp_path])]
    orphan = next(s for s in summaries if s.run.experiment == "other")
    assert full_model_of(orphan, summaries) is None


def test_mem0_two_phase_is_the_papers_mem0_row_and_mem0_is_labelled(tmp_path: Path, paper) -> None:
    write_run(tmp_path, backbone="gpt-4o-mini", method="mem0-two-phase", items=main_items())
    write_run(tmp_path, backbone="gpt-4o-mini", method="mem0", items=main_items())
    runs = load_runs([tmp_path])
    assert [r.method_label for r in runs] == ["mem0-two-phase", "mem0"]
    assert [(r.is_paper_method, r.variant_of) for r in runs] == [(True, None), (False, None)]
    md = main_table([summarize_run(r, n_boot=50) for r in runs], paper).to_markdown()
    assert md.count("| paper |") == 1  # the paper's Mem0 numbers sit beside mem0-two-phase only
    assert "mem0: mem0ai 2.2.1's add-only pipeline" in md


def test_a_row_answered_with_its_upstream_prompt_is_marked(tmp_path: Path, paper) -> None:
    path = write_run(tmp_path, backbone="gpt-4o-mini", method="mem0-two-phase", items=main_items())
    metrics = json.loads((path / "metrics.json").read_text())
    metrics["run"]["answer"] = {
        "prompt": "mem0-answer-aae5989e7", "temperature": 0.0, "temperature_adversarial": 0.0, "mean_words": 9.0,
        "answer_prompt": "upstream", "prompt_source": "mem0ai/mem0 evaluation/prompts.py @ aae5989e7",
    }  # fmt: skip
    (path / "metrics.json").write_text(json.dumps(metrics))
    write_run(tmp_path, backbone="gpt-4o-mini", method="amem", items=main_items())
    table = main_table([summarize_run(r, n_boot=50) for r in load_runs([tmp_path])], paper)
    md = table.to_markdown()
    assert "mem0-answer-aae5989e7 [upstream], T 0.0/0.0, 9.0 words" in md
    assert "[upstream]: the row was answered with its method's own upstream answer prompt" in md
    recs = {r["method"]: r for r in csv.DictReader(io.StringIO(table.to_csv()))}
    assert recs["mem0-two-phase"]["answer_prompt"] == "mem0-answer-aae5989e7 [upstream]"

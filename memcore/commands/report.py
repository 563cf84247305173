"""``memcore-report RUNS… [--out DIR]``: tables (Markdown, CSV, LaTeX) and plots from finished runs.

RUNS are run dirs, sweep dirs (searched recursively for metrics.json) or globs, e.g.
``memcore-report results/runs/paper_main`` or ``memcore-report 'results/runs/*/locomo-mini/local/*/*/*'``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.commands.shared import viewer_hint
from memcore.config import CONFIG_DIR
from memcore.datasets.registry import dataset_kind
from memcore.eval.probe import load_probe, probe_table
from memcore.pipeline.runlock import unwritable_line
from memcore.report.ablation_table import ablation_table
from memcore.report.collect import ReportInputError, RunData, display_path, find_run_dirs, load_runs
from memcore.report.detail_table import detail_table
from memcore.report.equal_tokens import category_table, equal_token_table, plot_recall_vs_context_tokens
from memcore.report.k_sweep import chosen_k, k_sweep_table, write_chosen_k
from memcore.report.main_table import main_table
from memcore.report.memory_table import memory_table
from memcore.report.plots import make_plots
from memcore.report.reference import PAPER_DATASET, ReferenceError, default_reference_dir, load_paper_numbers
from memcore.report.summary import summarize_run
from memcore.report.tables import Table

FORMATS = ("md", "csv", "tex")
DEFAULT_PROBE = Path("results/measured/judge_probe.json")
LAYOUTS = ("auto", "main", "ablation", "both", "retrieval", "detail", "k_sweep")


def auto_layout(runs: Sequence[RunData]) -> str:
    """The layout for what the runs differ in: the detail table for runs of a dataset other than the paper's; the
    main table when any answered; the ablation layout (changes
    against the full model) only when they differ in ablation; runs that answered nothing and do not differ in
    ablation (methods or backbones side by side, retrieval only) get the retrieval table, which has no change
    columns."""
    if any(dataset_kind(r.config.get("dataset") or {}) != PAPER_DATASET for r in runs):
        return "detail"  # the paper's layouts are LoCoMo's; runs of another dataset go side by side
    main = any(r.answered for r in runs)
    if len({r.ablation for r in runs}) > 1:
        return "both" if main else "ablation"
    if all(r.answered for r in runs):
        return "main"
    return "main+retrieval" if main else "retrieval"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memcore-report",
        description="Gather finished runs into the paper's main and ablation table layouts, beside the paper's numbers.",
    )
    p.add_argument("runs", nargs="+", help="run dirs, sweep dirs (searched for metrics.json) or globs")
    p.add_argument(
        "--out", type=Path, default=None, help="output dir (default: <the one dir given>/report, else ./report)"
    )
    p.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="auto",
        help="auto: main table when runs answered, ablation layout (changes against the full model) when they differ"
        " in ablation, retrieval layout (recall, hit rate; no change columns) for retrieval-only runs of several"
        " methods or backbones;"
        " detail: methods side by side per category (F1, BLEU-1, recall, hit) with calls/tokens per turn and question"
        " (added to every layout as detail_table); k_sweep: an experiment=amem_k_sweep result, F1 / BLEU-1 / recall by k"
        " and category with the chosen k per backbone (k_sweep table and k_choice.json)",
    )
    p.add_argument(
        "--write-amem-k",
        action="store_true",
        help="with --layout k_sweep: write the chosen k per backbone into retrieve_k_by_backbone of the A-MEM config"
        " (--amem-config), the map experiment=paper_main reads",
    )
    p.add_argument(
        "--amem-config",
        type=Path,
        default=None,
        help="the A-MEM method config --write-amem-k edits (default: configs/method/amem.yaml)",
    )
    p.add_argument("--formats", default="md,csv,tex", help="comma list of md, csv, tex (default: all)")
    p.add_argument("--no-plots", action="store_true", help="skip the figures")
    p.add_argument(
        "--reference", type=Path, default=None, help="dir with the paper's CSVs (default: results/reference)"
    )
    p.add_argument("--no-reference", action="store_true", help="do not show the paper's numbers")
    p.add_argument(
        "--reference-backbone",
        default=None,
        help="compare every run with the paper's numbers for this backbone (e.g. qwen3-8b)",
    )
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--alpha", type=float, default=0.05, help="1 - CI level (default 0.05 = 95%%)")
    p.add_argument("--budgets", default="250,500,1000,2000,4000", help="token budgets of the recall curve")
    p.add_argument(
        "--equal-tokens-reference",
        default="rag_hybrid",
        help="row label the equal-context-token tables compare every method with (default rag_hybrid)",
    )
    p.add_argument("--include-old", action="store_true", help="also read runs moved aside by overwrite=true (*.old-*)")
    p.add_argument("--quiet", action="store_true", help="do not print the Markdown tables")
    p.add_argument(
        "--probe",
        type=Path,
        default=DEFAULT_PROBE,
        help=f"judge leniency probe results printed beside J when the runs were judged (default {DEFAULT_PROBE};"
        " written by memcore-judge-probe)",
    )
    return p


def _int_list(text: str, what: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ReportInputError(f"{what} must be a comma list of integers, got {text!r}.") from None
    if not values or any(v <= 0 for v in values):
        raise ReportInputError(f"{what} must be positive integers, got {text!r}.")
    return values


def _write(table: Table, out: Path, stem: str, formats: Sequence[str]) -> list[Path]:
    written = []
    for fmt in formats:
        path = out / f"{stem}.{fmt}"
        text = {"md": table.to_markdown, "csv": table.to_csv, "tex": table.to_latex}[fmt]()
        path.write_text(text)
        written.append(path)
    return written


def _probe_text(path: Path | None) -> str | None:
    """The judge-probe table (Markdown) from ``path`` (memcore-judge-probe's json), or None when absent."""
    if path is None:
        return None

    try:
        probe = load_probe(Path(path))
    except ValueError as exc:
        raise ReportInputError(f"{path} is not a judge-probe json ({exc}).") from None
    return f"### Judge leniency probe ({path})\n\n" + probe_table(probe) if probe else None


def run_report(args: argparse.Namespace) -> list[Path]:
    """Build everything ``args`` asks for; returns the files written."""
    formats = [f.strip() for f in str(args.formats).split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise ReportInputError(f"unknown format(s) {', '.join(bad)}; choose from {', '.join(FORMATS)}.")
    if args.n_boot < 1 or not 0.0 < args.alpha < 1.0:
        raise ReportInputError("--n-boot must be >= 1 and --alpha in (0, 1).")
    budgets = _int_list(args.budgets, "--budgets")
    runs = load_runs(args.runs, include_old=args.include_old)
    paper = None if args.no_reference else load_paper_numbers(args.reference or default_reference_dir())
    out: Path = args.out or (
        Path(args.runs[0]) / "report" if len(args.runs) == 1 and Path(args.runs[0]).is_dir() else Path("report")
    )
    out.mkdir(parents=True, exist_ok=True)
    summaries = [summarize_run(r, n_boot=args.n_boot, seed=args.seed, alpha=args.alpha) for r in runs]
    layout = args.layout
    if args.write_amem_k and layout != "k_sweep":
        raise ReportInputError("--write-amem-k needs --layout k_sweep.")
    if layout == "k_sweep":
        return _k_sweep_report(args, summaries, runs, out, formats)
    if layout == "auto":
        layout = auto_layout(runs)
    kw = {"reference_backbone": args.reference_backbone}
    tables: list[tuple[str, Table]] = []
    if layout in ("main", "both", "main+retrieval"):
        tables.append(("main_table", main_table(summaries, paper, **kw)))
    if layout in ("ablation", "both"):
        tables.append(("ablation_table", ablation_table(summaries, paper, **kw)))
    if layout in ("retrieval", "main+retrieval"):
        tables.append(("retrieval_table", ablation_table(summaries, paper, deltas=False, **kw)))
    tables.append(("detail_table", detail_table(summaries)))
    built = memory_table(summaries)
    if built is not None:
        tables.append(("memory_table", built))

    eq_kw = {"reference": args.equal_tokens_reference, "n_boot": args.n_boot, "seed": args.seed, "alpha": args.alpha}
    for stem, make in (("equal_tokens", equal_token_table), ("equal_tokens_by_category", category_table)):
        eq = make(runs, **eq_kw)  # runs made under eval.token_cap only
        if eq is not None:
            tables.append((stem, eq))
    written: list[Path] = []
    # the probe grades LoCoMo cases with LoCoMo's judge presets: it says something only beside such a judge's J
    probe_text = (
        _probe_text(args.probe)
        if any(
            s.values.get("judge") is not None and dataset_kind(s.run.config.get("dataset") or {}) == PAPER_DATASET
            for s in summaries
        )
        else None
    )
    if probe_text:
        (out / "judge_probe.md").write_text(probe_text)
        written.append(out / "judge_probe.md")
    for stem, table in tables:
        written += _write(table, out, stem, formats)
        if not args.quiet:
            print(table.to_markdown())
            if stem == "main_table" and probe_text:  # the judge's measured leniency, right beside J
                print(probe_text)
    if not args.no_plots:
        omitted: list[str] = []
        written += make_plots(
            summaries, paper, out / "plots", reference_backbone=args.reference_backbone, budgets=budgets,
            omitted=omitted,
        )  # fmt: skip
        written += plot_recall_vs_context_tokens(runs, out / "plots", omitted=omitted)
        if omitted:  # a figure left out is said, in the plots dir and on the terminal
            (out / "plots").mkdir(parents=True, exist_ok=True)
            note = out / "plots" / "omitted.md"
            note.write_text("# Figures not drawn\n\n" + "".join(f"- {line}\n" for line in omitted))
            written.append(note)
            if not args.quiet:
                print("\n".join(f"plot {line}" for line in omitted))
    runs_list = out / "runs.txt"
    runs_list.write_text("".join(f"{display_path(r.path)}\n" for r in runs))
    written.append(runs_list)
    return written


def _k_sweep_report(
    args: argparse.Namespace, summaries: Sequence[Any], runs: Sequence[Any], out: Path, formats: Sequence[str]
) -> list[Path]:
    """The k-sweep table, ``k_choice.json`` and, with ``--write-amem-k``, the chosen k written into the map."""
    import json

    table = k_sweep_table(summaries)
    written = _write(table, out, "k_sweep", formats)
    if not args.quiet:
        print(table.to_markdown())
    choice = chosen_k(summaries)
    datasets = ",".join(sorted({r.dataset for r in runs}))
    record: dict[str, Any] = {"chosen_k": choice, "rule": "best overall F1 (categories 1-5), ties to the smaller k"}
    record["datasets"] = datasets
    if args.write_amem_k:
        config = args.amem_config or CONFIG_DIR / "method" / "amem.yaml"
        note = f"chosen by memcore-report --layout k_sweep: best F1 over the sweep on {datasets}"
        changes = write_chosen_k(config, choice, note)
        record["written"] = {"config": display_path(config), "changes": {b: list(v) for b, v in changes.items()}}
        for backbone, (old, new) in changes.items():
            print(f"{display_path(config)}: retrieve_k_by_backbone.{backbone}: {old} -> {new}")
    (out / "k_choice.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    written.append(out / "k_choice.json")
    runs_list = out / "runs.txt"
    runs_list.write_text("".join(f"{display_path(r.path)}\n" for r in runs))
    written.append(runs_list)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; user errors print one line and exit 2."""
    args = _parser().parse_args(argv)
    try:
        written = run_report(args)
    except (ReportInputError, ReferenceError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --out under a read-only tree, or a file in the way
        print(f"error: {unwritable_line(exc, args.out, what='the report dir', fix='--out')}", file=sys.stderr)
        return 2
    if not args.quiet:
        print(f"{len(written)} files written under {Path(written[0]).parent if written else args.out}")
        print(viewer_hint(find_run_dirs(args.runs, include_old=args.include_old), written[-1].parent / "view"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Recall on all of LoCoMo, the dev split and the test split, per run, with each run's paired margin over a
reference run at the same ``eval.token_cap`` on each split.

    python -m experiments.measure.split_recall <runs> --reference "<label>" [--out table.md]

``<runs>``: run dirs or folders holding them (live or archived). A run's label is the one ``memcore-report``'s
equal-token table gives it (:func:`memcore.report.equal_tokens.row_label`); ``--reference`` picks the reference
row by that label. Categories 1-4; Δ = paired per-item recall change,
95 % percentile interval over 1,000 item resamples (* = excludes 0). Splits: :mod:`experiments.measure.splits`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.measure.splits import split_of
from experiments.measure.table_output import emit_table
from memcore.eval.bootstrap import paired_delta_ci
from memcore.report.collect import RunData, load_runs
from memcore.report.equal_tokens import row_label, token_cap_of

CATS = (1, 2, 3, 4)
SPLITS = ("all", "dev", "test")


def in_split(items: Sequence[Mapping[str, Any]], split: str) -> list[Mapping[str, Any]]:
    """The items of categories 1-4 with a recall, of ``split`` (``all``, ``dev`` or ``test``)."""
    return [
        it
        for it in items
        if int(it["category"]) in CATS
        and it.get("recall") is not None
        and (split == "all" or split_of(str(it["conv_id"])) == split)
    ]


def recall(items: Sequence[Mapping[str, Any]]) -> float | None:
    """Mean recall in percent, or None for no item."""
    return 100.0 * sum(float(it["recall"]) for it in items) / len(items) if items else None


def cell(run: RunData, reference: RunData | None, split: str) -> str:
    """``recall`` of ``run`` on ``split``, with its paired Δ against ``reference`` when there is one."""
    mine = in_split(run.items, split)
    r = recall(mine)
    if r is None:
        return "–"
    out = f"{r:.1f}"
    if reference is not None and reference is not run:
        ci = paired_delta_ci(mine, in_split(reference.items, split), "recall")
        if ci is not None:
            d, lo, hi = 100 * ci[0], 100 * ci[1], 100 * ci[2]
            out += f" ({d:+.1f} [{lo:+.1f}, {hi:+.1f}]{'*' if lo > 0 or hi < 0 else ''})"
    return out


def markdown(runs: Sequence[RunData], reference_label: str) -> str:
    """One row per run, budgets ascending, the reference's rows marked."""
    labels = {r.path: row_label(r) for r in runs}
    if reference_label not in labels.values():
        known = ", ".join(sorted(set(labels.values())))
        raise ValueError(f"no run is labelled {reference_label!r}; the labels are: {known}")
    by_budget: dict[int | None, list[RunData]] = {}
    for r in runs:
        by_budget.setdefault(token_cap_of(r), []).append(r)
    head = "| tokens | run | " + " | ".join(f"{s}: recall (Δ vs reference [95 %])" for s in SPLITS) + " |"
    lines = [head, "|---:|---|" + "---:|" * len(SPLITS)]
    for n in sorted(by_budget, key=lambda b: (b is None, b or 0)):
        group = by_budget[n]
        ref = next((r for r in group if labels[r.path] == reference_label), None)
        for r in sorted(group, key=lambda r: (r is not ref, labels[r.path])):
            name = f"{labels[r.path]} (reference)" if r is ref else labels[r.path]
            cells = " | ".join(cell(r, ref, s) for s in SPLITS)
            lines.append(f"| {'–' if n is None else f'{n:,}'} | {name} | {cells} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="split_recall", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--reference", required=True, help="the row label of the reference run at each budget")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    runs = load_runs(args.runs)
    if not runs:
        print(f"error: no run under {', '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    return emit_table(lambda: markdown(runs, args.reference), args.out)


if __name__ == "__main__":
    raise SystemExit(main())

"""Which layer earns which points at equal tokens: memcore-cheap's default against each one-switch ablation and
each of its packer's lists turned off, per context-token budget, with paired intervals.

    python -m experiments.measure.equal_tokens_ablation <runs> [--out results/measured/equal_tokens_ablation/table.md]

``<runs>``: run dirs or folders holding them (live or archived), every one a memcore-cheap run under
``eval.token_cap``. The full method is the run with ablation ``none`` whose packing knobs are memcore-cheap's
composed defaults; every other run at the same budget is a row: a paper switch (``ablation=wo_*``: that component
off in the memory and in the packer) or packer lists switched off or on (the method knobs by which it differs from
the full run, e.g. ``pack_window_bm25=0, pack_window_dense=0``). Δ = paired per-item recall change (categories 1-4) against the
full method at that budget, 95 % percentile interval over 1,000 item resamples; * = it excludes 0.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments.measure.table_output import emit_table
from memcore.eval.bootstrap import paired_delta_ci
from memcore.memory.ablations import ABLATIONS
from memcore.report.collect import RunData, load_runs
from memcore.report.equal_tokens import token_cap_of

CATS = (1, 2, 3, 4)
PACK_LISTS = (
    "pack_window_bm25",
    "pack_window_dense",
    "pack_keyword",
    "pack_topic",
    "pack_link",
    "pack_link_text",
)
PACK_SHAPE = ("pack_window_width", "pack_keyword_graph", "pack_link_anchors")
#: What each paper switch turns off, as the row says it.
SWITCH_NOTES = {
    "wo_update": "no context update of linked notes (build)",
    "wo_merge": "no Merge: every turn its own note or a link (build)",
    "wo_link": "no Link edges (build): no link lists, no neighbour expansion",
    "wo_denoise": "no denoising of the stored context (build)",
    "wo_topic": "no topic channel, no topic list",
    "wo_keyword": "no keyword channel, no keyword-graph list",
    "wo_neighbor": "no neighbour expansion, no link lists",
    "wo_ier": "no iterative refinement (one round)",
}


def default_knobs() -> dict[str, float]:
    """memcore-cheap's packer knobs as ``memcore-run method=memcore-cheap`` composes them."""
    from experiments.benchmarks.common import compose  # Hydra: only for the table, not for importing the rows

    method = compose(["method=memcore-cheap"], Path("/nonexistent")).method
    return {k: float(method[k]) for k in (*PACK_LISTS, *PACK_SHAPE)}


def is_default(run: RunData, defaults: dict[str, float]) -> bool:
    """Whether the run's packer knobs are the defaults."""
    method = run.config.get("method") or {}
    return all(float(method.get(k) or 0) == v for k, v in defaults.items())


def what_changed(run: RunData, defaults: dict[str, float]) -> str:
    """ "lists off", "lists on" or "lists changed", by how the run's list weights differ from the defaults."""
    method = run.config.get("method") or {}
    got = {k: float(method.get(k) or 0) for k in PACK_LISTS}
    off = any(defaults[k] > 0 and got[k] == 0 for k in PACK_LISTS)
    on = any(defaults[k] == 0 and got[k] > 0 for k in PACK_LISTS)
    return "packer lists off" if off and not on else "packer lists on" if on and not off else "packer knobs changed"


def knob_diff(run: RunData, full: RunData) -> str:
    """The method knobs by which ``run`` differs from ``full`` (``key=value``, sorted), or ``""``."""
    a, b = run.config.get("method") or {}, full.config.get("method") or {}
    return ", ".join(f"{k}={a.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k))


def per_item_recall(run: RunData) -> dict[str, float | None]:
    """Each item's recall, by item id."""
    return {str(it["item_id"]): it.get("recall") for it in run.items}


def recall(run: RunData) -> float | None:
    vals = [it["recall"] for it in run.items if int(it["category"]) in CATS and it.get("recall") is not None]
    return 100.0 * sum(vals) / len(vals) if vals else None


def rows(
    runs: Sequence[RunData], defaults: dict[str, float]
) -> tuple[list[int], list[tuple[str, str, dict[int, str]]]]:
    """(budgets, rows of (name, what it changes, budget → cell)) with the full method first, then the paper's
    switches in their order, then the packer-knob rows in the order their knobs sort. ``defaults``: the packer
    knobs of the full method (:func:`default_knobs`)."""
    by_budget: dict[int, list[RunData]] = {}
    for r in runs:
        n = token_cap_of(r)
        if n is not None:
            by_budget.setdefault(n, []).append(r)
    budgets = sorted(by_budget)
    table: dict[str, tuple[str, dict[int, str]]] = {}
    for n in budgets:
        candidates = [r for r in by_budget[n] if r.ablation == "none" and is_default(r, defaults)]
        if not candidates:
            raise ValueError(f"no full-method run (ablation none, default packer knobs) at {n} tokens")
        full = candidates[0]
        for other in candidates[1:]:  # the same configuration twice (a sweep's ablation=none): must agree
            if per_item_recall(other) != per_item_recall(full):
                raise ValueError(f"full-method runs {full.path} and {other.path} at {n} tokens disagree item by item")
        table.setdefault("full", ("memcore-cheap's default", {}))[1][n] = f"**{recall(full):.1f}**"
        for r in by_budget[n]:
            if r in candidates:
                continue
            name = r.ablation if r.ablation != "none" else knob_diff(r, full)
            if not name:
                raise ValueError(f"{r.path} is the same configuration as the full run {full.path}")
            what = SWITCH_NOTES.get(r.ablation, r.ablation) if r.ablation != "none" else what_changed(r, defaults)
            ci = paired_delta_ci(r.items, full.items, "recall", categories=CATS)
            cell = f"{recall(r):.1f}"
            if ci is not None:
                d, lo, hi, _ = (100 * ci[0], 100 * ci[1], 100 * ci[2], ci[3])
                star = "*" if lo > 0 or hi < 0 else ""
                cell += f" ({d:+.1f} [{lo:+.1f}, {hi:+.1f}]{star})"
            table.setdefault(name, (what, {}))[1][n] = cell
    order = [
        "full",
        *(a for a in ABLATIONS if a in table),
        *sorted(k for k in table if k not in ABLATIONS and k != "full"),
    ]
    return budgets, [(k, *table[k]) for k in order]


def markdown(runs: Sequence[RunData], defaults: dict[str, float]) -> str:
    budgets, table = rows(runs, defaults)
    head = "| row | what changes | " + " | ".join(f"{n:,} tokens: recall (Δ [95 %])" for n in budgets) + " |"
    lines = [head, "|---|---|" + "---:|" * len(budgets)]
    for name, what, cells in table:
        label = "full" if name == "full" else f"`{name}`"
        lines.append(f"| {label} | {what} | " + " | ".join(cells.get(n, "–") for n in budgets) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="equal_tokens_ablation", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    runs = [r for r in load_runs(args.runs) if r.method == "memcore-cheap"]
    if not runs:
        print(f"error: no memcore-cheap run under {', '.join(map(str, args.runs))}", file=sys.stderr)
        return 2
    return emit_table(lambda: markdown(runs, default_knobs()), args.out)


if __name__ == "__main__":
    raise SystemExit(main())

"""Two runs of one slice compared item by item: answer and evidence metrics with paired intervals, the answers'
length, and what each run cost (LLM calls and tokens by stage, the memory's own counters).

    python -m experiments.measure.paired_runs --a <run dir> --b <run dir> --label-a A --label-b B --out <file.md>

Per category (and over categories 1-4 and 1-5): the items both runs answered, each metric of each run (percent),
the paired difference B - A with its 95 % interval (items resampled, ``paired_delta_ci``), and the mean answer
length in white-space words. Then the two runs' LLM usage by stage (``cost.json``) and the numeric counters their
memories report after construction (``stats.json``, summed over conversations). Writes Markdown to ``--out`` and a
``.json`` beside it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memcore.eval.aggregate import category_name
from memcore.eval.bootstrap import metric_value, paired_delta_ci
from memcore.itemlog import read_run_items

GROUPS: tuple[tuple[str, tuple[int, ...]], ...] = (
    *((f"{c} {category_name(c)}", (c,)) for c in (1, 2, 3, 4, 5)),
    ("overall 1-4", (1, 2, 3, 4)),
    ("overall 1-5", (1, 2, 3, 4, 5)),
)
METRICS: tuple[str, ...] = ("f1", "bleu1", "recall", "hit")
USAGE_FIELDS: tuple[str, ...] = ("llm_calls", "cached_calls", "prompt_tokens", "completion_tokens", "parse_failures")


def answered_items(run_dir: Path) -> list[dict[str, Any]]:
    """The run's item records that carry an answer; FileNotFoundError when there are none."""
    items = [r for r in read_run_items(run_dir) if r.get("answer") is not None]
    if not items:
        raise FileNotFoundError(f"{run_dir} holds no answered items (items.jsonl or items.jsonl.gz)")
    return items


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def paired_rows(
    a: Sequence[Mapping[str, Any]],
    b: Sequence[Mapping[str, Any]],
    labels: tuple[str, str],
    metrics: Sequence[str] = METRICS,
) -> list[dict[str, Any]]:
    """One row per group over the items both runs answered: ``<metric>_<label>`` (percent, None when no item has a
    value), ``<metric>_delta`` = ``[b - a, low, high]`` (percent) and ``words_<label>``."""
    both = {r["item_id"] for r in a} & {r["item_id"] for r in b}
    first = {r["item_id"]: r for r in a if r["item_id"] in both}
    second = {r["item_id"]: r for r in b if r["item_id"] in both}
    side = {labels[0]: first, labels[1]: second}
    rows = []
    for label, cats in GROUPS:
        ids = sorted(i for i in both if int(first[i]["category"]) in cats)
        row: dict[str, Any] = {"group": label, "n": len(ids)}
        for metric in metrics:
            for name, recs in side.items():
                vals = [v for i in ids if (v := metric_value(recs[i], metric)) is not None]
                row[f"{metric}_{name}"] = None if not vals else 100.0 * _mean(vals)  # type: ignore[operator]
            ci = paired_delta_ci(
                [second[i] for i in ids], [first[i] for i in ids], metric, categories=cats, n_boot=2000
            )
            row[f"{metric}_delta"] = None if ci is None else [100.0 * ci[0], 100.0 * ci[1], 100.0 * ci[2]]
        for name, recs in side.items():
            row[f"words_{name}"] = _mean([len(str(recs[i]["answer"]).split()) for i in ids])
        rows.append(row)
    return rows


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _d(v: list[float] | None) -> str:
    return "–" if v is None else f"{v[0]:+.2f} [{v[1]:+.2f}, {v[2]:+.2f}]"


_LABELS = {"f1": "F1", "bleu1": "BLEU-1", "recall": "recall", "hit": "hit"}


def paired_markdown(rows: Sequence[Mapping[str, Any]], labels: tuple[str, str], metrics: Sequence[str]) -> str:
    """The rows of :func:`paired_rows` as one Markdown table."""
    a, b = labels
    cols = [f"{_LABELS[m]} {a} | {_LABELS[m]} {b} | Δ{_LABELS[m]} [95 % CI]" for m in metrics]
    head = f"| group | n | {' | '.join(cols)} | words {a} | words {b} |"
    lines = [head, "|---|" + "---:|" * (1 + 3 * len(metrics) + 2)]
    for r in rows:
        cells = [f"{_f(r[f'{m}_{a}'])} | {_f(r[f'{m}_{b}'])} | {_d(r[f'{m}_delta'])}" for m in metrics]
        lines.append(
            f"| {r['group']} | {r['n']} | {' | '.join(cells)} | {_f(r[f'words_{a}'])} | {_f(r[f'words_{b}'])} |"
        )
    return "\n".join(lines) + "\n"


def run_usage(run_dir: Path) -> dict[str, dict[str, int]]:
    """LLM usage by stage from the run's ``cost.json``. A run that reused its memory snapshot made no build calls:
    it gets a zero row ``build (snapshot reused)`` so the table says why its ingest stage is missing."""
    cost = json.loads((run_dir / "cost.json").read_text())
    usage = {stage: {f: int(u.get(f, 0)) for f in USAGE_FIELDS} for stage, u in cost["usage"]["by_stage"].items()}
    build = cost.get("memory_build", {})
    if build.get("snapshots_reused"):
        usage["build (snapshot reused)"] = {f: 0 for f in USAGE_FIELDS}
    return usage


def memory_counters(run_dir: Path) -> dict[str, float]:
    """The numeric top-level counters each conversation's memory reported after construction, summed."""
    stats = json.loads((run_dir / "stats.json").read_text())
    out: dict[str, float] = {}
    for conv in stats.get("conversations", {}).values():
        for key, value in (conv.get("memory") or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = out.get(key, 0) + value
    return out


def usage_markdown(usage: Mapping[str, Mapping[str, Mapping[str, int]]]) -> str:
    """One row per (run, stage) and a total per run."""
    lines = ["| run | stage | LLM calls | cached | prompt tokens | completion tokens | parse failures |"]
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    for label, stages in usage.items():
        total = {f: 0 for f in USAGE_FIELDS}
        for stage, u in stages.items():
            lines.append(f"| {label} | {stage} | " + " | ".join(f"{u[f]:,}" for f in USAGE_FIELDS) + " |")
            total = {f: total[f] + u[f] for f in USAGE_FIELDS}
        lines.append(f"| {label} | **total** | " + " | ".join(f"{total[f]:,}" for f in USAGE_FIELDS) + " |")
    return "\n".join(lines) + "\n"


def _counter(v: float | None) -> str:
    """A whole number in full with thousands separators, a fraction to four significant digits, None as a dash."""
    if v is None:
        return "–"
    return f"{int(v):,}" if float(v).is_integer() else f"{v:,.4g}"


def counters_markdown(counters: Mapping[str, Mapping[str, float]], keys: Sequence[str] | None) -> str:
    """The memories' counters side by side (``keys``: the ones to show, in order; None: every one either has)."""
    labels = list(counters)
    names = list(keys) if keys else sorted(set().union(*(c.keys() for c in counters.values())))
    lines = ["| counter | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    for name in names:
        cells = [counters[lab].get(name) for lab in labels]
        lines.append(f"| {name} | " + " | ".join(_counter(v) for v in cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="paired_runs", description=__doc__.splitlines()[0])
    p.add_argument("--a", type=Path, required=True, help="the first run dir (the reference of the differences)")
    p.add_argument("--b", type=Path, required=True, help="the second run dir")
    p.add_argument("--label-a", required=True)
    p.add_argument("--label-b", required=True)
    p.add_argument("--metrics", default=",".join(METRICS), help=f"registered metrics (default {','.join(METRICS)})")
    p.add_argument("--counters", default="", help="memory counters to show, comma-separated (default: all)")
    p.add_argument("--out", type=Path, required=True, help="Markdown file to write (a .json is written beside it)")
    args = p.parse_args(argv)
    labels = (args.label_a, args.label_b)
    if labels[0] == labels[1]:
        print("error: --label-a and --label-b must differ", file=sys.stderr)
        return 2
    metrics = [m for m in args.metrics.split(",") if m]
    try:
        rows = paired_rows(answered_items(args.a), answered_items(args.b), labels, metrics)
        usage = {labels[0]: run_usage(args.a), labels[1]: run_usage(args.b)}
        counters = {labels[0]: memory_counters(args.a), labels[1]: memory_counters(args.b)}
    except (FileNotFoundError, ValueError, KeyError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    keys = [k for k in args.counters.split(",") if k] or None
    text = (
        paired_markdown(rows, labels, metrics)
        + "\nLLM usage by stage:\n\n"
        + usage_markdown(usage)
        + "\nMemory counters after construction (summed over conversations):\n\n"
        + counters_markdown(counters, keys)
    )
    args.out.write_text(text)
    payload = {"labels": list(labels), "rows": rows, "usage": usage, "counters": counters}
    args.out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The answer prompt's effect on one build: the same method and memory answered under ``eval.answer_prompt=harness``
and ``upstream``, compared item by item.

    python -m experiments.measure.answer_prompt_effect --harness <run dir> --upstream <run dir> --out <file.md>

Per category (and over categories 1-4 and 1-5): the items both runs answered, F1 and BLEU-1 of each (percent), the
paired difference upstream - harness with its 95 % interval (items resampled, ``paired_delta_ci``), and the mean
answer length in white-space words. Writes Markdown to ``--out`` (and a ``.json`` beside it).
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


def _items(run_dir: Path) -> list[dict[str, Any]]:
    items = [r for r in read_run_items(run_dir) if r.get("answer") is not None]
    if not items:
        raise FileNotFoundError(f"{run_dir} holds no answered items (items.jsonl or items.jsonl.gz)")
    return items


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def compare(harness: Sequence[Mapping[str, Any]], upstream: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per group over the items both runs answered."""
    both = {r["item_id"] for r in harness} & {r["item_id"] for r in upstream}
    h = {r["item_id"]: r for r in harness if r["item_id"] in both}
    u = {r["item_id"]: r for r in upstream if r["item_id"] in both}
    rows = []
    for label, cats in GROUPS:
        ids = sorted(i for i in both if int(h[i]["category"]) in cats)
        row: dict[str, Any] = {"group": label, "n": len(ids)}
        for metric in ("f1", "bleu1"):
            for side, recs in (("harness", h), ("upstream", u)):
                vals = [v for i in ids if (v := metric_value(recs[i], metric)) is not None]
                row[f"{metric}_{side}"] = None if not vals else 100.0 * _mean(vals)  # type: ignore[operator]
            ci = paired_delta_ci([u[i] for i in ids], [h[i] for i in ids], metric, categories=cats, n_boot=2000)
            row[f"{metric}_delta"] = None if ci is None else [100.0 * ci[0], 100.0 * ci[1], 100.0 * ci[2]]
        for side, recs in (("harness", h), ("upstream", u)):
            row[f"words_{side}"] = _mean([len(str(recs[i]["answer"]).split()) for i in ids])
        rows.append(row)
    return rows


def _f(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def _d(v: list[float] | None) -> str:
    return "–" if v is None else f"{v[0]:+.2f} [{v[1]:+.2f}, {v[2]:+.2f}]"


def to_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    head = (
        "| group | n | F1 harness | F1 upstream | ΔF1 [95 % CI] | BLEU-1 harness | BLEU-1 upstream | ΔBLEU-1 [95 % CI]"
        " | words harness | words upstream |"
    )
    lines = [head, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| {r['group']} | {r['n']} | {_f(r['f1_harness'])} | {_f(r['f1_upstream'])} | {_d(r['f1_delta'])} | "
            f"{_f(r['bleu1_harness'])} | {_f(r['bleu1_upstream'])} | {_d(r['bleu1_delta'])} | "
            f"{_f(r['words_harness'])} | {_f(r['words_upstream'])} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="answer_prompt_effect", description=__doc__.splitlines()[0])
    p.add_argument("--harness", type=Path, required=True, help="run dir answered with eval.answer_prompt=harness")
    p.add_argument("--upstream", type=Path, required=True, help="run dir answered with eval.answer_prompt=upstream")
    p.add_argument("--out", type=Path, required=True, help="Markdown file to write (a .json is written beside it)")
    args = p.parse_args(argv)
    try:
        rows = compare(_items(args.harness), _items(args.upstream))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(to_markdown(rows))
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

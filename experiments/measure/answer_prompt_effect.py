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

from experiments.measure.paired_runs import answered_items, paired_rows

LABELS = ("harness", "upstream")


def compare(harness: Sequence[Mapping[str, Any]], upstream: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per group over the items both runs answered (F1 and BLEU-1, upstream - harness)."""
    return paired_rows(harness, upstream, LABELS, ("f1", "bleu1"))


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
        rows = compare(answered_items(args.harness), answered_items(args.upstream))
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    args.out.write_text(to_markdown(rows))
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

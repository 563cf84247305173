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

from experiments.measure.paired_runs import answered_items, paired_markdown, paired_rows

LABELS = ("harness", "upstream")
METRICS = ("f1", "bleu1")


def compare(harness: Sequence[Mapping[str, Any]], upstream: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per group over the items both runs answered (F1 and BLEU-1, upstream - harness)."""
    return paired_rows(harness, upstream, LABELS, METRICS)


def to_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The rows of :func:`compare` as one Markdown table."""
    return paired_markdown(rows, LABELS, METRICS)


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

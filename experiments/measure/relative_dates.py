"""How many LoCoMo turns carry a relative date expression, and how many of those expressions the code resolves
(:mod:`memcore.memory.relative_dates`). Counts only: no LoCoMo text is written.

    python -m experiments.measure.relative_dates [--data locomo10.json] [--out results/measured/relative_dates.md]

An expression is *resolved* when it gets an absolute date, week, weekend, month, year or season; a vague one
("a few days ago", "the other day") is only anchored to the session date. "recently" and "lately" are not date
expressions and are counted apart, for scale.
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.memory.relative_dates import find_relative_dates
from memcore.types import Turn

_VAGUE_WORDS = re.compile(r"\b(recently|lately)\b", re.IGNORECASE)


def count(turns: Sequence[Turn]) -> dict[str, Any]:
    """Turn and expression counts over ``turns`` (each resolved against its own session date)."""
    with_expr = with_resolved = with_vague_word = 0
    expressions: Counter[str] = Counter()
    resolved = anchored = 0
    for t in turns:
        found = find_relative_dates(t.text, t.session_time)
        with_expr += bool(found)
        with_resolved += any(m.resolved for m in found)
        with_vague_word += bool(_VAGUE_WORDS.search(t.text))
        for m in found:
            expressions[" ".join(m.text.lower().split())] += 1
            resolved += m.resolved
            anchored += not m.resolved
    return {
        "turns": len(turns),
        "turns_with_relative_expression": with_expr,
        "turns_with_a_resolved_expression": with_resolved,
        "expressions": resolved + anchored,
        "resolved": resolved,
        "anchored_only": anchored,
        "turns_with_recently_or_lately": with_vague_word,
        "by_expression": dict(expressions.most_common()),
    }


def to_markdown(c: dict[str, Any], data_name: str) -> str:
    pct = 100 * c["turns_with_relative_expression"] / c["turns"] if c["turns"] else 0.0
    lines = [
        "# Relative date expressions in LoCoMo",
        "",
        f"Data: `{data_name}`, every turn of every session (image captions included, as the methods ingest them).",
        "Command: `python -m experiments.measure.relative_dates --out results/measured/relative_dates.md`",
        "",
        "| | count |",
        "|---|---:|",
        f"| turns | {c['turns']} |",
        f"| turns with a relative date expression | {c['turns_with_relative_expression']} ({pct:.1f} %) |",
        f"| turns with at least one expression resolved to an absolute date | {c['turns_with_a_resolved_expression']} |",
        f"| expressions found | {c['expressions']} |",
        f"| resolved (absolute day, week, weekend, month, year or season) | {c['resolved']} |",
        f'| anchored only (vague: "a few days ago", "the other day") | {c["anchored_only"]} |',
        f'| turns with "recently" / "lately" (not date expressions; not annotated) | {c["turns_with_recently_or_lately"]} |',
        "",
        "Per expression (lower-cased):",
        "",
        "| expression | count |",
        "|---|---:|",
        *[f"| {k} | {v} |" for k, v in c["by_expression"].items()],
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=None, help="locomo10.json (default: as the harness finds it)")
    ap.add_argument("--out", type=Path, default=None, help="write the markdown table here (and .json beside it)")
    args = ap.parse_args(argv)
    path = resolve_locomo_path(args.data)
    ds = load_locomo(path)
    c = count([t for conv in ds.conversations for t in conv.turns])
    md = to_markdown(c, path.name)
    if args.out:
        args.out.write_text(md)
        args.out.with_suffix(".json").write_text(json.dumps(c, indent=1) + "\n")
    print(md)


if __name__ == "__main__":
    main()

"""full_context's whole-conversation context per LoCoMo conversation, with and without image captions (no LLM).

``python -m experiments.measure.full_context_tokens [--out results/measured/full_context_captions.json]`` builds
``full_context``'s context for every conversation of ``locomo10.json`` with no budget (nothing cut), once with
``image_captions: none`` (the official code on the released file) and once with ``shares`` (the harness's former
default), and writes per conversation: turns, caption turns, approximate tokens (``memcore.text.count_tokens``,
the unit of items' ``tokens_used``) and characters of each.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from baselines.full_context import FullContext, FullContextConfig
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.text import count_tokens

REPO = Path(__file__).resolve().parents[2]


def measure() -> list[dict[str, Any]]:
    """One row per conversation of LoCoMo."""
    rows = []
    for conv in load_locomo(resolve_locomo_path(None)).conversations:
        row: dict[str, Any] = {
            "conv_id": conv.conv_id,
            "turns": len(conv.turns),
            "caption_turns": sum(1 for t in conv.turns if t.image_caption),
        }
        for captions in ("none", "shares"):
            fc = FullContext(FullContextConfig(image_captions=captions), 10**9, (conv.speaker_a, conv.speaker_b))
            for turn in conv.turns:
                fc.ingest(turn)
            ev = fc.retrieve("")
            assert ev.extra["turns_kept"] == len(conv.turns)
            row[f"tokens_{captions}"] = count_tokens(ev.context)
            row[f"chars_{captions}"] = len(ev.context)
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=REPO / "results" / "measured" / "full_context_captions.json")
    args = p.parse_args()
    rows = measure()
    total = {k: sum(r[k] for r in rows) for k in rows[0] if k != "conv_id"}
    args.out.write_text(json.dumps({"conversations": rows, "total": total}, indent=1) + "\n")
    print(f"{'conversation':<12} {'turns':>6} {'captions':>8} {'tokens none':>12} {'tokens shares':>14} {'+%':>6}")
    for r in [*rows, {"conv_id": "all", **total}]:
        extra = 100 * (r["tokens_shares"] / r["tokens_none"] - 1)
        print(
            f"{r['conv_id']:<12} {r['turns']:>6} {r['caption_turns']:>8} {r['tokens_none']:>12,} "
            f"{r['tokens_shares']:>14,} {extra:>6.1f}"
        )


if __name__ == "__main__":
    main()

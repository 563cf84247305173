"""Archived items cut to what the equal-token tables read, as results/measured/equal_tokens/runs holds them.

    python -m experiments.measure.slim_items <archive dir>

Every ``items.jsonl.gz`` below the dir (oracle runs excepted: they are written this way) keeps the item's ids,
category, gold dia_ids, packed dia_ids, recall / hit, scores and tokens used, its notes' dia_ids and tokens,
and the budget, packing and IER-stop records; the rest (gold answer text, note scores and channels, channel
counts) is dropped. Rewritten in place, deterministically (gzip without a timestamp).
"""

from __future__ import annotations

import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

KEEP = ("item_id", "conv_id", "qa_index", "category", "evidence", "retrieved_dia_ids", "recall", "hit", "scores")
EXTRA = ("context_budget", "packing", "ier_stop")


def slim(item: dict[str, Any]) -> dict[str, Any]:
    """The fields the equal-token tables and the floor test read."""
    out = {k: item.get(k) for k in KEEP}
    key = "tokens_used" if "tokens_used" in item else "context_tokens"  # items written before the rename
    out[key] = item.get(key)
    out["notes"] = [{"dia_ids": n.get("dia_ids", []), "tokens": n.get("tokens")} for n in item.get("notes") or []]
    extra = item.get("extra") or {}
    out["extra"] = {k: extra[k] for k in EXTRA if k in extra}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1 or not Path(args[0]).is_dir():
        print("error: pass one archive dir (e.g. results/measured/evidence_frame/runs)", file=sys.stderr)
        return 2
    for path in sorted(Path(args[0]).rglob("items.jsonl.gz")):
        if "oracle" in path.parts:
            continue
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            items = [slim(json.loads(line)) for line in fh if line.strip()]
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in items)
        with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
            gz.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

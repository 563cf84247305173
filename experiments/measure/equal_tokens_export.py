"""Copy the equal-token runs (experiments/measure/equal_tokens.sh) into results/measured/equal_tokens/runs, slimmed
to what the tables are derived from: metrics.json, a config.yaml with the result-affecting keys the report reads,
and items.jsonl.gz with each item's id, category, gold evidence, retrieved dia_ids, recall, hit, scores, context
tokens and the budget record. ``memcore-report results/measured/equal_tokens/runs`` re-renders the tables.

    python experiments/measure/equal_tokens_export.py <MEMCORE_RESULTS>/runs results/measured/equal_tokens/runs
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import yaml

KEEP = ("item_id", "conv_id", "qa_index", "category", "evidence", "retrieved_dia_ids", "recall", "hit", "scores")


def slim(rec: dict) -> dict:
    out = {k: rec.get(k) for k in KEEP}
    out["context_tokens"] = rec.get("context_tokens")
    out["notes"] = [{"dia_ids": n.get("dia_ids"), "tokens": n.get("tokens")} for n in rec.get("notes") or []]
    extra = rec.get("extra") or {}
    out["extra"] = {k: extra[k] for k in ("context_budget", "packing", "ier_stop") if k in extra}
    return out


def export(src_root: Path, dst_root: Path) -> int:
    n = 0
    for metrics in sorted(src_root.glob("eqtok_*/**/metrics.json")):
        run = metrics.parent
        dst = dst_root / run.relative_to(src_root)
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        shutil.copy(metrics, dst / "metrics.json")
        cfg = yaml.safe_load((run / "config.yaml").read_text())
        keep = {
            "experiment_name": cfg.get("experiment_name"),
            "method": cfg.get("method"),
            "ablation": cfg.get("ablation"),
            "eval": {k: cfg["eval"].get(k) for k in ("answer", "budget", "context_tokens")},
            "dataset": {"name": cfg["dataset"].get("name")},
            "embedder": {"name": cfg["embedder"].get("name")},
        }
        (dst / "config.yaml").write_text(yaml.safe_dump(keep, sort_keys=False))
        with open(run / "items.jsonl", encoding="utf-8") as fh, gzip.open(dst / "items.jsonl.gz", "wt") as out:
            for line in fh:
                if line.strip():
                    out.write(json.dumps(slim(json.loads(line)), ensure_ascii=False) + "\n")
        n += 1
    return n


if __name__ == "__main__":
    print(export(Path(sys.argv[1]), Path(sys.argv[2])), "runs exported")

"""Oracle runs beside capped runs: the recall each context-token budget allows (:mod:`memcore.eval.oracle`).

    python -m experiments.measure.oracle_runs <run dir or archive> ... [--data locomo10.json]

For every distinct ``eval.token_cap`` among the runs found, one oracle run is written beside the first run
with that budget at ``<experiment>/<dataset>/<backbone>/<protocol>/oracle/none`` (``metrics.json``, ``config.yaml``,
``items.jsonl.gz``, laid out as ``memcore-archive --slim`` lays out a run), over the questions of the first run
found there. ``memcore-report`` then prints it as the first row of the equal-token tables and a dashed line in
the recall-vs-tokens plot. Deterministic: rerunning rewrites the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.eval.aggregate import aggregate
from memcore.eval.oracle import LINE_FORMAT, oracle_items
from memcore.itemlog import LoggedItem, read_run_items
from memcore.report.collect import find_run_dirs, load_run
from memcore.report.equal_tokens import ORACLE, token_cap_of


def _write(out: Path, items: list[dict], template: dict, tokens: int, config: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    metrics = aggregate([LoggedItem(it) for it in items])
    info = dict(template.get("run") or {})
    info.update({"method": ORACLE, "ablation": "none", "answered": False})
    used = [int(it["tokens_used"]) for it in items]
    info["evidence"] = {
        "token_cap": tokens,
        "mean_context_tokens": sum(used) / len(used) if used else 0.0,
        "max_context_tokens": max(used, default=0),
        "n_items": len(items),
        "n_cut": sum(1 for it in items if it["extra"]["context_budget"]["cut"]),
        "fill": ["oracle_smallest_first"],
    }
    metrics["run"] = info
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, sort_keys=True) + "\n")
    cfg = {
        "experiment_name": config.get("experiment_name"),
        "method": {"name": ORACLE, "line": LINE_FORMAT, "order": "smallest_first"},
        "ablation": {"name": "none"},
        "eval": {"answer": False, "note_cap": None, "token_cap": tokens},
        "dataset": config.get("dataset") or {},
    }
    from omegaconf import OmegaConf

    (out / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(cfg)))
    lines = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in items)
    with open(out / "items.jsonl.gz", "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
        gz.write(lines.encode("utf-8"))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="oracle_runs", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", type=Path, help="run dirs or dirs holding runs (capped runs are used)")
    p.add_argument("--data", default=None, help="locomo10.json (default: $MEMCORE_DATA, then ../shared/data)")
    args = p.parse_args(argv)
    try:
        path = resolve_locomo_path(args.data)
        dataset = load_locomo(path)
    except (DataError, FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    dirs = [d for d in find_run_dirs(list(args.runs)) if "oracle" not in d.parts]
    if not dirs:
        print(f"error: no finished runs under {', '.join(map(str, args.runs))}; pass run dirs", file=sys.stderr)
        return 2
    done: set[int] = set()
    for d in dirs:
        run = load_run(d)
        tokens = token_cap_of(run)
        if tokens is None:
            continue
        method_dir = d.parent.parent  # <experiment>/<dataset>/<backbone>/<protocol>
        if tokens in done:
            continue
        done.add(tokens)
        items = oracle_items(read_run_items(d), dataset.conversations, tokens)
        out = method_dir / ORACLE / "none"
        _write(out, items, run.metrics, tokens, run.config)
        print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

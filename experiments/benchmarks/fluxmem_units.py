"""FluxMem's semantic units, retrieval only, all of LoCoMo: upstream's 512-character session chunks against one
node per turn, Stage 1 without the LLM (``llm_verify=false``), MiniLM embeddings, no LLM call at all.

    python -m experiments.benchmarks.fluxmem_units --out results/measured/fluxmem_units

Two readings per unit: FluxMem's own k (5 semantic nodes, pool = the 15 dense best, as upstream), and equal
context tokens (the ranking of a 100-node pool cut by ``memcore.packing.budget.fill_units`` at 250 / 500 / 1,000 / 2,000
tokens of rendered notes, ``[date] text``). Recall / hit over categories 1-4 (FluxMem's paper) and 1-5, items with
gold evidence. The fact units need an LLM per turn to build, so they are not in this script (see the note).
Writes ``summary.json`` and ``items.jsonl.gz`` (per item and setting: ids, category, retrieved dia_ids, recall,
hit, tokens; no LoCoMo text).
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path
from typing import Any

from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.system import FluxMem
from memcore.config import EmbedderConfig
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.factory import build_embedder
from memcore.metrics.scorers.evidence import evidence_scores
from memcore.packing.budget import fill_units, note_line
from memcore.text import count_tokens

ROOT = Path(__file__).resolve().parents[2]
UNITS = ("turn", "chunk")
BUDGETS = (250, 500, 1000, 2000)
WIDE_K = 100


def _no_llm() -> Any:
    raise RuntimeError("fluxmem_units: no LLM call expected")


def _mean(rows: list[dict[str, Any]], key: str, cats: tuple[int, ...]) -> float:
    vals = [float(r[key]) for r in rows if r["category"] in cats and r[key] is not None]
    return round(100 * sum(vals) / len(vals), 2) if vals else 0.0


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall / hit % over categories 1-4 and 1-5 (items with gold evidence), mean notes and tokens."""
    gold = [r for r in rows if r["recall"] is not None]
    c14 = (1, 2, 3, 4)
    return {
        "n_1_4": sum(1 for r in gold if r["category"] in c14),
        "recall_1_4": _mean(rows, "recall", c14),
        "hit_1_4": _mean(rows, "hit", c14),
        "n_1_5": len(gold),
        "recall_1_5": _mean(rows, "recall", (1, 2, 3, 4, 5)),
        "hit_1_5": _mean(rows, "hit", (1, 2, 3, 4, 5)),
        "mean_notes": round(sum(r["notes"] for r in rows) / max(len(rows), 1), 2),
        "mean_tokens": round(sum(r["tokens"] for r in rows) / max(len(rows), 1), 1),
    }


def run(embedder: Any, convs: list[Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary: dict[str, Any] = {}
    items: list[dict[str, Any]] = []
    for unit in UNITS:
        own = FluxMemConfig.from_dict({"unit": unit, "llm_verify": False})
        wide = FluxMemConfig.from_dict({"unit": unit, "llm_verify": False, "k": WIDE_K, "verify_pool": WIDE_K})
        rows: dict[str, list[dict[str, Any]]] = {"k5": [], **{f"tok{n}": [] for n in BUDGETS}}
        nodes = chars = 0
        t0 = time.perf_counter()
        for conv in convs:
            mem = FluxMem(own, backbone=_no_llm, embedder=lambda: embedder)
            for t in conv.turns:
                mem.ingest(t)
            mem.finalize()
            nodes += len(mem.graph.semantic)
            chars += sum(len(n.text) for n in mem.graph.semantic)
            ranked = FluxMem(wide, backbone=_no_llm, embedder=lambda: embedder)
            ranked.graph = mem.graph
            for item in conv.qa:
                base = {"conv_id": conv.conv_id, "qa_index": item.index, "category": int(item.category)}
                ev = mem.retrieve(item.question)
                ids = [d for n in ev.notes for d in n.dia_ids]
                toks = sum(count_tokens(note_line(n)) for n in ev.notes)
                sc = evidence_scores(item.evidence, ids)
                rec = {**base, "dia_ids": list(dict.fromkeys(ids)), "notes": len(ev.notes), "tokens": toks, **sc}
                rows["k5"].append(rec)
                notes = ranked.retrieve(item.question).notes
                costs = [count_tokens(note_line(n)) for n in notes]
                for n in BUDGETS:
                    fill = fill_units(costs, n)
                    kept = [notes[i] for i in fill.taken]
                    ids = [d for x in kept for d in x.dia_ids]
                    sc = evidence_scores(item.evidence, ids)
                    used = fill.used
                    rows[f"tok{n}"].append(
                        {**base, "dia_ids": list(dict.fromkeys(ids)), "notes": len(kept), "tokens": used, **sc}
                    )
        turns = sum(len(c.turns) for c in convs)
        summary[unit] = {
            "semantic_nodes": nodes,
            "turns": turns,
            "mean_node_chars": round(chars / max(nodes, 1), 1),
            "wall_s": round(time.perf_counter() - t0, 1),
            **{setting: summarize(r) for setting, r in rows.items()},
        }
        for setting, r in rows.items():
            items += [{"unit": unit, "setting": setting, **x} for x in r]
    return summary, items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "results/measured/fluxmem_units")
    ap.add_argument("--conversations", type=int, default=None, help="only the first N conversations")
    args = ap.parse_args(argv)

    convs = list(load_locomo(resolve_locomo_path(None)).conversations)[: args.conversations]
    embedder = build_embedder(EmbedderConfig(), cache=None)
    summary, items = run(embedder, convs)
    result = {
        "dataset": f"locomo ({len(convs)} conversations, {sum(len(c.qa) for c in convs)} QA)",
        "embedder": embedder.name,
        "stage1": "upstream fusion (dense 1.0 + BM25 0.5, min-max over the pool), llm_verify=false",
        "k5": "k 5, pool = the 15 dense best (upstream top_k_semantic, 3 x top_k)",
        "tokens": f"ranking of a {WIDE_K}-node dense pool, filled by memcore.packing.budget.fill_units ([date] text per note)",
        **summary,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    with gzip.open(args.out / "items.jsonl.gz", "wt", encoding="utf-8") as fh:
        for rec in items:
            fh.write(json.dumps(rec) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

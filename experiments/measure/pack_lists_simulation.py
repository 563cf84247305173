"""The weights of MemCoRe's hierarchy and window lists, chosen on the dev split by the real packer over cached
retrieval pools, then reported once on the test split.

    python -m experiments.measure.pack_lists_simulation --results <root> [--data locomo10.json]
        [--sweeps 2] [--out results/measured/equal_tokens_ablation/pack_lists_choice.json]

``<root>`` holds the memcore-cheap snapshots of all of LoCoMo (``<root>/snapshots/memcore-cheap``, built by any
memcore-cheap run there) and its embedding cache. Each question's retrieval pool (the ranked notes, their
channels, the matched keywords and topics) does not depend on the packing knobs, so it is computed once; every
setting then packs every dev question at 500 and 2,000 tokens with :class:`memcore.memory.packing.Packer` itself.
The search is coordinate ascent from the committed default (every list off): knob by knob, each value of its grid
is tried with the others held, and kept when the mean dev recall (categories 1-4) at the two budgets rises; up to
``--sweeps`` passes. Only the chosen setting and the start are evaluated on the test split. Dev = conv-26, 30, 41,
42, 43 (the first five of the file), test = the other five.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import OmegaConf

from experiments.benchmarks.common import compose, machine_state
from experiments.measure.splits import DEV
from memcore.config import EmbedderConfig
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.cache_shards import resolve_layout
from memcore.llm.factory import build_embedder
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.packing import Hierarchy, HierarchyIndex, Packer, PackQuery
from memcore.memory.system import MemCoRe
from memcore.packing.turns import WindowIndex, Windows
from memcore.types import Conversation

BUDGETS = (500, 2000)
CATS = (1, 2, 3, 4)
#: The grid of each knob, or of knobs that only act together (a neighbour count is nothing without its list's
#: weight), in the order coordinate ascent visits them.
SPACE: dict[tuple[str, ...], tuple[tuple[float, ...], ...]] = {
    ("window_bm25",): ((0.0,), (0.5,), (1.0,), (1.5,), (2.0,), (3.0,)),
    ("window_dense",): ((0.0,), (0.5,), (1.0,), (1.5,), (2.0,)),
    ("window_width",): ((1,), (2,), (3,), (4,), (6,)),
    ("keyword", "keyword_graph"): tuple((w, g) for w in (0.0, 0.25, 0.5, 1.0) for g in (0, 3)),
    ("topic",): ((0.0,), (0.2,), (0.5,)),
    ("link", "link_anchors"): tuple((w, a) for w in (0.0, 0.3, 0.6) for a in (5, 10, 20)),
    ("link_text",): ((0.0,), (0.25,), (0.5,), (1.0,)),
}
START: dict[str, float] = {
    "window_bm25": 0.0,
    "window_dense": 0.0,
    "window_width": 2,
    "keyword": 0.0,
    "keyword_graph": 0,
    "topic": 0.0,
    "link": 0.0,
    "link_anchors": 10,
    "link_text": 0.0,
}


def snapshot_dirs(root: Path, conversations: Sequence[Conversation], construction_hash: str) -> dict[str, Path]:
    """conv_id → the snapshot dir under ``root`` built under ``construction_hash`` (MemCoRe's manifest) whose notes
    hold that conversation's first turn verbatim (an ablation's snapshots hold the same turns, not the same hash)."""
    first = {next(t.text for t in c.turns if t.dia_id == "D1:1"): c.conv_id for c in conversations}
    out: dict[str, Path] = {}
    for notes in sorted(root.glob("*/notes.jsonl")):
        manifest = json.loads((notes.parent / "memcore_manifest.json").read_text())
        if manifest.get("construction_hash") != construction_hash:
            continue
        for line in notes.read_text().splitlines():
            raw = next((r for r in json.loads(line)["raws"] if r["dia_id"] == "D1:1"), None)
            if raw is not None:
                if raw["text"] in first:
                    out[first[raw["text"]]] = notes.parent
                break
    return out


class Simulation:
    """The dev / test questions of all of LoCoMo with their cached pools, packed under any list setting."""

    def __init__(self, results: Path, data: str | None) -> None:
        cfg = compose(["method=memcore-cheap", "dataset=locomo", "eval.answer=false"], results)
        emb_cfg = EmbedderConfig(**OmegaConf.to_container(cfg.embedder, resolve=True))  # type: ignore[arg-type]
        self.embedder = build_embedder(emb_cfg, cache=resolve_layout(results / "cache", "auto"))
        self.cfg = MemCoReConfig.from_dict(OmegaConf.to_container(cfg.method, resolve=True))  # type: ignore[arg-type]
        switches = Switches.from_dict(OmegaConf.to_container(cfg.ablation, resolve=True))  # type: ignore[arg-type]
        dataset = load_locomo(resolve_locomo_path(data))
        probe = MemCoRe(self.cfg, switches, embedder=self.embedder, backbone=None, seed=0)
        snaps = snapshot_dirs(
            results / "snapshots" / "memcore-cheap", dataset.conversations, probe.meta()["construction_hash"]
        )
        missing = [c.conv_id for c in dataset.conversations if c.conv_id not in snaps]
        if missing:
            raise DataError(
                f"no memcore-cheap snapshot under {results}/snapshots for {', '.join(missing)}",
                hint=f"build them first: MEMCORE_RESULTS={results} memcore-run method=memcore-cheap dataset=locomo"
                " eval.answer=false",
            )
        self.memories: dict[str, MemCoRe] = {}
        #: (conv_id, split, gold dia_ids, the pool as the packer reads it, item id)
        self.questions: list[tuple[str, str, frozenset[str], PackQuery, str]] = []
        for conv in dataset.conversations:
            memory = MemCoRe(self.cfg, switches, embedder=self.embedder, backbone=None, seed=0)
            memory.load(snaps[conv.conv_id])
            self.memories[conv.conv_id] = memory
            assert memory._refiner is not None
            for q in conv.qa:
                if int(q.category) in CATS and q.evidence:
                    pool = memory._refiner.retrieve(q.question, self.cfg.k_final)
                    queries = [q.question, *(sq["query"] for e in pool.log for sq in e.get("sub_queries", []))]
                    pq = PackQuery(queries, pool.ranked, pool.channels, pool.first_keywords, pool.first_topics)
                    self.questions.append(
                        (conv.conv_id, "dev" if conv.conv_id in DEV else "test", frozenset(q.evidence), pq, q.item_id)
                    )
        self._hierarchy: dict[tuple[str, bool, bool], HierarchyIndex] = {}
        self._windows: dict[tuple[str, int], WindowIndex] = {}

    def packer(self, conv: str, knobs: dict[str, float]) -> Packer:
        """The conversation's packer under ``knobs`` (indices shared across settings)."""
        memory = self.memories[conv]
        base = memory._packer
        assert base is not None and memory._refiner is not None
        h = Hierarchy(
            keyword=knobs["keyword"],
            keyword_graph=int(knobs["keyword_graph"]),
            topic=knobs["topic"],
            link=knobs["link"],
            link_anchors=int(knobs["link_anchors"]),
            link_text=knobs["link_text"],
        )
        key = (conv, h.keyword > 0 and h.keyword_graph > 0, h.link_text > 0)
        if key not in self._hierarchy:
            self._hierarchy[key] = HierarchyIndex(
                base.ix,
                memory.kindex,
                memory.topics,
                memory._refiner.retriever.ix.idf,
                hub_max_fraction=self.cfg.hub_max_fraction,
                graph=key[1],
                link_text=key[2],
            )
        w = Windows(knobs["window_bm25"], knobs["window_dense"], int(knobs["window_width"]))
        packer = Packer(base.ix, base.embedder, replace(base.s, hierarchy=h), self._hierarchy[key])
        if w.active:
            wkey = (conv, w.width)
            if wkey not in self._windows:
                self._windows[wkey] = WindowIndex(base.ix.dia_ids, base.ix.texts, base.ix.vectors, w.width)
            packer.windows = self._windows[wkey]
            packer.s = replace(packer.s, windows=w)
        return packer

    def recall(self, knobs: dict[str, float], splits: Iterable[str]) -> dict[str, dict[int, float]]:
        """Mean recall % (categories 1-4) per split and budget under ``knobs``."""
        wanted = set(splits)
        got: dict[str, dict[int, list[float]]] = {s: {b: [] for b in BUDGETS} for s in wanted}
        packers: dict[str, Packer] = {}
        for conv, split, gold, query, _ in self.questions:
            if split not in wanted:
                continue
            if conv not in packers:
                packers[conv] = self.packer(conv, knobs)
            for b in BUDGETS:
                ids = {d for n in packers[conv].pack(query, b).notes for d in n.dia_ids}
                got[split][b].append(len(gold & ids) / len(gold))
        return {s: {b: round(100 * float(np.mean(v)), 2) for b, v in per.items()} for s, per in got.items()}


def objective(dev: dict[int, float]) -> float:
    """What the ascent maximises: mean dev recall over the budgets."""
    return sum(dev.values()) / len(dev)


def ascend(sim: Simulation, sweeps: int, log: list[dict[str, Any]]) -> dict[str, float]:
    """Coordinate ascent over :data:`SPACE` from :data:`START` on the dev split; every setting tried is logged."""
    seen: dict[str, float] = {}

    def score(knobs: dict[str, float]) -> float:
        key = json.dumps(knobs, sort_keys=True)
        if key not in seen:
            dev = sim.recall(knobs, ["dev"])["dev"]
            seen[key] = objective(dev)
            log.append({"knobs": dict(knobs), "dev": dev})
            print(f"{key} dev {dev}", flush=True)
        return seen[key]

    current = dict(START)
    best = score(current)
    for _ in range(sweeps):
        improved = False
        for knobs, values in SPACE.items():
            for v in values:
                trial = {**current, **dict(zip(knobs, v, strict=True))}
                s = score(trial)
                if s > best + 1e-9:
                    best, current, improved = s, trial, True
        if not improved:
            break
    return current


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="pack_lists_simulation", description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, required=True, help="results root with the memcore-cheap snapshots")
    p.add_argument("--data", default=None)
    p.add_argument("--sweeps", type=int, default=2)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    t0 = time.time()
    try:
        sim = Simulation(args.results, args.data)
    except (DataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    log: list[dict[str, Any]] = []
    chosen = ascend(sim, args.sweeps, log)
    result = {
        "command": "python -m experiments.measure.pack_lists_simulation "
        + " ".join(argv or sys.argv[1:]).replace(str(args.results), "<results>"),
        "machine": machine_state(),
        "dev": list(DEV),
        "budgets": list(BUDGETS),
        "start": {"knobs": START, **sim.recall(START, ["dev", "test"])},
        "chosen": {"knobs": chosen, **sim.recall(chosen, ["dev", "test"])},
        "tried": log,
        "seconds": round(time.time() - t0, 1),
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(json.dumps({k: result[k] for k in ("start", "chosen", "seconds")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

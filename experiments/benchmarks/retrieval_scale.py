"""MemCoRe's retrieval, construction and topics on synthetic memories of 10k / 100k / 1M notes.

Each size runs in its own process (clean resident-memory numbers). Per size:

- build: a synthetic memory (``synthetic.make_memory``: 384-d vectors, keywords, edges), Leiden topics through
  ``compute_topics`` (timed, with the co-occurrence graph's size), saved and loaded through MemCoRe's own
  ``save``/``load`` (timed);
- retrieval: ``MemCoRe.retrieve`` (cheap mode: YAKE query plan, topic + keyword channels, RRF, neighbours, IER
  rule) per query, single-threaded, with the keyword index exact (``index=flat``) and approximate
  (``ivf``, ``hnsw``): p50 / p95 latency, index build time, recall@20 of the approximate keyword search
  against exact, and overlap@20 of the final retrieved notes against the exact run;
- ingestion: ``Constructor.add`` of new notes (embedding pre-screen, cosine gate, Merge / Link / Append) with
  contexts and vectors given — i.e. everything but the LLM and the embedder — in notes per second;
- resident memory (RSS) after building and at the end, and the process's peak.

    python -m experiments.benchmarks.retrieval_scale --sizes 10000 100000          # minutes
    python -m experiments.benchmarks.retrieval_scale --sizes 1000000               # the big one: run it last
    python -m experiments.benchmarks.retrieval_scale --report                      # table + plot from the JSONs
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from experiments.benchmarks.common import (
    RESULTS_DIR,
    command_line,
    machine_state,
    md_table,
    peak_rss_mb,
    rss_mb,
)
from experiments.benchmarks.synthetic import LookupEmbedder, make_memory, make_queries
from memcore.commands.run import LIBRARY_THREAD_VARS
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.construction import ConstructionCounters, Constructor
from memcore.memory.ingestion import IngestResult
from memcore.memory.notes import RawTurn
from memcore.memory.persistence import MemoryFiles, save_memory
from memcore.memory.retrieval import cheap_plan
from memcore.memory.system import MemCoRe
from memcore.memory.topics import compute_topics

KINDS = ("flat", "ivf", "hnsw")
#: Library thread pools (faiss's OpenMP, OpenBLAS) are pinned in the workers with --threads: on a shared,
#: oversubscribed machine their spin-waiting made a 3k-row faiss search take 24 ms instead of 2 ms.
THREAD_VARS = LIBRARY_THREAD_VARS


def _prescreen_cell(row: dict[str, Any]) -> str:
    """How the gate's pre-screen searched: exact, or IVF with its build time and recall against exact."""
    pre = row.get("gate_prescreen")
    if pre is None or pre["kind"] == "flat":
        return "exact scan"
    return f"{pre['kind']} (build {pre['first_search_s']} s, recall {pre.get('recall_vs_exact', '?')})"


def _pct(xs: list[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(xs) * 1000.0, q)), 3)


def run_size(
    n: int, n_queries: int, n_ingest: int, kinds: tuple[str, ...], seed: int = 0, keep: Path | None = None
) -> dict[str, Any]:
    """Every measurement for one memory size (run in a fresh process). With ``keep``, the snapshot is saved under
    ``keep/notes-<n>`` and reused by the next run of that size (topics and save are then not re-measured)."""
    import igraph  # noqa: F401 - imported up front: igraph's first import (~5 s, cairo drawing) is not Leiden
    import leidenalg  # noqa: F401

    row: dict[str, Any] = {
        "notes": n,
        "machine_at_start": machine_state(),
        "rss_mb_start": round(rss_mb(), 1),
        "threads": {k: os.environ.get(k) for k in THREAD_VARS},
    }
    t0 = time.perf_counter()
    syn = make_memory(n, seed=seed)
    row["generate_s"] = round(time.perf_counter() - t0, 2)
    row["keywords"] = len(syn.kindex)
    row["edges"] = len(syn.store.edges)
    cfg = MemCoReConfig(name="memcore-cheap", judge="embedding", index="flat")
    snap = keep / f"notes-{n}" if keep is not None else None
    reuse = snap is not None and (snap / "memcore_manifest.json").is_file()
    row["reused_snapshot"] = str(snap) if reuse else None

    # --- topics: the co-occurrence graph, then the whole Leiden recompute
    topics = None
    if not reuse:
        hubs = syn.kindex.hubs(n, cfg.hub_max_fraction)
        t0 = time.perf_counter()
        graph = syn.kindex.cooccurrence(exclude=hubs)
        row["graph_build_s"] = round(time.perf_counter() - t0, 2)
        row["graph_edges"] = len(graph)
        del graph
        t0 = time.perf_counter()
        topics = compute_topics(
            syn.kindex,
            syn.store.vectors.matrix,
            topic_min=cfg.topic_min,
            topic_max=cfg.topic_max,
            resolution=cfg.leiden_resolution,
            hub_max_fraction=cfg.hub_max_fraction,
            seed=seed,
        )
        row["leiden_recompute_s"] = round(time.perf_counter() - t0, 2)
        row["topics"] = len(topics)
        row["topics_info"] = topics.info
    questions, table, targets = make_queries(syn, n_queries)
    embedder = LookupEmbedder(syn.store.dim, table)

    # --- persistence through MemCoRe's own save / load (load includes freezing the indices)
    mem = MemCoRe(cfg, Switches(), embedder=embedder, backbone=None, seed=seed)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        path = snap if snap is not None else Path(tmp) / "snap"
        if not reuse:
            assert topics is not None
            t0 = time.perf_counter()
            save_memory(
                path,
                MemoryFiles(syn.store, syn.kindex, topics, syn.keyword_vectors, ConstructionCounters(), {}),
                mem.meta(),
            )
            row["save_s"] = round(time.perf_counter() - t0, 2)
            row["snapshot_mb"] = round(sum(p.stat().st_size for p in path.iterdir()) / 2**20, 1)
        del syn.store, syn.kindex, topics  # the loaded copy is what we measure from here on
        t0 = time.perf_counter()
        mem.load(path)
        row["load_s"] = round(time.perf_counter() - t0, 2)
    row["rss_mb_loaded"] = round(rss_mb(), 1)

    # --- retrieval per index kind
    plans_t = []
    for q in questions:
        t0 = time.perf_counter()
        cheap_plan(q, mem.extractor)
        plans_t.append(time.perf_counter() - t0)
    row["query_plan_ms"] = {"p50": _pct(plans_t, 50), "p95": _pct(plans_t, 95)}
    rng = np.random.default_rng(seed + 7)
    entity_texts = [k for q in questions for k in cheap_plan(q, mem.extractor).entities if k in embedder.table]
    kw_q = embedder.encode(entity_texts)
    kw_q = kw_q + rng.standard_normal(kw_q.shape).astype(np.float32) * 0.5 / np.sqrt(kw_q.shape[1])
    kw_q /= np.linalg.norm(kw_q, axis=1, keepdims=True)
    row["retrieval"] = {}
    # One frozen keyword index per kind (what load() builds), then the queries interleaved across kinds, so
    # drift in the machine's load hits every kind alike.
    refiners, build_s = {}, {}
    for kind in kinds:
        mem.cfg = dataclasses.replace(mem.cfg, index=kind)
        t0 = time.perf_counter()
        mem._freeze()
        build_s[kind] = time.perf_counter() - t0
        refiners[kind] = mem._refiner
    gc.collect()
    lat: dict[str, list[float]] = {k: [] for k in kinds}
    ids: dict[str, list[list[int]]] = {k: [] for k in kinds}
    rounds: dict[str, list[int]] = {k: [] for k in kinds}
    hits = dict.fromkeys(kinds, 0)
    for i, (q, target) in enumerate(zip([questions[0], *questions], [targets[0], *targets], strict=True)):
        for kind in kinds:
            mem._refiner = refiners[kind]
            t0 = time.perf_counter()
            ev = mem.retrieve(q)
            dt = time.perf_counter() - t0
            if i == 0:
                continue  # warm-up query
            got = [int(str(x.note_id).lstrip("n")) for x in ev.notes]
            lat[kind].append(dt)
            ids[kind].append(got)
            rounds[kind].append(ev.rounds)
            hits[kind] += int(target in got)
    exact_kw: np.ndarray | None = None
    exact_sc: np.ndarray | None = None
    for kind in kinds:
        kw_vectors = refiners[kind].retriever.ix.kw_vectors  # type: ignore[union-attr]
        t0 = time.perf_counter()
        kw_scores, kw_rows = kw_vectors.search(kw_q, 20)
        kw_search_ms = (time.perf_counter() - t0) * 1000.0 / len(kw_q)
        entry: dict[str, Any] = {
            "index": kw_vectors.resolved_index(),
            "index_build_s": round(build_s[kind], 2),
            "retrieve_ms": {"p50": _pct(lat[kind], 50), "p95": _pct(lat[kind], 95)},
            "retrieve_ms_mean": round(float(np.mean(lat[kind])) * 1000.0, 3),
            "keyword_search_ms_per_entity": round(kw_search_ms, 3),
            "target_note_in_top20": round(hits[kind] / len(questions), 3),
            "ier_rounds": {str(k): rounds[kind].count(k) for k in sorted(set(rounds[kind]))},
        }
        if kind == "flat":
            exact_kw, exact_sc = kw_rows, kw_scores
        elif exact_kw is not None and exact_sc is not None:
            entry["keyword_recall_at_20"] = round(
                float(np.mean([len(set(a) & set(b)) / 20.0 for a, b in zip(kw_rows, exact_kw, strict=True)])), 4
            )
            # The neighbours retrieval can use: exact top-20 with cosine >= keyword_min_sim.
            usable = [set(b[s >= mem.cfg.keyword_min_sim]) for b, s in zip(exact_kw, exact_sc, strict=True)]
            entry["keyword_recall_at_20_usable"] = round(
                float(np.mean([len(set(a) & u) / len(u) for a, u in zip(kw_rows, usable, strict=True) if u])), 4
            )
            entry["retrieved_overlap_at_20"] = round(
                float(
                    np.mean(
                        [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(ids[kind], ids["flat"], strict=True)]
                    )
                ),
                4,
            )
        row["retrieval"][kind] = entry
        print(json.dumps({"notes": n, kind: entry}), flush=True)
    mem._refiner = refiners[kinds[0]]
    row["rss_mb_after_retrieval"] = round(rss_mb(), 1)

    # --- ingestion without LLM and embedder: Constructor.add with given contexts and vectors
    mem.cfg = dataclasses.replace(mem.cfg, index="flat")
    cons = Constructor(
        store=mem.store,
        keywords=mem.kindex,
        embedder=embedder,
        backbone=None,
        cfg=mem.cfg,
        switches=mem.sw,
        seed=seed,
    )
    dim = mem.store.dim
    base = mem.store.vectors.matrix[rng.integers(0, n, size=n_ingest)].copy()
    new_vecs = base + rng.standard_normal(base.shape).astype(np.float32) * 0.8 / np.sqrt(dim)
    new_vecs /= np.linalg.norm(new_vecs, axis=1, keepdims=True)
    # The gate's pre-screen searches the note vectors: exact below ann_threshold rows, a live IVF index from
    # there on, built by its first search (timed apart) and then kept in step with every append / rewrite.
    vm = mem.store.vectors
    t0 = time.perf_counter()
    _, pre_rows = vm.search(new_vecs, mem.cfg.candidates)
    prescreen = {"kind": vm.resolved_index(), "first_search_s": round(time.perf_counter() - t0, 2)}
    if prescreen["kind"] != "flat":
        _, exact_rows = vm._exact(new_vecs, mem.cfg.candidates)
        prescreen["recall_vs_exact"] = round(
            float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(pre_rows, exact_rows, strict=True)])), 4
        )
    row["gate_prescreen"] = prescreen
    times = []
    for i in range(n_ingest):
        text = f"Alice talked about new thing {i}."
        ing = IngestResult(text, ["alice", f"newthing{i}"], False)
        t0 = time.perf_counter()
        cons.add(RawTurn(f"N{i}", "Alice", text, "1:00 pm on 2 May, 2023"), ing, new_vecs[i])
        times.append(time.perf_counter() - t0)
    row["ingest"] = {
        "notes_added": n_ingest,
        "ms_per_note_p50": _pct(times, 50),
        "ms_per_note_p95": _pct(times, 95),
        "notes_per_s": round(n_ingest / sum(times), 1),
        "merges": cons.counters.merges,
        "links": cons.counters.links,
    }
    row["rss_mb_end"] = round(rss_mb(), 1)
    row["rss_mb_peak"] = round(peak_rss_mb(), 1)
    row["machine_at_end"] = machine_state()
    return row


def plot(rows: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = sorted(rows, key=lambda r: r["notes"])
    sizes = [r["notes"] for r in rows]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ax = axes[0]
    for kind, style in zip(KINDS, ("-o", "--s", ":^"), strict=True):
        xs = [r["notes"] for r in rows if kind in r["retrieval"]]
        if not xs:
            continue
        p50 = [r["retrieval"][kind]["retrieve_ms"]["p50"] for r in rows if kind in r["retrieval"]]
        p95 = [r["retrieval"][kind]["retrieve_ms"]["p95"] for r in rows if kind in r["retrieval"]]
        ax.plot(xs, p50, style, label=f"{kind} p50")
        ax.plot(xs, p95, style, alpha=0.5, label=f"{kind} p95")
    ax.axhline(50, color="red", lw=0.8, ls="--", label="50 ms target (p95)")
    ax.set(
        xscale="log", yscale="log", xlabel="notes in memory", ylabel="ms per query", title="MemCoRe.retrieve latency"
    )
    ax.legend(fontsize=7)
    ax = axes[1]
    ax.plot(sizes, [r["leiden_recompute_s"] for r in rows], "-o", label="topic recompute (graph + Leiden)")
    ax.plot(sizes, [r["graph_build_s"] for r in rows], "--s", label="co-occurrence graph only")
    ax.plot(sizes, [r["load_s"] for r in rows], ":^", label="snapshot load (incl. index)")
    ax.set(xscale="log", yscale="log", xlabel="notes in memory", ylabel="seconds", title="Topics and load")
    ax.legend(fontsize=7)
    ax = axes[2]
    ax.plot(sizes, [r["ingest"]["ms_per_note_p50"] for r in rows], "-o", label="ingest ms/note (p50, no LLM)")
    ax2 = ax.twinx()
    ax2.plot(sizes, [r["rss_mb_peak"] / 1024 for r in rows], "--s", color="gray", label="peak RSS (GiB)")
    ax.set(xscale="log", yscale="log", xlabel="notes in memory", ylabel="ms per note", title="Ingest and memory")
    ax2.set_ylabel("GiB")
    ax.legend(loc="upper left", fontsize=7)
    ax2.legend(loc="lower right", fontsize=7)
    fig.suptitle("MemCoRe at scale (synthetic memories, 384-d, 2 shared cores)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def report(out_dir: Path) -> None:
    rows = [json.loads(p.read_text()) for p in sorted(out_dir.glob("retrieval_scale_*.json"))]
    rows = [r for r in rows if "notes" in r]
    if not rows:
        raise SystemExit(f"no retrieval_scale_<n>.json in {out_dir}; run with --sizes first")
    rows.sort(key=lambda r: r["notes"])
    lines = []
    for r in rows:
        for kind, e in r["retrieval"].items():
            lines.append(
                [
                    f"{r['notes']:,}",
                    f"{kind} ({e['index']})",
                    e["retrieve_ms"]["p50"],
                    e["retrieve_ms"]["p95"],
                    e["keyword_search_ms_per_entity"],
                    e.get("keyword_recall_at_20", "exact"),
                    e.get("keyword_recall_at_20_usable", "exact"),
                    e.get("retrieved_overlap_at_20", "exact"),
                    e["index_build_s"],
                    r["machine_at_start"]["loadavg_1_5_15"][0],
                ]
            )
    t1 = md_table(
        [
            "notes",
            "keyword index",
            "retrieve p50 ms",
            "p95 ms",
            "kw search ms/entity",
            "kw recall@20",
            "kw recall@20 (cos>=0.5)",
            "retrieved overlap@20",
            "index build s",
            "load",
        ],
        lines,
    )
    t2 = md_table(
        [
            "notes",
            "keywords",
            "graph edges",
            "topics",
            "topic recompute s",
            "graph only s",
            "save s",
            "load s",
            "gate pre-screen",
            "ingest ms/note p50",
            "notes/s",
            "RSS loaded MiB",
            "peak RSS MiB",
        ],
        [
            [
                f"{r['notes']:,}",
                f"{r['keywords']:,}",
                f"{r['graph_edges']:,}",
                f"{r['topics']:,}",
                r["leiden_recompute_s"],
                r["graph_build_s"],
                r["save_s"],
                r["load_s"],
                _prescreen_cell(r),
                r["ingest"]["ms_per_note_p50"],
                r["ingest"]["notes_per_s"],
                r["rss_mb_loaded"],
                r["rss_mb_peak"],
            ]
            for r in rows
        ],
    )
    plot(rows, out_dir / "retrieval_scale.png")
    cmds = "\n".join(f"- {r['notes']:,}: `{r['command']}`" for r in rows)
    (out_dir / "retrieval_scale.md").write_text(
        f"Commands:\n{cmds}\n- table + plot: `{command_line()}`\n\n{t1}\n\n{t2}\n\n![latency vs size](retrieval_scale.png)\n"
    )
    print(t1)
    print()
    print(t2)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="*", default=[])
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # a single size, in this process
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--ingest", type=int, default=None, help="notes to add (default 500; 200 at >= 1M)")
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    ap.add_argument("--keep", type=Path, default=None, help="save snapshots here and reuse them on the next run")
    ap.add_argument("--threads", type=int, default=1, help="OpenMP / BLAS threads in the workers (0 = library default)")
    ap.add_argument("--report", action="store_true", help="table + plot from the per-size JSON files")
    ap.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    if args.one is not None:
        n_ingest = args.ingest if args.ingest is not None else (200 if args.one >= 1_000_000 else 500)
        kinds = tuple(k for k in KINDS if k in args.kinds)
        row = run_size(args.one, args.queries, n_ingest, kinds, keep=args.keep)
        previous = args.out / f"retrieval_scale_{args.one}.json"
        if row["reused_snapshot"] and previous.is_file():  # topics / save were measured when it was built
            old = json.loads(previous.read_text())
            for key in ("graph_build_s", "graph_edges", "leiden_recompute_s", "topics", "topics_info", "save_s",
                        "snapshot_mb"):  # fmt: skip
                if key in old:
                    row.setdefault(key, old[key])
            row.setdefault("topics_measured_at", old.get("machine_at_start"))
        cmd = f"python -m experiments.benchmarks.retrieval_scale --sizes {args.one} --queries {args.queries}"
        cmd += f" --threads {args.threads}"
        if args.ingest is not None:
            cmd += f" --ingest {args.ingest}"
        if list(kinds) != list(KINDS):
            cmd += " --kinds " + " ".join(kinds)
        row["command"] = cmd
        (args.out / f"retrieval_scale_{args.one}.json").write_text(json.dumps(row, indent=2, default=str) + "\n")
        return
    for n in args.sizes:
        cmd = [sys.executable, "-m", "experiments.benchmarks.retrieval_scale", "--one", str(n)]
        cmd += ["--queries", str(args.queries), "--kinds", *args.kinds, "--out", str(args.out)]
        if args.ingest is not None:
            cmd += ["--ingest", str(args.ingest)]
        if args.keep is not None:
            cmd += ["--keep", str(args.keep)]
        env = dict(os.environ)
        if args.threads:
            env.update({k: str(args.threads) for k in THREAD_VARS})
            cmd += ["--threads", str(args.threads)]
        print(f"--- {n:,} notes", flush=True)
        subprocess.run(cmd, check=True, env=env)
    if args.report or args.sizes:
        report(args.out)


if __name__ == "__main__":
    main()

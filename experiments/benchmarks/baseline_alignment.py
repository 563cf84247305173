"""Before/after numbers of the baselines' alignment with their upstream code, those that need no LLM, on all of
LoCoMo.

    python -m experiments.benchmarks.baseline_alignment --out results/measured/baseline_alignment_retrieval.json

- ``full_context``: the code before the alignment (read from git at ``--before``, default 6caa7ed) against
  the current one, at each backbone preset's budget: evidence recall and hit rate (items with gold evidence,
  categories 1-5, as the run tables), turns kept, context tokens (the question prompt reserve included now).
- ``fluxmem`` Stage 1 without LLM (``unit=turn``: one node per turn, ``llm_verify=false``): the earlier defaults
  (k 10, pool by dense + BM25, layer-wide normalisation, 0.4/0.3) against the upstream-aligned ones (k 5,
  dense pool, pool-wise min-max, 1.0/0.5), and the earlier fusion at k 5 (equal number of notes).
- ``rag``: LoCoMo's RAG setting (``rag_locomo``, top 5, official line format) against ``rag_dense`` (top 20)
  and ``rag_dense`` at top 5.
- ``memgpt``: how many conversations' turns fit the main context at 4,096 tokens (before) and at each
  backbone's window (after); turn text only, the agent's own messages come on top.

Embeddings: MiniLM (the default run embedder). No LLM is called: a backbone call raises.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import baselines.full_context as full_context_now
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.system import FluxMem
from baselines.mem0.two_phase import Mem0TwoPhase, Mem0TwoPhaseConfig
from baselines.rag import RAG, RAGConfig
from memcore.config import BackboneConfig, EmbedderConfig
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.factory import build_backbone, build_embedder
from memcore.llm.usage import UsageTracker
from memcore.metrics.scorers.evidence import evidence_scores
from memcore.text import count_tokens
from memcore.types import Conversation

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = {"local": 6000, "qwen3-8b": 30000, "gpt-4o-mini": 120000}


def _no_llm() -> Any:
    raise RuntimeError("baseline_alignment: no LLM call expected")


def _old_full_context(commit: str) -> types.ModuleType:
    src = subprocess.run(
        ["git", "show", f"{commit}:baselines/full_context.py"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    module = types.ModuleType("full_context_before")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(src, f"{commit}:baselines/full_context.py", "exec"), module.__dict__)
    return module


def _score(rows: list[dict[str, float | None]]) -> dict[str, float | int]:
    scored = [r for r in rows if r["recall"] is not None]
    n = len(scored)
    return {
        "n": n,
        "recall": round(100 * sum(float(r["recall"] or 0) for r in scored) / n, 2) if n else 0.0,
        "hit": round(100 * sum(float(r["hit"] or 0) for r in scored) / n, 2) if n else 0.0,
    }


def full_context(convs: list[Conversation], before: str) -> dict[str, Any]:
    old = _old_full_context(before)
    out: dict[str, Any] = {}
    for backbone, budget in BUDGETS.items():
        for label in ("before", "after"):
            rows: list[dict[str, float | None]] = []
            kept = tokens = 0
            for conv in convs:
                if label == "before":
                    fc = old.FullContext(old.FullContextConfig(), budget)
                else:
                    fc = full_context_now.FullContext(
                        full_context_now.FullContextConfig(), budget, (conv.speaker_a, conv.speaker_b)
                    )
                for t in conv.turns:
                    fc.ingest(t)
                fc.finalize()
                for item in conv.qa:
                    ev = fc.retrieve(item.question)
                    rows.append(evidence_scores(item.evidence, ev.dia_ids))
                    kept += len(ev.notes)
                    tokens += count_tokens(ev.context)
            n_items = sum(len(c.qa) for c in convs)
            total_turns = sum(len(c.turns) * len(c.qa) for c in convs)
            out[f"{backbone}/{label}"] = {
                **_score(rows),
                "budget_tokens": budget,
                "turns_kept_pct": round(100 * kept / total_turns, 2),
                "mean_context_tokens": round(tokens / n_items, 1),
            }
    return out


def _fluxmem_recall(convs: list[Conversation], embedder: Any, knobs: dict[str, Any]) -> dict[str, Any]:
    cfg = FluxMemConfig.from_dict({"unit": "turn", "llm_verify": False, **knobs})
    rows, notes = [], 0
    for conv in convs:
        mem = FluxMem(cfg, backbone=_no_llm, embedder=lambda: embedder)
        for t in conv.turns:
            mem.ingest(t)
        mem.finalize()
        for item in conv.qa:
            ev = mem.retrieve(item.question)
            rows.append(evidence_scores(item.evidence, ev.dia_ids))
            notes += len(ev.notes)
    return {**_score(rows), "k": cfg.k, "mean_notes": round(notes / max(len(rows), 1), 2)}


def fluxmem(convs: list[Conversation], embedder: Any) -> dict[str, Any]:
    earlier = {
        "k": 10,
        "verify_pool": 20,
        "w_dense": 0.4,
        "w_sparse": 0.3,
        "w_llm": 0.3,
        "pool_by": "hybrid",
        "normalize_over": "layer",
    }
    return {
        "before (k 10, earlier fusion)": _fluxmem_recall(convs, embedder, earlier),
        "after (k 5, upstream fusion)": _fluxmem_recall(convs, embedder, {}),
        "earlier fusion at k 5": _fluxmem_recall(convs, embedder, {**earlier, "k": 5, "verify_pool": 15}),
    }


def _rag_recall(convs: list[Conversation], embedder: Any, **cfg: Any) -> dict[str, Any]:
    rows, tokens = [], 0
    for conv in convs:
        rag = RAG(RAGConfig(**cfg), lambda: embedder)
        for t in conv.turns:
            rag.ingest(t)
        rag.finalize()
        for item in conv.qa:
            ev = rag.retrieve(item.question)
            rows.append(evidence_scores(item.evidence, ev.dia_ids))
            tokens += count_tokens(ev.render())
    return {**_score(rows), "mean_context_tokens": round(tokens / max(len(rows), 1), 1)}


def rag(convs: list[Conversation], embedder: Any) -> dict[str, Any]:
    return {
        "rag_locomo (top 5, official format)": _rag_recall(
            convs, embedder, name="rag_locomo", retriever="dense", top_k=5, context_format="locomo"
        ),
        "rag_dense (top 20)": _rag_recall(convs, embedder, name="rag_dense", retriever="dense", top_k=20),
        "rag_dense (top 5)": _rag_recall(convs, embedder, name="rag_dense", retriever="dense", top_k=5),
    }


def memgpt(convs: list[Conversation]) -> dict[str, Any]:
    sizes = [sum(count_tokens(t.render()) for t in c.turns) for c in convs]
    windows = {"before, every backbone": 4096, **{f"after, {b}": w for b, w in BUDGETS.items()}}
    return {
        "conversation_turn_tokens": {"min": min(sizes), "mean": round(sum(sizes) / len(sizes)), "max": max(sizes)},
        "conversations_whose_turns_fit": {label: sum(s <= w for s in sizes) for label, w in windows.items()},
        "n_conversations": len(convs),
    }


def mem0_two_phase_llm(convs: list[Conversation], adds: int, max_tokens: int, log_dir: Path) -> dict[str, Any]:
    """The first ``adds`` two-phase adds of conv-26 session 1 (alternating speakers) on the local 0.5B model:
    calls, tokens and events per add. A cheap slice of what a full run costs (the CPU is shared)."""
    conv = next(c for c in convs if c.conv_id == "conv-26")
    session = conv.sessions[0].turns
    cfg = Mem0TwoPhaseConfig(max_tokens=max_tokens)
    bcfg = BackboneConfig(
        name="local-small",
        model="qwen2.5-coder-0.5b-instruct-q4_k_m",
        n_ctx=16384,
        exclusive=False,
        prompt_cache_mb=1024,
        max_concurrency=1,
        timeout_s=1800,
    )
    usage = UsageTracker()
    embedder = build_embedder(EmbedderConfig(), cache=None)
    rows = []
    with contextlib.ExitStack() as resources:
        backbone = build_backbone(bcfg, cache=None, usage=usage, resources=resources, log_dir=log_dir)
        mem = Mem0TwoPhase(cfg, conv, lambda: backbone, lambda: embedder, seed=42)
        batches = [session[i : i + cfg.batch_size] for i in range(0, len(session), cfg.batch_size)]
        for j in range(adds):
            speaker = mem.speakers[j % 2]
            batch = list(batches[j // 2])
            calls0 = mem.counters["extraction_calls"] + mem.counters["update_calls"]
            t0 = time.perf_counter()
            events = mem.add(speaker, batch)
            rows.append(
                {
                    "speaker": speaker,
                    "turns": [t.dia_id for t in batch],
                    "llm_calls": mem.counters["extraction_calls"] + mem.counters["update_calls"] - calls0,
                    "events": [e["event"] for e in events],
                    "wall_s": round(time.perf_counter() - t0, 1),
                }
            )
    totals = usage.to_json()
    return {"adds": rows, "usage": totals, "max_tokens": max_tokens, "counters": dict(mem.counters)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "results/measured/baseline_alignment_retrieval.json")
    ap.add_argument("--before", default="6caa7ed", help="commit of the code before the alignment")
    ap.add_argument("--parts", default="full_context,memgpt,rag,fluxmem")
    ap.add_argument("--adds", type=int, default=4, help="mem0_two_phase_llm: adds to run on the local model")
    ap.add_argument("--max-tokens", type=int, default=512, help="mem0_two_phase_llm: cap per call (default 2000)")
    args = ap.parse_args(argv)
    convs = list(load_locomo(resolve_locomo_path(None)).conversations)
    parts = args.parts.split(",")
    result: dict[str, Any] = {"dataset": "locomo (10 conversations, 1,986 QA)", "embedder": "minilm"}
    t0 = time.perf_counter()
    if "full_context" in parts:
        result["full_context"] = full_context(convs, args.before)
    if "memgpt" in parts:
        result["memgpt"] = memgpt(convs)
    if "rag" in parts or "fluxmem" in parts:
        embedder = build_embedder(EmbedderConfig(), cache=None)
        if "rag" in parts:
            result["rag"] = rag(convs, embedder)
        if "fluxmem" in parts:
            result["fluxmem_stage1_no_llm"] = fluxmem(convs, embedder)
    if "mem0_two_phase_llm" in parts:
        log_dir = args.out.parent
        log_dir.mkdir(parents=True, exist_ok=True)
        result["mem0_two_phase_llm"] = mem0_two_phase_llm(convs, args.adds, args.max_tokens, log_dir)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    json.dump(result, sys.stdout, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Stage 5 of the pipeline: aggregate ``items.jsonl`` into ``metrics.json``, ``cost.json``, ``stats.json`` and
``table.md`` (written atomically)."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memcore.datasets.registry import DEFAULT_DATASET_KIND, dataset_kind
from memcore.eval.aggregate import aggregate, budget_recall, format_table, k_recall
from memcore.eval.ceiling import gold_ceiling
from memcore.eval.disclosure import answer_disclosure, evidence_disclosure
from memcore.eval.judge import judge_run_info
from memcore.eval.protocols import EvalProtocol, get_protocol, run_metrics_of
from memcore.eval.published import apply_published
from memcore.itemlog import LoggedItem, read_items, require_unique_ids
from memcore.llm.usage import sum_item_usage, updates_while_answering, whole_run_stages
from memcore.methods import NO_BACKBONE, backbone_label, find_method, method_run_summary
from memcore.metrics import Metric
from memcore.pipeline.build import other_memory_backbone
from memcore.pipeline.load import LoadedSlice
from memcore.pipeline.resources import run_upstream_answer
from memcore.timing import StageClock, timing_block, timing_line

log = logging.getLogger(__name__)


@dataclass
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]
    cost: dict[str, Any]
    n_items: int
    table: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def slice_info(dataset: DictConfig, data: LoadedSlice) -> dict[str, Any]:
    """What the run evaluated, beyond the slice's name: its conversations, the session cut, the QA count and the
    item filters (``dataset.categories``, ``dataset.item_ids``), so a table over a subset says so."""
    ids, cats = dataset.get("item_ids"), dataset.get("categories")
    return {
        "conversations": [c.conv_id for c in data.conversations if c.qa],  # those with an item to answer
        "max_sessions": dataset.max_sessions,
        "n_items": data.n_items,
        "categories": [int(c) for c in cats] if cats else None,
        "item_ids": data.n_items if ids else None,  # the named ids that matched an item
    }


def run_metrics(
    cfg: DictConfig,
    method: str,
    data: LoadedSlice,
    items: Sequence[LoggedItem],
    protocol: EvalProtocol | None = None,
    extra_metrics: Sequence[Metric] = (),
) -> dict[str, Any]:
    """``metrics.json`` of a run over ``items`` (in dataset order): the aggregate of each of the run's metrics
    (``protocol``'s, default the one ``cfg`` names, and ``extra_metrics``, recorded as ``run.metrics`` when
    there are any) over the slice's dataset's categories, recall at the ``eval.report_token_caps`` and at the first
    :data:`~memcore.eval.aggregate.RECALL_KS` notes, what ran (judge and answer disclosure included), the gold
    ceiling of the audit and the scores against the audited gold."""
    protocol = get_protocol(str(cfg.protocol.name)) if protocol is None else protocol
    scored = run_metrics_of(protocol, [m.name for m in extra_metrics])
    metrics = aggregate(items, scored, data.categories)
    headline = data.categories.headline_ids
    if cfg.eval.report_token_caps:
        metrics["recall_at_budget"] = budget_recall(items, list(cfg.eval.report_token_caps), headline)
    metrics["recall_at_k"] = k_recall(items, categories=headline)
    summary = method_run_summary(method)
    if summary is not None:  # the method's own summary of the run (MemCoRe: what IER changed)
        metrics.update(summary.summarize(items, headline, cfg.eval.get("token_cap") is not None))
    metrics["run"] = {
        "method": method,
        "ablation": str(cfg.ablation.name),
        "backbone": str(cfg.backbone.name),
        "embedder": str(cfg.embedder.name),
        "dataset": str(cfg.dataset.name),
        "protocol": str(cfg.protocol.name),
        "n_conversations": len(data.conversations),
        "answered": bool(cfg.eval.answer),
    }
    kind = dataset_kind(cfg.dataset)
    if kind != DEFAULT_DATASET_KIND:  # only then: a LoCoMo run's metrics.json stays as it was
        metrics["run"]["dataset_kind"] = kind
    if extra_metrics:  # only then: the metrics.json of a run with its protocol's metrics alone stays as it was
        metrics["run"]["metrics"] = [m.name for m in extra_metrics]
    metrics["run"]["slice"] = slice_info(cfg.dataset, data)
    memory_backbone = other_memory_backbone(cfg)
    if memory_backbone:
        metrics["run"]["memory_backbone"] = memory_backbone  # built by another model than the one answering

    note_cap = cfg.eval.note_cap
    spec = find_method(method)  # None for a system imported from its published answers
    metrics["run"]["evidence"] = evidence_disclosure(  # equal evidence, or the difference printed
        None if note_cap is None else int(note_cap),
        spec.budget_counts if spec is not None else "notes",
        items,
        token_cap=cfg.eval.get("token_cap"),
    )
    if cfg.eval.judge:  # pinned preset, model and prompt hash
        metrics["run"]["judge"] = judge_run_info(cfg)
    if cfg.get("published") is not None:  # answers imported from a vendor's file: its provenance and grades
        apply_published(metrics, cfg.published, items, data.categories)
    elif cfg.eval.answer:  # the answer prompt moves J more than the memory does; disclose it
        metrics["run"]["answer"] = answer_disclosure(
            cfg.protocol,
            items,
            answer_prompt=str(cfg.eval.get("answer_prompt", "harness")),
            upstream=run_upstream_answer(cfg),
            method=method,
            categories=data.categories,
        )
    if data.audit_changed:  # the best score a perfect system reaches against the original gold
        metrics["gold_ceiling"] = gold_ceiling(
            data.conversations, data.audit_changed, data.audited, protocol, data.categories
        )
    if any(r.audited is not None for r in items):
        metrics["audited"] = aggregate([r.under_audit() for r in items], scored, data.categories)
    return metrics


def run_cost(
    cfg: DictConfig,
    usage: dict[str, Any],
    conv_stats: dict[str, Any],
    n_items: int,
    *,
    wall_s: dict[str, float],
    built: dict[str, Any],
    items: list[dict[str, Any]],
) -> dict[str, Any]:
    """``cost.json``: LLM calls and tokens by stage, the memory build's cost per turn, calls per question and
    the estimated spend at the backbone's prices. Calls count what the method needs, cached or not (a warm
    cache must not make a method look cheaper); ``llm_calls_uncached`` is what this run actually sent.

    ``usage`` is this invocation's; ``items_usage`` sums the item records (``items``), so it covers every
    invocation of a resumed run, and calls per question come from it when every item carries its usage."""
    b = cfg.backbone
    totals = [v["ingest_usage"].get("total", {}) for v in conv_stats.values()]
    build_turns = sum(v["turns"] for v in conv_stats.values())
    build_calls = sum(t.get("calls", 0) for t in totals)
    build_uncached = sum(t.get("llm_calls", 0) for t in totals)
    build_prompt = sum(t.get("prompt_tokens", 0) for t in totals)
    build_completion = sum(t.get("completion_tokens", 0) for t in totals)
    updates = updates_while_answering(usage["by_stage"].get("ingest", {}), conv_stats.values())
    prices = (float(b.price_in_per_mtok), float(b.price_out_per_mtok))
    items_usage = sum_item_usage(items)
    qa_stages, n_questions = whole_run_stages(items_usage, len(items), usage["by_stage"])
    return {
        "backbone": {
            "name": str(b.name),
            "model": str(b.model),
            "price_in_per_mtok": prices[0],
            "price_out_per_mtok": prices[1],
        },
        "usage": usage,
        "usd_estimate_this_run": round(usd_estimate(usage, prices), 4),
        "memory_build": {
            "turns": build_turns,
            "llm_calls": build_calls,
            "llm_calls_uncached": build_uncached,
            "prompt_tokens": build_prompt,
            "completion_tokens": build_completion,
            "llm_calls_per_turn": round(build_calls / build_turns, 4) if build_turns else None,
            "tokens_per_turn": round((build_prompt + build_completion) / build_turns, 1) if build_turns else None,
            "snapshots_reused": sum(1 for v in conv_stats.values() if v["reused"]),
            "snapshots_built": sum(1 for v in conv_stats.values() if not v["reused"]),
        },
        "items_usage": items_usage,
        "per_question": {
            **{
                stage: round(qa_stages.get(stage, {}).get("calls", 0) / n_questions, 4) if n_questions else None
                for stage in ("retrieve", "answer", "judge")
            },
            "memory_update": round(updates["calls"] / n_items, 4) if n_items else None,
        },
        "wall_s": {k: round(v, 3) for k, v in wall_s.items()},
        "resources": built,
    }


def usd_estimate(usage: dict[str, Any], prices: tuple[float, float]) -> float:
    """Estimated spend of this run's non-cached calls, pro-rated by the non-cached share per stage."""
    total = 0.0
    for s in usage["by_stage"].values():
        share = (s["llm_calls"] / s["calls"]) if s["calls"] else 0.0
        total += share * (s["prompt_tokens"] * prices[0] + s["completion_tokens"] * prices[1]) / 1e6
    return total


def cost_lines(cost: dict[str, Any]) -> str:
    """The cost line printed under the table: the whole run (every invocation that did work, ``run_totals``),
    so a rerun with nothing left to do prints the same numbers."""
    mb = cost["memory_build"]
    t = cost.get("run_totals")
    if t is None:  # a cost.json written before run totals existed: this invocation's usage
        u = cost["usage"]["total"]
        t = {**u, "invocations": 1, "wall_s": cost["wall_s"]["total"], "reused_snapshot_parse_failures": 0}
    calls = f"LLM calls ({t['invocations']} invocation{'s' if t['invocations'] != 1 else ''})"
    reused = t["reused_snapshot_parse_failures"]
    note = f" ({reused} recorded when reused snapshots were built)" if reused else ""
    return (
        f"{calls}: {t['calls']} ({t['cached_calls']} from cache), tokens in/out {t['prompt_tokens']}/{t['completion_tokens']}, "
        f"parse fallbacks {t['parse_failures']}{note}; memory build: {mb['llm_calls_per_turn']} LLM calls/turn over {mb['turns']} turns "
        f"({mb['snapshots_reused']} snapshots reused); wall {t['wall_s']:.1f}s"
    )


# ---------------------------------------------------------------- counters over a run's invocations
#: The usage counters an invocation entry keeps (summed into the run's totals).
INVOCATION_COUNTERS = ("calls", "cached_calls", "llm_calls", "prompt_tokens", "completion_tokens", "parse_retries")


def _add_kinds(into: dict[str, dict[str, int]], more: dict[str, dict[str, int]], sign: int = 1) -> None:
    """``into[stage][kind] += sign * more[stage][kind]`` (entries that drop to 0 or below are removed)."""
    for stage, kinds in (more or {}).items():
        acc = into.setdefault(stage, {})
        for kind, n in kinds.items():
            acc[kind] = acc.get(kind, 0) + sign * int(n)
            if acc[kind] <= 0:
                del acc[kind]
        if not acc:
            del into[stage]


def build_fallbacks(conv: dict[str, Any]) -> dict[str, dict[str, int]]:
    """The parse fallbacks a conversation's memory build recorded (kept in its snapshot's manifest)."""
    return ((conv.get("ingest_usage") or {}).get("parse_failures_by_kind")) or {}


def invocation_entry(
    *,
    started: str,
    status: str,
    usage: dict[str, Any],
    conv_stats: dict[str, Any],
    items_written: int,
    wall_s: float,
) -> dict[str, Any]:
    """What one invocation of a run did: when and where it ran, how it ended, the items it wrote, the memories it
    built or reused, its LLM usage, and the parse fallbacks and transport retries of its QA (the fallbacks of the
    builds it made are kept with their conversations: a snapshot carries them to every run that reuses it)."""
    import socket

    stages = usage.get("by_stage") or {}
    qa_fallbacks: dict[str, dict[str, int]] = {}
    _add_kinds(qa_fallbacks, usage.get("parse_failures_by_kind") or {})
    for conv in conv_stats.values():
        if not conv.get("reused"):
            _add_kinds(qa_fallbacks, build_fallbacks(conv), sign=-1)
    retries: dict[str, int] = {}
    for s in stages.values():
        for kind, n in (s.get("retries_by_kind") or {}).items():
            retries[kind] = retries.get(kind, 0) + int(n)
    return {
        "started": started,
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "status": status,
        "items_written": items_written,
        "snapshots_built": sorted(k for k, v in conv_stats.items() if not v.get("reused")),
        "snapshots_reused": sorted(k for k, v in conv_stats.items() if v.get("reused")),
        **{k: sum(int(s.get(k, 0)) for s in stages.values()) for k in INVOCATION_COUNTERS},
        "qa_parse_failures_by_kind": qa_fallbacks,
        "retries_by_kind": dict(sorted(retries.items())),
        "wall_s": round(wall_s, 3),
    }


def is_idle(entry: dict[str, Any]) -> bool:
    """An invocation that found nothing to do: no item written, no memory built or loaded, no LLM call."""
    return not (entry["items_written"] or entry["snapshots_built"] or entry["snapshots_reused"] or entry["calls"])


def earlier_invocations(run_dir: Path) -> list[dict[str, Any]]:
    """The invocations recorded in ``stats.json`` by earlier invocations of this run (none for a run made before
    invocations were recorded)."""
    path = run_dir / "stats.json"
    if not path.is_file():
        return []
    try:
        return list(json.loads(path.read_text()).get("invocations") or [])
    except (json.JSONDecodeError, AttributeError):
        return []


def run_totals(invocations: list[dict[str, Any]], conv_stats: dict[str, Any]) -> dict[str, Any]:
    """The run's counters over all its ``invocations``: usage and retries summed, and the parse fallbacks by
    stage and kind, those of each conversation's memory build counted once (from its stats, whether this run
    built the snapshot or reused it) plus each invocation's QA fallbacks."""
    fallbacks: dict[str, dict[str, int]] = {}
    reused = 0
    for conv in conv_stats.values():
        kinds = build_fallbacks(conv)
        _add_kinds(fallbacks, kinds)
        if conv.get("reused"):
            reused += sum(sum(k.values()) for k in kinds.values())
    retries: dict[str, int] = {}
    for inv in invocations:
        _add_kinds(fallbacks, inv.get("qa_parse_failures_by_kind") or {})
        for kind, n in (inv.get("retries_by_kind") or {}).items():
            retries[kind] = retries.get(kind, 0) + int(n)
    return {
        "invocations": len(invocations),
        **{k: sum(int(inv.get(k, 0)) for inv in invocations) for k in INVOCATION_COUNTERS},
        "parse_failures": sum(sum(k.values()) for k in fallbacks.values()),
        "parse_failures_by_kind": {s: dict(sorted(k.items())) for s, k in sorted(fallbacks.items())},
        "reused_snapshot_parse_failures": reused,
        "retries_by_kind": dict(sorted(retries.items())),
        "wall_s": round(sum(float(inv.get("wall_s", 0.0)) for inv in invocations), 3),
    }


def record_unfinished(
    run_dir: Path, data: LoadedSlice, *, entry: dict[str, Any], conv_stats: dict[str, Any], method: str
) -> None:
    """Add a stopped or failed invocation (``entry``) to ``stats.json`` with the memories it built, so the
    rerun that finishes the run still counts what it did. An idle entry is not recorded."""
    if is_idle(entry):
        return
    path = run_dir / "stats.json"
    try:
        stats = json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        stats = {}
    stats["conversations"] = {**earlier_conversation_stats(run_dir, data), **conv_stats}
    stats["invocations"] = [*earlier_invocations(run_dir), entry]
    stats.setdefault("method", method)
    write_json(path, stats)


def write_report(
    run_dir: Path,
    cfg: DictConfig,
    *,
    method: str,
    data: LoadedSlice,
    conv_stats: dict[str, Any],
    usage: dict[str, Any],
    timings: dict[str, float],
    t_start: float,
    built: dict[str, Any],
    started: str = "",
    items_written: int = 0,
    protocol: EvalProtocol | None = None,
    extra_metrics: Sequence[Metric] = (),
    clock: StageClock | None = None,
) -> RunResult:
    """Aggregate ``run_dir/items.jsonl`` (the items of ``data`` only, in dataset order: float sums then do not
    depend on threads or on resuming) and write the run's metrics, cost, stats and table.

    Counters cover every invocation of the run (``stats.json → invocations``, one entry per invocation that did
    work; ``cost.json → run_totals``); an invocation with nothing to do adds no entry and keeps the previous
    ``cost.json`` usage, so its report repeats the previous numbers. ``clock``: this invocation's seconds per
    stage (:mod:`memcore.timing`), written as ``stats.json``'s ``timing`` and logged as one line."""
    t_report = time.perf_counter()
    items = read_items(run_dir / "items.jsonl")
    require_unique_ids(items, run_dir)
    order = {q.item_id: i for i, q in enumerate(q for c in data.conversations for q in c.qa)}
    items = sorted((r for r in items if r.item_id in order), key=lambda r: order[r.item_id])
    metrics = run_metrics(cfg, method, data, items, protocol, extra_metrics)
    wall = {"total": time.perf_counter() - t_start, **timings}
    entry = invocation_entry(
        started=started,
        status="finished",
        usage=usage,
        conv_stats=conv_stats,
        items_written=items_written,
        wall_s=wall["total"],
    )
    earlier_convs = earlier_conversation_stats(run_dir, data)
    previous = _read_previous(run_dir / "cost.json")
    invocations = earlier_invocations(run_dir)
    if not invocations and previous.get("usage"):  # recorded before invocations were kept: its last one stands in
        invocations = [
            invocation_entry(
                started="",
                status="recorded before invocations were kept",
                usage=previous["usage"],
                conv_stats=earlier_convs,
                items_written=0,
                wall_s=float((previous.get("wall_s") or {}).get("total", 0.0)),
            )
        ]
    idle = is_idle(entry)
    if not idle or not invocations:
        invocations.append(entry)
    conv_stats = {**earlier_convs, **conv_stats}
    cost = run_cost(cfg, usage, conv_stats, data.n_items, wall_s=wall, built=built, items=items)
    if idle:  # cost.json's usage stays the last invocation that did work
        for key in ("usage", "usd_estimate_this_run", "wall_s", "resources"):
            if key in previous:
                cost[key] = previous[key]
    cost["run_totals"] = run_totals(invocations, conv_stats)
    cost["this_invocation"] = {"idle": idle, "calls": entry["calls"], "items_written": entry["items_written"]}
    metrics["parse_failures"] = cost["run_totals"]["parse_failures_by_kind"]
    stats = {"conversations": conv_stats, "method": method, "data_cleaning": data.cleaning, "invocations": invocations}
    if clock is not None:
        clock.add("write", time.perf_counter() - t_report)
        embeddings = built.get("embeddings")
        stats["timing"] = timing_block(
            clock.seconds(), time.perf_counter() - t_start, embeddings if isinstance(embeddings, dict) else None
        )
        log.info("%s", timing_line(stats["timing"]))

    backbone = backbone_label(cfg)
    title = f"{method} / {cfg.ablation.name} / {'-' if backbone == NO_BACKBONE else backbone} / {cfg.dataset.name} ({cfg.protocol.name} protocol)"
    table = format_table(metrics, title)
    if cfg.get("table_note"):
        table += f"\n\nNote: {cfg.table_note}"
    write_json(run_dir / "metrics.json", metrics)
    write_json(run_dir / "cost.json", cost)
    write_json(run_dir / "stats.json", stats)
    (run_dir / "table.md").write_text(table + "\n" + cost_lines(cost) + "\n")
    return RunResult(run_dir, metrics, cost, len(items), table, stats)


def _read_previous(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except json.JSONDecodeError:
        return {}


def earlier_conversation_stats(run_dir: Path, data: LoadedSlice) -> dict[str, Any]:
    """The ``stats.json`` entries an earlier invocation of this run wrote for the slice's conversations. A resumed
    run processes only the conversations with items left, so without these a rerun would drop the others' memory
    stats (and the build cost read from them)."""
    path = run_dir / "stats.json"
    if not path.is_file():
        return {}
    try:
        earlier = json.loads(path.read_text()).get("conversations") or {}
    except json.JSONDecodeError as exc:  # derived data, rewritten below: say so and go on
        log.warning(
            "%s: not valid JSON (%s); the conversations this invocation did not process lose their stats", path, exc
        )
        return {}
    ids = {c.conv_id for c in data.conversations}
    return {k: v for k, v in earlier.items() if k in ids}


def write_json(path: Path, obj: Any) -> None:
    """Write atomically (temp file + rename), so a crash never leaves half a metrics file."""
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)

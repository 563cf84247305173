"""What MemCoRe built and how its retrieval behaved, per run: the gate's decisions, turns per note, the
near-duplicate rate in the top K, IER rounds per question and why refinement stopped.

Reads ``stats.json`` (``conversations.<id>.memory`` at build time, ``memory_after_qa`` after the questions);
runs of other methods have no ``construction`` block and are left out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from memcore.memory.ier_summary import ier_shown
from memcore.report.collect import RunData
from memcore.report.summary import RunSummary, headline_words
from memcore.report.tables import Table

GATE_KEYS = (
    "merges",
    "links",
    "appends",
    "linked_appends",
    "neighbour_updates",
    "merge_cap_redirects",
    "merge_cosine_redirects",
    "label_strength_disagreements",
    "llm_calls",
)


def memory_summary(run: RunData) -> dict[str, Any] | None:
    """Totals over a run's conversations, or None when the run's method builds no MemCoRe memory."""
    convs: Mapping[str, Any] = run.stats.get("conversations") or {}
    built = [c.get("memory") or {} for c in convs.values()]
    if not built or not all("construction" in m for m in built):
        return None
    after = [c.get("memory_after_qa") or {} for c in convs.values()]
    gate: Counter[str] = Counter()
    relations: Counter[str] = Counter()
    for m in built:
        gate.update({k: int(m["construction"].get(k, 0)) for k in GATE_KEYS})
        relations.update(m["construction"].get("relations", {}))
    notes = sum(int(m.get("notes", 0)) for m in built)
    turns = sum(int(m.get("turns", 0)) for m in built)
    rounds: Counter[int] = Counter()
    stops: Counter[str] = Counter()
    retrieves = 0
    near_dup_sum = 0.0
    for m in after:
        r = m.get("retrieval") or {}
        n = int(r.get("retrieves", 0))
        retrieves += n
        rounds.update({int(k): int(v) for k, v in (r.get("ier_rounds") or {}).items()})
        stops.update(r.get("ier_stops") or {})
        if r.get("near_dup_rate_top_k_mean") is not None:
            near_dup_sum += float(r["near_dup_rate_top_k_mean"]) * n
    return {
        "notes": notes,
        "turns": turns,
        "turns_per_note": turns / notes if notes else None,
        "max_turns_per_note": max((int(m.get("turns_per_note", {}).get("max", 0)) for m in built), default=0),
        "gate": dict(gate),
        "relations": dict(relations),
        "calls_per_turn": gate["llm_calls"] / turns if turns else None,
        "retrieves": retrieves,
        "ier_rounds_mean": sum(k * v for k, v in rounds.items()) / retrieves if retrieves else None,
        "ier_rounds": dict(sorted(rounds.items())),
        "ier_stops": dict(sorted(stops.items())),
        "near_dup_rate": near_dup_sum / retrieves if retrieves else None,
    }


def _pct(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def memory_table(summaries: Sequence[RunSummary], *, title: str | None = None) -> Table | None:
    """One row per MemCoRe run (full model, ablations, variants); None when no run built a MemCoRe memory."""
    rows: list[list[str]] = []
    records: list[dict[str, Any]] = []
    for s in summaries:
        m = memory_summary(s.run)
        if m is None:
            continue
        g = m["gate"]
        stops = ", ".join(f"{k} {v}" for k, v in m["ier_stops"].items()) or "–"
        shown, cap = ier_shown(s.run.metrics)  # under a cap: both rounds before it, or nothing
        ref = shown or {}  # runs made before it: "–"
        refined = (
            f"{ref['n_refined']} of {ref['n']}: {_num(_pct(ref['recall_round1']), 1)} → {_num(_pct(ref['recall_final']), 1)}"
            if ref.get("n_refined")
            else (f"0 of {ref['n']}" if ref else "–")
        )
        if cap is not None and shown is None and s.run.metrics.get("ier_refinement"):
            refined = f"not comparable under the {cap:,}-token cap"
        rows.append(
            [
                s.run.method_label,
                s.run.ablation,
                s.run.backbone,
                f"{m['turns']} → {m['notes']}",
                _num(m["turns_per_note"]),
                str(m["max_turns_per_note"]),
                f"{g.get('merges', 0)} / {g.get('links', 0)} / {g.get('appends', 0) + g.get('linked_appends', 0)}",
                str(g.get("merge_cap_redirects", 0)),
                str(g.get("label_strength_disagreements", 0)),
                _num(m["calls_per_turn"]),
                _num(None if m["near_dup_rate"] is None else 100 * m["near_dup_rate"], 1),
                _num(m["ier_rounds_mean"]),
                stops,
                refined,
            ]
        )
        records.append(
            {
                "method": s.run.method_label,
                "ablation": s.run.ablation,
                "backbone": s.run.backbone,
                "dataset": s.run.dataset,
                **{k: v for k, v in m.items() if k not in ("gate", "relations", "ier_rounds", "ier_stops")},
                **{f"gate_{k}": v for k, v in g.items()},
                **{f"relation_{k}": v for k, v in m["relations"].items()},
                **{f"ier_stop_{k}": v for k, v in m["ier_stops"].items()},
                **{f"ier_refinement_{k}": v for k, v in ref.items()},
            }
        )
    if not rows:
        return None
    return Table(
        title=title or "What MemCoRe built, and how refinement behaved",
        columns=[
            "method",
            "ablation",
            "backbone",
            "turns → notes",
            "turns / note",
            "max",
            "merge / link / new notes",
            "cap redirects",
            "label≠strength",
            "build calls / turn",
            "near-dup % in top K",
            "IER rounds / q",
            "IER stops",
            "refined: recall round 1 → final",
        ],
        rows=rows,
        records=records,
        notes=[
            "merge / link / new notes: merges, edges added, notes created (with or without an edge).",
            "cap redirects: redundant verdicts linked instead because the target held merge_max_turns turns.",
            "label≠strength: gate replies whose strength lay outside their label's range (the label decided).",
            "near-dup: share of the top-K notes whose cosine with a higher-ranked note is >= 0.9.",
            "IER rounds / q counts the first retrieval (I_max = 3 allows 2 refinements).",
            f"refined: questions of {headline_words(summaries)} with gold evidence that IER refined, of all such"
            " questions, and"
            " their evidence recall % in round 1's pool and in the final one.",
        ],
    )

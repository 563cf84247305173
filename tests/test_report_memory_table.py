"""memory_table: totals over a run's conversations from stats.json, hand-computed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memcore.report.collect import RunData
from memcore.report.memory_table import memory_summary, memory_table
from memcore.report.summary import RunSummary


def _conv(
    notes: int, turns: int, merges: int, calls: int, rounds: dict[str, int], stops: dict[str, int], dup: float
) -> dict[str, Any]:
    construction = {
        "merges": merges,
        "links": 2,
        "appends": notes - 1,
        "linked_appends": 1,
        "llm_calls": calls,
        "merge_cap_redirects": 1,
        "label_strength_disagreements": 3,
        "relations": {"redundant": merges},
    }
    retrieves = sum(rounds.values())
    return {
        "memory": {"notes": notes, "turns": turns, "turns_per_note": {"max": 3}, "construction": construction},
        "memory_after_qa": {
            "retrieval": {
                "retrieves": retrieves,
                "ier_rounds": rounds,
                "ier_stops": stops,
                "near_dup_rate_top_k_mean": dup,
            }
        },
    }


def _run(stats: dict[str, Any], method: str = "memcore") -> RunSummary:
    run = RunData(
        Path("x"),
        {"run": {"method": method, "ablation": "none", "backbone": "local-small", "dataset": "d"}},
        stats=stats,
        config={"method": {"name": method}},
    )
    return RunSummary(run=run, values={}, ci={}, counts={}, cost={})


def test_totals_over_conversations_hand_computed() -> None:
    stats = {
        "conversations": {
            "a": _conv(10, 20, 5, 60, {"1": 2, "2": 2}, {"sufficient": 3, "no_new_evidence": 1}, 0.1),
            "b": _conv(5, 10, 2, 30, {"3": 1, "1": 1}, {"sufficient": 1, "max_rounds": 1}, 0.4),
        }
    }
    m = memory_summary(_run(stats).run)
    assert m is not None
    assert (m["notes"], m["turns"]) == (15, 30) and m["turns_per_note"] == 2.0
    assert m["gate"]["merges"] == 7 and m["gate"]["label_strength_disagreements"] == 6
    assert m["calls_per_turn"] == 3.0
    assert m["retrieves"] == 6
    assert m["ier_rounds_mean"] == (1 * 3 + 2 * 2 + 3 * 1) / 6
    assert m["ier_stops"] == {"max_rounds": 1, "no_new_evidence": 1, "sufficient": 4}
    assert abs(m["near_dup_rate"] - (0.1 * 4 + 0.4 * 2) / 6) < 1e-12
    table = memory_table([_run(stats)])
    assert table is not None
    row = table.rows[0]
    assert row[3] == "30 → 15" and row[4] == "2.00"
    assert row[6] == "7 / 4 / 15"  # merges / edges / notes created (appends + linked appends)
    assert "sufficient 4" in row[-2]
    assert row[-1] == "–"  # a run made before metrics.json had ier_refinement
    refined = _run(stats)
    refined.run.metrics["ier_refinement"] = {"n": 4, "n_refined": 2, "recall_round1": 0.25, "recall_final": 0.75}
    assert memory_table([refined]).rows[0][-1] == "2 of 4: 25.0 → 75.0"  # type: ignore[union-attr]


def test_runs_without_a_memcore_memory_are_left_out() -> None:
    assert memory_table([_run({"conversations": {"a": {"memory": {"notes": 3}}}}, method="rag_dense")]) is None

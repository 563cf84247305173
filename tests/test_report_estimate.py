"""Full-LoCoMo cost estimates from a measured slice: per-turn and per-question rates × 5,882 / 1,986."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.report import load_runs
from memcore.report.collect import RunData, qa_time_ingest
from memcore.report.estimate import (
    LOCOMO_CONVERSATION_TURNS,
    LOCOMO_QUESTIONS,
    LOCOMO_TURNS,
    BuildCurve,
    _spread_final_flush,
    conversation_in_context,
    estimate,
    estimate_table,
    measured_rates,
    usd,
)
from memcore.report.summary import usage_totals
from tests.support import run_item, write_run

COST = {
    "usage": {
        "by_stage": {
            "ingest": {"calls": 40, "prompt_tokens": 20000, "completion_tokens": 4000},
            "retrieve": {"calls": 8, "prompt_tokens": 2400, "completion_tokens": 400},
            "answer": {"calls": 4, "prompt_tokens": 4000, "completion_tokens": 40},
        }
    },
    "wall_s": {"total": 10.0},
}
INGEST = {"calls": 40, "prompt_tokens": 20000, "completion_tokens": 4000, "parse_retries": 10}
STATS = {"conversations": {"c1": {"turns": 20, "ingest_usage": {"by_stage": {"ingest": INGEST}, "total": INGEST}}}}


def _run(tmp_path: Path):
    items = [run_item("c1", i, 4, 1.0, 1.0, tokens_used=500) for i in range(4)]
    write_run(tmp_path, backbone="local", method="memcore", items=items, cost=COST, stats=STATS, dataset="locomo-mini")
    (run,) = load_runs([tmp_path])
    return run


def test_rates_and_full_locomo_totals(tmp_path: Path) -> None:
    r = measured_rates(_run(tmp_path))
    assert (r.calls_per_turn, r.prompt_per_turn, r.completion_per_turn) == (2.0, 1000.0, 200.0)
    assert r.calls_per_question == {"retrieve": 2.0, "answer": 1.0, "judge": 0.0, "memory_update": 0.0}
    assert (r.prompt_per_question, r.completion_per_question, r.mean_context_tokens) == (1600.0, 110.0, 500.0)
    t = estimate(r)
    assert t["build_calls"] == 2 * LOCOMO_TURNS and t["qa_calls"] == 3 * LOCOMO_QUESTIONS
    assert t["prompt_tokens"] == 1000 * LOCOMO_TURNS + 1600 * LOCOMO_QUESTIONS
    assert t["completion_tokens"] == 200 * LOCOMO_TURNS + 110 * LOCOMO_QUESTIONS
    # gpt-4o-mini list price: 0.15 $/M in, 0.60 $/M out
    expected = (1000 * 5882 + 1600 * 1986) * 0.15 / 1e6 + (200 * 5882 + 110 * 1986) * 0.60 / 1e6
    assert usd(t, 0.15, 0.60) == pytest.approx(expected)
    # full_context swaps the slice's context for a whole conversation's
    fc = estimate(r, context_tokens=20500.0)
    assert fc["prompt_tokens"] == t["prompt_tokens"] + 20000 * LOCOMO_QUESTIONS


def test_estimate_table_prices_each_preset(tmp_path: Path) -> None:
    md = estimate_table([_run(tmp_path)], ["gpt-4o-mini", "gpt-4o"])
    row = md.splitlines()[2]
    assert "| memcore | locomo-mini / local (20 turns, 4 q) | 2.00 | 2.00 + 1.00 + 0.00 + 0.00 |" in row
    assert "| 1,200 | 1,710 | 17,722 |" in row  # 2*5882 + 3*1986 calls
    mini = (1000 * 5882 + 1600 * 1986) * 0.15 / 1e6 + (200 * 5882 + 110 * 1986) * 0.60 / 1e6
    big = (1000 * 5882 + 1600 * 1986) * 2.5 / 1e6 + (200 * 5882 + 110 * 1986) * 10.0 / 1e6
    assert row.endswith(f"| {mini:,.2f} | {big:,.2f} |")


def test_first_attempts_only_and_assumed_completions(tmp_path: Path) -> None:
    """Scripted-backbone runs: every JSON call is retried once; drop the retries, assume reply sizes."""
    r = measured_rates(_run(tmp_path), first_attempts_only=True, completion_per_call=50.0, answer_completion=10.0)
    # ingest: 40 calls, 10 retries -> 30 first attempts over 20 turns; prompt tokens scaled by 30/40
    assert (r.calls_per_turn, r.prompt_per_turn, r.completion_per_turn) == (1.5, 750.0, 75.0)
    # QA stages carry no parse_retries here: unchanged calls; 8 retrieve calls x 50 + 4 answers x 10, over 4 q
    assert r.calls_per_question == {"retrieve": 2.0, "answer": 1.0, "judge": 0.0, "memory_update": 0.0}
    assert r.completion_per_question == 110.0


@pytest.mark.parametrize("reused", [False, True])
def test_memory_updates_made_while_answering_count_per_question(tmp_path: Path, reused: bool) -> None:
    """FluxMem consolidates during QA under the ingest stage: those calls are QA cost, not build cost. A reused
    snapshot's build is not in the run's usage, so only builds made in the run are subtracted."""
    updates = {"calls": 8, "prompt_tokens": 800, "completion_tokens": 80}
    built = {k: (0 if reused else INGEST[k]) + updates[k] for k in updates}
    cost = {**COST, "usage": {"by_stage": {**COST["usage"]["by_stage"], "ingest": built}}}
    conv = {**STATS["conversations"]["c1"], "reused": reused}
    items = [run_item("c1", i, 4, 1.0, 1.0, tokens_used=500) for i in range(4)]
    write_run(
        tmp_path, backbone="local", method="fluxmem", items=items, cost=cost, stats={"conversations": {"c1": conv}}
    )
    (run,) = load_runs([tmp_path])
    assert qa_time_ingest(run)["calls"] == 8 and qa_time_ingest(run)["prompt_tokens"] == 800
    r = measured_rates(run)
    assert r.calls_per_turn == 2.0  # the build, from stats.json either way
    assert r.calls_per_question == {"retrieve": 2.0, "answer": 1.0, "judge": 0.0, "memory_update": 2.0}
    assert (r.prompt_per_question, r.completion_per_question) == (1800.0, 130.0)
    totals = usage_totals(run)
    assert (totals["build_calls"], totals["qa_calls"]) == (40, 20)  # 8 retrieve + 4 answer + 8 updates


def test_build_curve_continues_at_the_tail_rate_and_bounds_with_the_growth() -> None:
    """Per-turn prompt tokens 1..6 (growing by 1 a turn), finalize 10: the tail (last third: 5, 6) gives 5.5 a turn
    past the slice; the upper bound continues the slope: turns 7..10 cost 7 + 8 + 9 + 10."""
    curve = BuildCurve(tuple((1.0, float(t), 0.0) for t in range(1, 7)), (0.0, 10.0, 0.0))
    assert curve.tail_rate() == (1.0, 5.5, 0.0)
    assert curve.slope() == pytest.approx((0.0, 1.0, 0.0))
    assert curve.cost(4) == (4.0, 1 + 2 + 3 + 4 + 10.0, 0.0)  # a shorter conversation: the measured prefix
    assert curve.cost(10) == (10.0, 21 + 4 * 5.5 + 10.0, 0.0)
    assert curve.cost(10, upper=True) == pytest.approx((10.0, 21 + 34 + 10.0, 0.0))
    flat = BuildCurve(tuple((1.0, 5.0, 1.0) for _ in range(9)), (0.0, 0.0, 0.0))
    assert flat.cost(20) == flat.cost(20, upper=True) == (20.0, 100.0, 20.0)


def _traced_run(tmp_path: Path):
    """The run of ``_run`` with a per-turn trace: 20 turns whose prompt tokens grow 500 → 1,450 (by 50), 2 calls
    and 200 completion tokens each; the trace sums to the ingest totals (nothing added at finalize)."""
    prompt = [500 + 50 * t for t in range(20)]
    trace = {"calls": [2] * 20, "prompt_tokens": prompt, "completion_tokens": [200] * 20}
    ingest = {"calls": 40, "prompt_tokens": sum(prompt), "completion_tokens": 4000}
    stats = {"conversations": {"c1": {"turns": 20, "ingest_usage": {"total": ingest, "by_stage": {"ingest": ingest}}}}}
    stats["conversations"]["c1"]["ingest_trace"] = trace
    cost = {**COST, "usage": {"by_stage": {**COST["usage"]["by_stage"], "ingest": ingest}}}
    items = [run_item("c1", i, 4, 1.0, 1.0, tokens_used=500) for i in range(4)]
    write_run(tmp_path, backbone="local", method="memcore", items=items, cost=cost, stats=stats, dataset="locomo-mini")
    (run,) = load_runs([tmp_path])
    return run, prompt


def test_a_traced_run_is_estimated_at_its_tail_rate(tmp_path: Path) -> None:
    run, prompt = _traced_run(tmp_path)
    r = measured_rates(run)
    assert len(r.curves) == 1 and r.prompt_per_turn == sum(prompt) / 20
    tail = sum(prompt[-7:]) / 7  # round(20 / 3) = 7 turns
    t = estimate(r, conversation_turns=(30, 10), questions=4)
    assert t["build_calls"] == 2 * 40
    assert t["prompt_tokens"] == pytest.approx(sum(prompt) + 10 * tail + sum(prompt[:10]) + 1600 * 4)
    upper = sum(prompt) + sum(500 + 50 * k for k in range(20, 30)) + sum(prompt[:10]) + 1600 * 4
    assert t["prompt_tokens_upper"] == pytest.approx(upper)
    assert sum(LOCOMO_CONVERSATION_TURNS) == LOCOMO_TURNS
    full = estimate(r)
    assert full["prompt_tokens"] > r.prompt_per_turn * LOCOMO_TURNS + 1600 * LOCOMO_QUESTIONS  # growth costs more
    row = estimate_table([run], ["gpt-4o-mini"]).splitlines()[2]
    assert f"| {r.prompt_per_turn + 200:,.0f} (tail {tail + 200:,.0f}) |" in row and "(≤ " in row


def test_a_method_that_keeps_the_conversation_in_context_grows_with_it(tmp_path: Path) -> None:
    """MemGPT with the full window holds the conversation in context: the build is the upper bound (the slope continued), and the
    retrieve (600/question) and answer (1,000/question) prompts scale with the conversation's length; by hand,
    conversations of 30 and 10 turns against the slice's 20: x1.0 on average, 40 turns: x2."""
    run, _ = _traced_run(tmp_path)
    r = measured_rates(run)
    assert r.prompt_per_question_by_stage["retrieve"] == 600.0 and r.prompt_per_question_by_stage["answer"] == 1000.0
    assert r.conversations == 1
    same = estimate(r, in_context=True, conversation_turns=(30, 10), questions=4)
    assert same["prompt_tokens"] == same["prompt_tokens_upper"]  # the upper build is the estimate
    assert same["prompt_tokens"] == estimate(r, conversation_turns=(30, 10), questions=4)["prompt_tokens_upper"]
    longer = estimate(r, in_context=True, conversation_turns=(40,), questions=4)
    other = estimate(r, conversation_turns=(40,), questions=4)
    assert longer["prompt_tokens"] == pytest.approx(other["prompt_tokens_upper"] + (600 + 1000) * 4)
    # the paging MemGPT's window bounds its prompts: estimated like any other method; a memgpt run recorded
    # before it paged (no context_window in its config) held the whole conversation

    def recorded(method: str, section: dict) -> RunData:
        return RunData(tmp_path, metrics={"run": {"method": method}}, config={"method": section})

    assert conversation_in_context(recorded("memgpt", {"context_window_tokens": 120000}))
    assert conversation_in_context(recorded("memgpt-full-window", {"context_window": "backbone"}))
    assert not conversation_in_context(recorded("memgpt", {"context_window": "memgpt"}))
    assert not conversation_in_context(recorded("full_context", {}))
    assert not conversation_in_context(recorded("a-method-since-removed", {}))


def test_a_trace_is_scaled_with_the_rate_adjustments(tmp_path: Path) -> None:
    """``first_attempts_only`` scales the build totals; the curve is scaled with them, its shape kept."""
    run, prompt = _traced_run(tmp_path)
    r = measured_rates(run, first_attempts_only=True)
    (curve,) = r.curves
    assert sum(u[1] for u in curve.per_turn) == pytest.approx(r.prompt_per_turn * 20)
    assert curve.per_turn[-1][1] / curve.per_turn[0][1] == pytest.approx(prompt[-1] / prompt[0])


def test_a_final_flush_belongs_to_the_turns_it_processed(tmp_path: Path) -> None:
    """Mem0-like: each session's adds run when the next session starts, the last session's in ``finalize``: the
    turns after the last one that cost anything share what ``finalize`` made; a trace whose last turn cost
    something keeps ``finalize`` as its own (once per conversation)."""
    per_turn = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (2.0, 200.0, 20.0), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))
    spread, fin = _spread_final_flush(per_turn, (4.0, 400.0, 40.0))
    assert spread == (*per_turn[:3], (2.0, 200.0, 20.0), (2.0, 200.0, 20.0)) and fin == (0.0, 0.0, 0.0)
    kept = per_turn[:3]
    assert _spread_final_flush(kept, (1.0, 50.0, 5.0)) == (kept, (1.0, 50.0, 5.0))

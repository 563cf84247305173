"""The token-floor arithmetic of experiments/benchmarks/llm_floor.py on a fake server log and run dir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.benchmarks.llm_floor import Rates, analyse_run, mean_rates, parse_server_log, token_floor_s

LOG = """INFO:     Uvicorn running on http://127.0.0.1:1 (Press CTRL+C to quit)
Llama.generate: 20 prefix-match hit, remaining 100 prompt tokens to eval
llama_perf_context_print:        load time =    1473.28 ms
llama_perf_context_print: prompt eval time =    1000.00 ms /   100 tokens (   10.00 ms per token,   100.00 tokens per second)
llama_perf_context_print:        eval time =    2000.00 ms /    40 runs   (   50.00 ms per token,    20.00 tokens per second)
llama_perf_context_print:       total time =    3500.00 ms /   140 tokens
llama_perf_context_print:    graphs reused =         39
INFO:     127.0.0.1:2 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:        load time =    1473.28 ms
llama_perf_context_print: prompt eval time =       0.00 ms /     1 tokens (    0.00 ms per token,      inf tokens per second)
llama_perf_context_print:        eval time =     500.00 ms /    10 runs   (   50.00 ms per token,    20.00 tokens per second)
llama_perf_context_print:       total time =     600.00 ms /    11 tokens
llama_perf_context_print: prompt eval time =     300.00 ms /    30 tokens (   10.00 ms per token,   100.00 tokens per second)
"""
RATES = Rates(((100, 100.0), (1000, 50.0)), gen_rate=20.0, other_ms_per_token_plain=1.0, other_ms_per_token_json=5.0)


def test_parse_server_log_reads_each_completed_request() -> None:
    reqs = parse_server_log(LOG)
    assert len(reqs) == 2  # the third group has no total (a log cut short)
    assert (reqs[0].prompt_tokens, reqs[0].prompt_ms, reqs[0].gen_tokens, reqs[0].gen_ms) == (100, 1000.0, 40, 2000.0)
    assert reqs[0].other_ms == pytest.approx(500.0)
    assert (reqs[1].prompt_tokens, reqs[1].gen_tokens, reqs[1].other_ms) == (1, 10, pytest.approx(100.0))


def test_prompt_rate_is_log_linear_between_lengths_and_flat_outside() -> None:
    assert RATES.prompt_rate(10) == 100.0 and RATES.prompt_rate(5000) == 50.0
    assert RATES.prompt_rate(316) == pytest.approx(75.0, abs=0.1)  # sqrt(100 * 1000): half-way in log length


def test_token_floor_sums_prompt_and_generation_at_the_rates() -> None:
    reqs = parse_server_log(LOG)
    # 100 tokens at 100/s + 40 at 20/s, then 1 token at 100/s + 10 at 20/s
    assert token_floor_s(reqs, RATES) == pytest.approx(1.0 + 2.0 + 0.01 + 0.5)


def test_mean_rates_averages_each_figure() -> None:
    other = Rates(((100, 50.0), (1000, 30.0)), 10.0, 3.0, 7.0)
    mean = mean_rates([RATES, other])
    assert mean.prompt_curve == ((100, 75.0), (1000, 40.0))
    assert (mean.gen_rate, mean.other_ms_per_token_plain, mean.other_ms_per_token_json) == (15.0, 2.0, 6.0)


def test_analyse_run_splits_the_wall_by_stage(tmp_path: Path) -> None:
    (tmp_path / "llama_server.log").write_text(LOG)
    timing = {"wall_s": 10.0, "stages_s": {"start-up": 0.5, "build": 6.0, "answer": 3.0}, "embed_s": 0.4}
    (tmp_path / "stats.json").write_text(json.dumps({"timing": timing}))
    usage = {
        "ingest": {"calls": 1, "cached_calls": 0, "prompt_tokens": 120, "latency_s_total": 3.8},
        "answer": {"calls": 1, "cached_calls": 0, "prompt_tokens": 1, "latency_s_total": 0.7},
    }
    (tmp_path / "cost.json").write_text(json.dumps({"backbone": {"model": "m"}, "usage": {"by_stage": usage}}))
    run = analyse_run(tmp_path, RATES)
    assert run["model"] == "m" and run["requests"] == 2
    assert run["token_floor_s"] == pytest.approx(3.51)
    assert run["wall_over_floor"] == pytest.approx(10.0 / 3.51, abs=0.001)
    assert (run["prompt_tokens_evaluated"], run["tokens_generated"], run["prompt_tokens_sent"]) == (101, 50, 121)
    assert run["model_compute_s"] == pytest.approx(3.5)
    assert run["server_sampling_and_other_s"] == pytest.approx(0.6)
    assert run["request_overhead_s"] == pytest.approx(4.5 - 4.1)
    assert run["stages"]["build"] == {"stage_s": 6.0, "llm_calls_s": 3.8, "outside_llm_s": 2.2}
    assert run["stages"]["start-up"]["outside_llm_s"] == 0.5

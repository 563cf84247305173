"""The rehearsal of the paper sweep (``experiments/rehearsal/``): its plan and checks on hand-made run
dirs, a real rehearsal at the tiny scale (real simulator, submitit_local, memcore-run) with the kill -9 / resume
check, and ``memcore-run`` against an endpoint that turns bad mid-run: one line, exit 2, nothing written lost."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from experiments import rehearsal as R
from memcore.itemlog import read_items
from memcore.testing.simulator import SimulatorConfig, running_simulator
from tests.support import CHILD_OF_TEST, REPO, run_item
from tests.support import write_run as write_report_run

PAPER_METHODS = ("full_context", "memgpt", "amem", "mem0-two-phase", "lightmem", "memcore")


def plan_for(scale: str, tmp_path: Path, *extra: str) -> R.Plan:
    args = R.build_parser().parse_args(["--scale", scale, *extra])
    return R.make_plan(R.SCALES[scale], tmp_path / "root", args)


@pytest.mark.usefixtures("locomo_path")
def test_quick_plan_is_every_method_and_every_ablation_with_counts_from_the_data(tmp_path: Path) -> None:
    plan = plan_for("quick", tmp_path)
    assert [j.method for j in plan.jobs if j.experiment == "paper_main"] == list(PAPER_METHODS)
    assert [j.ablation for j in plan.jobs if j.experiment == "paper_ablation"] == [
        "none", "wo_update", "wo_merge", "wo_link", "wo_denoise", "wo_topic", "wo_keyword", "wo_neighbor", "wo_ier",
    ]  # fmt: skip
    data = R.load_scale_slice(R.SCALES["quick"])
    assert plan.questions == data.n_items == 25 and plan.turns == 58  # locomo-mini's slice
    assert all(len(j.expected_ids) == plan.questions for j in plan.jobs)
    full = R.load_scale_slice(R.SCALES["full"])
    assert full.n_items == 1986 and sum(len(c.turns) for c in full.conversations) == 5882


@pytest.mark.usefixtures("locomo_path")
def test_sweep_command_points_the_preset_at_the_simulator_with_the_judge_and_submitit(tmp_path: Path) -> None:
    plan = plan_for("quick", tmp_path, "--jobs", "3")
    cmd = R.sweep_command(plan, "paper_main", "http://127.0.0.1:9/v1")
    for arg in (
        "experiment=paper_main",
        "backbone=gpt-4o-mini",
        "backbone.base_url=http://127.0.0.1:9/v1",
        "eval.judge=true",
        "eval.judge_preset=mem0-judge",
        "eval.judge_runs=3",
        "hydra/launcher=submitit_local",
        "hydra.sweeper.max_batch_size=3",
        "dataset.conversations=[conv-26]",
    ):
        assert arg in cmd
    assert not any(a.startswith("method=") for a in cmd)  # the experiment's own method list
    assert R.child_env()["OPENAI_API_KEY"] == R.DUMMY_KEY and str(REPO) in R.child_env()["PYTHONPATH"]
    with pytest.raises(ValueError, match="unknown kind"):
        plan_for("quick", tmp_path, "--fault", "418=0.1")
    assert plan_for("quick", tmp_path, "--fault", "drop=0.2").sim["drop"] == 0.2


def write_run(run_dir: Path, ids: list[str], *, cost: dict[str, Any] | None = None) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "items.jsonl").write_text("".join(json.dumps({"item_id": i}) + "\n" for i in ids))
    (run_dir / "metrics.json").write_text(json.dumps({"overall": {"f1": 0.5}, "parse_failures": {"x": 1}}))
    (run_dir / "cost.json").write_text(json.dumps(cost or {}))


def test_items_check_finds_lost_and_duplicated_ids(tmp_path: Path) -> None:
    ids = ("c#0", "c#1", "c#2")
    jobs = [R.Job("paper_main", m, "none", tmp_path / m, ids) for m in ("a", "b", "c")]
    write_run(jobs[0].run_dir, ["c#0", "c#1", "c#2"])
    write_run(jobs[1].run_dir, ["c#0", "c#2", "c#2"])
    jobs[2].run_dir.mkdir()
    plan = R.Plan(R.SCALES["tiny"], tmp_path, jobs, 1, 3, 1, {}, 0.0, 4, 2, 5.0)
    rows = {r["run"].split()[1]: r for r in R.check_items(plan)}
    assert rows["a/none"] == {**rows["a/none"], "answered": 3, "lost": 0, "duplicated": 0, "ok": True}
    assert rows["b/none"] == {**rows["b/none"], "answered": 2, "lost": 1, "duplicated": 1, "ok": False}
    assert not rows["c/none"]["finished"] and not rows["c/none"]["ok"]


def test_spend_counts_every_invocation_and_removes_cache_hits() -> None:
    cost = {
        "memory_build": {"llm_calls": 10, "llm_calls_uncached": 5, "prompt_tokens": 2000, "completion_tokens": 200},
        "items_usage": {
            "by_stage": {
                "answer": {"calls": 4, "llm_calls": 4, "prompt_tokens": 1000, "completion_tokens": 40},
                "judge": {"calls": 12, "llm_calls": 0, "prompt_tokens": 3000, "completion_tokens": 12},
            }
        },
    }
    spend = R.run_spend(cost, 0.15, 0.60)
    assert spend["calls"] == 9 and spend["prompt_tokens"] == 2000 and spend["completion_tokens"] == 140
    assert spend["usd"] == pytest.approx((2000 * 0.15 + 140 * 0.60) / 1e6)


def test_metrics_comparison_excludes_only_the_per_invocation_counts(tmp_path: Path) -> None:
    write_run(tmp_path / "a", ["c#0"])
    assert R.comparable_metrics(tmp_path / "a") == {"overall": {"f1": 0.5}}
    assert R.VOLATILE_METRICS == ("parse_failures",)


def test_progress_prints_one_line_per_job_and_warns_on_fallbacks(tmp_path: Path) -> None:
    ids = ("c#0", "c#1")
    jobs = [R.Job("paper_main", "amem", "none", tmp_path / "amem", ids)]
    plan = R.Plan(R.SCALES["tiny"], tmp_path, jobs, 1, 2, 1, dict(R.DEFAULT_RATES), 0.0, 4, 2, 5.0)
    lines: list[str] = []
    progress = R.Progress(plan, lines.append, every_s=0.0)
    progress.poll(None)
    assert lines == [lines[0]] and "0/2 items" in lines[0] and "ETA ?" in lines[0]
    usage = {"total": {"calls": 100, "parse_failures": 6}, "parse_failures_by_kind": {"ingest": {"raw turn": 6}}}
    write_run(jobs[0].run_dir, list(ids), cost={"usage": usage, "wall_s": {"total": 12.5}})
    lines.clear()
    progress.poll({"requests": 1000, "faults": {"429": 300, "500": 0, "503": 0, "drop": 0, "timeout": 0}})
    assert lines[0].startswith("done  paper_main") and "items     2/2" in lines[0] and "wall    12.5 s" in lines[0]
    assert lines[1].startswith("WARNING paper_main amem/none: 6 of 100 replies (6.0 %) fell back")
    assert lines[2].startswith("WARNING faults 429: 30.0 % of requests") and "1/1 jobs" in lines[3]
    lines.clear()
    progress.poll({"requests": 1000, "faults": {"429": 300}})
    assert len(lines) == 1 and lines[0].startswith("sweep [")  # each warning once; a job's line once


def test_bad_options_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert R.main(["--jobs", "1"]) == 2
    assert R.main(["--kill-at", "1.5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all(line.startswith("error: ") for line in err)


# ------------------------------------------------------------------------------------------ the real rehearsal
@pytest.mark.e2e  # real processes (simulator, submitit jobs, memcore-run): make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_tiny_rehearsal_end_to_end_with_kill_9_and_resume(tmp_path: Path) -> None:
    results = tmp_path / "rehearsal"
    cmd = [sys.executable, "-m", "experiments.rehearsal", "--scale", "tiny", "--results", str(results)]
    proc = subprocess.Popen(
        [*cmd, "--kill-at", "0.6"],
        cwd=REPO,
        env=R.child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        **CHILD_OF_TEST,
    )
    try:
        out, err = proc.communicate(timeout=1500)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode in (0, 1), err[-3000:]
    summary = json.loads((results / "tiny" / "summary.json").read_text())
    checks = summary["checks"]
    assert checks["jobs"] and checks["items"] and checks["faults"] and checks["resume"], checks
    assert proc.returncode == (0 if summary["ok"] else 1)
    assert len(summary["items"]) == 4
    assert all(r["answered"] == r["expected"] == 4 and not r["lost"] and not r["duplicated"] for r in summary["items"])
    faults = summary["faults"]
    assert all(faults["injected"][k] > 0 for k in (*R.FAULT_KINDS, "wrong_json"))
    assert faults["transport_retries_counted"] == sum(faults["injected"][k] for k in R.FAULT_KINDS)
    assert sum(faults["transport_retries_by_kind"].values()) == faults["transport_retries_counted"]
    resume = summary["resume"]
    assert resume["killed_by_sigkill"] and 0 < resume["items_at_kill"] < resume["items_expected"] == 16
    assert all(r["identical"] for r in resume["compare"]["rows"]) and len(resume["compare"]["rows"]) == 4
    # quiet: one line per job, sweep lines, no job log on the terminal
    job_lines = [ln for ln in out.splitlines() if ln.startswith("done  ")]
    assert len(job_lines) == 4 and all("USD" in ln and "calls" in ln for ln in job_lines)
    assert "[HYDRA]" not in out and "Traceback" not in out + err
    for exp, stem in (("paper_main", "main_table"), ("paper_ablation", "ablation_table")):
        assert (results / "tiny" / "report" / exp / f"{stem}.md").is_file()
    assert "| every job finished | pass |" in (results / "tiny" / "summary.md").read_text()


@pytest.mark.e2e  # real processes (simulator, submitit jobs, memcore-run): make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_quick_rehearsal_end_to_end_counts_every_fault_by_kind(tmp_path: Path) -> None:
    """The issue's ``--scale quick``: every method of both sweeps over conv-26's first three sessions (15 runs ×
    25 QA) against the faulty simulator at scaled latency. Every job finishes with its 25 items, each injected
    fault is counted by the client under its own kind, and the wall prediction uses those counts."""
    results = tmp_path / "rehearsal"
    tiny = REPO / "results" / "measured" / "rehearsal_tiny_idle"
    cmd = [sys.executable, "-m", "experiments.rehearsal", "--scale", "quick", "--results", str(results)]
    proc = subprocess.run(
        [*cmd, "--estimate-from", str(tiny)],
        cwd=REPO,
        env=R.child_env(),
        capture_output=True,
        text=True,
        timeout=1800,
        **CHILD_OF_TEST,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    summary = json.loads((results / "quick" / "summary.json").read_text())
    assert summary["ok"] and proc.returncode == 0, summary["checks"]
    assert len(summary["items"]) == 15
    assert all(r["answered"] == r["expected"] == 25 and not r["lost"] and not r["duplicated"] for r in summary["items"])
    faults = summary["faults"]
    injected = {k: n for k, n in faults["injected"].items() if k != "wrong_json" and n}
    assert faults["ok"] and faults["transport_retries_by_kind"] == injected and len(injected) == len(R.FAULT_KINDS)
    wall = summary["wall"]
    assert wall["fault_waits_from"] == "counted" and wall["fault_waits_measured_s"] > 0
    # estimated from the committed tiny rehearsal: the runs it has too (full_context; memcore none and wo_ier)
    assert {r["run"] for r in summary["estimate"]["rows"]} == {
        "paper_main full_context/none",
        "paper_main memcore/none",
        "paper_ablation memcore/none",
        "paper_ablation memcore/wo_ier",
    }
    assert len([ln for ln in proc.stdout.splitlines() if ln.startswith("done  ")]) == 15


# ------------------------------------------------------------------------------------------ bad endpoints mid-run
def run_cli(run: Path, root: Path, base_url: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "backbone=gpt-4o-mini", f"backbone.base_url={base_url}",
        "++backbone.max_attempts=2", "++backbone.backoff_cap_s=0.05", "backbone.timeout_s=10",
        "method=rag_bm25", "embedder=hashing", "dataset=locomo-tiny", "concurrency=1", "progress=false",
        "print_table=false", f"paths.root={root}", f"hydra.run.dir={run}",
    ]  # fmt: skip
    env = dict(R.child_env(), OPENAI_API_KEY="sk-right")
    return subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, **CHILD_OF_TEST)


def turn_bad_after_one_reply(sim: Any, replier: Any, change: dict[str, Any]) -> None:
    """From the next chat reply on, the simulator's config gets ``change`` right after that reply is made (in
    the server's own handler: no race with the run); the reply itself is still a good one."""

    def once(messages: Any) -> tuple[str, str]:
        out = replier(messages)
        if sim.replier is once:
            sim.replier = replier
            sim.config = replace(sim.config, **change)
        return out

    sim.replier = once


@pytest.mark.e2e  # launches memcore-run: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_endpoint_turning_bad_mid_run_is_one_line_exit_2_and_keeps_every_item(tmp_path: Path) -> None:
    """The simulator turns bad after the run has written items: an HTML page, an empty body, cut JSON, a 401, a
    model it does not serve. Each time: exit 2, one ``error:`` line saying what the server sent and which knob to
    fix, every item already written still there, no metrics file; the final rerun against a good endpoint
    completes the 8 items with none twice."""
    run, root = tmp_path / "run", tmp_path / "results"
    good = SimulatorConfig(ttft_s=0.0, time_scale=0.0)
    bad: list[tuple[dict[str, Any], str]] = [
        ({"body_mode": "html"}, "text/html"),
        ({"body_mode": "empty"}, "empty body"),
        ({"body_mode": "malformed"}, "backbone.base_url"),
        ({"api_key": "sk-other"}, "rejected the API key"),
        ({"models": ("another-model",)}, "backbone.model"),
    ]
    with running_simulator(good) as sim:
        replier = sim.replier
        for change, said in bad:
            sim.config, sim.replier = good, replier
            before = len(read_items(run / "items.jsonl"))
            turn_bad_after_one_reply(sim, replier, change)
            proc = run_cli(run, root, sim.base_url)
            assert proc.returncode == 2, proc.stderr[-2000:]
            lines = proc.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("error: ") and said in lines[0], proc.stderr[-2000:]
            assert "sk-right" not in proc.stderr
            items = read_items(run / "items.jsonl")
            assert len(items) > before and len({r["item_id"] for r in items}) == len(items)
            assert not (run / "metrics.json").exists()
        sim.config, sim.replier = good, replier
        final = run_cli(run, root, sim.base_url)
    assert final.returncode == 0, final.stderr[-2000:]
    items = read_items(run / "items.jsonl")
    assert len(items) == len({r["item_id"] for r in items}) == 8
    assert json.loads((run / "metrics.json").read_text())["overall"]["n"] == 8


def test_parser_defaults_are_the_issue_s() -> None:
    args = R.build_parser().parse_args([])
    assert isinstance(args, argparse.Namespace)
    assert (args.scale, args.jobs, args.kill_at) == ("quick", 2, None)
    assert args.results == R.DEFAULT_RESULTS


@pytest.mark.usefixtures("locomo_path")
def test_the_client_timeout_outlasts_the_simulated_latency_at_any_time_scale(tmp_path: Path) -> None:
    """At --time-scale 1 a 4,000-token reply takes 50.4 s; a 5 s timeout would fail every long reply."""
    assert plan_for("quick", tmp_path).timeout_s == 5.0  # scaled latency (0.02): the floor
    assert plan_for("quick", tmp_path, "--time-scale", "1").timeout_s == 50.4
    assert plan_for("quick", tmp_path, "--time-scale", "1", "--timeout-s", "9").timeout_s == 9.0


def _traced_memcore_run(runs: Path, dataset: str, turns: int, questions: int) -> None:
    """A memcore run whose build costs 100 · min(turn, 6) prompt tokens a turn (a memory that grows, then
    saturates) and whose questions cost 500 prompt tokens each."""
    prompt = [100 * min(t, 6) for t in range(1, turns + 1)]
    ingest = {"calls": turns, "prompt_tokens": sum(prompt), "completion_tokens": 0}
    trace = {"calls": [1] * turns, "prompt_tokens": prompt, "completion_tokens": [0] * turns}
    conv = {"turns": turns, "ingest_usage": {"total": ingest, "by_stage": {"ingest": ingest}}, "ingest_trace": trace}
    answer = {"calls": questions, "prompt_tokens": 500 * questions, "completion_tokens": 0}
    cost = {"usage": {"by_stage": {"ingest": ingest, "answer": answer}}, "wall_s": {"total": 1.0}}
    items = [run_item("conv-26", i, 1, 1.0, 1.0, context_tokens=100) for i in range(questions)]
    write_report_run(
        runs / "paper_main", backbone=R.BACKBONE, method="memcore", items=items, cost=cost,
        stats={"conversations": {"conv-26": conv}}, dataset=dataset,
    )  # fmt: skip


@pytest.mark.usefixtures("locomo_path")
def test_estimate_check_extrapolates_the_build_from_the_smaller_rehearsal_s_tail(tmp_path: Path) -> None:
    """Source: 9 turns (its tail, the last 3, at 600 a turn); target: tiny's 18 turns and 4 questions. The
    growth-aware estimate is exact (2,100 + 12 × 600 build tokens); the slice's mean rate would be 13 % low."""
    plan = plan_for("tiny", tmp_path, "--no-estimate")
    plan.jobs[:] = [j for j in plan.jobs if (j.experiment, j.method) == ("paper_main", "memcore")]
    source = tmp_path / "source"
    _traced_memcore_run(source / "root" / "runs", "rehearsal-smaller", turns=9, questions=2)
    assert (plan.turns, plan.questions) == (18, 4)
    _traced_memcore_run(plan.root / "runs", "rehearsal-tiny", turns=18, questions=4)
    (row,) = R.check_estimate(plan, source)["rows"]
    assert row["actual_tokens"] == 2100 + 12 * 600 + 4 * 500
    assert row["estimated_tokens"] == row["actual_tokens"] and row["ok"] and row["build_growth"] == "traced"
    assert row["flat_rate_tokens"] == round(3900 / 9 * 18 + 4 * 500) and row["flat_rate_error"] == -0.1327


def test_wall_prediction_skips_reused_builds_and_adds_fault_waits_and_harness_time(tmp_path: Path) -> None:
    """Build: 10 sequential calls of 0.4 s + 80 tokens (1 s each, time scale 1) plus 0.1 s expected fault wait
    per call; QA: 8 questions of one call each over concurrency 4. An ablation that reuses the snapshot has no build time; a run at
    a small time scale measures the harness's own time, added per job."""
    cost = {
        "memory_build": {"llm_calls": 10, "llm_calls_uncached": 10, "completion_tokens": 480, "snapshots_built": 1},
        "items_usage": {"by_stage": {"answer": {"calls": 8, "llm_calls": 8, "completion_tokens": 256}}},
        "wall_s": {"total": 40.0},
    }
    reused = {**cost, "memory_build": {**cost["memory_build"], "snapshots_built": 0, "snapshots_reused": 1}}
    jobs = []
    for exp, ablation, c in (("paper_main", "none", cost), ("paper_ablation", "wo_ier", reused)):
        job = R.Job(exp, "memcore", ablation, tmp_path / "root" / exp / ablation, tuple(f"c#{i}" for i in range(8)))
        job.run_dir.mkdir(parents=True)
        (job.run_dir / "cost.json").write_text(json.dumps(c))
        jobs.append(job)
    rates = {"429": 0.1, "500": 0.0, "503": 0.0, "drop": 0.0, "timeout": 0.0, "wrong_json": 0.0}
    plan = R.Plan(R.SCALES["quick"], tmp_path / "root", jobs, 58, 1, 1, rates, 1.0, 4, 2, 5.0)
    assert R.fault_wait_per_call(plan) == pytest.approx(0.1)  # 10 % of calls wait a 1 s Retry-After
    per_job = R.predicted_wall(plan)["per_job_s"]
    build, qa = 10 * (0.4 + 0.6) + 10 * 0.1, (8 * 0.4 + 256 / 80 + 8 * 0.1) / 4
    assert per_job["paper_main memcore/none"] == pytest.approx(build + qa)
    assert per_job["paper_ablation memcore/wo_ier"] == pytest.approx(qa)
    # the same scale at time scale 0.02: each job's wall beyond its latency there is the harness's own time
    small = tmp_path / "small"
    for job in jobs:
        moved = R.rebase(job, plan.root, small / "root")
        moved.run_dir.mkdir(parents=True)
        (moved.run_dir / "cost.json").write_text((job.run_dir / "cost.json").read_text())
    (small / "summary.json").write_text(json.dumps({"scale": "quick", "time_scale": 0.02}))
    overhead = R.harness_overhead(plan, small)
    small_latency = R.predicted_wall(replace(plan, time_scale=0.02))["per_job_s"]
    assert overhead["paper_main memcore/none"] == pytest.approx(40.0 - small_latency["paper_main memcore/none"])
    wall = R.check_wall(plan, {"paper_main": 60.0, "paper_ablation": 45.0}, {}, small)
    assert wall["predicted_with_overhead_s"] == pytest.approx(sum(per_job.values()) + sum(overhead.values()), abs=0.1)


def _run_with_faults(tmp_path: Path, name: str, by_stage: dict[str, dict]) -> R.Job:
    """A memcore run (paper_main, ablation ``name``) of one sequential build call and one answer, whose
    ``cost.json`` carries the invocation's usage ``by_stage``."""
    cost = {
        "memory_build": {"llm_calls": 1, "llm_calls_uncached": 1, "completion_tokens": 0, "snapshots_built": 1},
        "items_usage": {"by_stage": {"answer": {"calls": 1, "llm_calls": 1, "completion_tokens": 0}}},
        "usage": {"by_stage": by_stage},
        "wall_s": {"total": 1.0},
    }
    job = R.Job("paper_main", "memcore", name, tmp_path / name, ("c#0",))
    job.run_dir.mkdir(parents=True)
    (job.run_dir / "cost.json").write_text(json.dumps(cost))
    return job


def test_wall_prediction_puts_the_faults_each_job_counted_on_its_own_path(tmp_path: Path) -> None:
    """A job whose client counted one read timeout in its build waits timeout + backoff (50.4 + 0.4 s) on its
    critical path, one with a 429 in QA waits the Retry-After; the expected rate (2 % timeouts) would have given
    each 2 × 0.02 × 50.8 s. A run from before kinds were counted falls back to the expected rate."""
    timeout = _run_with_faults(
        tmp_path,
        "timeout",
        {
            "ingest": {"errors_retried": 1, "retries_by_kind": {"timeout": 1}, "retry_wait_s": 50.9},
            "answer": {"errors_retried": 0, "retries_by_kind": {}, "retry_wait_s": 0.0},
        },
    )
    rate_limited = _run_with_faults(
        tmp_path, "429", {"answer": {"errors_retried": 1, "retries_by_kind": {"429": 1}, "retry_wait_s": 1.1}}
    )
    old = _run_with_faults(tmp_path, "old", {"ingest": {"errors_retried": 3}})
    rates = {"429": 0.0, "500": 0.0, "503": 0.0, "drop": 0.0, "timeout": 0.02, "wrong_json": 0.0}
    plan = R.Plan(R.SCALES["quick"], tmp_path, [timeout, rate_limited], 58, 1, 1, rates, 1.0, 4, 2, 50.4)
    assert R.fault_waits(plan)["timeout"] == pytest.approx(50.8)
    latency = 0.4 + 0.4  # one build call, one question's answer call (one question cannot use 4 lanes)
    pred = R.predicted_wall(plan)
    assert pred["fault_waits_from"] == "counted"
    assert pred["fault_waits_s"] == pytest.approx(50.8 + 1.0)
    assert R.measured_fault_wait(timeout) == pytest.approx(50.9) and R.measured_fault_wait(rate_limited) == 1.1
    alone = R.predicted_wall(replace(plan, jobs=[timeout]))["per_job_s"][timeout.label]
    assert alone == pytest.approx(latency + 50.8)
    qa_wait = R.predicted_wall(replace(plan, jobs=[rate_limited]))["per_job_s"][rate_limited.label]
    assert qa_wait == pytest.approx(latency + 1.0)  # the one question waits out its 429 itself
    fallback = R.predicted_wall(replace(plan, jobs=[old]))
    assert fallback["fault_waits_from"] == "expected"
    assert fallback["fault_waits_s"] == pytest.approx(2 * 0.02 * 50.8)


def test_fault_check_compares_counts_per_kind(tmp_path: Path) -> None:
    """Totals that agree are not enough when every run counted kinds: a timeout counted as a dropped connection
    fails the check; runs from before kinds were counted are checked on the total."""
    rates = {"429": 0.0, "500": 0.0, "503": 0.0, "drop": 0.0, "timeout": 0.01, "wrong_json": 0.0}
    sim = {"faults": {"timeout": 2}, "wrong_json": 0, "requests": 100, "replies": 98}

    def check(by_stage: dict[str, dict]) -> dict:
        job = _run_with_faults(tmp_path, f"r{len(list(tmp_path.iterdir()))}", by_stage)
        return R.check_faults(R.Plan(R.SCALES["quick"], tmp_path, [job], 58, 1, 1, rates, 1.0, 4, 2, 5.0), sim)

    right = check({"ingest": {"errors_retried": 2, "retries_by_kind": {"timeout": 2}}})
    assert right["ok"] and right["transport_retries_by_kind"] == {"timeout": 2}
    wrong = check({"ingest": {"errors_retried": 2, "retries_by_kind": {"timeout": 1, "drop": 1}}})
    assert wrong["ok"] is False and wrong["transport_retries_counted"] == 2
    legacy = check({"ingest": {"errors_retried": 2}})
    assert legacy["ok"] and legacy["transport_retries_by_kind"] is None


def test_a_phase_takes_its_share_of_the_lanes_but_never_less_than_its_longest_chain() -> None:
    """25 questions of 12 s in all on 4 lanes: 3 s; with one 50.8 s timeout among them, the question that met it
    takes 50.8 s + its own 0.48 s, longer than the lanes' share (62.8 / 4 = 15.7 s); fewer chains than lanes
    cannot use every lane."""
    assert R.phase_wall(12.0, 0.0, 0.0, 4, 25) == pytest.approx(3.0)
    assert R.phase_wall(12.0, 50.8, 50.8, 4, 25) == pytest.approx(50.8 + 12.0 / 25)
    assert R.phase_wall(12.0, 0.0, 0.0, 4, 2) == pytest.approx(6.0)


def test_wall_prediction_reads_the_completion_tokens_the_endpoint_served(tmp_path: Path) -> None:
    """A build whose 10 served calls wrote 800 completion tokens and whose 30 cached calls wrote 3,000: the served
    calls take 10 × 0.4 + 800 / 80 = 14 s (the mean over all calls would give 10 × 0.4 + 950 / 80 = 15.9 s)."""
    stage = {"calls": 40, "llm_calls": 10, "completion_tokens": 3800, "llm_completion_tokens": 800}
    job = _run_with_faults(tmp_path, "served", {"ingest": {**stage, "retries_by_kind": {}}})
    rates = dict.fromkeys(("429", "500", "503", "drop", "timeout", "wrong_json"), 0.0)
    plan = R.Plan(R.SCALES["quick"], tmp_path, [job], 58, 1, 1, rates, 1.0, 4, 2, 5.0)
    assert R.predicted_wall(plan)["per_job_s"][job.label] == pytest.approx(14.0)

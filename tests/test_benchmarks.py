"""Smoke tests of the issue-7 benchmark code on tiny sizes (no timing assertions), and of the runner's
throughput fixes: one request bound, process builds for CPU-bound builds, the scripted-reply helpers."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from omegaconf import open_dict

from experiments.benchmarks import build_once, harness_overhead, ingest_cost, onnx_encoder, synthetic
from experiments.benchmarks.cache_rerun import sweep
from experiments.benchmarks.common import compose, md_table, run_scripted
from experiments.benchmarks.fake_openai import backbone_overrides, fake_openai_server
from experiments.benchmarks.retrieval_scale import run_size
from experiments.benchmarks.retrieval_speed import main as retrieval_speed_main
from memcore.config import EmbedderConfig, validate
from memcore.interfaces import Completion, Message
from memcore.llm.limiter import RequestLimiter
from memcore.memory.prompts import gate as GATE_PROMPT
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.methods import get_method
from memcore.pipeline.build import BackboneInBuildWorkerError, BuildJob, build_in_worker
from memcore.runner import Runner, run_config
from memcore.snapshots import construction_fields
from memcore.testing.sim_replies import structured_responder
from tests.support import story_conversation


# ---------------------------------------------------------------- helpers
def test_structured_responder_answers_each_prompt_with_valid_json() -> None:
    ingest = INGEST_PROMPT.USER.format(
        session_date="1 May 2023",
        previous="(none)",
        dia_id="D1:1",
        speaker="Alice",
        text="I adopted Rex the beagle",
        max_keywords=6,
    )
    reply = json.loads(
        structured_responder([{"role": "system", "content": INGEST_PROMPT.SYSTEM}, {"role": "user", "content": ingest}])
    )
    assert reply["context"] == "Alice: I adopted Rex the beagle"
    assert reply["keywords"] == ["Alice", "Rex", "adopted", "beagle"]  # capitalised first, then longest
    gate = GATE_PROMPT.USER.format(
        new_note="Rex is a beagle puppy", candidates="[1] Rex is a beagle\n[2] Bob plays violin"
    )
    out = json.loads(
        structured_responder([{"role": "system", "content": GATE_PROMPT.SYSTEM}, {"role": "user", "content": gate}])
    )
    # overlap {rex, beagle} / {rex, beagle, puppy} = 2/3 → strength min(1, 2.5 · 2/3) = 1.0; violin: 0
    assert [(j["id"], j["strength"], j["relation"]) for j in out["judgements"]] == [
        (1, 1.0, "redundant"),
        (2, 0.0, "unrelated"),
    ]


def test_request_limiter_bounds_calls_in_flight() -> None:
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    class Slow:
        model = "m"
        usage = "tracker"

        def complete(self, messages: Sequence[Message], *, stage: str, **kw: object) -> Completion:
            with lock:
                state["now"] += 1
                state["peak"] = max(state["peak"], state["now"])
            time.sleep(0.02)
            with lock:
                state["now"] -= 1
            return Completion("ok")

    limited = RequestLimiter(Slow(), 3)
    threads = [threading.Thread(target=limited.complete, args=([],), kwargs={"stage": "answer"}) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["peak"] == 3
    assert limited.usage == "tracker"  # other attributes pass through
    with pytest.raises(ValueError, match="concurrency must be >= 1"):
        RequestLimiter(Slow(), 0)


def test_synthetic_memory_shapes_and_word_codes() -> None:
    syn = synthetic.make_memory(2000, dim=16)
    assert len(syn.store) == 2000 and syn.store.vectors.matrix.shape == (2000, 16)
    assert all(len(n.keywords) == 6 and n.keywords[0] in synthetic.SPEAKERS for n in syn.store.notes)
    assert len(syn.kindex) <= 2 + 10 * synthetic.KEYWORDS_PER_CLUSTER  # 2000 / 200 = 10 clusters
    assert all(synthetic._word_index(synthetic.word(i)) == i for i in range(0, 300_000, 997))
    qs, table, _ = synthetic.make_queries(syn, 5)
    assert len(set(qs)) == 5 and all(q in table for q in qs)
    emb = synthetic.LookupEmbedder(16, table)
    kw = syn.kindex.keywords[5]
    np.testing.assert_allclose(emb.encode([kw])[0], syn.keyword_vectors[5], atol=1e-6)


def test_retrieval_scale_one_tiny_size() -> None:
    row = run_size(1500, n_queries=5, n_ingest=5, kinds=("flat", "ivf"))
    assert row["notes"] == 1500 and row["topics"] > 0 and row["graph_edges"] > 0
    flat, ivf = row["retrieval"]["flat"], row["retrieval"]["ivf"]
    assert (flat["index"], ivf["index"]) == ("flat", "ivf")
    assert 0.0 <= ivf["keyword_recall_at_20"] <= 1.0 and 0.0 <= ivf["retrieved_overlap_at_20"] <= 1.0
    assert row["ingest"]["notes_added"] == 5 and row["rss_mb_peak"] > 0
    assert row["gate_prescreen"]["kind"] == "flat"  # 1,500 notes: far below ann_threshold, exact scan


def test_md_table_and_pyspy_summary(tmp_path: Path) -> None:
    assert md_table(["a", "b"], [[1, 2]]) == "| a | b |\n|---|---:|\n| 1 | 2 |"
    raw = tmp_path / "raw.txt"
    raw.write_text("process 1;thread 2;main (x.py:1);f (x.py:2) 3\nprocess 1;main (x.py:1) 1\n")
    s = harness_overhead.summarize_pyspy(raw)
    assert s["samples"] == 4
    assert s["self_pct"] == [["f (x.py:2)", 75.0], ["main (x.py:1)", 25.0]]
    assert ["main (x.py:1)", 100.0] in s["inclusive_pct"]


def test_build_cost_reads_per_turn_usage(tmp_path: Path) -> None:
    run = tmp_path / "runs" / "e" / "locomo-mini" / "local" / "amem" / "memcore" / "none"
    run.mkdir(parents=True)
    usage = {"total": {"calls": 30, "prompt_tokens": 6000, "completion_tokens": 900, "parse_failures": 1}}
    (run / "stats.json").write_text(json.dumps({"conversations": {"c": {"turns": 20, "ingest_usage": usage}}}))
    metrics = {"overall": {"n": 25, "f1": 0.3, "recall": 0.8}, "run": {"method": "memcore", "ablation": "none"}}
    (run / "metrics.json").write_text(json.dumps(metrics))
    (run / "cost.json").write_text("{}")
    (run / "config.yaml").write_text("method:\n  ingest_batch_size: 4\n")
    (found,) = ingest_cost.find_runs(tmp_path / "runs", "locomo-mini", "local")
    row = ingest_cost.build_cost(found)
    assert (row["calls_per_turn"], row["prompt_tokens_per_turn"], row["completion_tokens_per_turn"]) == (
        1.5,
        300.0,
        45.0,
    )
    assert (row["tokens_per_turn"], row["parse_failures"], row["ingest_batch_size"]) == (345.0, 1, "4")


def test_ingest_cost_report_prints_no_quality_for_build_only_runs(tmp_path: Path, capsys) -> None:
    import argparse

    usage = {"total": {"calls": 40, "prompt_tokens": 4000, "completion_tokens": 400, "parse_failures": 0}}
    for ablation, n in (("none", 25), ("wo_link", ingest_cost.BUILD_ONLY_QA)):
        run = tmp_path / "runs" / "e" / "locomo-mini" / "local" / "amem" / "memcore" / ablation
        run.mkdir(parents=True)
        (run / "stats.json").write_text(json.dumps({"conversations": {"c": {"turns": 20, "ingest_usage": usage}}}))
        metrics = {"overall": {"n": n, "f1": 0.5, "recall": 1.0}, "run": {"method": "memcore", "ablation": ablation}}
        (run / "metrics.json").write_text(json.dumps(metrics))
        (run / "cost.json").write_text("{}")
    args = argparse.Namespace(runs=str(tmp_path / "runs"), dataset="locomo-mini", backbone="local", out=tmp_path)
    ingest_cost.report(args)
    table = (tmp_path / "ingest_cost.md").read_text()
    assert "| memcore | none | 20 | 40 | 2.0 | 200.0 | 20.0 | 0 | 25 | 50.0 | 100.0 |" in table
    assert "| memcore | wo_link | 20 | 40 | 2.0 | 200.0 | 20.0 | 0 | 1 | build only | build only |" in table


def test_count_builds_from_manifests(tmp_path: Path) -> None:
    snaps = tmp_path / "snapshots" / "memcore"
    switch_sets = [{}, {"update": False}, {"merge": False}, {"link": False}, {"denoise": False}]
    for i, off in enumerate(switch_sets):
        d = snaps / f"k{i}"
        d.mkdir(parents=True)
        switches = {k: off.get(k, True) for k in build_once.CONSTRUCTION}
        (d / "MANIFEST.json").write_text(json.dumps({"fields": {"conversation": "conv-1", "switches": switches}}))
    (snaps / "k0.work").mkdir()
    (snaps / "half").mkdir()  # a build that never finished
    run = tmp_path / "runs" / "x" / "wo_topic"
    run.mkdir(parents=True)
    (run / "cost.json").write_text(json.dumps({"memory_build": {"snapshots_built": 0, "snapshots_reused": 1}}))
    counts = build_once.count_builds(tmp_path)
    assert counts["per_conversation"] == {"conv-1": ["full", "wo_denoise", "wo_link", "wo_merge", "wo_update"]}
    assert counts["builds_per_conversation"] == [5] and counts["leftover_dirs"] == ["half"]
    assert counts["runs"] == {"wo_topic": {"snapshots_built": 0, "snapshots_reused": 1}}


# ---------------------------------------------------------------- runs (need the LoCoMo file)
@pytest.mark.usefixtures("locomo_path")
def test_scripted_run_counts_answer_calls(tmp_path: Path) -> None:
    res, _ = run_scripted(
        ["method=rag_bm25", "dataset=locomo-tiny", "dataset.max_qa=3", "embedder=hashing", "concurrency=2"],
        tmp_path,
        tmp_path / "run",
        responder=structured_responder,
        latency_s=0.0,
    )
    assert res.cost["usage"]["by_stage"]["answer"]["llm_calls"] == 3
    assert res.cost["memory_build"]["snapshots_built"] == 1


def _memcore_on(server: Any, *, max_qa: int) -> list[str]:
    """Overrides for LLM-mode memcore on locomo-tiny against the fake OpenAI ``server``."""
    return [
        "method=memcore",
        "dataset=locomo-tiny",
        f"dataset.max_qa={max_qa}",
        "embedder=hashing",
        *backbone_overrides(server),
    ]


@pytest.mark.usefixtures("locomo_path")
def test_fake_openai_server_and_response_cache(tmp_path: Path) -> None:
    with fake_openai_server(structured_responder, latency_s=0.0) as server:
        base = _memcore_on(server, max_qa=2)
        cold = sweep(tmp_path, tmp_path / "runs" / "cold", base, server, ("none", "wo_ier"))
        warm = sweep(tmp_path, tmp_path / "runs" / "warm", base, server, ("none", "wo_ier"))
    assert cold["server_requests"] == cold["llm_calls"] > 0
    assert cold["snapshots_built"] == 1  # wo_ier reuses the full model's memory
    assert (warm["llm_calls"], warm["server_requests"], warm["snapshots_built"]) == (0, 0, 0)
    assert warm["cached_calls"] > 0


@pytest.mark.e2e  # processes / sweeps / plots: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_cpu_bound_builds_run_in_worker_processes(tmp_path: Path) -> None:
    overrides = [
        "method=memcore-cheap",
        "dataset=locomo",
        "dataset.conversations=[conv-26,conv-30]",
        "dataset.max_sessions=1",
        "dataset.max_qa=2",
        "embedder=hashing",
        "backbone=scripted",
        "concurrency=2",
    ]

    runner = Runner(validate(compose(overrides, tmp_path)), tmp_path / "run")
    res = runner.run()
    assert runner.concurrency.build_processes == (2 if (__import__("os").cpu_count() or 1) >= 2 else 0)
    assert res.cost["memory_build"]["snapshots_built"] == 2
    assert {k: v["calls"] for k, v in res.cost["usage"]["by_stage"].items()} == {"answer": 4}  # no ingest call
    assert [v["reused"] for v in res.stats["conversations"].values()] == [False, False]
    assert len(list((tmp_path / "snapshots" / "memcore-cheap").glob("*/MANIFEST.json"))) == 2
    # cheap builds (rag_bm25) stay in threads: starting processes would cost more than the build
    rag = Runner(validate(compose([*overrides, "method=rag_bm25"], tmp_path)), tmp_path / "run2")
    rag.run()
    assert rag.concurrency.build_processes == 0


class _QueueingPool:
    """Records what is submitted; its futures never run (so a cancel always succeeds)."""

    def __init__(self) -> None:
        self.submitted: list[str] = []
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Any, job: BuildJob) -> Future[Any]:
        self.submitted.append(job.conversation.conv_id)
        self.futures.append(Future())
        return self.futures[-1]


@pytest.mark.usefixtures("locomo_path")
def test_every_build_is_queued_to_the_workers_at_once_and_a_stop_cancels_the_unstarted(tmp_path: Path) -> None:
    overrides = ["method=memcore-cheap", "dataset=locomo", "dataset.conversations=[conv-26,conv-30,conv-41]"]
    runner = Runner(validate(compose([*overrides, "embedder=hashing", "eval.answer=false"], tmp_path)), tmp_path / "r")
    pool = _QueueingPool()
    builder = runner._builder(pool)  # type: ignore[arg-type]
    convs = [story_conversation(c) for c in ("conv-26", "conv-30", "conv-41")]
    builder.queue(convs)
    builder.queue(convs[:1])  # a conversation already queued is not queued again
    assert pool.submitted == ["conv-26", "conv-30", "conv-41"]
    builder.cancel_queued()
    assert all(f.cancelled() for f in pool.futures)


def test_build_worker_refuses_a_build_that_touches_the_backbone(tmp_path: Path, tiny_conversation) -> None:
    conv = tiny_conversation

    def job(method: str, cfg: dict) -> BuildJob:
        fields = construction_fields(
            get_method(method), cfg, {"name": "none"}, backbone_model="m", embedder_name="hashing", conversation=conv
        )
        return BuildJob(method, cfg, {"name": "none"}, conv, 0, fields, str(tmp_path / "snaps"),
                        EmbedderConfig(name="hashing", kind="hashing", model="hashing", dim=64), None, {})  # fmt: skip

    cheap = job("memcore-cheap", {"name": "memcore-cheap", "judge": "embedding"})
    assert build_in_worker(cheap)[0] is True  # built here
    assert build_in_worker(cheap) == (False, {})  # found complete: not rebuilt
    with pytest.raises(BackboneInBuildWorkerError, match="ingest_uses_llm is false"):
        build_in_worker(job("memcore", {"name": "memcore"}))


@pytest.mark.usefixtures("locomo_path")
def test_memory_build_counts_cached_calls_too(tmp_path: Path) -> None:
    """A rebuild served from the response cache costs the method the same calls per turn; only
    ``llm_calls_uncached`` (what this run sent) drops to zero."""
    with fake_openai_server(structured_responder, latency_s=0.0) as server:
        base = _memcore_on(server, max_qa=1)

        def cfg(snapshots: str) -> Any:
            composed = compose(base, tmp_path)
            with open_dict(composed):
                composed.paths.snapshots = str(tmp_path / snapshots)  # a fresh build, the same response cache
            return composed

        cold = run_config(cfg("s1"), tmp_path / "cold")
        requests = server.requests
        warm = run_config(cfg("s2"), tmp_path / "warm")
        assert server.requests == requests  # everything came from the response cache
    c, w = cold.cost["memory_build"], warm.cost["memory_build"]
    assert c["snapshots_built"] == w["snapshots_built"] == 1
    assert c["llm_calls"] == c["llm_calls_uncached"] > 0
    assert (w["llm_calls"], w["llm_calls_per_turn"], w["llm_calls_uncached"]) == (
        c["llm_calls"],
        c["llm_calls_per_turn"],
        0,
    )


@pytest.mark.e2e  # MiniLM in three processes and two memcore-run processes: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_retrieval_speed_writes_its_floor_rows_and_targets(tmp_path: Path) -> None:
    argv = ["--dataset", "conv-30", "--methods", "rag_bm25", "--budgets", "500", "--out", str(tmp_path)]
    assert retrieval_speed_main([*argv, "--name", "smoke"]) == 0
    result = json.loads((tmp_path / "smoke.json").read_text())
    assert sorted(f["threads"] for f in result["floor"]) == sorted({1, os.cpu_count() or 1})
    assert all(f["texts"] == f["turns"] + f["questions"] > 0 for f in result["floor"])
    phases = [(r["method"], r["phase"], r["budget"]) for r in result["runs"]]
    assert phases == [("rag_bm25", "cold", "500"), ("rag_bm25", "warm", "500")]
    warm = result["runs"][1]
    assert warm["items"] > 0 and warm["texts_computed"] == 0 and "retrieve" in warm["stages_s"]
    table = (tmp_path / "smoke.md").read_text()
    assert "÷ floor" in table and "≤ 20 s" in table and str(result["machine_at_start"]) in table


def test_onnx_encoder_without_its_extra_says_what_to_install_before_any_work(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(onnx_encoder.importlib.util, "find_spec", lambda name: None)
    assert onnx_encoder.main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == "error: this benchmark needs onnxruntime and onnx: pip install -e '.[onnx]'\n"
    assert list(tmp_path.iterdir()) == []


def test_onnx_encoder_refuses_thread_counts_below_one(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnx_encoder, "missing_packages", lambda: [])
    assert onnx_encoder.main(["--threads", "0,2", "--out", str(tmp_path)]) == 2
    assert "--threads must be positive integers" in capsys.readouterr().err


def test_retrieval_speed_refuses_a_method_it_does_not_time(tmp_path: Path, capsys) -> None:
    assert retrieval_speed_main(["--methods", "memcore", "--out", str(tmp_path)]) == 2
    assert "not a retrieval-only method" in capsys.readouterr().err

"""Every concurrency knob is capped at what can help, with one line saying the value used (the refusals of values
below their range are cases of ``tests/test_config_errors.py``): the run's ``concurrency`` at the slice's
conversations and QA items and, for backbone requests, at the backbone's limit; ``backbone.max_concurrency`` at
what its kind's server answers at once; ``build_processes`` at the machine's cores and the slice's conversations.
A capped run's results equal an uncapped one's."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from omegaconf import DictConfig

import memcore.commands.run as cli
from memcore.config import BackboneConfig, validate
from memcore.datasets.registry import get_dataset
from memcore.llm.factory import backbone_limit
from memcore.methods import get_method, run_uses_llm
from memcore.pipeline.concurrency import Concurrency, plan_concurrency
from memcore.pipeline.load import LoadedSlice
from tests.support import story_conversation

LLAMA = "the llama.cpp server a run starts answers one request at a time"

Compose = Callable[[Sequence[str]], DictConfig]


def _slice(n_convs: int) -> LoadedSlice:
    """``n_convs`` conversations of three QA items each."""
    convs = [story_conversation(f"conv-{i}") for i in range(n_convs)]
    return LoadedSlice(convs, "sha", get_dataset("locomo").categories)


def _plan(compose: Compose, overrides: Sequence[str], n_convs: int = 1, cpus: int = 2, **kw: bool) -> Concurrency:
    cfg = validate(compose(list(overrides)))  # the runner plans a validated config
    spec = get_method(str(cfg.method.name))
    return plan_concurrency(cfg, spec, _slice(n_convs), calls_llm=run_uses_llm(cfg), cpus=cpus, **kw)


RETRIEVAL = ["method=rag_bm25", "eval.answer=false"]
ANSWERING = ["method=rag_bm25", "backbone=scripted"]
ONE_AT_A_TIME = (
    "one conversation and one QA item at a time (the run calls no LLM: its work holds the GIL, and threads would "
    "only contend for it)"
)


def test_concurrency_above_the_slices_work_is_capped_with_one_line(compose: Compose) -> None:
    plan = _plan(compose, [*ANSWERING, "concurrency=100000"], n_convs=2)
    assert (plan.threads, plan.requests) == (3, 3)
    assert plan.lines == (
        "concurrency=100000 capped at 3 (the slice has 2 conversations and at most 3 QA items in one)",
    )


def test_concurrency_the_slice_can_use_is_kept_without_a_word(compose: Compose) -> None:
    plan = _plan(compose, [*ANSWERING, "concurrency=4"], n_convs=4)
    assert (plan.threads, plan.requests, plan.lines) == (4, 4, ())


def test_a_run_that_calls_no_llm_takes_one_conversation_and_item_at_a_time_and_says_so(compose: Compose) -> None:
    plan = _plan(compose, [*RETRIEVAL, "concurrency=100000"], n_convs=2)
    assert (plan.threads, plan.requests) == (1, 1)
    assert plan.lines == (f"concurrency=100000: {ONE_AT_A_TIME}",)
    cheap = _plan(compose, ["method=memcore-cheap", "eval.answer=false", "concurrency=4"], n_convs=10, cpus=2)
    # the builds and the retrieval still run side by side, in the worker processes
    assert (cheap.threads, cheap.build_processes, cheap.retrieval_in_workers) == (1, 2, True)
    assert cheap.lines == (
        "concurrency=4: each conversation built or loaded, and its QA items retrieved, in one of 2 worker processes; "
        "this process scores and writes them (the run calls no LLM: its work holds the GIL, and threads would only "
        "contend for it)",
    )
    assert not plan.retrieval_in_workers  # rag_bm25's builds are not CPU-bound: it has no worker processes
    assert _plan(compose, [*RETRIEVAL, "concurrency=1"], n_convs=2).lines == ()
    answering = _plan(compose, ["method=memcore-cheap", "backbone=scripted", "concurrency=4"], n_convs=10, cpus=2)
    assert (answering.build_processes, answering.retrieval_in_workers) == (2, False)  # it answers in the threads


def test_backbone_requests_in_flight_are_bound_by_the_backbones_limit(compose: Compose) -> None:
    plan = _plan(compose, ["method=rag_bm25", "backbone=local", "concurrency=4"], n_convs=4)
    assert (plan.threads, plan.requests) == (4, 1)  # four conversations at once, one request to llama.cpp
    assert plan.lines == (f"concurrency=4: at most 1 backbone request in flight ({LLAMA})",)
    remote = _plan(compose, ["method=rag_bm25", "backbone=gpt-4o-mini", "concurrency=100"], n_convs=40)
    assert (remote.threads, remote.requests) == (40, 16)
    assert remote.lines == (
        "concurrency=100 capped at 40 (the slice has 40 conversations and at most 3 QA items in one); at most 16 "
        "backbone requests in flight (backbone gpt-4o-mini's max_concurrency)",
    )


def test_a_backbone_kind_that_serves_one_request_caps_max_concurrency(compose: Compose) -> None:
    plan = _plan(compose, ["method=rag_bm25", "backbone=local", "backbone.max_concurrency=8", "concurrency=1"])
    assert plan.requests == 1
    assert plan.lines == (f"backbone.max_concurrency=8 capped at 1: {LLAMA}",)
    assert backbone_limit(BackboneConfig(kind="llamacpp", max_concurrency=8)) == (1, LLAMA)
    assert backbone_limit(BackboneConfig(name="v", kind="openai_compatible", max_concurrency=64)) == (
        64,
        "backbone v's max_concurrency",
    )


def test_a_run_that_calls_no_llm_or_an_injected_backbone_has_no_backbone_bound(compose: Compose) -> None:
    retrieval = _plan(compose, [*RETRIEVAL, "backbone=local", "concurrency=4"], n_convs=4)
    assert (retrieval.requests, retrieval.lines) == (1, (f"concurrency=4: {ONE_AT_A_TIME}",))
    injected = _plan(compose, ["method=rag_bm25", "backbone=local", "concurrency=4"], n_convs=4, backbone_injected=True)
    assert (injected.requests, injected.lines) == (4, ())


def test_a_method_that_answers_one_item_at_a_time_is_capped_at_its_conversations(compose: Compose) -> None:
    plan = _plan(compose, ["method=fluxmem", "backbone=scripted", "concurrency=50"], n_convs=2)
    assert plan.threads == 2
    assert (
        plan.lines[0]
        == "concurrency=50 capped at 2 (the slice has 2 conversations and QA items answered one at a time)"
    )


def test_the_judges_own_llama_cpp_backbone_is_capped_too(compose: Compose) -> None:
    over = ["method=rag_bm25", "backbone=scripted", "eval.judge=true", "eval.judge_backbone=local"]
    plan = _plan(compose, [*over, "+eval.judge_server.max_concurrency=4", "concurrency=2"], n_convs=2)
    assert plan.lines == (f"eval.judge_server.max_concurrency=4 capped at 1 for the judge: {LLAMA}",)
    assert _plan(compose, [*over, "concurrency=2"], n_convs=2).lines == ()  # the preset's own 1


CHEAP = ["method=memcore-cheap", "eval.answer=false"]


def _build_lines(plan: Concurrency) -> tuple[str, ...]:
    return tuple(line for line in plan.lines if line.startswith("build_processes"))


def test_build_processes_are_capped_at_the_cores_and_the_conversations(compose: Compose) -> None:
    plan = _plan(compose, [*CHEAP, "build_processes=64"], n_convs=10, cpus=2)
    assert plan.build_processes == 2
    assert _build_lines(plan) == ("build_processes=64 capped at 2 (the machine's 2 CPU cores)",)
    one = _plan(compose, [*CHEAP, "build_processes=8", "concurrency=3"], n_convs=1, cpus=4)
    assert one.build_processes == 0
    assert _build_lines(one) == (
        "build_processes=8 capped at 1 (the slice's 1 conversation); the builds run in the conversation threads",
    )
    default = _plan(compose, [*CHEAP, "concurrency=4"], n_convs=10, cpus=2)
    assert (default.build_processes, _build_lines(default)) == (2, ())  # null: as many as concurrency, within the cores
    assert _plan(compose, [*CHEAP, "build_processes=0"], n_convs=10, cpus=2).build_processes == 0


def test_build_processes_a_method_cannot_use_are_said_to_be_unused(compose: Compose) -> None:
    plan = _plan(compose, [*RETRIEVAL, "build_processes=4"], n_convs=4)
    assert (plan.build_processes, _build_lines(plan)) == (
        0,
        ("build_processes=4 not used: method rag_bm25's memory builds are not CPU-bound",),
    )
    llm = _plan(compose, ["method=memcore", "backbone=scripted", "build_processes=4", "concurrency=3"], n_convs=3)
    assert llm.lines == (
        "build_processes=4 not used: method memcore's memory is built by the LLM, which a worker process cannot call",
    )


def _run(tmp_path: Path, name: str, overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    run = tmp_path / name
    argv = [
        "memcore-run", "method=rag_bm25", "dataset=locomo-tiny", "eval.answer=false", "embedder=hashing",
        "progress=false", "print_table=false", f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={run}", *overrides,
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    cli.run_main()
    return run


@pytest.mark.e2e  # two in-process runs of memcore-run on locomo-tiny (retrieval only, seconds)
def test_a_capped_run_says_so_and_scores_what_an_uncapped_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locomo_path: Path
) -> None:
    capped = _run(tmp_path, "capped", ["concurrency=100000"], monkeypatch)
    plain = _run(tmp_path, "plain", ["concurrency=1"], monkeypatch)
    said = "".join(p.read_text() for p in capped.glob("*.log"))  # the run's log (Hydra's file handler)
    assert f"concurrency=100000: {ONE_AT_A_TIME}" in said
    assert "concurrency=" not in "".join(p.read_text() for p in plain.glob("*.log"))
    a, b = (json.loads((r / "metrics.json").read_text()) for r in (capped, plain))
    for key in ("overall", "overall_no_adv", "by_category", "recall_at_k"):
        assert a[key] == b[key], key

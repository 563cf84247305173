"""The OpenAI-compatible simulator (``memcore-simulate``), driven through the harness's real client
(``OpenAITransport`` over the ``openai`` package): faults survived and counted, wrong JSON through the parse-retry
path, truncation, usage, latency, bad endpoints as one clear error, and a schema-valid reply for every method."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import types
import urllib.request
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

import memcore.llm.backbone as backbone_mod
from baselines.fluxmem import prompt_verify as FV
from baselines.fluxmem import prompts as FP
from baselines.lightmem import prompt_update as LP
from baselines.lightmem.updates import parse_update
from memcore.config import CONFIG_DIR
from memcore.llm.backbone import BackboneError, MissingKeyError, OpenAITransport, openai_chat
from memcore.llm.json_reply import complete_json
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.methods import method_specs
from memcore.runner import run_config
from memcore.testing.sim_replies import classify, kinds, reply
from memcore.testing.simulator import (
    DEFAULT_MODELS,
    SimulatorConfig,
    count_tokens,
    prompt_tokens,
    running_simulator,
)
from tests.fakes import upstream_backbone
from tests.support import compose_run

MODEL = DEFAULT_MODELS[0]
QUESTION = [
    {"role": "system", "content": "You answer questions."},
    {
        "role": "user",
        "content": "Caroline went to a support group on 7 May.\n\nQuestion: Where did Caroline go? Short answer:",
    },
]
INGEST = [
    {"role": "system", "content": INGEST_PROMPT.SYSTEM},
    {
        "role": "user",
        "content": INGEST_PROMPT.USER.format(
            session_date="8 May 2023",
            previous="(none)",
            dia_id="D1:1",
            speaker="Caroline",
            text="I went to the LGBTQ support group yesterday.",
            max_keywords=5,
        ),
    },
]
FAST = SimulatorConfig(ttft_s=0.0, time_scale=0.0)


def transport(base_url: str, **kw: Any) -> OpenAITransport:
    opts: dict[str, Any] = {"max_attempts": 6, "backoff_base_s": 0.01, "backoff_cap_s": 0.02, "timeout_s": 2.0}
    return OpenAITransport(model=MODEL, base_url=base_url, api_key="sk-sim", **{**opts, **kw})


def stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
        return json.loads(resp.read())


# ---------------------------------------------------------------- faults
@pytest.mark.parametrize("kind", ["429", "500", "503", "drop", "timeout"])
def test_each_fault_kind_is_survived_and_counted(kind: str) -> None:
    cfg = SimulatorConfig(
        ttft_s=0.0, time_scale=0.0, max_faults_per_request=2, retry_after_s=0, hang_s=3.0, **{f"rate_{kind}": 1.0}
    )
    with running_simulator(cfg) as sim:
        chat = openai_chat(
            model=MODEL,
            base_url=sim.base_url,
            api_key="sk-sim",
            max_attempts=4,
            backoff_base_s=0.01,
            backoff_cap_s=0.02,
            timeout_s=0.5,
        )
        done = chat.complete(QUESTION, stage="answer")
        seen = stats(sim.base_url)
    assert done.text == reply(QUESTION)[1]
    assert seen["faults"][kind] == 2 and sum(seen["faults"].values()) == 2
    assert seen["requests"] == 3 and seen["replies"] == 1
    answer = chat.usage.to_json()["by_stage"]["answer"]
    assert answer["errors_retried"] == 2
    assert answer["retries_by_kind"] == {kind: 2}  # the client names the fault the simulator injected
    # the time each fault cost: a timeout waits out the client's 0.5 s timeout, every retry its backoff
    assert answer["retry_wait_s"] >= (1.0 if kind == "timeout" else 0.01)


def test_retry_after_of_a_429_is_honoured(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(backbone_mod, "time", types.SimpleNamespace(perf_counter=time.perf_counter, sleep=slept.append))
    cfg = SimulatorConfig(ttft_s=0.0, time_scale=0.0, rate_429=1.0, max_faults_per_request=1, retry_after_s=7)
    with running_simulator(cfg) as sim:
        transport(sim.base_url).complete(QUESTION, stage="answer")
    assert slept == [7.0]  # backoff alone would have waited at most 0.02 s


def test_faults_are_deterministic_per_seed_and_bounded_per_request() -> None:
    def fault_log(seed: int) -> list[tuple[str, int]]:
        cfg = SimulatorConfig(
            ttft_s=0.0, time_scale=0.0, seed=seed, rate_500=0.3, rate_503=0.2, max_faults_per_request=2
        )
        with running_simulator(cfg) as sim:
            t = transport(sim.base_url, max_attempts=3)
            texts = [t.complete([{"role": "user", "content": f"say {i}"}], stage="answer").text for i in range(12)]
            seen = stats(sim.base_url)
        assert texts == [reply([{"role": "user", "content": f"say {i}"}])[1] for i in range(12)]
        return [*sorted(seen["faults"].items()), ("requests", seen["requests"])]

    first = fault_log(1)
    assert first == fault_log(1)
    assert first != fault_log(2)
    assert 0 < dict(first)["500"] + dict(first)["503"] <= 24  # at most 2 per request; 3 attempts always suffice


# ---------------------------------------------------------------- replies
def test_wrong_json_runs_the_parse_retry_then_the_counted_fallback() -> None:
    validate = lambda obj: (obj["context"], obj["keywords"])  # noqa: E731
    with running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0, wrong_json=1.0)) as sim:
        chat = openai_chat(model=MODEL, base_url=sim.base_url, api_key="sk-sim", max_attempts=2)
        res = complete_json(
            chat,
            INGEST,
            stage="ingest",
            validate=validate,
            fallback=("", []),
            fallback_kind="raw turn",
            prompt_version=INGEST_PROMPT.VERSION,
        )
        seen = stats(sim.base_url)
    assert not res.ok and res.attempts == 2 and res.value == ("", [])
    assert seen["wrong_json"] == 2
    usage = chat.usage.to_json()
    assert usage["by_stage"]["ingest"]["parse_retries"] == 1 and usage["by_stage"]["ingest"]["parse_failures"] == 1
    assert usage["parse_failures_by_kind"] == {"ingest": {"raw turn": 1}}


def test_wrong_json_at_a_rate_is_recovered_by_the_retry() -> None:
    validate = lambda obj: obj["context"]  # noqa: E731
    with running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0, wrong_json=0.3, seed=3)) as sim:
        chat = openai_chat(model=MODEL, base_url=sim.base_url, api_key="sk-sim", max_attempts=2)
        results = [
            complete_json(
                chat,
                [INGEST[0], {"role": "user", "content": INGEST[1]["content"].replace("yesterday", f"on day {i}")}],
                stage="ingest",
                validate=validate,
                fallback="",
                fallback_kind="raw turn",
                prompt_version=INGEST_PROMPT.VERSION,
                max_attempts=3,
            )
            for i in range(40)
        ]
        seen = stats(sim.base_url)
    retried = [r for r in results if r.attempts > 1]
    assert seen["wrong_json"] > 0 and retried and all(r.ok for r in retried if r.attempts < 3)
    assert chat.usage.to_json()["by_stage"]["ingest"]["parse_retries"] == seen["wrong_json"] - sum(
        1 for r in results if not r.ok
    )


def test_usage_n_and_max_tokens_truncation() -> None:
    with running_simulator(FAST) as sim:
        client = openai.OpenAI(base_url=sim.base_url, api_key="sk-sim", max_retries=0)
        full = client.chat.completions.create(
            model=MODEL, messages=INGEST, n=2, response_format={"type": "json_object"}
        )
        cut = client.chat.completions.create(model=MODEL, messages=INGEST, max_tokens=5)
    text = reply(INGEST)[1]
    assert [c.message.content for c in full.choices] == [text, text]
    assert full.choices[0].finish_reason == "stop"
    assert full.usage.prompt_tokens == prompt_tokens(INGEST)
    assert full.usage.completion_tokens == 2 * count_tokens(text)
    assert cut.choices[0].finish_reason == "length" and cut.usage.completion_tokens == 5
    assert text.startswith(cut.choices[0].message.content) and count_tokens(cut.choices[0].message.content) == 5


def test_latency_model() -> None:
    cfg = SimulatorConfig(ttft_s=0.3, tokens_per_s=50.0, time_scale=0.5)
    text = reply(QUESTION)[1]
    with running_simulator(cfg) as sim:
        t = transport(sim.base_url)
        t0 = time.perf_counter()
        t.complete(QUESTION, stage="answer")
        wall = time.perf_counter() - t0
        seen = stats(sim.base_url)
    expected = (0.3 + count_tokens(text) / 50.0) * 0.5
    assert seen["simulated_latency_s"] == pytest.approx(expected, abs=1e-3)
    assert expected <= wall < expected + 1.0


def test_models_are_the_presets_models() -> None:
    presets = [yaml.safe_load(p.read_text()) for p in sorted((CONFIG_DIR / "backbone").glob("*.yaml"))]
    remote = {p["model"] for p in presets if p.get("kind") == "openai_compatible" and "base_url" in p}
    assert remote <= set(DEFAULT_MODELS), "a backbone preset names a model the simulator does not serve"
    with running_simulator(FAST) as sim:
        listed = [m.id for m in openai.OpenAI(base_url=sim.base_url, api_key="x").models.list()]
    assert listed == list(DEFAULT_MODELS)


# ---------------------------------------------------------------- bad endpoints: one clear line
def one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert "\n" not in msg and "Traceback" not in msg
    return msg


def test_wrong_key_is_one_clear_error() -> None:
    with running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0, api_key="sk-right")) as sim:
        t = transport(sim.base_url)
        with pytest.raises(BackboneError) as reach:
            t.check_reachable()
        with pytest.raises(MissingKeyError) as call:
            t.complete(QUESTION, stage="answer")
        assert stats(sim.base_url)["unauthorized"] == 2
    assert "rejected the API key" in one_line(reach.value)
    assert "rejected the API key" in one_line(call.value)


def test_unknown_model_is_one_clear_error_naming_the_knob() -> None:
    with running_simulator(FAST) as sim:
        t = OpenAITransport(model="gpt-5-nano", base_url=sim.base_url, api_key="x", max_attempts=3)
        with pytest.raises(BackboneError) as info:
            t.complete(QUESTION, stage="answer")
        assert stats(sim.base_url)["requests"] == 0  # refused before any fault draw, never retried
    msg = one_line(info.value)
    assert "HTTP 404" in msg and "gpt-5-nano" in msg and "backbone.model" in msg


@pytest.mark.parametrize(("mode", "said"), [("html", "text/html"), ("empty", "empty body"), ("malformed", "chatcmpl")])
def test_a_reply_that_is_not_a_completion_says_what_the_server_sent(mode: str, said: str) -> None:
    with (
        running_simulator(SimulatorConfig(ttft_s=0.0, time_scale=0.0, body_mode=mode)) as sim,
        pytest.raises(BackboneError) as info,
    ):
        transport(sim.base_url, max_attempts=2).complete(QUESTION, stage="answer")
    msg = one_line(info.value)
    assert said in msg and "backbone.base_url" in msg and "failed 2 times" in msg


def test_cli_rejects_a_bad_rate_and_serves_until_terminated(tmp_path: Path) -> None:
    bad = subprocess.run(
        [sys.executable, "-m", "memcore.commands.simulate", "--rate-429", "1.5"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--rate-429" in bad.stderr
    port_file, stats_file = tmp_path / "port", tmp_path / "stats.json"
    cmd = [sys.executable, "-m", "memcore.commands.simulate", "--time-scale", "0", "--port-file", str(port_file)]
    proc = subprocess.Popen([*cmd, "--stats-out", str(stats_file)], stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not port_file.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        base_url = f"http://127.0.0.1:{port_file.read_text()}/v1"
        transport(base_url).complete(QUESTION, stage="answer")
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "serving" in out
    assert json.loads(stats_file.read_text())["replies"] == 1


# ---------------------------------------------------------------- every method's prompts
def test_every_prompt_kind_has_a_marker() -> None:
    assert classify([{"role": "user", "content": "hello"}]) == "unknown"
    assert len(set(kinds())) == len(kinds())
    declared = {k for spec in method_specs() for k in spec.sim_run_kinds}
    assert declared <= set(kinds()), declared - set(kinds())  # a spec names only kinds some responder returns


def run_against_simulator(tmp_path: Path, overrides: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One run over locomo-quick against a fault-free simulator; (simulator stats, the run's usage)."""
    with running_simulator(FAST) as sim:
        cfg = compose_run(
            tmp_path,
            [
                "dataset=locomo-quick",
                "embedder=hashing",
                *upstream_backbone(sim.base_url, timeout_s=30),
                "eval.judge=true",
                "eval.judge_runs=1",
                "concurrency=2",
                "build_processes=0",
                *overrides,
            ],
        )
        run_config(cfg, tmp_path / "run")
        seen = stats(sim.base_url)
    usage = json.loads((tmp_path / "run" / "cost.json").read_text())["usage"]
    return seen, usage


def assert_all_parsed(seen: dict[str, Any], usage: dict[str, Any], *kinds: str) -> None:
    assert "unknown" not in seen["prompt_kinds"], seen["prompt_kinds"]
    assert set(kinds) <= set(seen["prompt_kinds"]), seen["prompt_kinds"]
    assert usage["total"]["parse_failures"] == 0, usage["parse_failures_by_kind"]
    assert all(s["parse_retries"] == 0 for s in usage["by_stage"].values())


@pytest.mark.usefixtures("locomo_path")
def test_memcore_prompts_parse_with_both_judges(tmp_path: Path) -> None:
    seen, usage = run_against_simulator(tmp_path / "a", ["method=memcore", "eval.judge_preset=mem0-judge"])
    assert_all_parsed(seen, usage, "memcore_ingest", "memcore_gate", "memcore_ier", "answer_amem", "judge_mem0")
    seen, usage = run_against_simulator(
        tmp_path / "b",
        [
            "method=memcore",
            "protocol=locomo",
            "eval.judge_preset=judge-v1",
            "++method.gate_form=binary",
            "++method.ier_prompt=answer_first",
        ],
    )
    assert_all_parsed(seen, usage, "memcore_gate_binary", "memcore_ier_answer_first", "answer_locomo", "judge")


#: Every method whose spec names the prompt kinds a short run of it sends (``MethodSpec.sim_run_kinds``).
METHODS = {spec.name: spec.sim_run_kinds for spec in method_specs() if spec.sim_run_kinds}


@pytest.mark.e2e  # a real run per method: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_runs_on_the_simulator_without_a_parse_failure(tmp_path: Path, method: str) -> None:
    seen, usage = run_against_simulator(tmp_path, [f"method={method}", "eval.judge_preset=mem0-judge"])
    assert_all_parsed(seen, usage, *METHODS[method], "judge_mem0")


def test_replies_for_prompts_a_short_run_never_reaches() -> None:
    for n in range(8):  # the simulator updates about one target in four, ignores the rest: both shapes parse
        light = [
            {"role": "system", "content": LP.UPDATE_PROMPT},
            {
                "role": "user",
                "content": LP.USER_TEMPLATE.format(target=f"Tim plays chess {n}", candidates="- Tim plays go"),
            },
        ]
        assert classify(light) == "lightmem_update"
        parse_update(json.loads(reply(light)[1]))
    graded = [
        {"role": "system", "content": FV.VERIFY_SYSTEM},
        {"role": "user", "content": FV.VERIFY_USER.format(claim="Where is Rex?", evidence="Alice: Rex is at home.")},
    ]
    kind, text = reply(graded)
    assert kind == "fluxmem_verify_graded" and 0.0 < float(text) <= 1.0  # upstream parses the first number
    for system, user, keys in [
        (FP.RESHAPE_SYSTEM, FP.RESHAPE_USER.format(question="q", fact="f", date="d", source="s"), {"mode", "text"}),
        (FP.SKILL_EXTRACT_SYSTEM, FP.SKILL_EXTRACT_USER.format(episodes="e", max_words=50), {"skill"}),
        (FP.SKILL_RERUN_SYSTEM, FP.SKILL_RERUN_USER.format(skill="s", facts="f", question="q"), {"answer", "success"}),
    ]:
        kind, text = reply([{"role": "system", "content": system}, {"role": "user", "content": user}])
        assert kind.startswith("fluxmem_") and keys <= set(json.loads(text))
    retry = [
        *INGEST,
        {"role": "user", "content": "Reply with one valid JSON object only, exactly in the requested format."},
    ]
    assert reply(retry) == reply(INGEST)  # a format retry answers the original request
    assert re.fullmatch(r"\{.*\}", reply(INGEST)[1])

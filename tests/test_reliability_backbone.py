"""The chat client under injected faults: a fake OpenAI-compatible upstream behind ``FaultProxy``.

Every fault is a real HTTP-level event on 127.0.0.1 (dropped or reset connections, timeouts, 429/5xx,
cut or malformed bodies), seen by the real ``openai`` client inside ``OpenAITransport`` (under the usual stack, ``openai_chat``).
"""

from __future__ import annotations

import logging
import threading
import time
import types
from collections.abc import Iterator

import pytest

from memcore.llm import backbone as backbone_mod
from memcore.llm.backbone import BackboneError, openai_chat
from memcore.llm.cache import ResponseCache
from memcore.llm.json_reply import complete_json
from memcore.llm.scripted import ScriptedBackbone
from memcore.llm.stack import Metered
from tests.fault_proxy import GARBAGE, FakeUpstream, FaultProxy, unused_port

QUESTION = [{"role": "user", "content": "Question: What is the dog called? Short answer: reply in JSON"}]
EXPECTED = '{"answer": "dog called"}'


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(lambda messages: EXPECTED, lifetime_s=120) as up:  # the same reply to every prompt
        yield up


def client(base_url: str, **kw: float) -> Metered:
    opts = {"max_attempts": 4, "backoff_base_s": 0.01, "backoff_cap_s": 0.02, "timeout_s": 1.0, **kw}
    return openai_chat(model="fake-model", base_url=base_url, api_key="sk-no-key-required", **opts)  # type: ignore[arg-type]


# (fault, does the faulty request reach the upstream's responder)
TRANSPORT_FAULTS = [
    ("drop", False),
    ("reset", False),
    ("delay:2", True),  # 2 s > timeout 1 s: the client gives up, the proxy still forwards later
    ("status:429", False),
    ("status:500", False),
    ("status:503", False),
    ("truncate", True),
    ("cut", True),
    ("html", False),
    ("empty_choices", False),
    ("null_content", True),
]


#: The kind the client counts each proxy fault under (``UsageTracker.record_transport_retry``).
FAULT_KIND = {
    "drop": "drop",
    "reset": "drop",
    "delay:2": "timeout",
    "status:429": "429",
    "status:500": "500",
    "status:503": "503",
    "truncate": "malformed",
    "cut": "drop",  # the connection closes mid-body: httpx reports a broken connection
    "html": "malformed",
    "empty_choices": "malformed",
    "null_content": "malformed",
}


@pytest.mark.parametrize(("fault", "reaches_upstream"), TRANSPORT_FAULTS, ids=[f for f, _ in TRANSPORT_FAULTS])
def test_transport_fault_is_retried_then_succeeds(
    upstream: FakeUpstream, fault: str, reaches_upstream: bool, caplog: pytest.LogCaptureFixture
) -> None:
    with FaultProxy(upstream.base_url, [fault, fault], lifetime_s=60) as proxy:
        c = client(proxy.base_url)
        with caplog.at_level(logging.WARNING, logger="memcore.llm.backbone"):
            done = c.complete(QUESTION, stage="answer")
        assert done.text == EXPECTED
        assert proxy.log == [(0, fault), (1, fault), (2, "pass")]
    stage = c.usage.to_json()["by_stage"]["answer"]
    assert stage["errors_retried"] == 2
    assert stage["retries_by_kind"] == {FAULT_KIND[fault]: 2}
    assert stage["calls"] == 1 and stage["llm_calls"] == 1  # one logical call, however many attempts
    if not fault.startswith("delay"):  # a delayed request may still be in the proxy when we look
        assert upstream.chat_requests == (3 if reaches_upstream else 1)
    lines = [r.getMessage() for r in caplog.records]
    # the first retry is logged as it happens; the second, within the minute, waits for the next summary
    assert len(lines) == 2 and all(proxy.base_url in m for m in lines)
    assert "retry 1/" in lines[0] and "summarised once a minute" in lines[1]


def test_backoff_is_exponential_and_capped(upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    fake_time = types.SimpleNamespace(perf_counter=time.perf_counter, sleep=slept.append)
    monkeypatch.setattr(backbone_mod, "time", fake_time)  # only the backbone's clock: servers keep real time
    monkeypatch.setattr(backbone_mod.random, "random", lambda: 1.0)  # no jitter: delay = min(cap, base * 2^(k-1))
    with FaultProxy(upstream.base_url, ["status:500"] * 6, lifetime_s=60) as proxy:
        c = client(proxy.base_url, max_attempts=8, backoff_base_s=1.0, backoff_cap_s=5.0)
        assert c.complete(QUESTION, stage="ingest").text == EXPECTED
    assert slept == [1.0, 2.0, 4.0, 5.0, 5.0, 5.0]
    assert c.usage.to_json()["by_stage"]["ingest"]["errors_retried"] == 6


def test_jitter_stays_within_half_to_full_delay(upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(backbone_mod, "time", types.SimpleNamespace(perf_counter=time.perf_counter, sleep=slept.append))
    with FaultProxy(upstream.base_url, ["status:429"] * 5, lifetime_s=60) as proxy:
        client(proxy.base_url, max_attempts=6, backoff_base_s=2.0, backoff_cap_s=8.0).complete(QUESTION, stage="answer")
    nominal = [2.0, 4.0, 8.0, 8.0, 8.0]
    assert len(slept) == 5 and all(n / 2 <= s <= n for s, n in zip(slept, nominal, strict=True))


def test_exhausted_retries_name_the_server_and_say_rerun(upstream: FakeUpstream) -> None:
    with FaultProxy(upstream.base_url, default="status:503", lifetime_s=60) as proxy:
        c = client(proxy.base_url, max_attempts=3)
        with pytest.raises(BackboneError) as info:
            c.complete(QUESTION, stage="answer")
        msg = str(info.value)
        assert len(proxy.log) == 3
    assert proxy.base_url in msg
    assert "failed 3 times in a row" in msg and "503" in msg
    assert "Rerun the same command to resume" in msg
    assert "\n" not in msg
    assert c.usage.to_json()["by_stage"]["answer"]["errors_retried"] == 2
    assert upstream.chat_requests == 0


def test_client_error_is_not_retried(upstream: FakeUpstream) -> None:
    with FaultProxy(upstream.base_url, ["status:400"], lifetime_s=60) as proxy:
        c = client(proxy.base_url)
        with pytest.raises(BackboneError, match=r"refused the request .* HTTP 400"):
            c.complete(QUESTION, stage="answer")
        assert len(proxy.log) == 1
    assert c.usage.to_json()["by_stage"] == {}


def test_unreachable_server_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    c = client(url)
    with pytest.raises(BackboneError) as info:
        c.check_reachable(timeout_s=2)
    msg = str(info.value)
    assert msg.startswith(f"cannot reach the chat backbone at {url}")
    assert "backbone.base_url" in msg and "\n" not in msg


def test_server_down_then_back_is_retried(upstream: FakeUpstream) -> None:
    """The upstream dies (connections reset, port closed) and comes back on the same port."""
    c = client(upstream.base_url, max_attempts=40, backoff_cap_s=0.05)
    assert c.complete(QUESTION, stage="answer").text == EXPECTED
    port = upstream.port
    upstream.kill()
    threading.Timer(0.5, upstream.start).start()
    t0 = time.monotonic()
    assert c.complete([*QUESTION, {"role": "user", "content": "again"}], stage="answer").text
    assert time.monotonic() - t0 >= 0.4
    assert upstream.port == port
    assert c.usage.to_json()["by_stage"]["answer"]["errors_retried"] >= 1


# ---------------------------------------------------------------- complete_json over the wire
def _validate(obj: object) -> str:
    if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str):
        raise ValueError("no answer")
    return obj["answer"]


@pytest.mark.parametrize("fault", ["garbage_content", "cut_content"])
def test_complete_json_retries_a_bad_reply_then_succeeds(upstream: FakeUpstream, fault: str) -> None:
    with FaultProxy(upstream.base_url, [fault], lifetime_s=60) as proxy:
        c = client(proxy.base_url)
        res = complete_json(
            c, QUESTION, stage="retrieve", validate=_validate, fallback="", fallback_kind="x", prompt_version="t1"
        )
    assert res.ok and res.attempts == 2 and res.value == "dog called"
    stage = c.usage.to_json()["by_stage"]["retrieve"]
    assert stage["parse_retries"] == 1 and stage["parse_failures"] == 0 and stage["errors_retried"] == 0
    assert c.usage.parse_failures() == {}


def test_complete_json_counted_fallback_after_retries(upstream: FakeUpstream, caplog) -> None:
    with FaultProxy(upstream.base_url, ["garbage_content", "cut_content"], lifetime_s=60) as proxy:
        c = client(proxy.base_url)
        res = complete_json(
            c,
            QUESTION,
            stage="ingest",
            validate=_validate,
            fallback="FALLBACK",
            fallback_kind="note_raw_text",
            prompt_version="t2",
        )
    assert not res.ok and res.value == "FALLBACK" and res.attempts == 2
    assert res.raw == '{"answer": "'  # the cut reply of the second attempt
    usage = c.usage.to_json()
    assert usage["parse_failures_by_kind"] == {"ingest": {"note_raw_text": 1}}
    assert usage["by_stage"]["ingest"]["parse_retries"] == 1
    assert usage["total"]["parse_failures"] == 1
    assert "fallback note_raw_text" in caplog.text


def test_garbage_reply_is_not_served_again_from_cache(upstream: FakeUpstream, tmp_path) -> None:
    """The bad first reply is cached under the first prompt version; the retry asks afresh."""
    cache = ResponseCache(tmp_path / "llm.sqlite")
    with FaultProxy(upstream.base_url, ["garbage_content"], lifetime_s=60) as proxy:
        c = openai_chat(
            model="fake-model", base_url=proxy.base_url, api_key="k", backoff_base_s=0.01, timeout_s=2, cache=cache
        )
        first = complete_json(
            c, QUESTION, stage="answer", validate=_validate, fallback="", fallback_kind="x", prompt_version="v"
        )
        again = complete_json(
            c, QUESTION, stage="answer", validate=_validate, fallback="", fallback_kind="x", prompt_version="v"
        )
    assert first.ok and first.attempts == 2
    assert again.ok and again.attempts == 2 and again.value == "dog called"  # cached garbage, then cached retry
    assert len(proxy.log) == 2  # the rerun is served entirely from the cache
    assert c.usage.to_json()["by_stage"]["answer"]["cached_calls"] == 2
    assert GARBAGE not in again.raw


def test_a_reply_cut_at_max_tokens_is_retried_unless_the_caller_asks_not_to() -> None:
    cut = '{"answer": "' + "word " * 100  # ~128 scripted tokens, over max_tokens = 64
    for retry_truncated, attempts in ((True, 2), (False, 1)):
        b = ScriptedBackbone(lambda messages: cut)
        res = complete_json(
            b,
            QUESTION,
            stage="answer",
            validate=_validate,
            fallback="F",
            fallback_kind="k",
            prompt_version="v",
            max_tokens=64,
            retry_truncated=retry_truncated,
        )
        assert (res.ok, res.truncated, res.attempts, res.value, res.raw) == (False, True, attempts, "F", cut)
        assert len(b.calls) == attempts
        assert b.usage.parse_failures() == {"answer": {"k": 1}}

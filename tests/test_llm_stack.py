"""The backbone stack layer by layer: cache layer (hits, misses, the pinned key), the Metered layer, usage scopes
and the scoped view, and backbone presets composed by Hydra."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memcore.config import CONFIG_DIR, BackboneConfig, ConfigError, backbone_presets, load_backbone_preset
from memcore.interfaces import Completion, Message
from memcore.llm.cache import CachedBackbone, ResponseCache, response_key
from memcore.llm.factory import DeferredTransport, extra_body_of
from memcore.llm.json_reply import complete_json
from memcore.llm.limiter import RequestLimiter
from memcore.llm.scoped import ScopedBackbone
from memcore.llm.scripted import ScriptedBackbone
from memcore.llm.stack import Metered, build_stack
from memcore.llm.usage import ContextUsage, UsageTracker, active_scopes, usage_of, usage_scope
from memcore.stopflag import StopRequested

MSGS: list[Message] = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Où est Lisbon?"}]
EXTRA = {"chat_template_kwargs": {"enable_thinking": False}}


class FakeTransport:
    """A transport that counts its calls; replies ``reply-<n>`` with fixed token counts."""

    def __init__(self, *, json_mode: bool = True, extra_body: dict[str, Any] | None = None) -> None:
        self.model = "m-1"
        self.name = "fake"
        self.json_mode = json_mode
        self.extra_body = dict(EXTRA if extra_body is None else extra_body)
        self.requests: list[dict[str, Any]] = []

    def connection_kwargs(self) -> dict[str, str]:
        return {"base_url": "http://127.0.0.1:9/v1", "model": self.model, "api_key": "k"}

    def complete(self, messages: Sequence[Message], *, stage: str, **kw: Any) -> Completion:
        self.requests.append({"stage": stage, **kw})
        return Completion(f"reply-{len(self.requests)}", 11, 3, 0.25, False, self.model)


def _keys(cache: ResponseCache) -> list[str]:
    return sorted(r[0] for r in cache.kv.conn.execute("SELECT k FROM responses"))


# Keys the pre-stack client (OpenAIChat.complete with the cache inside) wrote for these requests: a changed key
# would make every existing response cache miss.
PINNED = {
    "greedy": "6ae4f69bdea91592d5ccb1f2bf351dc80ac2101e3046dd856e3e0938775fbba8",
    "seeded_json": "2540eafb2a56dd470f635985c3fad66f6d2bd47d2f3f84729c098372a5e7a638",
    "seeded_json_top_p": "b661eb27f93a1f3bb99048b5b32344e1e872da177e1e14cd1ad618f8a299c891",
    "json_mode_off": "6f2c29be2feaba0f81f51f455f88593c458607d557c7b2737e65d9254ecccf81",
}


def test_response_key_is_byte_identical_to_the_pre_stack_client() -> None:
    common = {"model": "m-1", "extra_body": EXTRA}
    sampled = {"temperature": 0.7, "max_tokens": 64, "json": True, "seed": 11, "prompt_version": "v1@abc"}
    greedy = {"temperature": 0.0, "max_tokens": 256, "json": False, "seed": None, "prompt_version": ""}
    assert response_key(MSGS, **common, **greedy) == PINNED["greedy"]
    assert response_key(MSGS, **common, **sampled) == PINNED["seeded_json"]
    assert response_key(MSGS, **common, **sampled, top_p=0.9) == PINNED["seeded_json_top_p"]
    off = {**greedy, "json": False}  # JSON asked for, but the transport's json_mode is off: not sent, not keyed
    assert response_key(MSGS, model="m-1", extra_body={}, **off) == PINNED["json_mode_off"]


def test_cache_layer_writes_the_pinned_keys(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    CachedBackbone(FakeTransport(), cache).complete(MSGS, stage="answer")
    CachedBackbone(FakeTransport(), cache).complete(
        MSGS, stage="answer", temperature=0.7, seed=11, json=True, prompt_version="v1@abc", max_tokens=64
    )
    CachedBackbone(FakeTransport(), cache).complete(
        MSGS, stage="answer", temperature=0.7, seed=11, json=True, prompt_version="v1@abc", max_tokens=64, top_p=0.9
    )
    CachedBackbone(FakeTransport(json_mode=False, extra_body={}), cache).complete(MSGS, stage="judge", json=True)
    assert _keys(cache) == sorted(PINNED.values())


def test_cache_layer_miss_then_hit(tmp_path: Path) -> None:
    transport = FakeTransport()
    cached = CachedBackbone(transport, ResponseCache(tmp_path / "llm.sqlite"))
    first = cached.complete(MSGS, stage="answer", prompt_version="v")
    again = cached.complete(MSGS, stage="answer", prompt_version="v")
    assert len(transport.requests) == 1
    assert (first.text, first.cached, first.latency_s) == ("reply-1", False, 0.25)
    assert (again.text, again.cached, again.latency_s, again.model) == ("reply-1", True, 0.0, "m-1")
    assert (again.prompt_tokens, again.completion_tokens) == (11, 3)
    other = cached.complete(MSGS, stage="answer", prompt_version="v#retry-2")  # another version: its own entry
    assert (other.text, other.cached, len(transport.requests)) == ("reply-2", False, 2)


def test_cache_layer_passes_sampled_calls_without_a_seed_through(tmp_path: Path) -> None:
    transport = FakeTransport()
    cache = ResponseCache(tmp_path / "llm.sqlite")
    cached = CachedBackbone(transport, cache)
    replies = [cached.complete(MSGS, stage="answer", temperature=0.7).text for _ in range(2)]
    assert replies == ["reply-1", "reply-2"] and _keys(cache) == []
    assert transport.requests[0] == {
        "stage": "answer",
        "temperature": 0.7,
        "max_tokens": 256,
        "json": False,
        "seed": None,
        "prompt_version": "",
        "top_p": None,
    }
    assert cached.connection_kwargs()["model"] == "m-1"  # the transport's extras pass through


def test_metered_layer_records_per_stage_and_flags_cache_hits(tmp_path: Path) -> None:
    tracker = UsageTracker()
    stack = build_stack(FakeTransport(), tracker=tracker, cache=ResponseCache(tmp_path / "llm.sqlite"))
    for stage in ("ingest", "ingest", "answer"):
        stack.complete(MSGS, stage=stage)
    by_stage = tracker.to_json()["by_stage"]
    assert (by_stage["ingest"]["calls"], by_stage["ingest"]["cached_calls"], by_stage["ingest"]["llm_calls"]) == (
        2,
        1,
        1,
    )
    assert by_stage["ingest"]["prompt_tokens"] == 22 and by_stage["ingest"]["latency_s_total"] == 0.25
    assert (by_stage["answer"]["calls"], by_stage["answer"]["cached_calls"]) == (1, 1)
    assert stack.usage.to_json() == tracker.to_json()  # reads are the tracker's
    assert isinstance(build_stack(FakeTransport(), tracker=tracker), Metered)  # no cache: transport → Metered


def test_usage_scope_adds_a_sink_in_this_context_only() -> None:
    tracker, scope, inner = UsageTracker(), UsageTracker(), UsageTracker()
    usage = ContextUsage(tracker)
    kw = {"prompt_tokens": 5, "completion_tokens": 1, "latency_s": 0.1, "cached": False}
    usage.record("answer", **kw)
    seen_in_thread: list[tuple[object, ...]] = []
    with usage_scope(scope):
        usage.record("ingest", **kw)
        usage.record_parse_failure("ingest", "k")
        with usage_scope(scope):  # re-entering an active scope: still counted once
            usage.record_parse_retry("ingest")
        with usage_scope(inner):
            usage.record("ingest", **kw)
        worker = threading.Thread(target=lambda: seen_in_thread.append(active_scopes()))
        worker.start()
        worker.join()
    assert active_scopes() == () and seen_in_thread == [()]  # scopes do not follow work into other threads
    assert tracker.to_json()["total"]["calls"] == 3
    s = scope.to_json()
    assert s["by_stage"]["ingest"]["calls"] == 2 and "answer" not in s["by_stage"]
    assert s["by_stage"]["ingest"]["parse_retries"] == 1 and scope.parse_failures() == {"ingest": {"k": 1}}
    assert inner.to_json()["total"]["calls"] == 1


def test_scoped_view_attributes_its_calls_and_parse_failures_to_the_scope() -> None:
    run, conv = UsageTracker(), UsageTracker()
    stack = RequestLimiter(ScriptedBackbone(lambda messages: "not json", usage=run), 2)
    view = ScopedBackbone(stack, conv)
    res = complete_json(
        view, MSGS, stage="ingest", validate=dict, fallback={}, fallback_kind="raw", prompt_version="v", max_attempts=2
    )
    assert not res.ok
    stack.complete(MSGS, stage="answer")  # not through the view: the run's only
    worker = threading.Thread(target=lambda: view.complete(MSGS, stage="ingest"))  # the view binds its scope
    worker.start()
    worker.join()
    for tracker, calls in ((conv, 3), (run, 4)):
        usage = tracker.to_json()
        assert usage["total"]["calls"] == calls
        assert usage["by_stage"]["ingest"]["calls"] == 3 and usage["by_stage"]["ingest"]["parse_retries"] == 1
        assert tracker.parse_failures() == {"ingest": {"raw": 1}}
    assert "answer" not in conv.to_json()["by_stage"]
    assert usage_of(view) is view.usage and (view.model, view.name) == ("scripted", "scripted")


def test_a_direct_client_records_through_the_views_usage() -> None:
    """mem0's own OpenAI client reports its calls to ``backbone.usage`` (from mem0's threads)."""
    run, conv = UsageTracker(), UsageTracker()
    view = ScopedBackbone(ScriptedBackbone(lambda messages: "x", usage=run), conv)
    kw = {"prompt_tokens": 7, "completion_tokens": 2, "latency_s": 0.5, "cached": False}
    worker = threading.Thread(target=lambda: view.usage.record("ingest", **kw))
    worker.start()
    worker.join()
    assert run.to_json()["total"]["prompt_tokens"] == conv.to_json()["total"]["prompt_tokens"] == 7


def test_scripted_backbone_is_a_metered_scripted_transport() -> None:
    tracker = UsageTracker()
    bb = ScriptedBackbone(lambda messages: "first", usage=tracker)
    bb.complete(MSGS, stage="answer")
    bb.responder = lambda messages: "second"
    assert bb.complete(MSGS, stage="judge").text == "second"
    assert bb.calls_by_stage() == {"answer": 1, "judge": 1} and len(bb.calls) == 2
    assert tracker.to_json()["total"]["calls"] == 2 and bb.usage.to_json() == tracker.to_json()


def test_backbone_presets_compose_like_the_backbone_group() -> None:
    from hydra import compose, initialize_config_dir

    assert {"gpt-4o", "gpt-4o-mini", "local", "scripted"} <= set(backbone_presets())
    gpt4o = load_backbone_preset("gpt-4o")  # defaults: [gpt-4o-mini, _self_]
    assert (gpt4o.model, gpt4o.api_key_env, gpt4o.price_out_per_mtok) == ("gpt-4o-2024-08-06", "OPENAI_API_KEY", 10.0)
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):  # inside a Hydra app
        run = compose(config_name="run", overrides=["backbone=gpt-4o"])
        assert load_backbone_preset("gpt-4o") == gpt4o
    assert run.backbone.model == gpt4o.model
    with pytest.raises(ConfigError, match=r"no backbone preset 'gpt-5'.*known presets: .*gpt-4o-mini"):
        load_backbone_preset("gpt-5")


def test_the_judge_does_not_import_the_cli() -> None:
    code = "import sys, memcore.runner, memcore.eval.judge; print(json.dumps('memcore.commands.run' in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", f"import json; {code}"],
        cwd=CONFIG_DIR.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) is False


def test_a_stopping_run_starts_no_new_call_and_no_fallback_swallows_the_refusal() -> None:
    """Once the run is stopping the limiter refuses calls not yet started; the refusal is a BaseException, so the
    JSON helper's fallback (which handles unparseable replies) does not turn it into a fallback verdict."""
    stopping = False
    inner = ScriptedBackbone(lambda messages: '{"ok": 1}')
    stack = RequestLimiter(inner, 2, stop_requested=lambda: stopping)
    assert stack.complete(MSGS, stage="answer").text == '{"ok": 1}'
    stopping = True
    with pytest.raises(StopRequested, match="ingest call not started"):
        complete_json(stack, MSGS, stage="ingest", validate=dict, fallback={}, fallback_kind="raw", prompt_version="v")
    assert len(inner.calls) == 1


def test_a_deferred_transport_starts_on_the_first_request_the_cache_cannot_serve(tmp_path: Path) -> None:
    cfg = BackboneConfig(name="", model="m-1", thinking=False)
    assert extra_body_of(cfg) == EXTRA  # so the keys below are the ones a FakeTransport's stack writes
    cache = ResponseCache(tmp_path / "llm.sqlite")
    build_stack(FakeTransport(), tracker=UsageTracker(), cache=cache).complete(MSGS, stage="answer")

    starts: list[FakeTransport] = []

    def start() -> Any:
        starts.append(FakeTransport())
        return starts[-1]

    deferred = DeferredTransport(cfg, start)
    stack = build_stack(deferred, tracker=UsageTracker(), cache=cache)
    assert stack.complete(MSGS, stage="answer").cached and not starts and not stack.started  # a hit: nothing starts
    others = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
    threads = [threading.Thread(target=stack.complete, args=(m,), kwargs={"stage": "answer"}) for m in others]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(starts) == 1 and stack.started  # started once, under the lock, for 8 concurrent misses
    assert len(starts[0].requests) == 8
    assert stack.connection_kwargs()["model"] == "m-1"  # anything else is the started transport's

"""MemGPT baseline: function-call protocol, memory tiers, heartbeat loop, eviction with recursive
summary, question-time searches, provenance and persistence — scripted backbone, hashing embedder."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest

from baselines.memgpt import SPEC, MemGPT, MemGPTConfig, framing, parse_action
from baselines.memgpt import prompts as P
from baselines.memgpt.agent import HEARTBEAT_FAILED, INGEST_FUNCTIONS, QA_FUNCTIONS, FifoMessage, cap_evidence
from baselines.memgpt.config import config_from_dict, min_window_tokens, resolve_window
from baselines.memgpt.paging import eviction_cut
from baselines.memgpt.stores import (
    ArchivalMemory,
    CoreLine,
    CoreMemory,
    FunctionError,
    RecallMemory,
    RecallMessage,
    split_passages,
)
from baselines.memgpt.system_prompt import MEMGPT_CHAT, system_text
from memcore.interfaces import MethodContext
from memcore.itemlog import read_items
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from memcore.text import count_tokens
from memcore.types import Evidence, EvidenceNote, Turn
from tests.support import method_context, story_conversation

Msgs = Sequence[dict[str, str]]


def _turn(i: int, speaker: str, text: str) -> Turn:
    return Turn(f"D1:{i}", speaker, text, 1, datetime(2023, 5, 8, 13, 0), "1:00 pm on 8 May, 2023")


def _call(fn: str, heartbeat: bool = False, **args: object) -> str:
    return json.dumps({"thought": "t", "function": fn, "arguments": args, "request_heartbeat": heartbeat})


def _kind(messages: Msgs) -> str:
    last = messages[-1]["content"]
    if messages[0]["content"].startswith("\nYour job is to summarize"):
        return "summary"
    if "QUESTION:" in last:
        return "qa"
    return "ingest-new" if "A new message arrived" in last else "ingest-continue"


def _agent(cfg: MemGPTConfig, responder, embedder=None) -> tuple[MemGPT, ScriptedBackbone]:
    bb = ScriptedBackbone(responder)
    emb = embedder or HashingEmbedder(64)
    return MemGPT(cfg, ("Alice", "Bob"), lambda: bb, lambda: emb), bb


# ---------------------------------------------------------------------------------- protocol
def test_parse_action_variants_and_errors() -> None:
    v = parse_action(INGEST_FUNCTIONS)
    a = v(
        {
            "function": "archival_memory_insert",
            "arguments": {"content": " Rex is a beagle. "},
            "request_heartbeat": "true",
        }
    )
    assert (a.function, a.arguments, a.heartbeat) == ("archival_memory_insert", {"content": "Rex is a beagle."}, True)
    # OpenAI-style name/arguments-as-string, and a nested function object
    assert v({"name": "conversation_search", "arguments": '{"query": "Rex", "page": "2"}'}).arguments == {
        "query": "Rex",
        "page": 2,
    }
    assert (
        v({"function": {"name": "core_memory_append", "arguments": {"name": "Alice", "content": "x"}}}).function
        == "core_memory_append"
    )
    assert v({"function": "send_message", "arguments": {"message": "hi"}}).function == "done"
    assert v({"function": "conversation_search", "arguments": {"query": "Rex", "page": "bad"}}).arguments["page"] == 0
    with pytest.raises(ValueError, match="non-empty string argument 'content'"):
        v({"function": "archival_memory_insert", "arguments": {}})
    with pytest.raises(ValueError, match="not available"):
        parse_action(QA_FUNCTIONS)({"function": "archival_memory_insert", "arguments": {"content": "x"}})
    with pytest.raises(ValueError, match='needs "function"'):
        v({"thought": "hmm"})


# ---------------------------------------------------------------------------------- stores
def test_core_memory_rules() -> None:
    core = CoreMemory(40, {"persona": [], "Alice": []})
    assert core.append("alice", "Has a dog, Rex.", ("D1:1",)) == "appended to Alice (15/40 characters)"
    with pytest.raises(FunctionError, match="would hold 42 > 40"):
        core.append("Alice", "Lives in sunny Lisbon.....", ("D1:2",))  # 15 + 1 + 26 = 42
    assert core.replace("Alice", "a dog", "a beagle", ("D1:3",)) == "replaced in Alice (18/40 characters)"
    assert core.blocks["Alice"] == [CoreLine("Has a beagle, Rex.", ("D1:1", "D1:3"))]
    with pytest.raises(FunctionError, match="not found"):
        core.replace("Alice", "a cat", "x", ())
    with pytest.raises(FunctionError, match="unknown core memory block 'human'"):
        core.append("human", "x", ())
    core.replace("Alice", "Has a beagle, Rex.", "", ("D1:4",))
    assert core.blocks["Alice"] == []
    assert "<Alice>\n(empty)\n</Alice>" in core.render()


def test_recall_keyword_and_substring_search() -> None:
    msgs = [
        RecallMessage("D1:1", "Alice", "I adopted a puppy named Rex.", "t"),
        RecallMessage("D1:2", "Bob", "Puppies are great, what breed?", "t"),
        RecallMessage("D1:3", "Alice", "Rex is a beagle puppy.", "t"),
    ]
    kw, sub = RecallMemory("keyword"), RecallMemory("substring")
    for m in msgs:
        kw.add(m)
        sub.add(m)
    # query terms {rex, puppy}: D1:3 has both, D1:1 both, D1:2 "puppies"→"puppie" none → order D1:1, D1:3
    hits, total = kw.search("Rex the puppy", 0, 5)
    assert [m.dia_id for m, _ in hits] == ["D1:1", "D1:3"] and total == 2 and hits[0][1] == 2.0
    hits, total = kw.search("beagle", 0, 5)
    assert [m.dia_id for m, _ in hits] == ["D1:3"]
    hits, total = sub.search("PUPP", 0, 1)
    assert [m.dia_id for m, _ in hits] == ["D1:1"] and total == 3
    assert sub.search("PUPP", 1, 1)[0][0][0].dia_id == "D1:2"


def test_archival_search_pages_by_cosine() -> None:
    arch = ArchivalMemory()
    eye = np.eye(3, dtype=np.float32)
    for i in range(3):
        arch.insert(f"e{i}", (f"D1:{i}",), "t", eye[i])
    q = np.array([0.1, 0.9, 0.4], dtype=np.float32)
    page0, total = arch.search(q, 0, 2)
    assert [e.content for e, _ in page0] == ["e1", "e2"] and total == 3
    assert [e.content for e, _ in arch.search(q, 1, 2)[0]] == ["e0"]


# ---------------------------------------------------------------------------------- ingestion
def test_heartbeat_loop_stores_with_provenance() -> None:
    def responder(messages: Msgs) -> str:
        kind = _kind(messages)
        if kind == "ingest-new":
            return _call("core_memory_append", True, name="Alice", content="Alice has a puppy.")
        if kind == "ingest-continue":
            return _call("archival_memory_insert", True, content="Alice adopted Rex on 8 May 2023.")
        return _call("done")

    agent, bb = _agent(MemGPTConfig(max_steps_per_turn=2), responder)
    agent.ingest(_turn(1, "Alice", "I adopted a puppy named Rex."))
    # two steps, the heartbeat chain is cut at max_steps_per_turn even though it asked for more
    assert bb.calls_by_stage() == {"ingest": 2}
    assert [m.kind for m in agent.fifo] == ["turn", "action", "result", "action", "result"]
    assert agent.fifo[0].content == "[1:00 pm on 8 May, 2023] Alice: I adopted a puppy named Rex."
    assert agent.core.blocks["Alice"] == [CoreLine("Alice has a puppy.", ("D1:1",))]
    assert [(e.content, e.dia_ids, e.timestamp) for e in agent.archival.entries] == [
        ("Alice adopted Rex on 8 May 2023.", ("D1:1",), "1:00 pm on 8 May, 2023")
    ]
    # the second step saw the first function's result in its context
    second = bb.calls[1][1]
    assert any(m["content"].startswith("[function result: core_memory_append] OK") for m in second)
    assert "Alice has a puppy." in second[-1]["content"]  # core memory is in the step's state
    assert agent.stats()["calls_by_function"] == {"core_memory_append": 1, "archival_memory_insert": 1}


def test_failed_call_returns_control_and_done_ends_the_turn() -> None:
    replies = iter([_call("core_memory_replace", False, name="Bob", old_content="nothing"), _call("done")])
    agent, bb = _agent(MemGPTConfig(max_steps_per_turn=3), lambda m: next(replies))
    agent.ingest(_turn(1, "Bob", "Hi"))
    assert bb.calls_by_stage() == {"ingest": 2}  # failure → another step without a heartbeat
    assert agent.fifo[2].content.startswith("[function result: core_memory_replace] Failed: old_content not found")
    assert agent.counters["failed_calls"] == 1
    # the closing `done` is not kept in the FIFO unless keep_noop_steps
    assert [m.kind for m in agent.fifo] == ["turn", "action", "result"] and agent.counters["noop_steps"] == 1
    keeper, _ = _agent(MemGPTConfig(keep_noop_steps=True), lambda m: _call("done"))
    keeper.ingest(_turn(1, "Bob", "Hi"))
    assert [m.kind for m in keeper.fifo] == ["turn", "action"]


def test_unparseable_step_falls_back_to_done_and_is_counted() -> None:
    agent, bb = _agent(MemGPTConfig(), lambda m: "I will remember that!")
    agent.ingest(_turn(1, "Bob", "Hi"))
    assert len(bb.calls) == 2 and agent.counters["step_fallbacks"] == 1
    assert bb.usage.to_json()["parse_failures_by_kind"] == {"ingest": {"memgpt ingest step → done": 1}}


def test_eviction_summarises_recursively_and_keeps_recent_messages() -> None:
    summaries: list[str] = []

    def responder(messages: Msgs) -> str:
        if _kind(messages) == "summary":
            summaries.append(messages[1]["content"])
            return f"S{len(summaries)}"
        return _call("done")

    cfg = MemGPTConfig(context_window_tokens=3500, keep_last_messages=3)
    agent, bb = _agent(cfg, responder)
    filler = " ".join(f"word{j}" for j in range(60))
    n = 70
    for i in range(1, n + 1):
        agent.ingest(_turn(i, "Alice" if i % 2 else "Bob", f"Message number {i} is about topic {i}: {filler}."))
        assert agent.context_tokens() <= agent.window == 3500
    assert agent.counters["evictions"] == len(summaries) >= 2
    # one step per turn, one per memory-pressure warning (its own step) and one call per eviction
    assert bb.calls_by_stage() == {"ingest": n + agent.counters["alerts"] + len(summaries)}
    assert agent.summary == f"S{len(summaries)}"
    # recursive, as MemGPT's summarize_messages: the str() of the messages, the previous summary message first
    assert summaries[0].startswith("[{'role': 'user', 'content': '[1:00 pm on 8 May, 2023] Alice: Message number 1 ")
    assert summaries[1].startswith("[{'role': 'user', 'content': 'Note: prior messages (")
    assert "The following is a summary of the previous" in summaries[1] and ":\\n S1'}" in summaries[1]
    assert agent.counters["alerts"] >= 1
    kept = [m.dia_id for m in agent.fifo if m.kind == "turn"]
    hidden = set(agent.summary_dia_ids)
    assert kept and kept[-1] == f"D1:{n}" and not hidden & set(kept)
    assert hidden | set(kept) == {f"D1:{i}" for i in range(1, n + 1)}
    stats = agent.stats()
    assert stats["hidden_messages"] == agent.n_hidden > 0
    assert stats["evictions"] == stats["summary_calls"] == len(summaries)
    head = agent._head()
    assert head[1]["content"].startswith(f"Note: prior messages ({agent.n_hidden} of ")
    # at most one warning per eviction period
    assert agent.counters["alerts"] <= agent.counters["evictions"] + 1


# ---------------------------------------------------------------------------------- question time
def _built_agent() -> tuple[MemGPT, ScriptedBackbone, list[Msgs]]:
    qa_calls: list[Msgs] = []

    def responder(messages: Msgs) -> str:
        kind = _kind(messages)
        if kind == "ingest-new":
            text = next(m["content"] for m in reversed(messages) if m["content"].startswith("[1:00 pm"))
            if "beagle" in text:
                return _call("archival_memory_insert", content="Rex, Alice's dog, is a beagle.")
            if "violin" in text:
                return _call("core_memory_append", name="Bob", content="Bob plays the violin.")
            return _call("done")
        if kind == "qa":
            qa_calls.append(messages)
            if "[function result: archival_memory_search]" in messages[-2]["content"]:
                return _call("conversation_search", False, query="BEAGLE")  # MemGPT's case-insensitive substring
            return _call("archival_memory_search", True, query="Rex breed")
        return _call("done")

    agent, bb = _agent(MemGPTConfig(), responder)
    for t in story_conversation(n_sessions=2).turns:
        agent.ingest(t)
    agent.finalize()
    return agent, bb, qa_calls


def test_retrieve_uses_the_agents_searches_and_main_context() -> None:
    agent, bb, qa_calls = _built_agent()
    assert bb.calls_by_stage() == {"ingest": 6}
    ev = agent.retrieve("What breed is Rex?")
    assert len(qa_calls) == 2 and bb.calls_by_stage()["retrieve"] == 2
    assert [s["function"] for s in ev.extra["searches"]] == ["archival_memory_search", "conversation_search"]
    by_id = {n.note_id: n for n in ev.notes}
    assert by_id["core:Bob:0"].dia_ids == ("D2:1",) and by_id["core:Bob:0"].channels == ("core",)
    assert by_id["archival:arch0"].dia_ids == ("D1:3",) and by_id["archival:arch0"].channels == ("archival_search",)
    # all six turns are still in the FIFO (window not reached); the recall hit on D1:3 merges into it
    assert by_id["recall:D1:3"].channels == ("fifo", "conversation_search")
    stats = agent.stats()
    assert (stats["qa_searches"], stats["ingest_searches"], stats["qa_fallback_searches"]) == (2, 0, 0)
    assert set(ev.dia_ids) == {f"D{s}:{i}" for s in (1, 2) for i in (1, 2, 3)}
    assert "Core memory:\npersona: I am a memory agent" in ev.context and "Memory search results:\n" in ev.context
    assert "Rex, Alice's dog, is a beagle." in ev.context


def test_budget_caps_search_hits_and_fallback_search() -> None:
    agent, _, _ = _built_agent()
    agent.fifo = []  # as if everything had been evicted, so search hits are the only turn notes
    ev = agent.retrieve("What breed is Rex?", budget=1)
    assert [n.note_id for n in ev.notes if n.channels[0] != "core"] == ["archival:arch0"]

    done_first, bb = _agent(MemGPTConfig(), lambda m: _call("done"))
    done_first.ingest(_turn(1, "Alice", "Rex is a beagle."))
    ev = done_first.retrieve("Is Rex a beagle?")
    assert ev.extra["fallback_search"] is True and ev.extra["searches"] == []
    assert "recall:D1:1" in {n.note_id for n in ev.notes}
    no_fallback = MemGPT(
        MemGPTConfig(qa_fallback_search=False), ("Alice", "Bob"), lambda: bb, lambda: HashingEmbedder(64)
    )
    assert no_fallback.retrieve("Is Rex a beagle?").notes[0].note_id == "core:persona:0"


def test_save_load_roundtrip(tmp_path) -> None:
    agent, bb, _ = _built_agent()
    agent.save(tmp_path)
    other = MemGPT(MemGPTConfig(), ("Alice", "Bob"), lambda: bb, lambda: HashingEmbedder(64))
    other.load(tmp_path)
    a, b = agent.retrieve("What breed is Rex?"), other.retrieve("What breed is Rex?")
    assert [(n.note_id, n.dia_ids, n.channels) for n in a.notes] == [
        (n.note_id, n.dia_ids, n.channels) for n in b.notes
    ]
    assert a.context == b.context
    assert other.stats()["archival_entries"] == 1 and other.stats()["turns"] == 6


def test_spec_and_config_validation(tmp_path) -> None:
    assert not any(k.startswith("qa_") for k in SPEC.construction_keys)
    assert {"format_version", "context_window_tokens", "max_steps_per_turn", "recall_search"} <= set(
        SPEC.construction_keys
    )
    assert SPEC.retrieve_uses_llm({}, {}) and SPEC.ingest_uses_llm({}, {})
    assert MemGPTConfig().recall_search == "substring" and MemGPTConfig().context_window == "memgpt"
    with pytest.raises(ValueError, match="unknown config key"):
        config_from_dict({"name": "memgpt", "window": 10})
    with pytest.raises(ValueError, match="recall_search"):
        config_from_dict({"recall_search": "vector"})
    ctx = method_context(
        {"name": "memgpt", "qa_max_steps": 1},
        story_conversation(),
        tmp_path,
        backbone=lambda: ScriptedBackbone(lambda m: _call("done")),
    )
    agent = SPEC.factory(ctx)
    assert not ctx._backbone.built and agent.speakers == ("Alice", "Bob")
    assert set(agent.core.blocks) == {"persona", "Alice", "Bob"}


@pytest.mark.usefixtures("locomo_path")
def test_runner_end_to_end_with_scripted_agent(tmp_path, compose) -> None:
    def responder(messages: Msgs) -> str:
        if not messages[0]["content"].startswith("You are MemGPT"):
            return json.dumps({"answer": "a short answer"})  # the runner's answerer
        if _kind(messages) == "qa":
            question = messages[-1]["content"].split("QUESTION: ")[1].splitlines()[0]
            return _call("conversation_search", False, query=question)
        return _call("done")

    base = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=memgpt"]
    bb = ScriptedBackbone(responder)
    result = run_config(compose(base), tmp_path / "run", backbone_override=bb)
    assert result.n_items == 8
    assert result.cost["memory_build"]["llm_calls_per_turn"] == 1.0  # one agent step per turn, no eviction
    assert bb.calls_by_stage() == {"ingest": 35, "retrieve": 8, "answer": 8}  # one search step per question

    items = read_items(tmp_path / "run" / "items.jsonl")
    assert all(r["extra"]["searches"][0]["function"] == "conversation_search" for r in items)
    assert all(r["hit"] == 1 for r in items if r["hit"] is not None)  # all 35 turns are still in the FIFO


def _fifo() -> list[FifoMessage]:
    kinds = ["turn", "action", "result", "turn", "action", "result", "turn", "action"]
    out, n = [], 0
    for k in kinds:
        n += k == "turn"
        role = "assistant" if k == "action" else "user"
        out.append(FifoMessage(role, k, f"{k[0]}{n}", f"D1:{n}" if k == "turn" else None, tokens=10))
    return out


def test_eviction_cut_is_memgpts_and_keeps_the_crossing_message() -> None:
    """``summarize_messages_inplace``: the messages after the system message, the previous summary counted, are
    walked until the running sum passes int(fraction × their tokens); that message is kept, unless it is a user
    message, which is summarised too (once); the last ``keep_last`` are never candidates."""
    prompts: list[str] = []
    agent, _ = _agent(
        MemGPTConfig(evict_fraction=0.3, keep_last_messages=3), lambda m: prompts.append(m[1]["content"]) or "S"
    )
    agent.fifo = _fifo()
    # 80 tokens, target 24: t1 a1 r1 reach 30 at r1, a function message: r1 is kept
    assert agent._evict()
    assert [m.content for m in agent.fifo] == ["r1", "t2", "a2", "r2", "t3", "a3"]
    assert agent.summary_dia_ids == ("D1:1",) and agent.n_hidden == 2 and agent.summary == "S"
    assert prompts[0] == str([{"role": "user", "content": "t1"}, {"role": "assistant", "content": "a1"}])

    agent, _ = _agent(MemGPTConfig(evict_fraction=0.4, keep_last_messages=3), lambda m: "S")
    agent.fifo = _fifo()
    # target 32: t2 takes the sum to 40; it is a user message, so it is summarised with the ones before it
    agent._evict()
    assert [m.content for m in agent.fifo] == ["a2", "r2", "t3", "a3"]
    assert agent.summary_dia_ids == ("D1:1", "D1:2")

    # the previous summary is the first message walked: 20 + 80 tokens, target 30, crossed at a1 (kept)
    fifo = _fifo()
    assert eviction_cut(fifo, keep_last=3, fraction=0.3, summary_tokens=20) == 1
    assert eviction_cut(fifo, keep_last=3, fraction=0.3) == 2
    # never crossed among the candidates: the walk stops at the last candidate, kept (an assistant message)
    assert eviction_cut(fifo, keep_last=3, fraction=0.9) == 4
    assert eviction_cut(fifo[:3], keep_last=3, fraction=0.3) is None


def test_memory_pressure_warning_is_its_own_step_after_the_reply_that_crossed() -> None:
    """MemGPT 0.2.6: a reply whose total tokens pass 0.75 × window sets the warning, sent next as a user message
    of its own (one more agent step), once until the next eviction."""
    steps: list[Msgs] = []

    def responder(messages: Msgs) -> str:
        steps.append(messages)
        return _call("done")

    cfg = MemGPTConfig(context_window_tokens=4000)
    agent, _ = _agent(cfg, responder)
    filler = " ".join(f"word{j}" for j in range(60))
    turn = 0
    while agent.counters["alerts"] == 0:
        turn += 1
        before = len(steps)
        agent.ingest(_turn(turn, "Alice", f"Message {turn}: {filler}."))
    crossing, warned = steps[before], steps[before + 1]
    assert len(steps) == before + 2  # the turn's own step, then the warning's
    total = sum(count_tokens(m["content"]) for m in crossing) + count_tokens(_call("done"))
    assert total > 0.75 * agent.window
    assert warned[-2] == {"role": "user", "content": P.PRESSURE_ALERT}
    assert P.INGEST_ALERT in warned[-1]["content"]
    # no second warning before an eviction resets it
    agent.ingest(_turn(turn + 1, "Bob", "short"))
    assert agent.counters["alerts"] == 1 and len(steps) == before + 3 and agent.counters["evictions"] == 0


def test_heartbeats_chain_until_none_is_asked_with_a_counted_safety_limit() -> None:
    chain = iter([_call("archival_memory_insert", True, content=f"fact {k}") for k in range(5)] + [_call("done")])
    agent, bb = _agent(MemGPTConfig(), lambda m: next(chain))
    agent.ingest(_turn(1, "Alice", "Lots to remember."))
    assert len(bb.calls) == 6 and len(agent.archival.entries) == 5 and agent.counters["step_limit_hits"] == 0
    endless, bb = _agent(
        MemGPTConfig(max_steps_per_turn=3), lambda m: _call("archival_memory_insert", True, content="x")
    )
    endless.ingest(_turn(1, "Alice", "Hi"))
    assert len(bb.calls) == 3 and endless.counters["step_limit_hits"] == 1


def test_sampling_is_the_api_default_with_a_counted_reply_cap(scripted) -> None:
    bb = scripted(_call("done"))
    agent = MemGPT(MemGPTConfig(), ("Alice", "Bob"), lambda: bb, lambda: HashingEmbedder(64))
    agent.ingest(_turn(1, "Alice", "Hi"))
    assert bb.kwargs[0]["temperature"] == 1.0 and bb.kwargs[0]["max_tokens"] == 4096
    assert agent.counters["replies_at_max_tokens"] == 0
    capped = scripted(_call("done"))
    agent = MemGPT(MemGPTConfig(max_tokens=3), ("Alice", "Bob"), lambda: capped, lambda: HashingEmbedder(64))
    agent.ingest(_turn(1, "Alice", "Hi"))
    assert agent.counters["replies_at_max_tokens"] == 1


def test_recall_search_covers_the_agents_own_messages_and_events() -> None:
    replies = iter([_call("core_memory_replace", False, name="Bob", old_content="nothing"), _call("done")])
    agent, _ = _agent(MemGPTConfig(), lambda m: next(replies))
    agent.ingest(_turn(1, "Bob", "Hi there"))
    logged = [(m.speaker, m.text, m.dia_id, m.note_id) for m in agent.recall.messages]
    assert logged == [
        ("Bob", "Hi there", "D1:1", "recall:D1:1"),
        ("assistant", "t", "D1:1", "recall:m1"),
        ("user", HEARTBEAT_FAILED, "", "recall:m2"),
        ("assistant", "t", "D1:1", "recall:m3"),
    ]
    _, _, hits = agent._calls.recall_search(agent.recall, "function call failed", 0)
    assert [(h.note_id, h.dia_ids) for h in hits] == [("recall:m2", ())]


def test_search_results_are_uncut_and_long_archival_inserts_are_split() -> None:
    assert MemGPTConfig().function_result_chars is None
    sentences = [f"Sentence {k} says something about topic {k} and more words here." for k in range(60)]
    text = " ".join(sentences)
    passages = split_passages(text, 300, 20)
    assert len(passages) > 1 and all(count_tokens(p) <= 300 for p in passages)
    assert passages[0].startswith("Sentence 0 ") and passages[-1].endswith("topic 59 and more words here.")
    assert passages[1].split(". ")[0] + "." in passages[0]  # the overlap repeats the previous passage's tail
    assert split_passages("short", 300, 20) == ["short"] and split_passages(text, 0, 20) == [text]
    agent, _ = _agent(MemGPTConfig(), lambda m: _call("archival_memory_insert", content=text))
    agent.ingest(_turn(1, "Alice", "Hi"))
    assert [e.content for e in agent.archival.entries] == passages
    assert all(e.dia_ids == ("D1:1",) for e in agent.archival.entries)


def test_context_window_is_memgpts_own_sizing(tmp_path, compose) -> None:
    """MemGPT 0.2.6 gives a model it does not list LLM_MAX_TOKENS['DEFAULT'] = 8,192 tokens, never more than the
    backbone's prompt budget; memgpt-full-window keeps the backbone's whole budget; an explicit value wins."""
    from omegaconf import OmegaConf

    def window(overrides: list[str]) -> int:
        cfg = compose(overrides)
        raw = OmegaConf.to_container(cfg.method, resolve=True)
        assert isinstance(raw, dict)
        return resolve_window(config_from_dict({k: v for k, v in raw.items() if k != "name"}))[0]

    for backbone, paged, full in (("local", 6000, 6000), ("gpt-4o-mini", 8192, 120000), ("qwen3-8b", 8192, 30000)):
        assert window([f"backbone={backbone}", "method=memgpt"]) == paged
        assert window([f"backbone={backbone}", "method=memgpt-full-window"]) == full
    assert window(["backbone=gpt-4o-mini", "method=memgpt", "method.context_window_tokens=4096"]) == 4096
    assert window(["backbone=gpt-4o-mini", "method=memgpt", "method.backbone_model=gpt-4-32k"]) == 32768
    assert window(["backbone=gpt-4o-mini", "method=memgpt", "method.backbone_model=gpt-3.5-turbo"]) == 4096

    def ctx(config: dict[str, object], budget: int) -> MethodContext:
        return method_context(
            config,
            story_conversation(),
            tmp_path,
            backbone=lambda: ScriptedBackbone(lambda m: _call("done")),
            extras={"prompt_token_cap": budget},
        )

    assert SPEC.factory(ctx({"name": "memgpt"}, 30000)).window == 8192
    assert SPEC.factory(ctx({"name": "memgpt"}, 5000)).window == 5000
    assert SPEC.factory(ctx({"name": "memgpt-full-window"}, 30000)).window == 30000
    assert SPEC.factory(ctx({"name": "memgpt", "context_window_tokens": 4000}, 30000)).window == 4000
    with pytest.raises(ValueError, match="context_window_tokens"):
        config_from_dict({"context_window_tokens": 0})


def test_a_window_too_small_for_the_system_message_and_core_memory_is_refused() -> None:
    need = min_window_tokens(MemGPTConfig())
    assert 2000 < need < 8192
    with pytest.raises(ValueError, match=f"cannot hold MemGPT's system message and a full core memory .{need} tokens"):
        config_from_dict({"context_window_tokens": need - 1})
    with pytest.raises(ValueError, match="capped at the backbone's prompt budget"):
        config_from_dict({"prompt_token_cap": 1000})
    assert config_from_dict({"context_window_tokens": need}).context_window_tokens == need


def test_system_prompt_is_memgpt_chat_verbatim_then_the_framing() -> None:
    import hashlib

    # sha256 of cpacker/MemGPT memgpt/prompts/system/memgpt_chat.txt @ 0.2.6 (the file's bytes, CRLF lines included)
    assert hashlib.sha256(MEMGPT_CHAT.encode()).hexdigest() == (
        "90ccbd7d2b57a2b3b8e2d88ea9c70d8d485c59a8c0ef9dccd29f0ed740955eeb"
    )
    text = system_text()
    assert "\r" not in text and text.startswith("You are MemGPT, the latest version of Limnal Corporation")
    assert text.endswith("From now on, you are going to act as your persona.")
    agent, _ = _agent(MemGPTConfig(), lambda m: _call("done"))
    assert agent.system_prompt == text + "\n\n" + agent.system_prompt[len(text) + 2 :]
    assert agent.system_prompt[len(text) + 2 :].startswith("Setting of this session")
    assert "case-insensitive string matching" in agent.system_prompt  # recall_search: substring, as MemGPT
    assert agent.core.blocks["persona"][0].text == framing.PERSONA.format(speaker_a="Alice", speaker_b="Bob")
    assert P.summary_system(100) == P.SUMMARY_SYSTEM and "less than 50 words" in P.summary_system(50)
    # gpt_summarize.SYSTEM (WORD_LIMIT 100) and constants.MESSAGE_SUMMARY_WARNING_STR @ 0.2.6, as Python values
    assert hashlib.sha256(P.SUMMARY_SYSTEM.encode()).hexdigest() == (
        "9860926f45bd06032479babd89080009af2321eb104da70e17a8ccba00c77a8a"
    )
    assert hashlib.sha256(P.PRESSURE_ALERT.encode()).hexdigest() == (
        "269e10af6ec9afdc72fd4e881b0fa656ebbf1a8b0f6413f0bc608dd98d0c550b"
    )


def test_budget_caps_all_notes_hits_first() -> None:
    """eval.note_cap=B: B notes in all, main context included: hits, then the newest FIFO turns, then core."""
    notes = [
        EvidenceNote("core:Alice:0", "Alice: has a dog", ("D1:1",), 1.0, ("core",)),
        EvidenceNote("summary", "earlier things", (), 1.0, ("summary",)),
        *(EvidenceNote(f"recall:D1:{i}", f"turn {i}", (f"D1:{i}",), 1.0, ("fifo",), "t") for i in (2, 3, 4)),
        EvidenceNote("archival:0", "the dog is Rex", ("D1:2",), 0.9, ("archival",), "t"),
    ]
    ev = cap_evidence(Evidence(notes=notes, context="unused"), 3)
    assert [n.note_id for n in ev.notes] == ["recall:D1:3", "recall:D1:4", "archival:0"]
    assert ev.context == "Recent messages:\nturn 3\nturn 4\n\nMemory search results:\n[t] the dog is Rex"
    everything = cap_evidence(Evidence(notes=notes), 10)
    assert len(everything.notes) == 6 and everything.context.startswith("Core memory:\nAlice: has a dog\n\nSummary")

"""LightMem baseline: compressor, topic boundaries, batched extraction, sleep-time consolidation,
retrieval provenance, persistence — scripted backbone and hand-made embedders, no model."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime

import numpy as np
import pytest

from baselines.lightmem import SPEC, LightMem, LightMemConfig
from baselines.lightmem import prompt_extract as LIGHT_EXTRACT
from baselines.lightmem import prompt_update as U
from baselines.lightmem.buffers import BufferedTurn
from baselines.lightmem.compress import IdfCompressor
from baselines.lightmem.config import config_from_dict
from baselines.lightmem.extraction import FactExtractor
from baselines.lightmem.llmlingua import llmlingua_unavailable
from baselines.lightmem.segment import coarse_boundaries, fine_boundaries, propose_boundaries
from baselines.lightmem.system import _check_compressor, make_compressor, parse_facts, parse_update
from baselines.lightmem.updates import stamp_seconds, update_queues
from memcore.errors import ConfigError
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from memcore.types import Turn
from tests.fakes import LightMemLLM
from tests.support import method_context, story_conversation


class TopicEmbedder:
    """One axis per topic keyword set, so segment boundaries are known by construction."""

    name = "topic-3"
    dim = 3
    TOPICS = (("rex", "puppy", "beagle", "dog"), ("violin", "practise", "music"))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for t in texts:
            low = t.lower()
            axis = next((k for k, words in enumerate(self.TOPICS) if any(w in low for w in words)), 2)
            rows.append(np.eye(3, dtype=np.float32)[axis])
        return np.stack(rows) if rows else np.zeros((0, 3), dtype=np.float32)


def _turn(i: int, speaker: str, text: str) -> Turn:
    return Turn(f"D1:{i}", speaker, text, 1, datetime(2023, 5, 8, 13, 56), "1:56 pm on 8 May, 2023")


# ---------------------------------------------------------------------------------- compressor
def test_idf_compressor_keeps_informative_words_in_order() -> None:
    c = IdfCompressor(0.5)
    # 8 words → keep 4: the number, the mid-sentence name, then the two earliest content words.
    assert c.compress("I adopted a puppy named Rex in 2021.") == "adopted puppy Rex 2021."
    assert c.n_docs == 1 and c.df["puppy"] == 1
    # "puppy" has now been seen (idf 1 + log(2/2) = 1) while "beagle" is new (1 + log(2/1)), so
    # the 3 kept of 5 words are: the name, the new word, then the earliest of the tied rest.
    assert c.compress("the puppy is a beagle") == "the puppy beagle"
    c2 = IdfCompressor(0.6)
    c2.compress("my puppy")
    assert c2.compress("puppy beagle walks") == "beagle walks"


def test_compress_rate_one_is_identity_and_rate_is_validated() -> None:
    assert IdfCompressor(1.0).compress("Hey, so um, yeah!") == "Hey, so um, yeah!"
    with pytest.raises(ValueError, match="compress rate"):
        IdfCompressor(0.0)


# ---------------------------------------------------------------------------------- boundaries
def test_boundaries_hand_computed() -> None:
    sims = np.array([0.9, 0.1, 0.8, 0.15, 0.9])
    assert coarse_boundaries(sims) == [2, 4]
    assert fine_boundaries(sims, 0.2, 0.5, 0.05) == [2, 4]
    assert propose_boundaries(sims, start=0.2, maximum=0.5, step=0.05, tolerance=3) == [2, 4]
    # nothing below 0.2, 0.25 or 0.3; at 0.35 the 0.3 pair is cut
    assert fine_boundaries(np.array([0.45, 0.3, 0.6]), 0.2, 0.5, 0.05) == [2]
    assert fine_boundaries(np.array([0.6, 0.7]), 0.2, 0.5, 0.05) == []
    # a fine cut far from every coarse proposal is dropped when another fine cut is near one
    sims = np.array([0.1, 0.9, 0.9, 0.9, 0.9, 0.9, 0.8, 0.15, 0.9])
    assert fine_boundaries(sims, 0.2, 0.5, 0.05) == [1, 8]
    assert coarse_boundaries(sims) == [8]
    assert propose_boundaries(sims, start=0.2, maximum=0.5, step=0.05, tolerance=3) == [8]


# ---------------------------------------------------------------------------------- parsing
def test_parse_facts_and_update() -> None:
    v = parse_facts()
    items = [
        {"source_id": "1", "fact": " A fact. "},
        {"source_id": 7, "fact": "B"},
        {"fact": "C"},
        {"fact": ""},
        "junk",
    ]
    # ids are kept as given (the extractor clamps them per batch); a missing one is None
    assert v({"data": items}) == [(1, "A fact."), (7, "B"), (None, "C")]
    with pytest.raises(ValueError):
        v({"facts_list": []})
    assert parse_update({"action": "Delete"}).action == "delete"
    assert parse_update({"action": "update", "new_memory": {"memory": "x"}}).new_memory == "x"
    with pytest.raises(ValueError):
        parse_update({"action": "update"})
    with pytest.raises(ValueError):
        parse_update({"action": "merge"})


# ---------------------------------------------------------------------------------- pipeline
def _build(cfg: LightMemConfig, turns: list[Turn], responder=None, embedder=None) -> tuple[LightMem, ScriptedBackbone]:
    bb = ScriptedBackbone(responder or LightMemLLM())
    emb = embedder or TopicEmbedder()
    mem = LightMem(cfg, lambda: bb, lambda: emb)
    for t in turns:
        mem.ingest(t)
    mem.finalize()
    return mem, bb


TURNS = [
    _turn(1, "Alice", "I adopted a puppy named Rex."),
    _turn(2, "Bob", "What breed is the puppy Rex?"),
    _turn(3, "Alice", "Rex is a beagle dog."),
    _turn(4, "Bob", "I started the violin in March."),
    _turn(5, "Alice", "How is the violin practise?"),
    _turn(6, "Bob", "We went to Lisbon."),
]


def test_segments_batches_and_provenance() -> None:
    # no compression; sensory buffer holds everything until finalize → one forced cut
    cfg = LightMemConfig(
        compressor="none", sensory_buffer_tokens=1000, stm_buffer_tokens=1000, consolidate=False, provenance="segment"
    )
    assert LightMemConfig().provenance == "source"  # the default: the turn a fact came from
    mem, bb = _build(cfg, TURNS)
    # topics: dog (1-3) | violin (4-5) | other (6) → three segments, all in ONE extraction call
    assert mem.counters["segments"] == 3
    assert bb.calls_by_stage() == {"ingest": 1}
    prompt = bb.calls[0][1][1]["content"]
    assert prompt.count("--- Topic") == 3
    # upstream's layout: ISO time + 1 s per earlier message of the session, weekday, source id within the call
    assert prompt.startswith("--- Topic 0 ---\n[2023-05-08T13:56:00.000, Mon] 0.Alice: I adopted a puppy named Rex.\n")
    assert "\n--- Topic 1 ---\n[2023-05-08T13:56:03.000, Mon] 3.Bob: I started the violin in March." in prompt
    assert len(mem.entries) == 6
    by_src = {e.source_dia_ids: e for e in mem.entries}
    assert by_src[("D1:3",)].segment_dia_ids == ("D1:1", "D1:2", "D1:3")
    assert by_src[("D1:5",)].segment_dia_ids == ("D1:4", "D1:5")
    assert by_src[("D1:6",)].segment_dia_ids == ("D1:6",)
    assert mem.stats()["llm_calls_per_turn"] == round(1 / 6, 4)

    ev = mem.retrieve("violin lessons", budget=2)
    assert [n.dia_ids for n in ev.notes] == [("D1:4", "D1:5"), ("D1:4", "D1:5")]
    assert ev.notes[0].timestamp == "1:56 pm on 8 May, 2023" and ev.notes[0].score == pytest.approx(1.0)
    src = LightMem(LightMemConfig(**{**cfg.__dict__, "provenance": "source"}), lambda: bb, lambda: TopicEmbedder())
    src.entries, src._vectors = mem.entries, mem._vectors
    got = src.retrieve("violin", budget=2)
    assert [n.dia_ids for n in got.notes] == [("D1:4",), ("D1:5",)]
    # the layout LightMem's upstream answer prompt is filled from: (speaker, session date, text) in retrieval order
    assert [(s, t) for s, t, _ in got.layout["entries"]] == [(e.speaker, e.timestamp) for e in src.entries[3:5]]


def test_small_buffers_cut_early_and_batch_by_tokens() -> None:
    # each turn is 6-8 tokens; a 16-token sensory buffer cuts at topic boundaries as it fills and
    # the 10-token short-term buffer sends roughly one segment per extraction call
    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=16, stm_buffer_tokens=10, consolidate=False)
    mem, bb = _build(cfg, TURNS)
    calls = bb.calls_by_stage()["ingest"]
    assert calls == mem.counters["extraction_calls"] >= 3
    assert sorted(d for e in mem.entries for d in e.source_dia_ids) == [f"D1:{i}" for i in range(1, 7)]


def test_extraction_fallback_stores_compressed_turns_and_is_counted() -> None:
    cfg = LightMemConfig(compressor="none", consolidate=False)
    mem, bb = _build(cfg, TURNS[:2], responder=lambda m: "not json at all")
    assert [e.text for e in mem.entries] == ["Alice: I adopted a puppy named Rex.", "Bob: What breed is the puppy Rex?"]
    assert all(e.kind == "raw" for e in mem.entries)
    assert mem.counters["extraction_fallbacks"] == 1
    usage = bb.usage.to_json()
    assert usage["parse_failures_by_kind"] == {"ingest": {"lightmem extraction → compressed turns stored verbatim": 1}}
    assert len(bb.calls) == 2  # one retry, then the fallback


def test_sleep_time_update_and_delete() -> None:
    turns = [
        _turn(1, "Alice", "Rex is a puppy."),
        _turn(2, "Bob", "I play the violin."),
        _turn(3, "Alice", "Rex the dog is a beagle."),
        _turn(4, "Bob", "I quit the violin music."),
    ]
    seen: list[str] = []

    def responder(messages: Sequence[dict[str, str]]) -> str:
        user = messages[-1]["content"]
        if messages[0]["content"] == LIGHT_EXTRACT.METADATA_GENERATE_PROMPT_LOCOMO:
            return LightMemLLM()(messages)
        seen.append(user)
        if "Rex is a puppy" in user.split("\n")[0]:
            return json.dumps({"action": "update", "new_memory": "Rex is Alice's beagle puppy."})
        return json.dumps({"action": "delete"})

    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=1000, stm_buffer_tokens=1000)
    mem, _ = _build(cfg, turns, responder=responder)
    # TopicEmbedder: entries 0 & 2 identical vectors (sim 1.0), 1 & 3 too → two targets (the older ones)
    assert len(seen) == 2 and mem.counters["update_calls"] == 2
    assert (
        "Target memory:Alice said: Rex is a puppy." in seen[0] and "- Alice said: Rex the dog is a beagle." in seen[0]
    )
    texts = [e.text for e in mem.entries]
    assert texts == [
        "Rex is Alice's beagle puppy.",
        "Alice said: Rex the dog is a beagle.",
        "Bob said: I quit the violin music.",
    ]
    assert mem.entries[0].source_dia_ids == ("D1:1", "D1:3")
    assert mem.counters["updated"] == 1 and mem.counters["deleted"] == 1
    assert mem._vectors.shape == (3, 3)


def test_fact_without_source_id_is_attributed_by_content_or_credited_to_no_turn() -> None:
    turns = [_turn(1, "Alice", "I adopted a puppy named Rex."), _turn(2, "Bob", "I started the violin in March.")]
    reply = {
        "data": [
            {"source_id": "Bob", "fact": "Bob has played the violin since March."},  # invalid id, shares words
            {"fact": "Alice told Bob about the weather."},  # no id; shares only the speakers' names
        ]
    }
    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=1000, stm_buffer_tokens=1000, consolidate=False)
    mem, _ = _build(cfg, turns, responder=lambda m: json.dumps(reply))
    violin, weather = mem.entries
    # stored as upstream stores it: a missing or non-numeric id reads as 0, so dated, voiced and topic-numbered as
    # the call's first message; provenance is the turn it shares content words with
    assert violin.source_dia_ids == ("D1:2",)
    assert (violin.speaker, violin.stamp, violin.topic_id) == ("Alice", "2023-05-08T13:56:00.000", 0)
    # no turn shares a content word (names left out): credited to none
    assert weather.source_dia_ids == ()
    assert (weather.speaker, weather.stamp) == ("Alice", "2023-05-08T13:56:00.000")
    # the model named no segment, so the labelled upper bound keeps crediting the whole batch
    assert violin.segment_dia_ids == weather.segment_dia_ids == ("D1:1", "D1:2")
    stats = mem.stats()
    assert (stats["facts"], stats["facts_without_source"], stats["facts_unattributed"]) == (2, 2, 1)
    notes = mem.retrieve("weather", budget=2).notes
    assert {n.text: n.dia_ids for n in notes} == {violin.text: ("D1:2",), weather.text: ()}


def test_update_credits_only_the_turns_whose_content_the_new_text_keeps() -> None:
    turns = [
        _turn(1, "Alice", "Rex is a puppy."),
        _turn(2, "Bob", "I play the violin."),
        _turn(3, "Alice", "Rex the dog is a beagle."),
        _turn(4, "Alice", "Rex barks at the mailman."),
    ]
    targets: list[str] = []

    def responder(messages: Sequence[dict[str, str]]) -> str:
        if messages[0]["content"] == LIGHT_EXTRACT.METADATA_GENERATE_PROMPT_LOCOMO:
            return LightMemLLM()(messages)
        target = messages[-1]["content"].split("\n")[0]
        targets.append(target)
        if "Rex is a puppy" in target:  # keeps the beagle (turn 3), drops the mailman (turn 4)
            return json.dumps({"action": "update", "new_memory": "Rex is a beagle puppy."})
        if "Rex the dog is a beagle" in target:  # keeps nothing of turns 3 and 4
            return json.dumps({"action": "update", "new_memory": "The weather turned cold."})
        return json.dumps({"action": "ignore"})

    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=1000, stm_buffer_tokens=1000)
    mem, _ = _build(cfg, turns, responder=responder)
    # TopicEmbedder: the three Rex entries share one vector; entry 0 is updated from entries 2 and 3, entry 2
    # from entry 3
    assert len(targets) == 2 and mem.counters["updated"] == 2
    first, _, second, _ = mem.entries
    assert first.text == "Rex is a beagle puppy." and first.source_dia_ids == ("D1:1", "D1:3")
    assert second.text == "The weather turned cold." and second.source_dia_ids == ()
    assert mem.counters["updates_unattributed"] == 1
    # provenance: segment still credits the union of the segments; the buffer has no coarse boundary (no strict
    # local minimum of the similarities 0, 0, 1), so it is one segment, as upstream cuts it
    assert first.segment_dia_ids == ("D1:1", "D1:2", "D1:3", "D1:4")


def test_update_queue_only_looks_backwards() -> None:
    cfg = LightMemConfig(compressor="none", consolidate=False, queue_keep=5)
    mem, _ = _build(cfg, TURNS)
    queues = mem.update_queues()
    stamps = [e.stamp for e in mem.entries]
    for j, q in enumerate(queues):
        assert all(stamps[i] <= stamps[j] and i != j for i, _ in q)
    assert queues[0] == []  # the first entry has nothing earlier


def test_earlier_is_by_stamp_which_restarts_in_every_add_memory_call() -> None:
    """Upstream's queue filter is ``float_time_stamp <= own``, and a stamp is the session time + 1 s per earlier
    message of the session in the add_memory call: entries extracted in later calls restart at the session time,
    so a later turn can count as earlier."""
    vectors = np.ones((3, 2), dtype=np.float32) / np.sqrt(2)
    stamps = np.array([stamp_seconds("2023-05-08T13:56:01.000"), stamp_seconds("2023-05-08T13:56:00.000"), np.nan])
    queues = update_queues(vectors, stamps, top_k=20, keep=10)
    assert [[i for i, _ in q] for q in queues] == [[1], [], []]  # no stamp: no queue, in none
    # small buffers: each batch is extracted in a later turn's call, so the stamps restart
    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=16, stm_buffer_tokens=10, consolidate=False)
    mem, _ = _build(cfg, TURNS)
    entries = mem.entries
    assert entries[0].stamp == "2023-05-08T13:56:00.000"
    later_first = [
        (j, i) for j, q in enumerate(mem.update_queues()) for i, _ in q if entries[i].order > entries[j].order
    ]
    assert later_first  # a later turn's entry sits in an earlier turn's queue
    for j, i in later_first:
        assert entries[i].stamp <= entries[j].stamp


def test_source_ids_and_stamps_run_on_per_add_memory_call_and_are_clamped_per_batch() -> None:
    replies = iter(
        [
            json.dumps({"data": [{"source_id": 1, "fact": "B1"}]}),
            json.dumps(
                {
                    "data": [
                        {"source_id": 3, "fact": "past the batch"},  # batch max 1: topic at id 1, stamp at id 3
                        {"fact": "no id"},  # read as 0
                        {"source_id": -1, "fact": "negative"},  # no topic: dropped
                        {"source_id": 9, "fact": "past the call"},  # no message 9: no stamp
                    ]
                }
            ),
            json.dumps({"data": [{"source_id": 0, "fact": "next call"}]}),
        ]
    )
    bb = ScriptedBackbone(lambda m: next(replies))
    counters: dict[str, int] = defaultdict(int)
    ex = FactExtractor(LightMemConfig(compressor="none"), lambda: bb, counters)

    def buffered(i: int, speaker: str) -> BufferedTurn:
        return BufferedTurn(_turn(i, speaker, f"message {i}"), i - 1, f"message {i}", 2)

    ex.begin_call()
    first = ex.extract([[buffered(1, "Alice"), buffered(2, "Bob")]])
    second = ex.extract([[buffered(3, "Alice")], [buffered(4, "Bob")]])  # the same add_memory call
    prompt = bb.calls[1][1][1]["content"]
    assert prompt.startswith("--- Topic 1 ---\n[2023-05-08T13:56:02.000, Mon] 2.Alice: message 3\n")
    assert "--- Topic 2 ---\n[2023-05-08T13:56:03.000, Mon] 3.Bob: message 4" in prompt
    assert [(e.text, e.topic_id, e.stamp, e.source_dia_ids) for e in first] == [
        ("B1", 0, "2023-05-08T13:56:01.000", ("D1:2",))
    ]
    past, no_id, far = second
    assert (past.topic_id, past.stamp, past.source_dia_ids, past.speaker) == (
        0,
        "2023-05-08T13:56:03.000",
        ("D1:4",),
        "Bob",
    )
    assert (no_id.topic_id, no_id.stamp, no_id.speaker) == (0, "2023-05-08T13:56:00.000", "Alice")
    assert (far.topic_id, far.stamp) == (0, None)
    assert (counters["facts_source_clamped"], counters["facts_dropped"], counters["facts_without_stamp"]) == (2, 1, 1)
    assert counters["facts_without_source"] == 2  # "no id" and "past the call"
    ex.begin_call()
    (nxt,) = ex.extract([[buffered(5, "Alice")]])
    assert bb.calls[2][1][1]["content"] == "--- Topic 3 ---\n[2023-05-08T13:56:00.000, Mon] 0.Alice: message 5"
    assert nxt.stamp == "2023-05-08T13:56:00.000"


def test_no_coarse_boundary_leaves_the_whole_buffer_one_segment() -> None:
    sims = np.array([0.1, 0.5, 0.9])  # rising: no local minimum, yet a fine cut below 0.2
    assert coarse_boundaries(sims) == [] and fine_boundaries(sims, 0.2, 0.5, 0.05) == [1]
    assert propose_boundaries(sims, start=0.2, maximum=0.5, step=0.05, tolerance=3) == []


def test_save_load_roundtrip(tmp_path) -> None:
    cfg = LightMemConfig(compressor="idf", consolidate=False)
    mem, _ = _build(cfg, list(story_conversation(n_sessions=2).turns), embedder=HashingEmbedder(64))
    mem.save(tmp_path)
    other = LightMem(cfg, lambda: pytest.fail("load must not touch the backbone"), lambda: HashingEmbedder(64))
    other.load(tmp_path)
    a, b = mem.retrieve("Rex breed", budget=3), other.retrieve("Rex breed", budget=3)
    assert [n.note_id for n in a.notes] == [n.note_id for n in b.notes]
    assert [n.dia_ids for n in a.notes] == [n.dia_ids for n in b.notes]
    assert other.stats()["entries"] == mem.stats()["entries"] == 6


def test_spec_and_config_validation(tmp_path) -> None:
    assert "top_k" not in SPEC.construction_keys and "provenance" not in SPEC.construction_keys
    assert {"format_version", "compress_rate", "update_threshold"} <= set(SPEC.construction_keys)
    with pytest.raises(ValueError, match="unknown config key"):
        config_from_dict({"name": "lightmem", "topk": 3})
    with pytest.raises(ValueError, match="compress_rate must be of type float"):
        config_from_dict({"compress_rate": "high"})
    with pytest.raises(ValueError, match="provenance"):
        config_from_dict({"provenance": "turn"})
    bb = ScriptedBackbone(LightMemLLM())
    ctx = method_context(
        {"name": "lightmem", "compressor": "none", "consolidate": False},
        story_conversation(),
        tmp_path,
        backbone=lambda: bb,
        embedder=lambda: TopicEmbedder(),
    )
    mem = SPEC.factory(ctx)
    assert not ctx._backbone.built  # building the memory object starts nothing
    for t in ctx.conversation.turns:
        mem.ingest(t)
    mem.finalize()
    assert ctx._backbone.built and mem.stats()["turns"] == 6


@pytest.mark.usefixtures("locomo_path")
def test_runner_builds_once_and_reuses_the_snapshot(tmp_path, compose) -> None:
    base = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=lightmem"]
    bb = ScriptedBackbone(LightMemLLM(answer="an answer"))  # the runner's answerer gets "an answer"
    first = run_config(compose(base), tmp_path / "run", backbone_override=bb)
    assert first.n_items == 8
    build = first.cost["memory_build"]
    conv = next(iter(first.stats["conversations"].values()))
    assert build["turns"] == 35 and build["llm_calls"] == conv["memory"]["llm_calls"] >= 1
    assert build["llm_calls_per_turn"] == round(build["llm_calls"] / 35, 4) < 0.2
    # a retrieval-only knob reuses the snapshot: no ingest calls the second time
    again = run_config(compose([*base, "method.top_k=5"]), tmp_path / "run2", backbone_override=bb)
    assert again.cost["memory_build"]["snapshots_reused"] == 1
    assert "ingest" not in again.cost["usage"]["by_stage"] or again.cost["usage"]["by_stage"]["ingest"]["calls"] == 0


# ---------------------------------------------------------------------------------- published settings
def test_presets_set_stm_buffer_and_rate_and_overrides_win() -> None:
    cfg = LightMemConfig()
    assert (cfg.preset, cfg.stm_tokens, cfg.rate) == ("768-0.8", 768, 0.8)
    assert cfg.setting() == "768-0.8, idf"
    assert (LightMemConfig(preset="512-0.7").stm_tokens, LightMemConfig(preset="512-0.7").rate) == (512, 0.7)
    custom = config_from_dict({"preset": "768-0.7", "compress_rate": 0.6})
    assert (custom.stm_tokens, custom.rate) == (768, 0.6) and custom.setting() == "custom 768-0.6, idf"
    assert config_from_dict({"stm_buffer_tokens": 512, "compress_rate": 0.7}).setting() == "512-0.7, idf"
    with pytest.raises(ValueError, match="preset"):
        config_from_dict({"preset": "1024-0.8"})
    with pytest.raises(ValueError, match="stm_buffer_tokens must be of type int"):
        config_from_dict({"stm_buffer_tokens": "big"})
    assert "preset" in SPEC.construction_keys


def test_stm_buffer_of_the_preset_decides_the_batches() -> None:
    # 6 turns of 10 tokens each, each its own topic (axis 2 never repeats... all "other"): the sensory buffer
    # cuts at every turn, so the STM buffer alone decides how many turns share one extraction call
    turns = [_turn(i, "Alice", " ".join(["word"] * 9) + ".") for i in range(1, 7)]

    def one_topic_per_turn(texts: Sequence[str]) -> np.ndarray:
        return np.eye(len(texts), 8, dtype=np.float32)

    class Emb(TopicEmbedder):
        def encode(self, texts: Sequence[str]) -> np.ndarray:
            return one_topic_per_turn(texts)

    calls = {}
    for stm in (20, 30):
        cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=10, stm_buffer_tokens=stm, consolidate=False)
        mem, _ = _build(cfg, turns, embedder=Emb())
        calls[stm] = mem.counters["extraction_calls"]
    assert calls == {20: 3, 30: 2}


def test_extraction_reply_budget_is_upstreams_capped_by_the_backbone() -> None:
    cfg = LightMemConfig(compressor="none", sensory_buffer_tokens=1000, stm_buffer_tokens=1000, consolidate=False)
    seen: list[int] = []

    class Recording:
        def __init__(self) -> None:
            self.inner = ScriptedBackbone(LightMemLLM())
            self.max_tokens: list[int] = []

        def complete(self, messages, **kw):
            self.max_tokens.append(kw["max_tokens"])
            # upstream MemoryManagerConfig's sampling, seeded so the response cache replays it
            assert (kw["temperature"], kw["top_p"], kw["seed"]) == (0.1, 0.1, 0)
            return self.inner.complete(messages, **kw)

    for prompt_token_cap, expect in ((None, 16000), (120000, 16000), (6000, None), (1000, 256)):
        bb = Recording()
        mem = LightMem(cfg, lambda bb=bb: bb, lambda: TopicEmbedder(), prompt_token_cap=prompt_token_cap)
        for t in TURNS:
            mem.ingest(t)
        mem.finalize()
        budget = bb.max_tokens[0]
        seen.append(budget)
        if expect is not None:
            assert budget == expect, prompt_token_cap
    prompt_tokens = 6000 - seen[2]
    assert 1000 < prompt_tokens < 3000  # 6,000 minus the upstream prompt and the batch


def test_update_prompt_user_message_is_upstreams_layout() -> None:
    assert U.USER_TEMPLATE.format(target="A", candidates="- B\n- C") == "Target memory:A\nCandidate memories:\n- B\n- C"


def test_bare_list_reply_parses_like_upstreams_clean_response() -> None:
    assert parse_facts()([{"source_id": 1, "fact": "F"}]) == [(1, "F")]


def test_llmlingua2_unavailable_is_one_line_and_names_the_fix(monkeypatch, tmp_path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "llmlingua" else real(n, *a))
    why = llmlingua_unavailable("microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank")
    assert why is not None and "pip install -e '.[llmlingua]'" in why and "\n" not in why
    with pytest.raises(ConfigError, match="llmlingua"):
        _check_compressor("lightmem", {"compressor": "llmlingua2"}, {})
    _check_compressor("lightmem", {"compressor": "idf"}, {})  # the offline default needs nothing
    # package present, model neither a directory nor cached: names the model
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "llmlingua" else real(n, *a))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-cache"))
    why = llmlingua_unavailable("nobody/no-such-model")
    assert why is not None and "nobody/no-such-model" in why
    assert llmlingua_unavailable(str(tmp_path)) is None  # a local directory is taken as the model


def test_llmlingua2_compressor_calls_compress_prompt_as_upstream(monkeypatch) -> None:
    import sys
    import types

    seen: list[dict] = []

    class PromptCompressor:
        def __init__(self, **kw) -> None:
            seen.append(kw)
            self.tokenizer = None

        def compress_prompt(self, **kw):
            seen.append(kw)
            words = (kw["context"][0] if isinstance(kw["context"], list) else kw["context"]).split()
            return {"compressed_prompt": " ".join(words[: max(1, int(len(words) * kw["rate"]))])}

    monkeypatch.setitem(sys.modules, "llmlingua", types.SimpleNamespace(PromptCompressor=PromptCompressor))
    comp = make_compressor(LightMemConfig(compressor="llmlingua2", preset="512-0.7"))
    assert comp.compress("one two three four five six seven eight nine ten") == "one two three four five six seven"
    assert seen[0] == {
        "model_name": "microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank",
        "device_map": "cpu",
        "use_llmlingua2": True,
    }
    assert seen[1] == {
        "context": ["one two three four five six seven eight nine ten"],
        "instruction": "",
        "rate": 0.7,
        "target_token": -1,
    }
    assert comp.compress("   ") == "   "

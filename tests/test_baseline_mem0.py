"""Mem0 baseline: the real mem0ai Memory, routed through a scripted backbone (no server, no model)."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from datetime import date, datetime
from pathlib import Path

import pytest

from baselines.mem0 import SPEC, Mem0Config, Mem0Memory
from baselines.mem0.custom_instructions import CUSTOM_INSTRUCTIONS
from baselines.mem0.system import _bridge, cap_per_speaker_results, user_id
from memcore.llm.cache import ResponseCache
from memcore.llm.embedders import HashingEmbedder, MiniLMEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.types import Conversation
from tests.fakes import Mem0ExtractorLLM, mem0_section
from tests.support import conversation, method_context

# find_spec, not importorskip: mem0 must first be imported through baselines.mem0 (telemetry off)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mem0") is None, reason="mem0ai is the optional extra 'mem0'")

T1 = datetime(2023, 5, 8, 13, 56)
T2 = datetime(2023, 5, 25, 13, 14)
RAW1, RAW2 = "1:56 pm on 8 May, 2023", "1:14 pm on 25 May, 2023"


def _conversation() -> Conversation:
    return conversation(
        [
            (
                T1,
                RAW1,
                [
                    ("Caroline", "I went to the LGBTQ support group yesterday"),
                    ("Melanie", "I painted a sunrise over the lake"),
                    ("Caroline", "I want to study counseling"),
                ],
            ),
            (T2, RAW2, [("Melanie", "We went camping with the kids")]),
        ],
        conv_id="conv-26",
        speakers=("Caroline", "Melanie"),
    )


def _memory(tmp_path: Path, script: Mem0ExtractorLLM, **cfg: object) -> tuple[Mem0Memory, ScriptedBackbone]:
    backbone = ScriptedBackbone(script)
    embedder = HashingEmbedder(128)
    config = Mem0Config(embedder_route="run", **cfg)  # type: ignore[arg-type]
    mem = Mem0Memory(config, _conversation(), tmp_path / "work", lambda: backbone, lambda: embedder, seed=3)
    for turn in _conversation().turns:
        mem.ingest(turn)
    mem.finalize()
    return mem, backbone


def test_adds_per_session_and_speaker_with_session_dates(tmp_path: Path) -> None:
    script = Mem0ExtractorLLM()
    mem, backbone = _memory(tmp_path, script)
    # session 1: 3 turns → 2 add() calls per speaker; session 2: 1 call per speaker; one LLM call each
    assert backbone.calls_by_stage() == {"ingest": 6}
    assert mem.stats()["add_calls"] == 6
    dates = [(mem0_section(p, "Observation Date"), mem0_section(p, "Current Date")) for p in script.prompts]
    assert dates == [("2023-05-08", "2023-05-08")] * 4 + [("2023-05-25", "2023-05-25")] * 2
    assert all(date.today().isoformat() not in p for p in script.prompts)
    # Caroline's store sees her turns as the user and Melanie's as the assistant, "Speaker: text"
    first = mem0_section(script.prompts[0], "New Messages")
    assert "user: Caroline: I went to the LGBTQ support group yesterday" in first
    assert "assistant: Melanie: I painted a sunrise over the lake" in first
    melanie_first = mem0_section(script.prompts[2], "New Messages")
    assert "assistant: Caroline: I went to the LGBTQ support group yesterday" in melanie_first


def test_custom_instructions_are_their_evaluation_text_in_the_extraction_prompt(tmp_path: Path) -> None:
    script = Mem0ExtractorLLM()
    _memory(tmp_path, script)
    assert CUSTOM_INSTRUCTIONS.startswith("\nGenerate personal memories that follow these guidelines:\n")
    assert script.prompts and all("## Custom Instructions\n" + CUSTOM_INSTRUCTIONS in p for p in script.prompts)
    plain = Mem0ExtractorLLM()
    _memory(tmp_path / "none", plain, custom_instructions="none")
    assert all("## Custom Instructions" not in p for p in plain.prompts)


def test_provenance_maps_memories_to_their_add_call(tmp_path: Path) -> None:
    mem, _ = _memory(tmp_path, Mem0ExtractorLLM())
    stats = mem.stats()
    # 2 + 1 + 1 memories per speaker (one per message), both speakers
    assert stats["memories"] == 8 and stats["memories_with_provenance"] == 8
    assert stats["memories_per_speaker"] == {"Caroline": 4, "Melanie": 4}
    assert sorted(map(tuple, mem.provenance.values())) == sorted(
        [("D1:1", "D1:2")] * 4 + [("D1:3",)] * 2 + [("D2:1",)] * 2
    )
    # source provenance: each memory of a 2-turn batch cites the one turn its text came from
    assert sorted(map(tuple, mem.sources.values())) == sorted(
        [("D1:1",)] * 2 + [("D1:2",)] * 2 + [("D1:3",)] * 2 + [("D2:1",)] * 2
    )
    assert stats["memories_unattributed"] == 0 and stats["memories_with_source_turn"] == 8


def test_retrieve_searches_each_speaker_in_their_layout(tmp_path: Path) -> None:
    mem, _ = _memory(tmp_path, Mem0ExtractorLLM())
    mem.cfg = dataclasses.replace(mem.cfg, top_k=2)  # top_k per speaker (eval.note_cap now caps the total)
    ev = mem.retrieve("What did Caroline do at the LGBTQ support group?")
    assert len(ev.notes) == 4  # top 2 per speaker
    assert [n.channels for n in ev.notes] == [("mem0:Caroline",)] * 2 + [("mem0:Melanie",)] * 2
    assert ev.context.startswith('Memories for user Caroline:\n\n[\n    "')
    assert "\n\nMemories for user Melanie:\n\n[" in ev.context
    top = ev.notes[0]
    assert top.text == f"{RAW1}: user: Caroline: I went to the LGBTQ support group yesterday [fact]"
    assert top.dia_ids == ("D1:1",) and top.timestamp == RAW1
    assert ev.layout["speaker_memories"][0] == ("Caroline", [n.text for n in ev.notes[:2]])
    assert mem.stats()["retrieved_without_provenance"] == 0
    mem.cfg = dataclasses.replace(mem.cfg, provenance="batch")  # the lenient upper bound: both turns of the add
    assert mem.retrieve("What did Caroline do at the LGBTQ support group?").notes[0].dia_ids == ("D1:1", "D1:2")
    mem.cfg = dataclasses.replace(mem.cfg, top_k=30)
    assert len(mem.retrieve("camping").notes) == 8  # default top_k 30 > stored


def test_budget_counts_both_speakers(tmp_path: Path) -> None:
    """eval.note_cap=B: B notes in all (the B best by score over both speakers), not B per speaker."""
    mem, _ = _memory(tmp_path, Mem0ExtractorLLM())
    per_speaker = mem.retrieve("What did Caroline do at the LGBTQ support group?")
    ev = mem.retrieve("What did Caroline do at the LGBTQ support group?", budget=3)
    assert len(ev.notes) == 3
    best = sorted((n.score for n in per_speaker.notes), reverse=True)[:3]
    assert sorted((n.score for n in ev.notes), reverse=True) == pytest.approx(best)
    capped = cap_per_speaker_results({"A": [{"score": 0.9}, {"score": 0.2}], "B": [{"score": 0.5}, {"score": 0.4}]}, 2)
    assert capped == {"A": [{"score": 0.9}], "B": [{"score": 0.5}]}


def test_save_load_roundtrip(tmp_path: Path) -> None:
    mem, _ = _memory(tmp_path, Mem0ExtractorLLM())
    before = mem.retrieve("camping with the kids")
    mem.save(tmp_path / "snap")
    assert (tmp_path / "snap" / "mem0" / user_id("Caroline", "conv-26") / "history.db").is_file()
    backbone = ScriptedBackbone(Mem0ExtractorLLM())
    embedder = HashingEmbedder(128)  # stateless: the same vectors as the build's
    again = Mem0Memory(
        Mem0Config(embedder_route="run"),
        _conversation(),
        tmp_path / "work2",
        lambda: backbone,
        lambda: embedder,
        seed=3,
    )
    again.load(tmp_path / "snap")
    after = again.retrieve("camping with the kids")
    assert after.context == before.context
    assert [n.dia_ids for n in after.notes] == [n.dia_ids for n in before.notes]
    assert backbone.calls == []  # loading and searching need no LLM
    assert again.stats()["add_calls"] == 6


def test_unparseable_extraction_is_counted_and_stores_nothing(tmp_path: Path) -> None:
    mem, backbone = _memory(tmp_path, Mem0ExtractorLLM(broken=True))
    assert mem.stats()["memories"] == 0 and mem.stats()["add_calls_without_memory"] == 6
    assert backbone.usage.parse_failures()["ingest"]["mem0_extraction_empty"] == 6
    assert backbone.calls_by_stage() == {"ingest": 12}  # complete_json retries once


def test_ground_dates_replaces_both_sections_or_refuses() -> None:
    bridge = _bridge()
    prompt = "## New Messages\nuser: hi\n\n## Observation Date\n2099-01-01\n\n## Current Date\n2099-01-01\n\n# Output:"
    out = bridge.ground_dates([{"role": "user", "content": prompt}], "2023-05-08")
    assert re.findall(r"Date\n(\S+)", out[0]["content"]) == ["2023-05-08", "2023-05-08"]
    with pytest.raises(bridge.DateGroundingError):
        bridge.ground_dates([{"role": "user", "content": "no date sections"}], "2023-05-08")
    with pytest.raises(bridge.DateGroundingError):
        bridge.ground_dates([{"role": "user", "content": prompt}], None)


def test_factory_spec_and_config_errors(tmp_path: Path) -> None:
    backbone = ScriptedBackbone(Mem0ExtractorLLM())
    ctx = method_context(
        {"name": "mem0", "top_k": 5, "embedder_route": "run"},
        _conversation(),
        tmp_path,
        backbone=lambda: backbone,
        seed=0,
    )
    mem = SPEC.factory(ctx)
    assert isinstance(mem, Mem0Memory) and mem.cfg.top_k == 5
    assert "top_k" not in SPEC.construction_keys and "batch_size" in SPEC.construction_keys
    with pytest.raises(ValueError, match="llm_route"):
        Mem0Config(llm_route="proxy")
    ctx.config = {"name": "mem0", "topk": 5}
    with pytest.raises(ValueError, match="unknown config key"):
        SPEC.factory(ctx)
    direct = Mem0Memory(
        Mem0Config(embedder_route="run", llm_route="direct"),
        _conversation(),
        tmp_path / "d",
        lambda: backbone,
        lambda: HashingEmbedder(64),
        seed=0,
    )
    with pytest.raises(ValueError, match="llm_route=direct needs an OpenAI-compatible backbone"):
        direct.ingest(_conversation().turns[0])
        direct.finalize()


@pytest.mark.slow
def test_real_minilm_through_mem0_huggingface_embedder(tmp_path: Path) -> None:
    backbone = ScriptedBackbone(Mem0ExtractorLLM())
    run_embedder = MiniLMEmbedder()
    mem = Mem0Memory(Mem0Config(), _conversation(), tmp_path, lambda: backbone, lambda: run_embedder, seed=0)
    for turn in _conversation().turns:
        mem.ingest(turn)
    mem.finalize()
    assert mem.stats()["embedding_route"] == "mem0" and mem.dims == 384
    ev = mem.retrieve("camping trip with the kids", budget=1)
    assert ev.notes[1].dia_ids == ("D2:1",)  # Melanie's best memory is the camping one


def test_top_p_reaches_every_call(tmp_path: Path) -> None:
    """mem0's OpenAILLM sends config.top_p (BaseLlmConfig default 0.1); so does the backbone route."""
    seen: list[object] = []
    mem, backbone = _memory(tmp_path, Mem0ExtractorLLM())
    assert mem.cfg.top_p == 0.1
    inner = backbone.complete

    def recording(messages: object, **kw: object) -> object:
        seen.append(kw.get("top_p"))
        return inner(messages, **kw)  # type: ignore[arg-type]

    backbone.complete = recording  # type: ignore[method-assign]
    llm = next(iter(mem._memories.values())).llm
    llm._clock = None  # a bare prompt without mem0's dated sections
    prompt = [{"role": "system", "content": "Memory Extractor"}, {"role": "user", "content": "## New Messages\nhi\n"}]
    llm.generate_response(prompt, response_format={"type": "json_object"})
    assert seen and all(p == 0.1 for p in seen)


def test_backbone_cache_key_holds_top_p_only_when_given(tmp_path: Path) -> None:
    base = {
        "model": "m",
        "messages": [],
        "temperature": 0.0,
        "max_tokens": 1,
        "json": False,
        "seed": None,
        "prompt_version": "",
        "extra_body": {},
    }
    assert ResponseCache.key(base) != ResponseCache.key({**base, "top_p": 0.1})

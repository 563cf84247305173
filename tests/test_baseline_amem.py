"""A-MEM baseline: note construction, evolution, link-capped retrieval, fallbacks, persistence."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from baselines.amem import SPEC, AMem, AMemConfig, AMemNote
from baselines.amem.system import parse_analysis, parse_evolution
from memcore.datasets.locomo.loader import load_locomo
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.types import Conversation, Turn
from tests.fakes import AMemLLM
from tests.support import conversation, data_file_or_skip, method_context

T1 = datetime(2023, 5, 8, 13, 56)
T2 = datetime(2023, 5, 25, 13, 14)


def _conversation() -> Conversation:
    return conversation(
        [
            (
                T1,
                "1:56 pm on 8 May, 2023",
                [
                    ("Caroline", "I went to the LGBTQ support group yesterday"),
                    ("Melanie", "I painted a sunrise over the lake last year"),
                ],
            ),
            (T2, "1:14 pm on 25 May, 2023", [("Caroline", "The LGBTQ support group meets again next week")]),
        ],
        speakers=("Caroline", "Melanie"),
    )


def _turns() -> list[Turn]:
    return list(_conversation().turns)


def _build(script: AMemLLM, **overrides: object) -> tuple[AMem, ScriptedBackbone]:
    backbone = ScriptedBackbone(script)
    embedder = HashingEmbedder(256)
    cfg = AMemConfig(**overrides)  # type: ignore[arg-type]
    mem = AMem(cfg, lambda: backbone, lambda: embedder, seed=7)
    for turn in _turns():
        mem.ingest(turn)
    mem.finalize()
    return mem, backbone


def test_notes_carry_llm_metadata_timestamp_and_one_dia_id() -> None:
    mem, backbone = _build(AMemLLM())
    assert [n.dia_id for n in mem.notes] == ["D1:1", "D1:2", "D2:1"]
    first = mem.notes[0]
    assert first.content == "Speaker Caroline says : I went to the LGBTQ support group yesterday"
    assert first.timestamp == "1:56 pm on 8 May, 2023"
    assert first.keywords == ["group", "yesterday"]
    # two LLM calls per turn (analysis + evolution, even for the first note), all at the ingest stage
    assert backbone.calls_by_stage() == {"ingest": 6}
    assert backbone.usage.stage("ingest").calls == 6
    assert mem.docs[0] == (
        "content:Speaker Caroline says : I went to the LGBTQ support group yesterday context:about yesterday "
        "keywords: group, yesterday tags: chat"
    )


def test_evolution_prompt_lists_neighbours_and_applies_actions() -> None:
    script = AMemLLM()
    mem, _ = _build(script)
    assert "The number of neighbors is 0." in script.evolution_prompts[0]
    third = script.evolution_prompts[2]
    assert "The number of neighbors is 2." in third
    first_line = third.split("The nearest neighbors memories:\n", 1)[1].splitlines()[0]
    assert first_line.startswith("memory index:")
    top_neighbour = int(first_line.split("\t", 1)[0].removeprefix("memory index:"))
    assert "\t talk start time:" in first_line and "\t memory tags: ['" in first_line
    new = mem.notes[2]
    assert new.links == [0]  # index 7 does not exist and is dropped
    assert new.tags == ["support", "group"]
    assert mem.notes[top_neighbour].context == "Caroline attends an LGBTQ support group"
    assert mem.notes[top_neighbour].tags == ["lgbtq", "support"]
    stats = mem.stats()
    assert stats["evolutions"] == 1
    assert stats["links_added"] == 1 and stats["links_dropped_invalid"] == 1
    assert stats["neighbor_updates"] == 1
    assert stats["consolidations"] == 0


def test_consolidation_rebuilds_documents_after_threshold() -> None:
    mem, _ = _build(AMemLLM(), evo_threshold=1)
    assert mem.stats()["consolidations"] == 1
    assert mem.docs[2] == (
        "Speaker Caroline says : The LGBTQ support group meets again next week , about week next week support group"
    )
    assert mem.vectors is not None and mem.vectors.shape == (3, 256)


def test_retrieve_uses_query_keywords_timestamps_and_links() -> None:
    mem, backbone = _build(AMemLLM())
    mem.cfg = dataclasses.replace(mem.cfg, retrieve_k=1)  # k = 1 (eval.note_cap now also caps the linked notes)
    ev = mem.retrieve("When did Caroline go to the support group?")
    assert ev.extra["amem_query"] == "LGBTQ support group"
    assert backbone.calls_by_stage()["retrieve"] == 1
    assert [(n.note_id, n.channels) for n in ev.notes] == [("amem-2", ("semantic",)), ("amem-0", ("link",))]
    assert ev.dia_ids == ["D2:1", "D1:1"]
    lines = ev.context.splitlines()
    assert lines[0] == (
        "talk start time:1:14 pm on 25 May, 2023memory content: Speaker Caroline says : The LGBTQ support group "
        "meets again next weekmemory context: about weekmemory keywords: ['next', 'week']memory tags: "
        "['support', 'group']"
    )
    assert lines[1].startswith("talk start time:1:56 pm on 8 May, 2023memory content: Speaker Caroline says : I went")


def _manual_memory(links: list[list[int]]) -> AMem:
    embedder = HashingEmbedder(64)
    mem = AMem(AMemConfig(query_keywords=False), lambda: ScriptedBackbone(lambda m: "{}"), lambda: embedder, seed=0)
    for i, lk in enumerate(links):
        mem.notes.append(AMemNote(f"amem-{i}", f"note {i}", "t", f"D1:{i + 1}", ["k"], "c", ["t"], list(lk)))
        mem.docs.append(f"doc {i}")
    # note 0 is the best match for the query direction, note 1 second, then the rest
    q = embedder.encode(["query"])[0]
    other = np.roll(q, 1)
    mem.vectors = np.stack([q, 0.9 * q + 0.1 * other, other, other]).astype(np.float32)
    return mem


def test_neighbour_cap_mirrors_their_shared_counter() -> None:
    mem = _manual_memory([[2, 3, 1], [3], [], []])
    mem.cfg = dataclasses.replace(mem.cfg, retrieve_k=2)  # k = 2 (eval.note_cap now also caps the linked notes)
    ev = mem.retrieve("query")
    # k=2: note 0, its neighbours 2 and 3 (j→2), neighbour 1 (added, then break); note 1, neighbour 3, break
    assert [line.split("memory content: ")[1].split("memory context")[0] for line in ev.context.splitlines()] == [
        "note 0",
        "note 2",
        "note 3",
        "note 1",
        "note 1",
        "note 3",
    ]
    assert [n.note_id for n in ev.notes] == ["amem-0", "amem-2", "amem-3", "amem-1"]
    assert ev.notes[3].channels == ("link", "semantic")
    assert ev.dia_ids == ["D1:1", "D1:3", "D1:4", "D1:2"]


def test_unparseable_analysis_falls_back_and_is_counted() -> None:
    mem, backbone = _build(AMemLLM(analysis_reply="not json"))
    assert mem.notes[2].context == "General" and all(n.keywords == [] for n in mem.notes)
    assert mem.stats()["analysis_fallbacks"] == 3
    assert backbone.usage.parse_failures()["ingest"]["amem_analysis_default_general"] == 3
    # each failed analysis is tried twice (complete_json retry), evolution once per turn
    assert backbone.calls_by_stage() == {"ingest": 9}


def test_reply_validation() -> None:
    a = parse_analysis({"keywords": "a, b", "context": ["x", "y"], "tags": ["t"]})
    assert (a.keywords, a.context, a.tags) == (["a", "b"], "x y", ["t"])
    with pytest.raises(ValueError):
        parse_analysis({"keywords": [], "context": "c"})
    d = parse_evolution({"should_evolve": "true", "actions": "strengthen", "suggested_connections": ["3", 1.0, True]})
    assert d.should_evolve and d.actions == ["strengthen"] and d.suggested_connections == [3, 1]
    with pytest.raises(ValueError):
        parse_evolution({"actions": []})


def test_save_load_roundtrip(tmp_path: Path) -> None:
    mem, _ = _build(AMemLLM())
    before = mem.retrieve("support group")
    mem.save(tmp_path)
    backbone = ScriptedBackbone(AMemLLM())
    embedder = HashingEmbedder(256)
    again = AMem(AMemConfig(), lambda: backbone, lambda: embedder, seed=7)
    again.load(tmp_path)
    after = again.retrieve("support group")
    assert after.context == before.context
    assert [n.dia_ids for n in after.notes] == [n.dia_ids for n in before.notes]
    assert again.stats()["evolutions"] == 1
    with pytest.raises(ValueError, match="format_version"):
        AMem(AMemConfig(format_version=1), lambda: backbone, lambda: embedder, seed=7).load(tmp_path)


def test_factory_validates_config_and_spec(tmp_path: Path) -> None:
    backbone = ScriptedBackbone(AMemLLM())
    ctx = method_context({"name": "amem", "retrieve_k": 3}, _conversation(), tmp_path, backbone=lambda: backbone)
    mem = SPEC.factory(ctx)
    assert isinstance(mem, AMem) and mem.cfg.retrieve_k == 3
    assert SPEC.ingest_uses_llm({}, {}) is True
    assert SPEC.retrieve_uses_llm({"query_keywords": False}, {}) is False
    assert "retrieve_k" not in SPEC.construction_keys and "temperature" in SPEC.construction_keys
    ctx.config = {"name": "amem", "top_k": 3}
    with pytest.raises(ValueError, match="unknown config key"):
        SPEC.factory(ctx)


def test_neighbour_counter_per_note_follows_the_upstream_fix() -> None:
    """5b345e6 resets the linked-note counter for every hit; before it, one counter ran over all hits."""

    def contents(counter: str) -> list[str]:
        mem = _manual_memory([[2, 3], [2, 3, 0], [], []])
        mem.cfg = dataclasses.replace(mem.cfg, retrieve_k=2, neighbor_counter=counter)
        ev = mem.retrieve("query")
        return [line.split("memory content: ")[1].split("memory context")[0] for line in ev.context.splitlines()]

    # k=2 hits: notes 0 and 1. Shared j: note 0 adds 2 (j=1), 3 (j=2); note 1 adds 2, then j >= 2 stops it
    assert contents("shared") == ["note 0", "note 2", "note 3", "note 1", "note 2"]
    # per note: note 1 starts again at j=0 and adds 2, 3, 0 (the break comes after the k+1-th)
    assert contents("per_note") == ["note 0", "note 2", "note 3", "note 1", "note 2", "note 3", "note 0"]
    with pytest.raises(ValueError, match="neighbor_counter"):
        AMemConfig(neighbor_counter="global")


def test_budget_counts_linked_neighbours() -> None:
    """eval.note_cap=B gives at most B distinct notes, linked neighbours included (k alone would give 4 here)."""
    mem = _manual_memory([[2, 3, 1], [3], [], []])
    ev = mem.retrieve("query", budget=2)
    assert [n.note_id for n in ev.notes] == ["amem-0", "amem-2"]
    assert len(mem.retrieve("query", budget=3).notes) == 3


def test_image_turns_are_ingested_as_their_loader_writes_them() -> None:
    """load_dataset.py: an image turn is "[Image: <caption>] <text>"; image_text=harness keeps Turn.text."""
    turn = Turn(
        "D1:5",
        "Caroline",
        "look at this [shares an image: a dog]",
        1,
        T1,
        "1:56 pm on 8 May, 2023",
        image_caption="a dog",
        has_img_url=True,
    )
    backbone = ScriptedBackbone(AMemLLM())
    embedder = HashingEmbedder(64)
    mem = AMem(AMemConfig(), lambda: backbone, lambda: embedder, seed=7)
    assert mem.turn_text(turn) == "[Image: a dog] look at this"
    mem.ingest(turn)
    assert mem.notes[0].content == "Speaker Caroline says : [Image: a dog] look at this"
    harness = AMem(AMemConfig(image_text="harness"), lambda: backbone, lambda: embedder, seed=7)
    assert harness.turn_text(turn) == turn.text
    # load_dataset.py:65 captions only a turn with img_url: without it, the text alone
    assert mem.turn_text(dataclasses.replace(turn, has_img_url=False)) == "look at this"


@pytest.mark.usefixtures("locomo_path")
def test_the_loader_records_img_url_and_counts_captions_amem_leaves_out() -> None:
    ds = load_locomo(data_file_or_skip())
    turns = [t for c in ds.conversations for t in c.turns]
    assert sum(t.has_img_url for t in turns) == 910
    assert sum(1 for t in turns if t.image_caption and not t.has_img_url) == ds.report["caption_without_img_url"] == 316


def test_k_per_backbone_comes_from_the_method_config(compose) -> None:
    from omegaconf import OmegaConf

    def k(*overrides: str) -> int:
        cfg = compose(["method=amem", *overrides])
        return int(OmegaConf.to_container(cfg.method, resolve=True)["retrieve_k"])

    assert k("backbone=gpt-4o-mini") == 10
    assert k("backbone=qwen3-8b", "method.retrieve_k_by_backbone.qwen3-8b=35") == 35
    assert k("backbone=qwen3-8b", "method.retrieve_k=20") == 20  # an explicit k wins (the k sweep)
    assert k("backbone=scripted") == 10  # a backbone not in the map

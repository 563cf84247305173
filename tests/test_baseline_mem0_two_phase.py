"""mem0-two-phase: extraction then ADD/UPDATE/DELETE/NONE against each fact's nearest memories, mem0ai
1.0.11's prompts verbatim, provenance per event, per-speaker search, budget, persistence."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from baselines.mem0 import prompts_v1 as P
from baselines.mem0.two_phase import SPEC, Mem0TwoPhase, Mem0TwoPhaseConfig, parse_facts, parse_messages
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.runner import run_config
from memcore.types import Conversation
from tests.fakes import Mem0TwoPhaseLLM
from tests.support import conversation

T1, T2 = datetime(2023, 5, 8, 13, 56), datetime(2023, 5, 25, 13, 14)
RAW1, RAW2 = "1:56 pm on 8 May, 2023", "1:14 pm on 25 May, 2023"


def _conversation() -> Conversation:
    return conversation(
        [
            (
                T1,
                RAW1,
                [("Caroline", "I went to the LGBTQ support group yesterday"), ("Melanie", "I painted a lake sunrise")],
            ),
            (T2, RAW2, [("Caroline", "I stopped going to the support group")]),
        ],
        conv_id="conv-t",
        speakers=("Caroline", "Melanie"),
    )


def _system(tmp_path: Path, **cfg: object) -> tuple[Mem0TwoPhase, ScriptedBackbone, Mem0TwoPhaseLLM]:
    script = Mem0TwoPhaseLLM()
    backbone = ScriptedBackbone(script)
    embedder = HashingEmbedder(64)
    mem = Mem0TwoPhase(Mem0TwoPhaseConfig(**cfg), _conversation(), lambda: backbone, lambda: embedder, seed=3)  # type: ignore[arg-type]
    for t in _conversation().turns:
        mem.ingest(t)
    mem.finalize()
    return mem, backbone, script


def test_extraction_defaults_to_the_paper_era_prompt(tmp_path: Path) -> None:
    assert Mem0TwoPhaseConfig().extraction_prompt == "fact_retrieval"
    _, _, script = _system(tmp_path)
    system = script.extractions[0][0]["content"]
    assert system == P.FACT_RETRIEVAL_PROMPT.replace(P.DATE_PLACEHOLDER, "2023-05-08")
    assert "Today's date is 2023-05-08." in system


def test_two_calls_per_add_prompts_verbatim_and_dated(tmp_path: Path) -> None:
    mem, _, script = _system(tmp_path, extraction_prompt="user")
    # session 1: one batch per speaker; session 2: one batch per speaker; Melanie's batch in session 2 has
    # no user line → no facts → no update call
    assert mem.counters["add_calls"] == 4 and mem.counters["extraction_calls"] == 4
    assert mem.counters["update_calls"] == 3 and mem.counters["adds_without_facts"] == 1
    first = script.extractions[0]
    assert first[0]["content"] == P.USER_MEMORY_EXTRACTION_PROMPT.replace(P.DATE_PLACEHOLDER, "2023-05-08")
    assert "Today's date is 2023-05-08." in first[0]["content"]
    assert first[1]["content"] == (
        "Input:\nuser: Caroline: I went to the LGBTQ support group yesterday\nassistant: Melanie: I painted a lake sunrise\n"
    )
    assert script.updates[0].startswith(P.DEFAULT_UPDATE_MEMORY_PROMPT)
    assert "Current memory is empty." in script.updates[0]


def test_events_update_provenance_and_search_layout(tmp_path: Path) -> None:
    mem, _, _ = _system(tmp_path)
    caroline = mem.stores["Caroline"]
    assert len(caroline.records) == 1
    rec = next(iter(caroline.records.values()))
    # ADD in session 1 (turns D1:1, D1:2), UPDATE in session 2 (D2:1): text, timestamp and provenance follow
    assert rec.text == "I stopped going to the support group (updated)" and rec.timestamp == RAW2
    assert rec.dia_ids == ["D1:1", "D1:2", "D2:1"]
    # source provenance: the ADD came from D1:1 (not Melanie's D1:2); the UPDATE keeps D1:1's content and adds D2:1
    assert rec.source_ids == ["D1:1", "D2:1"]
    assert mem.counters["events_add"] == 2 and mem.counters["events_update"] == 1
    assert mem.counters["events_unattributed"] == 0 and mem.stats()["memories_unattributed"] == 0
    ev = mem.retrieve("support group")
    assert [n.dia_ids for n in ev.notes if n.note_id == rec.mem_id] == [("D1:1", "D2:1")]
    lenient = Mem0TwoPhase(
        Mem0TwoPhaseConfig(provenance="batch"), _conversation(), lambda: None, lambda: mem.embedder, 3
    )
    lenient.stores = mem.stores
    assert [n.dia_ids for n in lenient.retrieve("support group").notes if n.note_id == rec.mem_id] == [
        ("D1:1", "D1:2", "D2:1")
    ]
    assert ev.layout["speaker_memories"][0][0] == "Caroline" and ev.layout["speaker_memories"][1][0] == "Melanie"
    assert ev.context.startswith('Memories for user Caroline:\n\n[\n    "1:14 pm on 25 May, 2023: I stopped')
    assert "Memories for user Melanie:" in ev.context and len(ev.notes) == 2
    assert len(mem.retrieve("support group", budget=1).notes) == 1


def test_invalid_ids_and_deletes(tmp_path: Path) -> None:
    mem, _, _ = _system(tmp_path)
    store = mem.stores["Melanie"]
    applied = mem._apply(
        store,
        [
            {"id": "7", "text": "x", "event": "UPDATE"},
            {"id": "0", "text": "gone", "event": "DELETE"},
            {"text": "", "event": "ADD"},
            {"id": "0", "text": "same", "event": "NONE"},
        ],
        {"0": next(iter(store.records))},
        {},
        RAW2,
        [t for t in _conversation().turns if t.dia_id == "D2:1"],
    )
    assert [a["event"] for a in applied] == ["DELETE"] and not store.records
    assert mem.counters["events_invalid"] == 2 and mem.counters["events_none"] == 1


def test_events_are_compared_exactly_as_upstream(tmp_path: Path) -> None:
    """v0.1.93 ``_add_to_vector_store`` tests ``resp.get("event") == "ADD"``: another case or spacing does nothing
    (counted invalid here), and the text is stored as given."""
    mem, _, _ = _system(tmp_path)
    store = mem.stores["Melanie"]
    before = dict(store.records)
    batch = _conversation().turns[:2]
    applied = mem._apply(
        store,
        [{"text": "Paints", "event": "add"}, {"text": "Swims", "event": " ADD"}, {"text": " Sings ", "event": "ADD"}],
        {},
        {},
        RAW1,
        batch,
    )
    assert [(a["event"], a["memory"]) for a in applied] == [("ADD", " Sings ")]
    assert len(store.records) == len(before) + 1 and mem.counters["events_invalid"] == 2


def test_an_add_no_batch_turn_supports_is_unattributed_not_credited_to_both(tmp_path: Path) -> None:
    mem, _, _ = _system(tmp_path)
    store = mem.stores["Melanie"]
    batch = _conversation().turns[:2]
    applied = mem._apply(store, [{"text": "Enjoys quiet evenings", "event": "ADD"}], {}, {}, RAW1, batch)
    rec = store.records[applied[0]["id"]]
    assert rec.source_ids == [] and rec.dia_ids == ["D1:1", "D1:2"]
    assert mem.counters["events_unattributed"] == 1


def test_save_load_and_spec(tmp_path: Path) -> None:
    mem, backbone, _ = _system(tmp_path)
    before = mem.retrieve("support group")
    mem.save(tmp_path / "snap")
    again = Mem0TwoPhase(Mem0TwoPhaseConfig(), _conversation(), lambda: backbone, lambda: HashingEmbedder(64), seed=3)
    again.load(tmp_path / "snap")
    after = again.retrieve("support group")
    assert after.context == before.context and [n.dia_ids for n in after.notes] == [n.dia_ids for n in before.notes]
    assert "top_k" not in SPEC.construction_keys and "top_p" in SPEC.construction_keys
    assert parse_facts({"facts": ["a", {"fact": "b"}, {"text": "c"}, ""]}) == ["a", "b", "c"]
    assert (
        parse_messages([{"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}])
        == "user: u\nassistant: a\n"
    )
    with pytest.raises(ValueError, match="extraction_prompt"):
        Mem0TwoPhaseConfig(extraction_prompt="agent")


@pytest.mark.usefixtures("locomo_path")
def test_runs_through_the_runner(tmp_path: Path, compose) -> None:
    responder = Mem0TwoPhaseLLM(answer="a guess")  # the protocol's answerer gets "a guess"
    base = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=mem0-two-phase"]
    result = run_config(compose(base), tmp_path / "run", backbone_override=ScriptedBackbone(responder))
    assert result.n_items == 8
    per_turn = result.cost["memory_build"]["llm_calls_per_turn"]
    # one add per speaker per 2-turn batch (36 for 35 turns in 2 sessions), up to 2 calls each
    assert 1.0 < per_turn <= 2 * 36 / 35


def test_prompts_are_pinned() -> None:
    """prompts_v1 was generated from mem0ai v1.0.11 mem0/configs/prompts.py (checked against its
    get_update_memory_messages then); the hashes catch any later edit."""
    import hashlib

    def h(text: str) -> str:
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    assert h(P.USER_MEMORY_EXTRACTION_PROMPT) == "41038ca27ac7460d"
    assert h(P.FACT_RETRIEVAL_PROMPT) == "05e1fd326315d796"
    assert h(P.DEFAULT_UPDATE_MEMORY_PROMPT) == "d68a6ef706f5477c"
    assert h(P.update_memory_prompt([{"id": "0", "text": "t"}], ["f"])) == "9e1bf8c5bc7c8f8f"
    assert P.update_memory_prompt([], ["f"]).count("Current memory is empty.") == 1

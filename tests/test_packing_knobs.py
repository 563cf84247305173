"""The knob group of every method that packs turns (memcore.packing.knobs): declared once, so MemCoRe's and the RAG
baselines' configs carry the same eight keys with the same defaults and ranges; a table row's label comes from
the method's spec, not from knob names the report knows."""

from __future__ import annotations

import dataclasses

from baselines.rag import ADDED_KEY_DEFAULTS, RAGConfig
from memcore.memory.config import MemCoReConfig
from memcore.methods import get_method
from memcore.packing.knobs import TURN_KNOB_DEFAULTS, TurnPackingKnobs
from memcore.packing.turns import Cues, Windows


def test_both_configs_carry_the_one_group() -> None:
    group = {f.name: f for f in dataclasses.fields(TurnPackingKnobs)}
    assert len(group) == 8
    for cls in (RAGConfig, MemCoReConfig):
        own = {f.name: f for f in dataclasses.fields(cls)}
        assert all(own[k] is group[k] for k in group), cls  # the group's fields themselves, not copies
    assert ADDED_KEY_DEFAULTS == TURN_KNOB_DEFAULTS
    rag = RAGConfig(pack_cue_date=1.0, pack_window_bm25=2.0, pack_window_width=4, rrf_k=30)
    assert rag.cues == Cues(date=1.0, rrf_k=30) and rag.windows == Windows(2.0, 0.0, 4)
    mem = MemCoReConfig(pack_cue_filler=2, pack_window_dense=1.0)
    assert mem.cues_fused_with(mem.rrf_k) == Cues(filler=2, rrf_k=60) and mem.windows == Windows(0.0, 1.0, 2)


def test_a_rows_packing_label_comes_from_its_methods_spec() -> None:
    rag = get_method("rag_hybrid").packing_label
    memcore = get_method("memcore-cheap").packing_label
    assert rag is not None and memcore is not None
    assert rag({"pack_frame": "line"}) == ""
    assert rag({"pack_frame": "session", "pack_cue_date": 1.0, "pack_window_bm25": 2.0}) == (
        ", session frame + cues + windows"
    )
    assert memcore({"pack": True, "pack_frame": "session_rank", "pack_link": 1.0, "pack_window_dense": 1.0}) == (
        ", packed, session frame (rank order) + windows, links"
    )
    assert memcore({"pack": False, "pack_frame": "session", "pack_cue_date": 1.0}) == ", whole notes"
    assert memcore({"pack_topic": 1.0}) == " + topics"  # a run recorded before ``pack`` existed
    assert get_method("full_context").packing_label is None

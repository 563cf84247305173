"""What the memory already knows, in the packer: the session windows (memcore/packing/turns.py, shared with the RAG
baselines), the hierarchy lists of MemCoRe's packer (memcore/memory/packing.py: keyword graph, topics, links) and
the switches and knobs that turn them off."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from baselines.rag import RAG, RAGConfig, _check_retriever
from memcore.errors import ConfigError
from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import MemCoReConfig
from memcore.memory.packing import HIERARCHY_LISTS, PackQuery
from memcore.packing.turns import TurnBM25, WindowIndex, Windows, session_windows
from memcore.text import count_tokens
from tests.support import build, conversation_of

# Dave's "it's like therapy" names no car: only the turn before it does (coreference).
CARS = [
    "I've been working on cars in my garage every weekend.",
    "It's like therapy for me, it clears my head.",
    "That sounds relaxing. I went hiking near the lake.",
    "The lake trail had a lot of mud this time.",
    "My sister baked a lemon cake for the party.",
    "The party had a band playing old jazz songs.",
    "I bought new running shoes for the marathon.",
    "The marathon starts at seven in the morning.",
    "We painted the kitchen a pale green colour.",
    "The green paint took two days to dry.",
    "I read a novel about a lighthouse keeper.",
    "The lighthouse keeper story was sad but lovely.",
]
QUESTION = "What does working on cars mean for Dave?"


# ------------------------------------------------------------------ session windows
def test_session_windows_stay_in_the_session_and_a_repeated_turn_stands_at_its_first_place() -> None:
    ids = ["D1:1", "D1:2", "D1:3", "D2:1", "D1:2"]
    got = session_windows(ids, 1)
    assert got[0] == [(0, 0), (1, 1)]
    assert got[1] == [(1, 0), (0, 1), (2, 1)]
    assert got[3] == [(3, 0)]  # D1:3 and D2:1 are not neighbours: another session
    assert got[4] == [(4, 0), (0, 1), (2, 1)]
    assert session_windows(ids, 2)[0] == [(0, 0), (1, 1), (2, 2)]
    assert session_windows(["x"], 2) == [[(0, 0)]]  # an id without a turn number is its own window


def test_a_window_vector_weighs_each_turn_by_two_to_the_minus_distance() -> None:
    vectors = np.eye(3, dtype=np.float32)
    ix = WindowIndex(["D1:1", "D1:2", "D1:3"], ["apple", "banana", "cherry"], vectors, 1)
    want = np.array([0.5, 1.0, 0.5]) / np.linalg.norm([0.5, 1.0, 0.5])
    assert np.allclose(ix.vectors[1], want)
    assert np.allclose(ix.vectors[0], np.array([1.0, 0.5, 0.0]) / np.linalg.norm([1.0, 0.5]))
    lists, weights = ix.lists("banana", vectors[0], Windows(bm25=2.0, dense=0.5, width=1))
    assert lists["window_bm25"] == [0, 1, 2] or set(lists["window_bm25"]) == {0, 1, 2}  # banana is in every window
    assert weights == {"window_bm25": 2.0, "window_dense": 0.5}
    assert lists["window_dense"][0] == 0 and set(lists["window_dense"]) == {0, 1, 2}


def test_a_turn_is_found_through_its_window_when_it_shares_no_word_with_the_question() -> None:
    ids = [f"D1:{i + 1}" for i in range(len(CARS))]
    plain = TurnBM25(CARS)
    assert 1 not in plain.ranked(QUESTION, range(len(CARS)))  # "it's like therapy" shares no word
    window = WindowIndex(ids, CARS, np.zeros((len(CARS), 4), dtype=np.float32), 1)
    lists, _ = window.lists(QUESTION, np.zeros(4, dtype=np.float32), Windows(bm25=1.0))
    assert lists["window_bm25"][:2] == [0, 1] or set(lists["window_bm25"][:2]) == {0, 1}
    assert Windows(bm25=1.0, width=0).active is False and Windows().active is False


def test_turn_bm25_search_takes_the_best_k_and_ranked_keeps_to_its_rows() -> None:
    bm25 = TurnBM25(["red apple", "green apple pie", "blue sky"])
    top = bm25.search("apple pie", 5)
    assert [i for i, _ in top] == [1, 0] and all(s > 0 for _, s in top)
    assert bm25.search("apple pie", 1) == top[:1]
    assert bm25.ranked("apple", [0, 2]) == [0]
    assert bm25.search("the of", 3) == [] and TurnBM25([]).search("apple", 3) == []
    assert TurnBM25(["the", "of a"]).ranked("the apple", [0, 1]) == []  # a corpus of stop words matches nothing


# ------------------------------------------------------------------ MemCoRe's packer
def _lists(system, question: str) -> dict[str, list[int]]:
    pool = system._refiner.retrieve(question, 20)
    lists, _ = system._packer.lists(
        PackQuery([question], pool.ranked, pool.channels, pool.first_keywords, pool.first_topics)
    )
    return lists


HIER = {
    "pack_keyword": 1.0,
    "pack_keyword_graph": 3,
    "pack_topic": 0.5,
    "pack_link": 0.5,
    "pack_link_text": 0.5,
    "pack_window_bm25": 1.0,
    "pack_window_dense": 1.0,
}


def test_every_hierarchy_and_window_list_joins_the_ranking_with_its_weight(tmp_path: Path) -> None:
    system, _, _ = build(conversation_of(CARS), tmp_path, cheap=True, pack=True, **HIER)
    pool = system._refiner.retrieve(QUESTION, 20)
    query = PackQuery([QUESTION], pool.ranked, pool.channels, pool.first_keywords, pool.first_topics)
    lists, weights = system._packer.lists(query)
    assert {"note", "dense0", "bm250", "window_bm25", "window_dense"} <= set(lists)
    assert set(HIERARCHY_LISTS) <= set(lists)
    assert bool(lists["link"]) == bool(system.store.edges)  # the link list follows the gate's edges
    assert weights["keyword"] == 1.0 and weights["topic"] == 0.5 and weights["window_bm25"] == 1.0
    # the keyword list ranks only turns of notes holding a matched keyword or one of its graph neighbours
    assert query.keywords, "the question's entities should match stored keywords"
    hx = system._packer.hx
    reached = {k for k, _ in query.keywords} | {b for k, _ in query.keywords for b, _ in hx.graph.get(k, [])[:3]}
    notes = {system._packer.ix.refs[r][0] for r in lists["keyword"]}
    assert notes and all(set(system.kindex.note_keywords[n]) & reached for n in notes)


def test_a_switched_off_layer_has_no_list_in_the_packer_either(tmp_path: Path) -> None:
    conv = conversation_of(CARS)
    for abl, gone in (("wo_keyword", {"keyword"}), ("wo_topic", {"topic"}), ("wo_neighbor", {"link", "link_text"})):
        system, _, _ = build(conv, tmp_path / abl, cheap=True, abl=abl, pack=True, **HIER)
        lists = _lists(system, QUESTION)
        assert not gone & set(lists), abl
        assert {"window_bm25", "window_dense"} <= set(lists)


def test_with_every_new_weight_at_zero_the_packed_context_is_the_old_one(tmp_path: Path) -> None:
    conv = conversation_of(CARS)
    old, _, _ = build(conv, tmp_path / "old", cheap=True, pack=True, **dict.fromkeys(HIER, 0))
    assert set(_lists(old, QUESTION)) == {"note", "dense0", "bm250"}
    assert old._packer.hx is None and old._packer.windows is None


def test_the_window_brings_the_coreferent_turn_into_a_small_budget(tmp_path: Path) -> None:
    conv = conversation_of(CARS)
    off, _, _ = build(conv, tmp_path / "off", cheap=True, pack=True, pack_cue_neighbors=0)
    on, _, _ = build(conv, tmp_path / "on", cheap=True, pack=True, pack_cue_neighbors=0, pack_window_bm25=3.0)
    tokens = 2 * count_tokens(f"[{conv.turns[0].session_time_raw}] Alice: {CARS[0]}")
    assert "D1:2" not in off.retrieve_within(QUESTION, tokens).dia_ids
    assert "D1:2" in on.retrieve_within(QUESTION, tokens).dia_ids


# ------------------------------------------------------------------ the RAG baselines take the same windows
def test_rag_hybrid_fuses_the_windows_under_a_context_budget(tmp_path: Path) -> None:
    conv = conversation_of(CARS)

    def rag(**kw: float) -> RAG:
        system = RAG(RAGConfig(pack_frame="session", **kw), lambda: HashingEmbedder(256))
        for turn in conv.turns:
            system.ingest(turn)
        system.finalize()
        return system

    # the session frame: one date header, then the two turns
    tokens = count_tokens(f"[{conv.turns[0].session_time_raw}]\nAlice: {CARS[0]}\nBob: {CARS[1]}")
    assert "D1:2" not in rag().retrieve_within(QUESTION, tokens).dia_ids
    assert "D1:2" in rag(pack_window_bm25=3.0).retrieve_within(QUESTION, tokens).dia_ids
    assert rag().retrieve(QUESTION).dia_ids == rag(pack_window_bm25=3.0).retrieve(QUESTION).dia_ids  # no budget


# ------------------------------------------------------------------ bad knobs: one line before any work
@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("pack_keyword", -0.5, ">= 0"),
        ("pack_link_text", -1.0, ">= 0"),
        ("pack_window_bm25", -2.0, ">= 0"),
        ("pack_window_width", 0, ">= 1"),
        ("pack_link_anchors", 0, ">= 1"),
        ("pack_keyword_graph", -1, ">= 0"),
    ],
)
def test_a_negative_weight_or_an_empty_window_is_refused(key: str, value: float, said: str) -> None:
    with pytest.raises(ConfigError, match=said) as err:
        MemCoReConfig.from_dict({key: value})
    assert f"{key}={value}" in str(err.value) and "\n" not in str(err.value)


def test_an_unknown_list_name_is_refused_with_the_close_one() -> None:
    with pytest.raises(ConfigError, match="pack_keyword"):
        MemCoReConfig.from_dict({"pack_kyword": 1.0})


def test_rag_bm25_has_no_window_vectors_to_rank_by() -> None:
    with pytest.raises(ConfigError, match="pack_window_dense"):
        _check_retriever("rag_bm25", {"retriever": "bm25", "pack_window_dense": 1.0}, {})
    _check_retriever("rag_bm25", {"retriever": "bm25", "pack_window_bm25": 1.0}, {})

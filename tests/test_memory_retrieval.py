"""Retrieval pieces with hand-computed values: RRF, keyword channel, neighbour expansion, near-duplicates,
keyword normalisation, the cheap query plan, topics within their size bounds."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from memcore.fusion import rrf_fuse
from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.ingestion import StatisticalKeywords, clean_text
from memcore.memory.keywords import KeywordIndex, normalise_keyword
from memcore.memory.notes import NoteStore, RawTurn, VectorMatrix
from memcore.memory.retrieval import RetrievalIndex, Retriever, cheap_plan
from memcore.memory.system import near_duplicate_rate
from memcore.memory.topics import Topics, compute_topics
from tests.support import QUESTIONS, TOPIC_TURNS, build, conversation_of


def test_rrf_hand_computed() -> None:
    fused = rrf_fuse({"topic": [1, 2, 3], "keyword": [3, 1]}, k=60)
    assert [n for n, _ in fused] == [1, 3, 2]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[1][1] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2][1] == pytest.approx(1 / 62)


def _index(n: int = 4, dim: int = 8) -> tuple[RetrievalIndex, NoteStore, KeywordIndex]:
    store = NoteStore(dim=dim)
    kindex = KeywordIndex()
    eye = np.eye(dim, dtype=np.float32)
    kws = [["dog", "rex"], ["dog"], ["painting"], ["rex", "park"]]
    for i in range(n):
        store.add([RawTurn(f"D1:{i + 1}", "A", f"t{i}", "t")], f"t{i}", kws[i], eye[i], denoised=False)
        kindex.set_note(i, kws[i])
    kw_vecs = VectorMatrix(dim)
    kw_vecs.extend(eye[: len(kindex)])
    indptr, ids = kindex.posting_arrays()
    topics = Topics.empty(dim)
    return RetrievalIndex(store, kindex, topics, kw_vecs, kindex.idf(n), indptr, ids), store, kindex


def test_keyword_channel_scores_by_cosine_times_idf() -> None:
    ix, _, kindex = _index()
    r = Retriever(ix, HashingEmbedder(8), MemCoReConfig(judge="embedding"), Switches())
    # keywords: dog(0) in notes 0,1; rex(1) in 0,3; painting(2) in 2; park(3) in 3
    assert kindex.keywords == ["dog", "rex", "painting", "park"]
    idf = np.log1p(4 / np.array([2, 2, 1, 1]))
    np.testing.assert_allclose(ix.idf, idf, rtol=1e-6)
    ranked = r.keyword_channel([(1, 0.9), (3, 0.6)], np.zeros(8, dtype=np.float32), depth=10)
    # note 3: 0.9*idf(rex) + 0.6*idf(park) = 0.9*1.0986 + 0.6*1.6094 > note 0: 0.9*1.0986
    assert ranked == [3, 0]


def test_match_keywords_round_robin_across_entities() -> None:
    ix, _, _ = _index()
    cfg = MemCoReConfig(judge="embedding", k_key=2, keyword_min_sim=0.5)
    r = Retriever(ix, HashingEmbedder(8), cfg, Switches())
    eye = np.eye(8, dtype=np.float32)
    ents = np.stack([0.8 * eye[0] + 0.6 * eye[1], eye[2]])  # entity 1 ~ dog/rex, entity 2 = painting
    matched, by_entity = r.match_keywords(ents, ["dog rex", "painting"])
    assert [k for k, _ in matched] == [0, 2]  # one slot each, not both for the first entity
    assert by_entity == {"dog rex": [0, 1], "painting": [2]}


def test_neighbour_expansion_propagates_by_edge_weight() -> None:
    ix, store, _ = _index()
    store.add_edge(0, 2, 0.6, "Supports")
    store.add_edge(1, 2, 0.5, "Related_To")
    store.add_edge(0, 3, 0.6, "Related_To")
    r = Retriever(ix, HashingEmbedder(8), MemCoReConfig(judge="embedding"), Switches())
    scores = {0: 0.03, 1: 0.02, 3: 0.025}
    channels: dict[int, set[str]] = {0: {"topic"}, 1: {"keyword"}, 3: {"topic"}}
    r._expand([(0, 0.03), (1, 0.02)], scores, channels)
    assert scores[2] == pytest.approx(max(0.03 * 0.6, 0.02 * 0.5))  # new note, best anchor path
    assert channels[2] == {"neighbor"}
    assert scores[3] == 0.025 and channels[3] == {"topic"}  # 0.03*0.6 = 0.018 < own score: unchanged


def test_near_duplicate_rate() -> None:
    v = np.array([[1, 0], [1, 0], [0, 1], [0.999, 0.0447]], dtype=np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    assert near_duplicate_rate(v) == pytest.approx(2 / 4)  # rows 1 and 3 duplicate row 0
    assert near_duplicate_rate(v[:1]) == 0.0


def test_keyword_normalisation_and_cleaning() -> None:
    assert normalise_keyword("  Caroline's  LGBTQ-group! ") == "caroline lgbtq-group"
    assert normalise_keyword("The Pottery Class") == "pottery class"
    assert clean_text("Wow!!! That's great 😀😀  really??") == "Wow! That's great really?"


def test_cheap_plan_entities() -> None:
    plan = cheap_plan("When did Caroline go to the LGBTQ support group?", StatisticalKeywords())
    assert plan.topic == plan.query
    assert "lgbtq support group" in plan.entities and "caroline" in plan.entities
    assert not {"when", "did", "the"} & set(plan.entities)


def _clustered_index(seed: int = 0) -> tuple[KeywordIndex, np.ndarray]:
    rng = np.random.default_rng(seed)
    kindex = KeywordIndex()
    vecs = []
    centers = rng.normal(size=(6, 16))
    for n in range(240):
        c = n % 6
        words = [f"c{c}w{int(rng.integers(0, 30))}" for _ in range(4)]
        if n % 40 == 0:
            words = [f"lonely{n}"]  # isolated keyword: a singleton community to fold
        kindex.set_note(n, words)
        vecs.append(centers[c] + 0.3 * rng.normal(size=16))
    v = np.asarray(vecs, dtype=np.float32)
    return kindex, v / np.linalg.norm(v, axis=1, keepdims=True)


@pytest.mark.parametrize(("lo", "hi"), [(5, 20), (10, 40), (3, 8)])
def test_topics_within_size_bounds(lo: int, hi: int) -> None:
    kindex, vecs = _clustered_index()
    topics = compute_topics(kindex, vecs, topic_min=lo, topic_max=hi, resolution=1.0, hub_max_fraction=0.5, seed=3)
    assert len(topics) > 1
    assert all(lo <= s <= hi for s in topics.sizes), topics.sizes
    covered = np.unique(np.concatenate(topics.notes))
    assert covered.tolist() == list(range(len(vecs)))  # every note sits in some topic
    np.testing.assert_allclose(np.linalg.norm(topics.centroids, axis=1), 1.0, rtol=1e-5)
    again = compute_topics(kindex, vecs, topic_min=lo, topic_max=hi, resolution=1.0, hub_max_fraction=0.5, seed=3)
    assert [m.tolist() for m in again.members] == [m.tolist() for m in topics.members]  # seeded: deterministic


def test_hub_keywords_stay_out_of_the_graph() -> None:
    kindex, vecs = _clustered_index()
    for n in range(len(vecs)):
        kindex.set_note(n, [kindex.keywords[k] for k in kindex.note_keywords[n]] + ["alice"])
    topics = compute_topics(kindex, vecs, topic_min=5, topic_max=20, resolution=1.0, hub_max_fraction=0.1, seed=3)
    assert topics.keyword_topic[kindex.ids["alice"]] == -1
    assert topics.info["hub_keywords"] == 1


def test_retrieve_is_thread_safe(tmp_path: Path) -> None:
    mem, _, _ = build(conversation_of(TOPIC_TURNS), tmp_path, cheap=True)
    expected = {q: [n.note_id for n in mem.retrieve(q).notes] for q in QUESTIONS}
    errors: list[str] = []

    def worker() -> None:
        for q in QUESTIONS * 5:
            got = [n.note_id for n in mem.retrieve(q).notes]
            if got != expected[q]:
                errors.append(q)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert mem.stats()["retrieval"]["retrieves"] == 3 + 4 * 15


def test_evidence_carries_provenance_and_diagnostics(tmp_path: Path) -> None:
    mem, _, _ = build(conversation_of(TOPIC_TURNS), tmp_path, cheap=True)
    ev = mem.retrieve(QUESTIONS[0], budget=5)
    assert len(ev.notes) == 5
    assert all(n.channels and set(n.channels) <= {"topic", "keyword", "neighbor"} for n in ev.notes)
    assert all(n.dia_ids and n.timestamp == "1:00 pm on 1 May, 2023" for n in ev.notes)
    assert 0.0 <= ev.extra["near_dup_rate"] <= 1.0
    assert ev.extra["rounds_log"][0]["plan"]["entities"]
    assert [n.score for n in ev.notes] == sorted((n.score for n in ev.notes), reverse=True)

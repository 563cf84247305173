"""The construction gate: Merge / Link / Append at the thresholds, with the scripted LLM judge."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from memcore.llm.embedders import HashingEmbedder
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.construction import Constructor, Judgement
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import NoteStore, RawTurn
from tests.fakes import MemCoReLLM
from tests.support import build, conversation_of


def marker_strength(new: str, cand: str) -> float:
    m = re.search(r"\[s=([0-9.]+)\]", new)
    return float(m.group(1)) if m else 0.0


def two_turns(s: float) -> list[str]:
    return ["Alice adopted a puppy called Rex", f"Rex the puppy is doing well [s={s:.2f}]"]


def test_merge_at_tau_merge_unions_raws_dia_ids_keywords(tmp_path: Path) -> None:
    conv = conversation_of(two_turns(0.70))
    mem, _backbone, _ = build(conv, tmp_path, llm=MemCoReLLM(strength=marker_strength))
    assert len(mem.store) == 1
    note = mem.store.notes[0]
    assert note.dia_ids == ("D1:1", "D1:2")
    assert [r.text for r in note.raws] == [t.text for t in conv.turns]  # both raws kept verbatim
    assert note.context.startswith("MERGED Alice said that Alice adopted")
    assert set(note.keywords) == {"alice", "bob", "adopted", "puppy", "called", "doing"}
    # re-embedded on the re-synthesised context
    np.testing.assert_allclose(mem.store.vectors.matrix[0], HashingEmbedder(512).encode([note.context])[0], atol=1e-6)
    c = mem.stats()["construction"]
    assert (c["merges"], c["links"], c["appends"]) == (1, 0, 1)
    assert mem.stats()["edges"] == 0


@pytest.mark.parametrize("s", [0.69, 0.6, 0.55, 0.5])
def test_link_between_thresholds_adds_typed_weighted_edge(tmp_path: Path, s: float) -> None:
    conv = conversation_of(two_turns(s))
    mem, _, _ = build(conv, tmp_path, llm=MemCoReLLM(strength=marker_strength, edge="Conflicts"))
    assert len(mem.store) == 2
    (edge,) = mem.store.edges.values()
    assert (edge.a, edge.b, edge.etype) == (0, 1, "Conflicts")
    assert edge.weight == pytest.approx(round(s, 2))
    c = mem.stats()["construction"]
    assert (c["merges"], c["links"], c["linked_appends"]) == (0, 1, 1)
    assert c["edge_types"] == {"Conflicts": 1}
    # strong link (s >= 0.6) rewrites the neighbour's context, weaker links leave it alone
    updated = mem.store.notes[0].context.endswith("(followed up later)")
    assert updated == (s >= 0.6)
    assert c["neighbour_updates"] == int(s >= 0.6)


def test_append_below_tau_link(tmp_path: Path) -> None:
    mem, _, _ = build(conversation_of(two_turns(0.49)), tmp_path, llm=MemCoReLLM(strength=marker_strength))
    assert len(mem.store) == 2 and not mem.store.edges
    c = mem.stats()["construction"]
    assert (c["merges"], c["links"], c["appends"]) == (0, 0, 2)


def test_candidates_are_the_embedding_nearest(tmp_path: Path) -> None:
    texts = [f"topic{i} word{i} thing{i}" for i in range(8)] + ["topic3 word3 thing3 again"]
    llm = MemCoReLLM(strength=lambda new, cand: 0.0)
    _mem, backbone, _ = build(conversation_of(texts), tmp_path, llm=llm, candidates=3)
    assert backbone is not None
    gate_prompts = [m[1]["content"] for stage, m in backbone.calls if "Existing notes:" in m[1]["content"]]
    last = gate_prompts[-1]
    listed = re.findall(r"^\[(\d+)\] (.*)$", last.split("Existing notes:\n")[1], flags=re.M)
    assert len(listed) == 3
    assert "topic3 word3 thing3" in listed[0][1]  # the most similar note comes first


def _constructor(**cfg: object) -> Constructor:
    emb = HashingEmbedder(64)
    return Constructor(
        store=NoteStore(dim=64),
        keywords=KeywordIndex(),
        embedder=emb,
        backbone=None,
        cfg=MemCoReConfig.from_dict({"judge": "embedding", **cfg}),
        switches=Switches(),
        seed=0,
    )


def test_decide_rule_on_hand_made_judgements() -> None:
    cons = _constructor()

    for i in range(3):
        cons.store.add([RawTurn(f"D1:{i}", "A", "x", "t")], "x", [], np.eye(64, dtype=np.float32)[i], denoised=False)
    j = [
        Judgement(0, 0.75, "redundant", "Supports", 0.8),
        Judgement(1, 0.72, "redundant", "Supports", 0.8),
        Judgement(2, 0.5, "x", "Related_To", 0.4),
    ]
    d = cons.decide(j)
    # the strongest redundant candidate is the merge target; every other candidate >= tau_link gets an edge
    assert (d.action, d.target, [x.nid for x in d.links]) == ("merge", 0, [1, 2])
    d = cons.decide([Judgement(0, 0.49, "x", "Related_To", 0.4)])
    assert (d.action, d.target, d.links) == ("append", None, [])


def test_tied_strengths_merge_into_the_nearest_candidate_and_other_duplicates_stay_out_of_expansion() -> None:
    """On tied strengths the merge goes to the nearest candidate, not the oldest (lowest id): the
    pre-screen cosine breaks the tie (then the id). The other redundant candidate's edge is a ``duplicate`` edge,
    which neighbour expansion ignores, as it ignores ``merge_cap`` edges."""
    cons = _constructor()

    for i in range(3):
        cons.store.add([RawTurn(f"D1:{i}", "A", "x", "t")], "x", [], np.eye(64, dtype=np.float32)[i], denoised=False)
    tied = [
        Judgement(0, 0.7, "redundant", "Supports", 0.71),
        Judgement(1, 0.7, "redundant", "Supports", 0.93),  # the nearest
        Judgement(2, 0.6, "complementary", "Related_To", 0.5),
    ]
    d = cons.decide(tied)
    assert (d.action, d.target, [x.nid for x in d.links]) == ("merge", 1, [0, 2])
    assert d.duplicates == {0} and d.capped == set()
    same = [Judgement(0, 0.7, "redundant", "Supports", 0.8), Judgement(1, 0.7, "redundant", "Supports", 0.8)]
    assert cons.decide(same).target == 0  # strength and cosine tied: the oldest
    # applied: note 1 takes the turn; the edge 1–0 is a duplicate edge, 1–2 a gate edge; only 1–2 is expandable
    cons.store.add_edge(1, 0, 0.7, "Supports", "duplicate")
    cons.store.add_edge(1, 2, 0.6, "Related_To", "gate")
    indptr, nbrs, _ = cons.store.neighbours_csr()
    assert nbrs[indptr[1] : indptr[2]].tolist() == [2] and nbrs[indptr[0] : indptr[1]].tolist() == []


def test_a_duplicate_edge_from_the_gate_is_marked_and_never_rewrites_the_neighbour(tmp_path: Path) -> None:
    """Turn 3 is judged redundant (0.9) with both notes: it merges into the nearest (note 0, the same fact) and
    note 1 gets a ``duplicate`` edge. As a ``gate`` edge it would feed neighbour expansion and,
    as the strongest link, rewrite note 1's context with turn 3's facts."""
    texts = ["same fact about Rex [s=0.90]", "different topic [s=0.10]", "same fact about Rex [s=0.90] again"]
    mem, _, _ = build(conversation_of(texts), tmp_path, llm=MemCoReLLM(strength=marker_strength))
    assert mem.store.notes[0].dia_ids == ("D1:1", "D1:3")
    (edge,) = mem.store.edges.values()
    assert ((edge.a, edge.b), edge.origin) == ((0, 1), "duplicate")
    assert mem.store.notes[1].updates == 0 and mem.store.notes[1].linked_sources == []
    assert mem.stats()["construction"]["neighbour_updates"] == 0


def test_cheap_judge_uses_cosine_as_strength() -> None:
    cons = _constructor()
    out = cons.judge("anything", [(0, 0.93), (1, 0.61), (2, 0.2), (3, -0.1)])
    assert [(j.strength, j.relation, j.edge) for j in out] == [
        (0.93, "redundant", "Related_To"),
        (0.61, "complementary", "Related_To"),
        (0.2, "unrelated", "Related_To"),
        (0.0, "unrelated", "Related_To"),
    ]


def test_merge_cap_links_instead(tmp_path: Path) -> None:
    texts = [f"same fact about Rex [s=0.90] copy {i}" for i in range(4)]
    mem, _, _ = build(conversation_of(texts), tmp_path, llm=MemCoReLLM(strength=marker_strength), merge_max_turns=2)
    sizes = sorted(len(n.raws) for n in mem.store.notes)
    assert max(sizes) == 2
    assert mem.stats()["construction"]["merge_cap_redirects"] >= 1

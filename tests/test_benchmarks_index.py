"""MemCoRe's memory code at scale: the keyword index knob (flat / ivf / hnsw / auto), block ``extend``,
no note index at freeze, the per-community edge buckets in topic splitting, and blocked keyword vectors."""

from __future__ import annotations

import numpy as np
import pytest

from memcore.llm.embedders import l2_normalise
from memcore.memory import notes as notes_mod
from memcore.memory import topics as topics_mod
from memcore.memory.config import ConfigError, MemCoReConfig
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import NoteStore, RawTurn, VectorMatrix, ivf_nlist


def _vectors(n: int, dim: int = 32, seed: int = 0) -> np.ndarray:
    return l2_normalise(np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32))


def test_auto_index_is_exact_below_the_threshold_and_ivf_from_it() -> None:
    small = VectorMatrix(32, ann_threshold=100)
    small.extend(_vectors(99))
    assert small.resolved_index() == "flat"
    small.append(_vectors(1, seed=1)[0])
    assert small.resolved_index() == "ivf"
    assert ivf_nlist(100) == 2  # min(2·sqrt(100) = 20, 100 // 39 = 2)
    assert ivf_nlist(1_000_000) == 2000


@pytest.fixture
def faiss_from_small_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let faiss serve small matrices (normally numpy answers below NUMPY_EXACT_LIMIT rows)."""
    monkeypatch.setattr(notes_mod, "NUMPY_EXACT_LIMIT", 100)


@pytest.mark.parametrize("kind", ["flat", "ivf", "hnsw"])
@pytest.mark.usefixtures("faiss_from_small_sizes")
def test_every_index_kind_finds_each_row_itself(kind: str) -> None:
    data = _vectors(2000)
    vm = VectorMatrix(32, index=kind)
    vm.extend(data)
    vm.freeze()
    assert vm.resolved_index() == kind and vm._index is not None
    scores, rows = vm.search(data[:50], 5)
    assert rows.shape == (50, 5)
    assert (rows[:, 0] == np.arange(50)).mean() >= 0.95  # approximate kinds may miss a rare one
    np.testing.assert_allclose(scores[rows[:, 0] == np.arange(50), 0], 1.0, atol=1e-5)


@pytest.mark.usefixtures("faiss_from_small_sizes")
def test_approximate_top20_overlaps_exact_on_clustered_data() -> None:
    rng = np.random.default_rng(3)
    centers = _vectors(40, seed=4)
    data = l2_normalise(centers[rng.integers(0, 40, 4000)] + 0.1 * rng.standard_normal((4000, 32)).astype(np.float32))
    exact, ivf = VectorMatrix(32, index="flat"), VectorMatrix(32, index="ivf")
    for vm in (exact, ivf):
        vm.extend(data)
        vm.freeze()
    q = data[:100]
    _, a = exact.search(q, 20)
    _, b = ivf.search(q, 20)
    recall = np.mean([len(set(x) & set(y)) / 20 for x, y in zip(a, b, strict=True)])
    assert recall >= 0.9


@pytest.mark.usefixtures("faiss_from_small_sizes")
def test_ivf_index_is_built_on_first_search_and_kept_in_step_with_writes() -> None:
    """The gate's pre-screen above the IVF threshold: appends and rewrites update the index, no rebuild."""
    rng = np.random.default_rng(5)
    centers = _vectors(30, seed=6)
    data = l2_normalise(centers[rng.integers(0, 30, 3000)] + 0.1 * rng.standard_normal((3000, 32)).astype(np.float32))
    vm = VectorMatrix(32, ann_threshold=2000)
    vm.extend(data[:2500])
    assert vm._index is None
    _, rows = vm.search(data[:20], 5)
    index = vm._index
    assert index is not None and vm._ivf_live and index.ntotal == 2500
    assert (rows[:, 0] == np.arange(20)).mean() >= 0.95
    for v in data[2500:]:  # appended rows join the live index
        vm.append(v)
    assert vm._index is index and index.ntotal == 3000
    _, rows = vm.search(data[2990:], 1)
    assert rows[:, 0].tolist() == list(range(2990, 3000))
    new = _vectors(1, seed=7)[0]
    vm.set(7, new)  # a rewritten row is replaced, not duplicated
    assert vm._index is index and index.ntotal == 3000
    scores, rows = vm.search(new[None, :], 3)
    assert rows[0, 0] == 7 and scores[0, 0] == pytest.approx(1.0, abs=1e-5)
    old_scores, old_rows = vm.search(data[7][None, :], 3)
    for row, score in zip(old_rows[0], old_scores[0], strict=True):  # the old vector of row 7 is gone
        assert row != 7 or score == pytest.approx(float(new @ data[7]), abs=1e-5)
    _, exact_rows = vm._exact(data[:200], 20)
    _, ivf_rows = vm.search(data[:200], 20)
    assert np.mean([len(set(a) & set(b)) / 20 for a, b in zip(exact_rows, ivf_rows, strict=True)]) >= 0.9
    vm.extend(data[:10])  # a bulk write drops the index (rebuilt on the next search)
    assert vm._index is None


@pytest.mark.usefixtures("faiss_from_small_sizes")
def test_a_query_the_ivf_index_answers_short_is_answered_exactly() -> None:
    vm = VectorMatrix(32, index="ivf")
    vm.extend(_vectors(400))
    vm.freeze()
    vm._index.nprobe = 1  # one list of ~10 rows cannot fill k = 50
    scores, rows = vm.search(_vectors(3, seed=9), 50)
    exact_scores, exact_rows = vm._exact(_vectors(3, seed=9), 50)
    assert (rows >= 0).all()
    np.testing.assert_array_equal(rows, exact_rows)
    np.testing.assert_allclose(scores, exact_scores, rtol=1e-5)


def test_exact_search_in_query_chunks_equals_one_product(monkeypatch) -> None:
    data, queries = _vectors(500), _vectors(37, seed=3)
    vm = VectorMatrix(32)
    vm.extend(data)
    sims = queries @ data.T
    want_rows = np.argsort(-sims, axis=1, kind="stable")[:, :10]
    monkeypatch.setattr(notes_mod, "EXACT_CHUNK_CELLS", 500 * 4)  # 4 queries per chunk; the last one is short
    scores, rows = vm._exact(queries, 10)
    np.testing.assert_array_equal(rows, want_rows)
    np.testing.assert_allclose(scores, np.take_along_axis(sims, want_rows, axis=1), rtol=1e-6)
    _, all_rows = vm._exact(queries[:2], 500)  # k = every row: a full ranking per query
    np.testing.assert_array_equal(all_rows, np.argsort(-sims[:2], axis=1, kind="stable"))


def test_unknown_index_kind_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="index must be one of"):
        VectorMatrix(8, index="annoy")
    with pytest.raises(
        ConfigError, match=r"method: index=.annoy. is not allowed: allowed one of auto, flat, ivf, hnsw"
    ):
        MemCoReConfig(index="annoy")  # type: ignore[arg-type]


def test_extend_equals_row_by_row_append_and_drops_the_index() -> None:
    data = _vectors(150)
    a, b = VectorMatrix(32), VectorMatrix(32)
    a.extend(data[:10])
    a.freeze()
    a.extend(data[10:])
    for v in data:
        b.append(v)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert len(a) == 150 and a._index is None


def test_note_store_freeze_builds_no_vector_index_but_the_edge_csr() -> None:
    store = NoteStore(dim=32)
    for i, v in enumerate(_vectors(3)):
        store.add([RawTurn(f"D1:{i}", "A", "t", "x")], "t", [], v, denoised=False)
    store.add_edge(0, 2, 0.6, "Related_To")
    store.freeze()
    assert store.vectors._index is None
    indptr, nbrs, weights = store.neighbours_csr()
    assert indptr.tolist() == [0, 1, 1, 2] and nbrs.tolist() == [2, 0]
    np.testing.assert_allclose(weights, [0.6, 0.6])


def _naive_split_edges(comms: list[np.ndarray], edges: dict[tuple[int, int], float], cfg_max: int) -> list:
    """The pre-issue-7 per-community edge scan, as a reference."""
    out = []
    for comm in comms:
        if len(comm) <= cfg_max:
            continue
        local = {int(k): i for i, k in enumerate(comm)}
        out.append([(local[a], local[b], w) for (a, b), w in edges.items() if a in local and b in local])
    return out


def test_split_large_feeds_leiden_the_same_edges_as_the_naive_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    comms = [np.arange(0, 12), np.arange(12, 15), np.arange(15, 40)]
    edges = {}
    for _ in range(300):
        a, b = sorted(int(x) for x in rng.integers(0, 40, 2))
        if a != b:
            edges[(a, b)] = float(rng.integers(1, 5))
    seen: list = []

    def fake_leiden(n: int, e: list, w: list, resolution: float, seed: int) -> list[int]:
        seen.append([(a, b, x) for (a, b), x in zip(e, w, strict=True)])
        return [0] * n

    monkeypatch.setattr(topics_mod, "_leiden", fake_leiden)
    topics_mod._split_large(comms, edges, _vectors(40), cfg_max=10, resolution=1.0, seed=0)
    assert seen == _naive_split_edges(comms, edges, 10)
    assert len(seen) == 2


def test_keyword_vectors_in_blocks_equal_one_gather(monkeypatch: pytest.MonkeyPatch) -> None:
    vecs = _vectors(300)
    index = KeywordIndex()
    rng = np.random.default_rng(6)
    index.intern("unused")  # a keyword with no note: stays zero
    for nid in range(300):
        index.set_note(nid, [f"k{int(k)}" for k in rng.integers(0, 40, 4)])
    full = topics_mod.keyword_vectors(index, vecs)
    monkeypatch.setattr(topics_mod, "KEYWORD_BLOCK_ROWS", 7)
    np.testing.assert_array_equal(topics_mod.keyword_vectors(index, vecs), full)
    indptr, ids = index.posting_arrays()
    k = 5
    expected = vecs[ids[indptr[k] : indptr[k + 1]]].sum(axis=0)
    np.testing.assert_allclose(full[k], expected / np.linalg.norm(expected), rtol=1e-5)
    assert not full[0].any()

"""Notes, typed weighted edges, and the contiguous embedding matrix with its (exact or ANN) index."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EDGE_TYPES = ("Supports", "Conflicts", "Related_To")
#: Below this many rows an exact numpy product beats a faiss call (whose OpenMP threads only add
#: overhead for one query on a small matrix); the faiss index serves larger matrices.
NUMPY_EXACT_LIMIT = 20_000
#: Similarities one exact-search chunk may hold (float32: 128 MB).
EXACT_CHUNK_CELLS = 32 * 1024 * 1024
#: ``index`` knob: ``flat`` = exact faiss inner product; ``ivf`` / ``hnsw`` = approximate; ``auto`` = flat below
#: ``ann_threshold`` rows, IVF from there on (IVF builds in seconds where HNSW takes minutes, at
#: recall@20 >= 0.99 on the benchmark's synthetic memories; results/benchmarks/retrieval_scale.md).
INDEX_KINDS = ("auto", "flat", "ivf", "hnsw")
IVF_NPROBE = 16
HNSW_M = 32
HNSW_EF_SEARCH = 128


def ivf_nlist(n: int) -> int:
    """Inverted lists for ``n`` rows: 2·sqrt(n), with at least 39 training rows per list (faiss's minimum)."""
    return max(1, min(int(2 * n**0.5), n // 39))


@dataclass(frozen=True)
class RawTurn:
    """One source turn kept verbatim inside a note."""

    dia_id: str
    speaker: str
    text: str
    time: str

    def render(self) -> str:
        return f"{self.speaker}: {self.text}"

    def render_dated(self) -> str:
        """``(session date) Speaker: text``: a raw turn with the date it was said."""
        return f"({self.time}) {self.render()}"

    def to_json(self) -> dict[str, str]:
        return {"dia_id": self.dia_id, "speaker": self.speaker, "text": self.text, "time": self.time}


@dataclass
class Note:
    """n = (raw turns r, denoised context c, keywords K); the embedding of c lives in the store's matrix
    at row ``nid``. ``denoised`` is false when c is just the cleaned raw text (cheap mode, wo_denoise,
    ingest fallback)."""

    nid: int
    raws: list[RawTurn]
    context: str
    keywords: list[str]
    denoised: bool = True
    updates: int = 0  # neighbour-context updates received from strong links
    #: dia_ids of other turns whose facts a strong-link update wrote into ``context`` (provenance of the rewrite)
    linked_sources: list[str] = field(default_factory=list)

    @property
    def dia_ids(self) -> tuple[str, ...]:
        """The turns this note holds verbatim."""
        return tuple(dict.fromkeys(r.dia_id for r in self.raws))

    @property
    def source_ids(self) -> tuple[str, ...]:
        """Every turn whose facts the note's text carries: its raws, then turns a link update added."""
        return tuple(dict.fromkeys([*self.dia_ids, *self.linked_sources]))

    @property
    def dates(self) -> tuple[str, ...]:
        """The distinct session dates of the raw turns, in order."""
        return tuple(dict.fromkeys(r.time for r in self.raws))

    def dated_context(self) -> str:
        """``(date[; date…]) context``: what the gate and the rewrite prompts see of a note."""
        return f"({'; '.join(self.dates)}) {self.context}"

    @property
    def speakers(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.speaker for r in self.raws))

    @property
    def timestamp(self) -> str:
        """Every distinct session date of the note, ``; ``-joined (a merged note lists each, not a range)."""
        return "; ".join(self.dates)

    def raw_text(self) -> str:
        if len(self.raws) == 1:
            return self.raws[0].render()
        return "\n".join(r.render_dated() for r in self.raws)

    def to_json(self) -> dict[str, Any]:
        return {
            "nid": self.nid,
            "raws": [r.to_json() for r in self.raws],
            "context": self.context,
            "keywords": list(self.keywords),
            "denoised": self.denoised,
            "updates": self.updates,
            "linked_sources": list(self.linked_sources),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Note:
        return cls(
            nid=int(d["nid"]),
            raws=[RawTurn(**r) for r in d["raws"]],
            context=d["context"],
            keywords=list(d["keywords"]),
            denoised=bool(d["denoised"]),
            updates=int(d.get("updates", 0)),
            linked_sources=list(d.get("linked_sources", [])),
        )


class VectorMatrix:
    """Rows of L2-normalised float32 vectors in one contiguous, growable matrix.

    ``freeze`` builds a faiss index of kind ``index`` (see ``INDEX_KINDS``). A flat or HNSW index is
    dropped by the next write and ``search`` is exact (numpy) until the next ``freeze``. An IVF index
    is kept live instead: appended rows are added to it and rewritten rows replaced, so a matrix that
    keeps growing past the IVF threshold (the gate's pre-screen over a million notes) searches its
    inverted lists, not all rows; ``search`` builds it on first use above the threshold.
    """

    def __init__(self, dim: int, *, ann_threshold: int = 200_000, index: str = "auto") -> None:
        if index not in INDEX_KINDS:
            raise ValueError(f"index must be one of {INDEX_KINDS}, got {index!r}")
        self.dim = dim
        self.ann_threshold = ann_threshold
        self.index_kind = index
        self._data = np.zeros((64, dim), dtype=np.float32)
        self._n = 0
        self._index: Any = None
        self._index_live = False  # True only while self._index is an IVF index maintained on writes
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @property
    def matrix(self) -> np.ndarray:
        """A view of the filled rows (do not write into it)."""
        return self._data[: self._n]

    def append(self, vec: np.ndarray) -> int:
        with self._lock:
            if self._n == self._data.shape[0]:
                grown = np.zeros((self._data.shape[0] * 2, self.dim), dtype=np.float32)
                grown[: self._n] = self._data[: self._n]
                self._data = grown
            self._data[self._n] = vec
            self._n += 1
            if self._ivf_live:
                self._index.add_with_ids(self._data[self._n - 1 : self._n], np.array([self._n - 1], dtype=np.int64))
            else:
                self._index = None
            return self._n - 1

    def extend(self, vecs: np.ndarray) -> None:
        """Append many rows with one copy (a row-by-row loop took seconds per million rows on load)."""
        block = np.asarray(vecs, dtype=np.float32).reshape(-1, self.dim)
        with self._lock:
            need = self._n + len(block)
            if need > self._data.shape[0]:
                grown = np.zeros((max(need, 2 * self._data.shape[0]), self.dim), dtype=np.float32)
                grown[: self._n] = self._data[: self._n]
                self._data = grown
            self._data[self._n : need] = block
            self._n = need
            self._index = None

    def set(self, row: int, vec: np.ndarray) -> None:
        with self._lock:
            self._data[row] = vec
            if self._ivf_live:
                ids = np.array([row], dtype=np.int64)
                self._index.remove_ids(ids)
                self._index.add_with_ids(self._data[row : row + 1], ids)
            else:
                self._index = None

    @property
    def _ivf_live(self) -> bool:
        """The current index is an IVF index kept in step with every write (read under the lock)."""
        return self._index is not None and self._index_live

    def resolved_index(self) -> str:
        """The index kind ``freeze`` builds for the current number of rows."""
        if self.index_kind != "auto":
            return self.index_kind
        return "ivf" if self._n >= self.ann_threshold else "flat"

    def freeze(self) -> None:
        """Build the faiss index over the current rows (only for matrices large enough to use it)."""
        if self._n < NUMPY_EXACT_LIMIT:
            self._index = None
            return
        with self._lock:
            self._build_index()

    def _build_index(self) -> None:
        """Build the index of kind ``resolved_index()`` over all rows (call under the lock)."""
        import faiss

        mat = np.ascontiguousarray(self._data[: self._n])
        kind = self.resolved_index() if self._n else "flat"
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, HNSW_M, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efSearch = HNSW_EF_SEARCH
        elif kind == "ivf":
            nlist = ivf_nlist(self._n)
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(self.dim), self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.niter = 10  # k-means iterations: recall barely moves beyond this, build time does
            index.cp.max_points_per_centroid = 64  # train on a sample: 4x faster than faiss's 256 at 300k rows
            index.train(mat)
            index.nprobe = min(nlist, IVF_NPROBE)
            # Row ids kept in a hash map, so that a rewritten row is replaced in place (live index).
            index.set_direct_map_type(faiss.DirectMap.Hashtable)
            index.add_with_ids(mat, np.arange(self._n, dtype=np.int64))
        else:
            index = faiss.IndexFlatIP(self.dim)
        if kind != "ivf" and self._n:
            index.add(mat)
        self._index = index
        self._index_live = kind == "ivf"

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-``k`` rows per query: (scores, rows), both (len(queries), k'), k' = min(k, len).

        Above ``NUMPY_EXACT_LIMIT`` rows the faiss index answers when it covers every row; when the
        resolved kind is IVF and there is none yet, it is built here first (then maintained by writes).
        A query for which the approximate index finds fewer than ``k`` rows is answered exactly.
        """
        q = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        k = min(k, self._n)
        if k == 0:
            return np.zeros((len(q), 0), dtype=np.float32), np.zeros((len(q), 0), dtype=np.int64)
        if self._n >= NUMPY_EXACT_LIMIT:
            with self._lock:
                if self._index is None and self.resolved_index() == "ivf":
                    self._build_index()
                index = self._index
                if index is not None and index.ntotal == self._n:
                    scores, rows = index.search(q, k)
                    rows = rows.astype(np.int64)
                    short = np.flatnonzero((rows < 0).any(axis=1))
                    if len(short):
                        scores[short], rows[short] = self._exact(q[short], k)
                    return scores, rows
        return self._exact(q, k)

    def _exact(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-``k`` by numpy products over all rows, in query chunks of at most
        ``EXACT_CHUNK_CELLS`` similarities (so many queries against a large matrix stay within ~128 MB)."""
        mat = self.matrix
        step = max(1, EXACT_CHUNK_CELLS // max(1, self._n))
        scores = np.empty((len(q), k), dtype=np.float32)
        rows = np.empty((len(q), k), dtype=np.int64)
        for lo in range(0, len(q), step):
            # rows × queries, then viewed transposed: BLAS packs the few query columns, not all the rows (2× faster)
            sims = (mat @ q[lo : lo + step].T).T
            if k < self._n:
                top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
            else:
                top = np.tile(np.arange(self._n), (len(sims), 1))
            part = np.take_along_axis(sims, top, axis=1)
            order = np.argsort(-part, axis=1, kind="stable")
            scores[lo : lo + step] = np.take_along_axis(part, order, axis=1)
            rows[lo : lo + step] = np.take_along_axis(top, order, axis=1)
        return scores, rows


#: Why an edge exists: ``gate`` = the judge linked two notes; ``merge_cap`` = the judge called them redundant but
#: the target was full (``merge_max_turns``); ``duplicate`` = a redundant candidate beside the note the turn was
#: merged into. Both join near-duplicates and stay out of neighbour expansion, so that copies of one fact
#: do not pull each other back into the pool.
EDGE_ORIGINS = ("gate", "merge_cap", "duplicate")


@dataclass
class Edge:
    a: int
    b: int
    weight: float
    etype: str
    origin: str = "gate"

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "weight": round(float(self.weight), 6),
            "type": self.etype,
            "origin": self.origin,
        }


@dataclass
class NoteStore:
    """Notes (row ``nid`` of ``vectors`` embeds ``notes[nid].context``) and undirected typed edges."""

    dim: int
    ann_threshold: int = 200_000
    notes: list[Note] = field(default_factory=list)
    edges: dict[tuple[int, int], Edge] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.vectors = VectorMatrix(self.dim, ann_threshold=self.ann_threshold)
        self._csr: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.notes)

    def add(self, raws: list[RawTurn], context: str, keywords: list[str], vec: np.ndarray, *, denoised: bool) -> Note:
        note = Note(nid=len(self.notes), raws=list(raws), context=context, keywords=list(keywords), denoised=denoised)
        self.notes.append(note)
        row = self.vectors.append(vec)
        assert row == note.nid
        return note

    def set_vector(self, nid: int, vec: np.ndarray) -> None:
        self.vectors.set(nid, vec)

    def add_edge(self, a: int, b: int, weight: float, etype: str, origin: str = "gate") -> bool:
        """Add or strengthen the undirected edge a–b (keeps the larger weight); True when new. A ``gate`` edge
        replaces a near-duplicate one (``merge_cap``, ``duplicate``) between the same notes (the pair is then
        judged related, not duplicate)."""
        if a == b:
            return False
        key = (min(a, b), max(a, b))
        old = self.edges.get(key)
        self._csr = None
        if old is None:
            self.edges[key] = Edge(key[0], key[1], float(weight), etype, origin)
            return True
        if weight > old.weight:
            old.weight, old.etype = float(weight), etype
        if origin == "gate":
            old.origin = "gate"
        return False

    def neighbours_csr(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(indptr, neighbour ids, weights) over the ``gate`` edges of all notes (near-duplicate ``merge_cap`` and
        ``duplicate`` edges never feed neighbour expansion); cached until the next edge write."""
        if self._csr is None:
            n = len(self.notes)
            expandable = [x for x in self.edges.values() if x.origin == "gate"]
            if expandable:
                e = np.array([(x.a, x.b) for x in expandable], dtype=np.int64)
                w = np.array([x.weight for x in expandable], dtype=np.float32)
                src = np.concatenate([e[:, 0], e[:, 1]])
                dst = np.concatenate([e[:, 1], e[:, 0]])
                ww = np.concatenate([w, w])
                order = np.lexsort((dst, src))
                src, dst, ww = src[order], dst[order], ww[order]
                indptr = np.zeros(n + 1, dtype=np.int64)
                np.add.at(indptr, src + 1, 1)
                indptr = np.cumsum(indptr)
            else:
                indptr = np.zeros(n + 1, dtype=np.int64)
                dst = np.zeros(0, dtype=np.int64)
                ww = np.zeros(0, dtype=np.float32)
            self._csr = (indptr, dst, ww)
        return self._csr

    def freeze(self) -> None:
        """Cache the edge CSR for retrieval. The note vectors get no faiss index: retrieval never searches
        them (channels rank candidate rows exactly), and the gate's pre-screen appends right after, which
        drops any index; building one (HNSW at 1M notes: minutes) on every load was wasted."""
        self.neighbours_csr()

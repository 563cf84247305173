"""Synthetic MemCoRe memories of any size for the scale benchmark (``retrieval_scale``): clustered 384-d embeddings,
keywords drawn per cluster with Zipf weights plus two speaker hubs, Related edges inside clusters, and
queries whose text names two keywords of a target note. Shapes follow a real cheap-mode LoCoMo memory
(about six keywords per note, a few notes per keyword, sparse edges); contents are random."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from memcore.llm.embedders import l2_normalise
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import Edge, Note, NoteStore, RawTurn

SYLLABLES = tuple(a + b for a in "bdfgklmnprstvz" for b in "aeiou")  # 70 syllables, pronounceable words
NOTES_PER_CLUSTER = 200
KEYWORDS_PER_CLUSTER = 60
KEYWORDS_PER_NOTE = 5
SPEAKERS = ("alice", "bob")
#: Keyword vector = cluster centre + this x unit noise: cosine ≈ 0.78 to the centre, ≈ 0.6 between keywords of
#: one cluster (above keyword_min_sim = 0.5, like related phrases), ≈ 0 across clusters.
KEYWORD_NOISE = 0.8


def word(i: int) -> str:
    """A unique made-up word for integer ``i`` (e.g. 0 → "baba"): YAKE sees it as one token."""
    parts = []
    n = i
    for _ in range(4):
        parts.append(SYLLABLES[n % len(SYLLABLES)])
        n //= len(SYLLABLES)
    while n:
        parts.append(SYLLABLES[n % len(SYLLABLES)])
        n //= len(SYLLABLES)
    return "".join(parts)


@dataclass
class Synthetic:
    store: NoteStore
    kindex: KeywordIndex
    keyword_vectors: np.ndarray  # (keywords, dim): the "embedding" of each keyword string
    note_cluster: np.ndarray
    centers: np.ndarray


def make_memory(n: int, dim: int = 384, seed: int = 0, edge_rate: float = 0.3) -> Synthetic:
    """``n`` notes in ``n / 200`` clusters. A note's vector is its cluster centre plus noise (cosine ≈ 0.7),
    its keywords are 5 of its cluster's 60 (Zipf) plus one speaker; ``edge_rate`` of the notes link to a
    random note of their cluster (weight 0.5–0.7)."""
    rng = np.random.default_rng(seed)
    n_clusters = max(1, n // NOTES_PER_CLUSTER)
    centers = l2_normalise(rng.standard_normal((n_clusters, dim), dtype=np.float32))
    cluster = rng.integers(0, n_clusters, size=n)
    store = NoteStore(dim=dim)
    chunk = 100_000
    for start in range(0, n, chunk):
        c = cluster[start : start + chunk]
        noise = rng.standard_normal((len(c), dim), dtype=np.float32) / np.sqrt(dim)
        store.vectors.extend(l2_normalise(centers[c] + noise))
    zipf = 1.0 / np.arange(1, KEYWORDS_PER_CLUSTER + 1)
    zipf /= zipf.sum()
    # Sampling without replacement ∝ zipf, vectorised: the top-5 of log p + Gumbel noise.
    gumbel = np.log(zipf)[None, :] - np.log(-np.log(rng.random((n, KEYWORDS_PER_CLUSTER))))
    picks = np.argpartition(-gumbel, KEYWORDS_PER_NOTE - 1, axis=1)[:, :KEYWORDS_PER_NOTE]
    speakers = rng.integers(0, len(SPEAKERS), size=n)
    kindex = KeywordIndex()
    for s in SPEAKERS:
        kindex.intern(s)
    for nid in range(n):
        kws = [word(int(cluster[nid]) * KEYWORDS_PER_CLUSTER + int(k)) for k in picks[nid]]
        speaker = SPEAKERS[int(speakers[nid])]
        text = f"{speaker.title()} talked about {', '.join(kws)}."
        raw = RawTurn(f"S{nid}", speaker.title(), text, "1:00 pm on 1 May, 2023")
        store.notes.append(Note(nid=nid, raws=[raw], context=text, keywords=[speaker, *kws], denoised=False))
        kindex.set_note(nid, [speaker, *kws])
    linkers = np.flatnonzero(rng.random(n) < edge_rate)
    members = np.argsort(cluster, kind="stable")
    bounds = np.searchsorted(cluster[members], np.arange(n_clusters + 1))
    for a in linkers:
        c = int(cluster[a])
        lo, hi = bounds[c], bounds[c + 1]
        b = int(members[rng.integers(lo, hi)])
        if a != b:
            key = (min(int(a), b), max(int(a), b))
            store.edges[key] = Edge(key[0], key[1], float(rng.uniform(0.5, 0.7)), "Related_To")
    # A keyword's "embedding": its cluster centre plus noise (a real embedder puts related phrases together).
    kw_vecs = np.zeros((len(kindex), dim), dtype=np.float32)
    kw_ids = np.array([int(_word_index(k)) if k not in SPEAKERS else -1 for k in kindex.keywords])
    kw_cluster = np.where(kw_ids >= 0, kw_ids // KEYWORDS_PER_CLUSTER, -1)
    real = kw_cluster >= 0
    noise = rng.standard_normal((len(kindex), dim), dtype=np.float32) / np.sqrt(dim)
    kw_vecs[real] = centers[kw_cluster[real]] + KEYWORD_NOISE * noise[real]
    kw_vecs[~real] = rng.standard_normal((int((~real).sum()), dim), dtype=np.float32)
    return Synthetic(store, kindex, l2_normalise(kw_vecs), cluster, centers)


_WORD_INDEX: dict[str, int] = {}


def _word_index(w: str) -> int:
    """Inverse of ``word`` (cached)."""
    if w not in _WORD_INDEX:
        syl = [w[i : i + 2] for i in range(0, len(w), 2)]
        value = 0
        for s in reversed(syl):
            value = value * len(SYLLABLES) + SYLLABLES.index(s)
        _WORD_INDEX[w] = value
    return _WORD_INDEX[w]


class LookupEmbedder:
    """An embedder for synthetic memories: registered strings map to their vectors, anything else to a
    deterministic random unit vector (so unknown entities match nothing)."""

    def __init__(self, dim: int, table: dict[str, np.ndarray]) -> None:
        self.name = f"lookup-{dim}"
        self.dim = dim
        self.table = table

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            v = self.table.get(t)
            if v is None:
                rng = np.random.default_rng(abs(hash(t)) % (2**32))
                v = rng.standard_normal(self.dim).astype(np.float32)
            out[i] = v
        return l2_normalise(out)


def make_queries(syn: Synthetic, n_queries: int, seed: int = 1) -> tuple[list[str], dict[str, np.ndarray], list[int]]:
    """Questions naming two keywords of a random target note; the question's own vector lies near the note.
    Returns (questions, the embedder table for questions and keywords, target note ids)."""
    rng = np.random.default_rng(seed)
    n = len(syn.store)
    targets = [int(t) for t in rng.integers(0, n, size=n_queries)]
    table = {k: syn.keyword_vectors[i] for i, k in enumerate(syn.kindex.keywords)}
    questions = []
    mat = syn.store.vectors.matrix
    dim = mat.shape[1]
    for t in targets:
        kws = [k for k in syn.store.notes[t].keywords if k not in SPEAKERS][:2]
        q = f"What did they say about {kws[0]} and {kws[1]}?"
        while q in table:  # the same pair twice: keep both questions distinct
            q = q[:-1] + " really?"
        table[q] = mat[t] + rng.standard_normal(dim).astype(np.float32) / np.sqrt(dim)
        questions.append(q)
    return questions, table, targets

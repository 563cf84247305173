"""Topics: Leiden communities of the keyword co-occurrence graph, sizes kept in [topic_min, topic_max].

A topic is a set of keywords; its notes are the notes holding any of them (a note may sit in several
topics); notes with no graph keyword join the topic whose centroid is nearest. Centroids are the
normalised mean embedding of a topic's notes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from memcore.llm.embedders import l2_normalise
from memcore.memory.keywords import KeywordIndex


@dataclass
class Topics:
    keyword_topic: np.ndarray  # keyword id → topic id, -1 for hubs / unused keywords
    members: list[np.ndarray]  # topic id → keyword ids
    notes: list[np.ndarray]  # topic id → note ids (sorted)
    centroids: np.ndarray  # (topics, dim) float32, L2-normalised
    info: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.members)

    @property
    def sizes(self) -> list[int]:
        return [len(m) for m in self.members]

    @classmethod
    def empty(cls, dim: int) -> Topics:
        return cls(np.zeros(0, dtype=np.int64), [], [], np.zeros((0, dim), dtype=np.float32))


KEYWORD_BLOCK_ROWS = 65_536


def keyword_vectors(index: KeywordIndex, note_vecs: np.ndarray) -> np.ndarray:
    """Normalised mean embedding of each keyword's notes (zeros for keywords with no note)."""
    indptr, ids = index.posting_arrays()
    out = np.zeros((len(index), note_vecs.shape[1]), dtype=np.float32)
    nonempty = np.flatnonzero(np.diff(indptr) > 0)
    starts, ends = indptr[:-1][nonempty], indptr[1:][nonempty]
    # In blocks of about KEYWORD_BLOCK_ROWS gathered rows: gathering every posting at once needs
    # (postings x dim) floats, 9 GB at 1M notes. Same rows, same order: same sums.
    i = 0
    while i < len(nonempty):
        j = max(i + 1, int(np.searchsorted(ends, starts[i] + KEYWORD_BLOCK_ROWS, side="right")))
        block = note_vecs[ids[starts[i] : ends[j - 1]]]
        out[nonempty[i:j]] = np.add.reduceat(block, starts[i:j] - starts[i], axis=0)
        i = j
    return l2_normalise(out)


def _leiden(n: int, edges: list[tuple[int, int]], weights: list[float], resolution: float, seed: int) -> list[int]:
    """Leiden (RB configuration model) membership of ``n`` vertices; isolated vertices are singletons."""
    import igraph as ig
    import leidenalg

    if not edges:
        return list(range(n))
    g = ig.Graph(n=n, edges=edges)
    g.es["weight"] = weights
    part = leidenalg.find_partition(
        g, leidenalg.RBConfigurationVertexPartition, weights="weight", resolution_parameter=resolution, seed=seed
    )
    return list(part.membership)


def _median_split(members: np.ndarray, vecs: np.ndarray, max_size: int) -> list[np.ndarray]:
    """Recursively halve ``members`` along the principal direction of their vectors until each part
    has at most ``max_size`` keywords (always terminates: halves are balanced)."""
    if len(members) <= max_size:
        return [members]
    x = vecs[members] - vecs[members].mean(axis=0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    proj = x @ vt[0]
    order = members[np.argsort(proj, kind="stable")]
    half = len(order) // 2
    return _median_split(order[:half], vecs, max_size) + _median_split(order[half:], vecs, max_size)


def _split_large(
    comms: list[np.ndarray],
    sub_edges: dict[tuple[int, int], float],
    vecs: np.ndarray,
    cfg_max: int,
    resolution: float,
    seed: int,
) -> list[np.ndarray]:
    out: list[np.ndarray] = []
    # Bucket the edges inside each oversized community in one pass (scanning every edge once per community
    # was O(communities x edges): 130 s at 100k notes). Edge order is kept, so Leiden sees the same input.
    owner = {int(k): c for c, comm in enumerate(comms) if len(comm) > cfg_max for k in comm}
    inside: dict[int, list[tuple[int, int, float]]] = {}
    for (a, b), wt in sub_edges.items():
        ca = owner.get(a)
        if ca is not None and ca == owner.get(b):
            inside.setdefault(ca, []).append((a, b, wt))
    for c, comm in enumerate(comms):
        if len(comm) <= cfg_max:
            out.append(comm)
            continue
        # Re-run Leiden inside the community at a higher resolution, then halve what is still too big.
        local = {int(k): i for i, k in enumerate(comm)}
        e, w = [], []
        for a, b, wt in inside.get(c, []):
            e.append((local[a], local[b]))
            w.append(wt)
        membership = _leiden(len(comm), e, w, resolution * 4.0, seed)
        groups: dict[int, list[int]] = {}
        for i, m in enumerate(membership):
            groups.setdefault(m, []).append(int(comm[i]))
        parts = [np.array(g, dtype=np.int64) for g in groups.values()]
        if len(parts) == 1:
            out.extend(_median_split(comm, vecs, cfg_max))
        else:
            for p in parts:
                out.extend(_median_split(p, vecs, cfg_max))
    return out


def _fold_small(comms: list[np.ndarray], vecs: np.ndarray, cfg_min: int, cfg_max: int) -> list[np.ndarray]:
    """Fold communities below ``cfg_min`` into the nearest community with room (by centroid cosine);
    leftovers are chained together greedily. Vectorised over the small communities."""
    groups = [list(map(int, c)) for c in comms]
    sizes = np.array([len(g) for g in groups])
    cents = (
        l2_normalise(np.stack([vecs[np.asarray(g)].sum(axis=0) for g in groups]))
        if groups
        else np.zeros((0, vecs.shape[1]))
    )
    small = np.flatnonzero(sizes < cfg_min)
    big = np.flatnonzero(sizes >= cfg_min)
    alive = np.ones(len(groups), dtype=bool)
    if len(small) and len(big):
        sims = cents[small] @ cents[big].T
        room = cfg_max - sizes[big]
        order = np.argsort(-sims.max(axis=1), kind="stable")
        for si in order:
            s = small[si]
            fits = room >= sizes[s]
            if not fits.any():
                continue
            j = int(np.argmax(np.where(fits, sims[si], -np.inf)))
            groups[big[j]].extend(groups[s])
            room[j] -= sizes[s]
            alive[s] = False
    leftovers = [int(s) for s in small if alive[s]]
    if leftovers:
        # No big community had room (or none exists): chain leftovers by nearest neighbour.
        lv = cents[leftovers]
        sims = lv @ lv.T
        np.fill_diagonal(sims, -np.inf)
        pool: list[int] = []
        visited = np.zeros(len(leftovers), dtype=bool)
        for start in range(len(leftovers)):
            if visited[start]:
                continue
            cur = start
            while True:
                visited[cur] = True
                pool.extend(groups[leftovers[cur]])
                alive[leftovers[cur]] = False
                if len(pool) >= cfg_min:
                    groups.append(pool)
                    alive = np.append(alive, True)
                    pool = []
                    break
                cand = np.where(visited, -np.inf, sims[cur])
                if not np.isfinite(cand).any():
                    break
                cur = int(np.argmax(cand))
        if pool:  # the last undersized group joins the nearest survivor with room, else stands alone
            survivors = [i for i in range(len(groups)) if alive[i] and len(groups[i]) + len(pool) <= cfg_max]
            if survivors:
                pv = l2_normalise(vecs[np.asarray(pool)].sum(axis=0, keepdims=True))
                sc = l2_normalise(np.stack([vecs[np.asarray(groups[i])].sum(axis=0) for i in survivors]))
                groups[survivors[int(np.argmax(sc @ pv[0]))]].extend(pool)
            else:
                groups.append(pool)
                alive = np.append(alive, True)
    return [np.array(sorted(groups[i]), dtype=np.int64) for i in range(len(groups)) if alive[i]]


def compute_topics(
    index: KeywordIndex,
    note_vecs: np.ndarray,
    *,
    topic_min: int,
    topic_max: int,
    resolution: float,
    hub_max_fraction: float,
    seed: int,
) -> Topics:
    """Leiden topics over the keyword co-occurrence graph with sizes in [topic_min, topic_max] (in keywords;
    a corpus with fewer than ``topic_min`` graph keywords yields one smaller topic)."""
    n_notes, dim = note_vecs.shape
    if n_notes == 0 or len(index) == 0:
        return Topics.empty(dim)
    hubs = index.hubs(n_notes, hub_max_fraction)
    df = index.df()
    vertices = np.array([k for k in range(len(index)) if df[k] > 0 and k not in hubs], dtype=np.int64)
    kw_vecs = keyword_vectors(index, note_vecs)
    n_leiden = 0
    if len(vertices) == 0:
        members: list[np.ndarray] = []
    else:
        local = {int(k): i for i, k in enumerate(vertices)}
        co = index.cooccurrence(exclude=hubs)
        edges = [(local[a], local[b]) for (a, b) in co]
        weights = [float(w) for w in co.values()]
        membership = _leiden(len(vertices), edges, weights, resolution, seed)
        grouped: dict[int, list[int]] = {}
        for i, m in enumerate(membership):
            grouped.setdefault(m, []).append(int(vertices[i]))
        comms = [np.array(g, dtype=np.int64) for g in grouped.values()]
        n_leiden = len(comms)
        comms = _split_large(comms, {k: float(v) for k, v in co.items()}, kw_vecs, topic_max, resolution, seed)
        comms = _fold_small(comms, kw_vecs, topic_min, topic_max)
        # Deterministic topic order: by smallest keyword id.
        members = sorted(comms, key=lambda c: int(c.min()))
    keyword_topic = np.full(len(index), -1, dtype=np.int64)
    for t, m in enumerate(members):
        keyword_topic[m] = t
    note_topics: list[list[int]] = [[] for _ in members]
    orphans: list[int] = []
    for nid in range(n_notes):
        ts = {int(keyword_topic[k]) for k in index.note_keywords.get(nid, []) if keyword_topic[k] >= 0}
        if ts:
            for t in ts:
                note_topics[t].append(nid)
        else:
            orphans.append(nid)
    if not members:
        # No graph keyword at all: one topic holding every note.
        return Topics(
            keyword_topic,
            [np.zeros(0, dtype=np.int64)],
            [np.arange(n_notes)],
            l2_normalise(note_vecs.sum(axis=0, keepdims=True)),
            {"orphans": n_notes},
        )
    centroids = l2_normalise(
        np.stack(
            [
                note_vecs[np.asarray(ns, dtype=np.int64)].sum(axis=0) if ns else kw_vecs[members[t]].sum(axis=0)
                for t, ns in enumerate(note_topics)
            ]
        )
    )
    if orphans:
        nearest = np.argmax(note_vecs[np.asarray(orphans)] @ centroids.T, axis=1)
        for nid, t in zip(orphans, nearest, strict=True):
            note_topics[int(t)].append(nid)
    notes = [np.array(sorted(ns), dtype=np.int64) for ns in note_topics]
    centroids = l2_normalise(
        np.stack([note_vecs[ns].sum(axis=0) if len(ns) else centroids[t] for t, ns in enumerate(notes)])
    )
    info = {
        "leiden_communities": n_leiden,
        "hub_keywords": len(hubs),
        "graph_keywords": len(vertices),
        "orphans": len(orphans),
    }
    return Topics(keyword_topic, members, notes, centroids.astype(np.float32), info)

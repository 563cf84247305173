"""MemCoRe's evidence packing: ranked notes are an index of raw turns; the turns, not the notes, fill the token budget.

Retrieval ranks notes (topic / keyword / neighbour channels, RRF, IER). Packing then scores raw turns by a
reciprocal rank fusion of ranked lists, each with its own weight (``PackSettings``; 0 = the list is off):

- over the turns of the best ``pack_notes`` notes (the candidates): the note prior (``pack_note_weight``: notes in
  pool order, a note's turns by their cosine to the question), the cosine rank to the question (weight 1) and to
  each IER sub-query (``ier_subquery_weight``), and the BM25 rank for each (same weights);
- what the memory's hierarchy reaches, over every turn of the memory (these lists also bring in turns outside
  the candidates):

  - ``keyword`` (the keyword graph): the keywords the question's entities matched (cosine >= keyword_min_sim,
    the keyword channel's matches) and, with ``keyword_graph`` = N, each one's N strongest co-occurrence
    neighbours in the keyword graph (hubs excluded, as for the topics). A note scores the sum of its keywords'
    weights: a matched keyword's cosine × idf; a neighbour's as its matched keyword's × the share of that
    keyword's notes holding the neighbour. Its turns follow by cosine to the question. Off without the keyword
    switch;
  - ``topic``: the turns of the question's topics (the topic channel's top ``k_topic``) by cosine. Off without
    the topic switch;
  - ``link``: the notes joined by a gate edge to the first ``link_anchors`` notes of the fused ranking (an edge's
    weight over its anchor's rank), their turns by cosine; ``link_text``: BM25 over each turn's text together
    with the turns of the notes linked to its note, so that a turn is found through what its linked notes say.
    Off without the neighbour switch (the same edges as neighbour expansion);
- the session windows (:class:`memcore.packing.turns.Windows`, ``window_bm25`` / ``window_dense``): each turn's
  window of ``window_width`` turns on either side (shared with the RAG baselines).

Turns are then re-ranked by the cues (``pack_cue_*``), taken best first while they fit the budget
(:func:`memcore.packing.budget.fill_units`, or the session frame's fill) and rendered; with ``pack_summary`` a
note's context line is placed before its first packed turn and charged to the budget. When not even the best turn
fits, it is cut at the budget and counted (``packing.cut`` in stats). With every list weight at 0 but the first
group's, packing is what it was before the hierarchy lists existed.

Read-only after construction: safe to call from several threads (the BM25 searches hold a lock).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcore.fusion import rrf_fuse
from memcore.interfaces import Embedder
from memcore.memory.ingestion import clean_text
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import NoteStore
from memcore.memory.topics import Topics
from memcore.packing.budget import cut_note, fill_units, note_line
from memcore.packing.knobs import turn_packing_label
from memcore.packing.turns import Cues, TurnBM25, TurnMeta, WindowIndex, Windows, fill_framed, render_framed, rerank
from memcore.text import count_tokens
from memcore.types import EvidenceNote

#: The names of the hierarchy lists (``PackSettings.hierarchy`` keys), in the order they are fused.
HIERARCHY_LISTS: tuple[str, ...] = ("keyword", "topic", "link", "link_text")


#: The hierarchy lists as a table row names them (their knobs, their name), after the session windows.
HIERARCHY_LABELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("pack_keyword",), "keywords"),
    (("pack_topic",), "topics"),
    (("pack_link", "pack_link_text"), "links"),
)


def packing_label(method: Mapping[str, Any]) -> str:
    """How a MemCoRe run's ``method`` section filled a context-token budget, as a table row says it: ``, packed``
    (raw turns) or ``, whole notes`` (nothing for a run recorded before ``pack`` existed), then, when it packs
    turns, what its frame, cues, windows and hierarchy lists did (:func:`memcore.packing.knobs.turn_packing_label`)."""
    label = ""
    if "pack" in method:
        label += ", packed" if method.get("pack") else ", whole notes"
    if not method.get("pack", True):
        return label
    return label + turn_packing_label(method, HIERARCHY_LABELS)


@dataclass(frozen=True)
class Hierarchy:
    """The RRF weights of the hierarchy lists (0 = off) and their shape: ``keyword_graph`` co-occurrence
    neighbours per matched keyword, ``link_anchors`` notes of the fused ranking whose edges the link list follows."""

    keyword: float = 0.0
    keyword_graph: int = 0
    topic: float = 0.0
    link: float = 0.0
    link_anchors: int = 10
    link_text: float = 0.0

    def weight(self, name: str) -> float:
        return float(getattr(self, name))

    @property
    def active(self) -> bool:
        return any(self.weight(n) > 0 for n in HIERARCHY_LISTS)


@dataclass(frozen=True)
class PackSettings:
    """The packing knobs (MemCoReConfig's ``pack_*`` fields and the RRF constants they fuse with)."""

    notes: int
    note_weight: float
    subquery_weight: float
    rrf_k: int
    summary: bool
    frame: str = "line"
    cues: Cues = field(default_factory=Cues)
    hierarchy: Hierarchy = field(default_factory=Hierarchy)
    windows: Windows = field(default_factory=Windows)


@dataclass(frozen=True)
class PackQuery:
    """What retrieval found for one question, as the packer reads it: ``queries`` (the question, then IER's
    sub-queries), the ranked note ids, note id → the channels that found it, the keywords the question's entities
    matched as (keyword id, cosine), and the question's topics."""

    queries: Sequence[str]
    ranked_notes: Sequence[int]
    channels_of: Mapping[int, set[str]] = field(default_factory=dict)
    keywords: Sequence[tuple[int, float]] = ()
    topics: Sequence[int] = ()


@dataclass
class Packed:
    """The packed evidence in rank order, with what packing did: turns scored, tokens used, whether the one turn
    packed was cut to fit, how many turns did not fit."""

    notes: list[EvidenceNote]
    candidates: int
    tokens: int
    cut: bool
    skipped: int
    context: str = ""


class TurnIndex:
    """Every raw turn of a frozen note store: its note, its vector (of the cleaned ``Speaker: text``, the string
    cheap ingestion embeds, so a warm embedding cache serves it) and a BM25 index over the same texts."""

    def __init__(self, store: NoteStore, embedder: Embedder) -> None:
        self.store = store
        self.refs: list[tuple[int, int]] = [(n.nid, i) for n in store.notes for i in range(len(n.raws))]
        self.rows_of: dict[int, list[int]] = {}
        for row, (nid, _) in enumerate(self.refs):
            self.rows_of.setdefault(nid, []).append(row)
        self.texts = [clean_text(store.notes[nid].raws[i].render()) for nid, i in self.refs]
        self.vectors = embedder.encode(self.texts) if self.texts else np.zeros((0, store.dim), dtype=np.float32)
        self.bm25 = TurnBM25(self.texts)
        self.dia_ids = [store.notes[nid].raws[i].dia_id for nid, i in self.refs]
        self.row_of: dict[str, int] = {}
        self.meta: dict[str, TurnMeta] = {}
        for row, (nid, i) in enumerate(self.refs):
            raw = store.notes[nid].raws[i]
            if raw.dia_id not in self.row_of:
                self.row_of[raw.dia_id] = row
                self.meta[raw.dia_id] = TurnMeta(raw.dia_id, raw.speaker, raw.text, raw.time)
        self.speakers: list[str] = sorted({m.speaker for m in self.meta.values()})

    def turn_note(self, row: int, score: float, channels: tuple[str, ...]) -> EvidenceNote:
        nid, i = self.refs[row]
        raw = self.store.notes[nid].raws[i]
        return EvidenceNote(f"n{nid}.{i}", raw.render(), (raw.dia_id,), score, channels, raw.time)


class HierarchyIndex:
    """The memory's layers as the hierarchy lists read them: keyword postings and idf, the keyword co-occurrence
    graph (hub keywords left out, as for the topics; built only when ``graph``), the topics' notes, the gate's
    edges, and (with ``link_text``) a BM25 over each turn's text joined with the turns of its note's linked notes."""

    def __init__(
        self,
        turns: TurnIndex,
        kindex: KeywordIndex,
        topics: Topics,
        idf: np.ndarray,
        *,
        hub_max_fraction: float,
        graph: bool,
        link_text: bool,
    ) -> None:
        self.turns = turns
        self.kindex = kindex
        self.topics = topics
        self.idf = idf
        self.df = kindex.df()
        self.indptr, self.nbrs, self.edge_weights = turns.store.neighbours_csr()
        self.graph: dict[int, list[tuple[int, int]]] = {}
        if graph:
            adjacent: dict[int, dict[int, int]] = defaultdict(dict)
            hubs = kindex.hubs(len(turns.store), hub_max_fraction)
            for (a, b), count in kindex.cooccurrence(hubs).items():
                adjacent[a][b] = count
                adjacent[b][a] = count
            # strongest first, ties by keyword id (deterministic)
            self.graph = {k: sorted(nb.items(), key=lambda x: (-x[1], x[0])) for k, nb in adjacent.items()}
        self.link_bm25: TurnBM25 | None = None
        if link_text:
            texts = []
            for row, (nid, _) in enumerate(turns.refs):
                parts = [turns.texts[row]]
                for j in self._edges(nid):
                    parts += [turns.texts[r] for r in turns.rows_of.get(int(self.nbrs[j]), [])]
                texts.append(" ".join(parts))
            self.link_bm25 = TurnBM25(texts)

    def _edges(self, nid: int) -> range:
        return range(int(self.indptr[nid]), int(self.indptr[nid + 1])) if nid + 1 < len(self.indptr) else range(0)

    def _turns_of(self, notes: Sequence[int], qsim: np.ndarray) -> list[int]:
        """The turns of ``notes`` in that order, each note's by cosine to the question (``qsim``: per row)."""
        rows_of = self.turns.rows_of
        return [r for n in notes for r in sorted(rows_of.get(n, []), key=lambda r: (-float(qsim[r]), r))]

    def keyword_list(self, matched: Sequence[tuple[int, float]], neighbours: int, qsim: np.ndarray) -> list[int]:
        """Turns of the notes holding the matched keywords (or, with ``neighbours``, their graph neighbours),
        notes by the sum of their keywords' weights (ties by note id)."""
        weight: dict[int, float] = {}
        for k, sim in matched:
            weight[k] = max(weight.get(k, 0.0), sim * float(self.idf[k]))
        for k, sim in matched:
            for b, count in self.graph.get(k, [])[:neighbours]:
                w = sim * float(self.idf[b]) * count / max(1, int(self.df[k]))
                weight[b] = max(weight.get(b, 0.0), w)
        score: dict[int, float] = defaultdict(float)
        for k, w in weight.items():
            for n in self.kindex.postings[k]:
                score[n] += w
        notes = sorted(score, key=lambda n: (-score[n], n))
        return self._turns_of(notes, qsim)

    def topic_list(self, topics: Sequence[int], qsim: np.ndarray) -> list[int]:
        """Turns of the notes of ``topics`` by cosine to the question."""
        notes = {int(n) for t in topics for n in self.topics.notes[t]}
        rows = [r for n in sorted(notes) for r in self.turns.rows_of.get(n, [])]
        return sorted(rows, key=lambda r: (-float(qsim[r]), r))

    def link_list(self, fused: Sequence[int], anchors: int, qsim: np.ndarray) -> list[int]:
        """Turns of the notes joined by an edge to the first ``anchors`` notes of ``fused`` (turn rows, best
        first): a note scores its best edge weight over its anchor's rank; anchors themselves are left out."""
        refs = self.turns.refs
        first = list(dict.fromkeys(refs[r][0] for r in fused))[:anchors]
        taken = set(first)
        score: dict[int, float] = {}
        for rank, a in enumerate(first, start=1):
            for j in self._edges(a):
                n = int(self.nbrs[j])
                if n not in taken:
                    score[n] = max(score.get(n, 0.0), float(self.edge_weights[j]) / rank)
        return self._turns_of(sorted(score, key=lambda n: (-score[n], n)), qsim)


class Packer:
    """Scores the raw turns of ranked notes against the queries and packs the best into a token budget."""

    def __init__(
        self,
        index: TurnIndex,
        embedder: Embedder,
        settings: PackSettings,
        hierarchy: HierarchyIndex | None = None,
    ) -> None:
        if settings.hierarchy.active and hierarchy is None:
            raise ValueError("hierarchy lists are on but the packer was given no HierarchyIndex")
        self.ix = index
        self.embedder = embedder
        self.s = settings
        self.hx = hierarchy
        self.windows = (
            WindowIndex(index.dia_ids, index.texts, index.vectors, settings.windows.width)
            if settings.windows.active
            else None
        )

    def lists(self, query: PackQuery) -> tuple[dict[str, list[int]], dict[str, float]]:
        """Every ranked list of turn rows for ``query`` with its RRF weight (lists with weight 0 are left out)."""
        notes = [n for n in query.ranked_notes[: self.s.notes] if n in self.ix.rows_of]
        rows = np.asarray([r for n in notes for r in self.ix.rows_of[n]], dtype=np.int64)
        lists: dict[str, list[int]] = {}
        weights: dict[str, float] = {}
        if len(rows) == 0:
            return lists, weights
        qv = self.embedder.encode(list(query.queries))
        sims = self.ix.vectors[rows] @ qv.T  # (candidates, queries)
        pos = {int(r): k for k, r in enumerate(rows)}
        # the note prior: notes in pool order, a note's turns by their cosine to the question
        lists["note"] = [
            r for n in notes for r in sorted(self.ix.rows_of[n], key=lambda r: (-float(sims[pos[r], 0]), r))
        ]
        weights["note"] = self.s.note_weight
        for j, text in enumerate(query.queries):
            w = 1.0 if j == 0 else self.s.subquery_weight
            order = np.argsort(-sims[:, j], kind="stable")
            lists[f"dense{j}"] = rows[order].tolist()
            lists[f"bm25{j}"] = self.ix.bm25.ranked(text, rows)
            weights[f"dense{j}"] = weights[f"bm25{j}"] = w
        h = self.s.hierarchy
        if self.hx is not None and h.active:
            qsim = self.ix.vectors @ qv[0]
            if h.keyword > 0:
                lists["keyword"] = self.hx.keyword_list(query.keywords, h.keyword_graph, qsim)
            if h.topic > 0:
                lists["topic"] = self.hx.topic_list(query.topics, qsim)
            if h.link > 0:
                base = rrf_fuse(lists, k=self.s.rrf_k, weights=weights)
                lists["link"] = self.hx.link_list([r for r, _ in base], h.link_anchors, qsim)
            if h.link_text > 0 and self.hx.link_bm25 is not None:
                lists["link_text"] = self.hx.link_bm25.ranked(query.queries[0], np.arange(len(self.ix.refs)))
            for name in HIERARCHY_LISTS:
                if name in lists:
                    weights[name] = h.weight(name)
        if self.windows is not None:
            wl, ww = self.windows.lists(query.queries[0], qv[0], self.s.windows)
            lists.update(wl)
            weights.update(ww)
        return lists, weights

    def rank(self, query: PackQuery) -> list[tuple[int, float]]:
        """(turn row, fused score) of every turn some list ranked, best first."""
        lists, weights = self.lists(query)
        return rrf_fuse(lists, k=self.s.rrf_k, weights=weights) if lists else []

    def turn_order(self, question: str, fused: Sequence[tuple[int, float]]) -> list[str]:
        """The dia_ids of ``fused`` (turn rows, best first) once each, re-ranked by the cues: the order the
        session-frame fill takes them in."""
        ix = self.ix
        order = list(dict.fromkeys(ix.dia_ids[r] for r, _ in fused))
        return rerank(order, question, ix.meta.get, ix.speakers, self.s.cues)

    def pack(self, query: PackQuery, tokens: int) -> Packed:
        """The best turns (and, with ``summary``, their notes' context lines) within ``tokens`` rendered tokens,
        in rank order; a turn carries the channels that found its note (sorted)."""
        fused = self.rank(query)
        channels_of = query.channels_of
        if self.s.cues.active or self.s.frame != "line":
            return self._pack_turns(query.queries[0], fused, tokens, channels_of)
        units: list[EvidenceNote] = []
        groups: list[list[int]] = []  # unit indices that enter together (a summary line with its note's first turn)
        summarised: set[int] = set()
        for row, score in fused:
            nid, _ = self.ix.refs[row]
            chans = tuple(sorted(channels_of.get(nid, ())))
            group: list[int] = []
            note = self.ix.store.notes[nid]
            if self.s.summary and note.denoised and nid not in summarised:
                summarised.add(nid)
                group.append(len(units))
                units.append(EvidenceNote(f"n{nid}.c", note.context, (), score, chans, note.timestamp))
            group.append(len(units))
            units.append(self.ix.turn_note(row, score, chans))
            groups.append(group)
        costs = [sum(count_tokens(note_line(units[i])) for i in g) for g in groups]
        fill = fill_units(costs, tokens)
        if not groups:
            return Packed([], 0, 0, False, 0)
        if fill.cut:  # not even the best turn fits: cut it at the budget (its summary line is left out)
            best = cut_note(units[groups[0][-1]], tokens)
            return Packed([best], len(fused), count_tokens(note_line(best)), True, fill.skipped)
        kept = [units[i] for g in fill.taken for i in groups[g]]
        return Packed(kept, len(fused), fill.used, False, fill.skipped)

    def _pack_turns(
        self, question: str, fused: list[tuple[int, float]], tokens: int, channels_of: Mapping[int, set[str]]
    ) -> Packed:
        """Cue re-ranking of the fused turns, then the fill and rendering of :attr:`PackSettings.frame` (turns
        only; a note's summary line is not written in this path)."""
        ix = self.ix
        score_of = dict(fused)
        order = self.turn_order(question, fused)
        if not order:
            return Packed([], 0, 0, False, 0)
        framed = fill_framed(order, ix.meta, tokens, self.s.frame)
        notes: list[EvidenceNote] = []
        for d in framed.dia_ids:
            row = ix.row_of[d]
            notes.append(ix.turn_note(row, score_of.get(row, 0.0), tuple(sorted(channels_of.get(ix.refs[row][0], ())))))
        context = render_framed(framed.dia_ids, ix.meta, self.s.frame, cut_to=tokens if framed.cut else 0)
        if framed.cut:  # the one turn kept is cut in the context; its note keeps the same cut text
            notes = [cut_note(notes[0], tokens)]
        return Packed(notes, len(fused), count_tokens(context), framed.cut, framed.skipped, context)

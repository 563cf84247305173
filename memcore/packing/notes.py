"""Evidence packing: ranked notes are an index of raw turns; the turns, not the notes, fill the token budget.

Retrieval ranks notes (topic / keyword / neighbour channels, RRF, IER). Packing then takes the raw turns of the
best ``pack_notes`` notes as candidates and scores each turn by a reciprocal rank fusion of
- its note's rank in the pool (``pack_note_weight``; the turns of one note in the order of their cosine to the
  question), so the note ranking acts as a prior;
- its cosine rank to the question (weight 1) and to each IER sub-query (``ier_subquery_weight``);
- its BM25 rank for the question and for each sub-query (same weights; turns without a query word are not ranked).
Turns are then taken best first while they fit the budget (:func:`memcore.packing.budget.fill_units`: a turn that does
not fit the tokens left is skipped); each is rendered ``[date] Speaker: text``, and with ``pack_summary`` a
note's context line is placed before its first packed turn and charged to the budget. When not even the best
turn fits, it is cut at the budget and counted (``packing.cut`` in stats).

Before the fill the fused order may be re-ranked by cheap cues (``pack_cue_*``: the named speaker, the stated
date, filler demotion, ±1 neighbours) and the packed turns written in a session frame (``pack_frame``: one
``[date]`` header per session, charged to the budget); both are :mod:`memcore.packing.turns`'s, shared with the RAG
baselines. With the defaults (no cue, ``line`` frame) packing is as described above.

Read-only after construction: safe to call from several threads (the BM25 search holds a lock).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from memcore.fusion import rrf_fuse
from memcore.interfaces import Embedder
from memcore.memory.ingestion import clean_text
from memcore.memory.notes import NoteStore
from memcore.packing.budget import cut_note, fill_units, note_line
from memcore.packing.turns import Cues, TurnMeta, fill_framed, render_framed, rerank
from memcore.text import count_tokens
from memcore.types import EvidenceNote

BM25_K1 = 1.5
BM25_B = 0.75


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


@dataclass
class Packed:
    """The packed evidence in rank order, with what packing did: candidate turns scored, tokens used, whether
    the one turn packed was cut to fit."""

    notes: list[EvidenceNote]
    candidates: int
    tokens: int
    cut: bool
    skipped: int
    context: str = ""


class _BM25:
    """Okapi BM25 over the turns' texts (bm25s, English stop words), scoring every turn for one query."""

    def __init__(self, texts: list[str]) -> None:
        import bm25s

        self._bm25s = bm25s
        self.n = len(texts)
        self._lock = threading.Lock()
        self._retriever = bm25s.BM25(k1=BM25_K1, b=BM25_B)
        if texts:
            self._retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)

    def ranked(self, query: str, rows: np.ndarray) -> list[int]:
        """``rows`` (turn rows) with a BM25 score > 0 for ``query``, best first."""
        if self.n == 0 or len(rows) == 0:
            return []
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        with self._lock:
            docs, scores = self._retriever.retrieve(tokens, k=self.n, show_progress=False)
        score = np.zeros(self.n)
        score[np.asarray(docs[0], dtype=np.int64)] = scores[0]
        mine = score[rows]
        order = np.argsort(-mine, kind="stable")
        return [int(rows[i]) for i in order if mine[i] > 0]


class TurnIndex:
    """Every raw turn of a frozen note store: its note, its vector (of the cleaned ``Speaker: text``, the string
    cheap ingestion embeds, so a warm embedding cache serves it) and a BM25 index over the same texts."""

    def __init__(self, store: NoteStore, embedder: Embedder) -> None:
        self.store = store
        self.refs: list[tuple[int, int]] = [(n.nid, i) for n in store.notes for i in range(len(n.raws))]
        self.rows_of: dict[int, list[int]] = {}
        for row, (nid, _) in enumerate(self.refs):
            self.rows_of.setdefault(nid, []).append(row)
        texts = [clean_text(store.notes[nid].raws[i].render()) for nid, i in self.refs]
        self.vectors = embedder.encode(texts) if texts else np.zeros((0, store.dim), dtype=np.float32)
        self.bm25 = _BM25(texts)
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


class Packer:
    """Scores the raw turns of ranked notes against the queries and packs the best into a token budget."""

    def __init__(self, index: TurnIndex, embedder: Embedder, settings: PackSettings) -> None:
        self.ix = index
        self.embedder = embedder
        self.s = settings

    def rank(self, queries: Sequence[str], ranked_notes: Sequence[int]) -> list[tuple[int, float]]:
        """(turn row, fused score) of the candidate turns, best first. ``queries[0]`` is the question, the rest
        IER's sub-queries."""
        notes = [n for n in ranked_notes[: self.s.notes] if n in self.ix.rows_of]
        rows = np.asarray([r for n in notes for r in self.ix.rows_of[n]], dtype=np.int64)
        if len(rows) == 0:
            return []
        qv = self.embedder.encode(list(queries))
        sims = self.ix.vectors[rows] @ qv.T  # (candidates, queries)
        pos = {int(r): k for k, r in enumerate(rows)}
        lists: dict[str, list[int]] = {}
        weights: dict[str, float] = {}
        # the note prior: notes in pool order, a note's turns by their cosine to the question
        lists["note"] = [
            r for n in notes for r in sorted(self.ix.rows_of[n], key=lambda r: (-float(sims[pos[r], 0]), r))
        ]
        weights["note"] = self.s.note_weight
        for j, query in enumerate(queries):
            w = 1.0 if j == 0 else self.s.subquery_weight
            order = np.argsort(-sims[:, j], kind="stable")
            lists[f"dense{j}"] = [int(rows[k]) for k in order]
            lists[f"bm25{j}"] = self.ix.bm25.ranked(query, rows)
            weights[f"dense{j}"] = weights[f"bm25{j}"] = w
        return rrf_fuse(lists, k=self.s.rrf_k, weights=weights)

    def pack(self, queries: Sequence[str], ranked_notes: Sequence[int], tokens: int, channels_of: dict) -> Packed:
        """The best turns (and, with ``summary``, their notes' context lines) within ``tokens`` rendered tokens,
        in rank order. ``channels_of``: note id → the channels that found it (carried onto its turns, sorted)."""
        fused = self.rank(queries, ranked_notes)
        if self.s.cues.active or self.s.frame != "line":
            return self._pack_turns(queries[0], fused, tokens, channels_of)
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

    def _pack_turns(self, question: str, fused: list[tuple[int, float]], tokens: int, channels_of: dict) -> Packed:
        """Cue re-ranking of the fused turns, then the fill and rendering of :attr:`PackSettings.frame` (turns
        only; a note's summary line is not written in this path)."""
        ix = self.ix
        score_of = dict(fused)
        order = list(dict.fromkeys(ix.store.notes[ix.refs[r][0]].raws[ix.refs[r][1]].dia_id for r, _ in fused))
        order = rerank(order, question, ix.meta.get, ix.speakers, self.s.cues)
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

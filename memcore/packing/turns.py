"""Turn packing shared by every method that packs raw turns into a token budget (MemCoRe's packer, the RAG
baselines): cheap re-ranking cues over a ranked candidate list, and the context frame the packed turns are
written in.

Cues (:class:`Cues`, all off by default; no LLM, only the question's words and the turns' metadata):

- ``speaker``: when the question names exactly one speaker of the conversation, that speaker's candidates are
  fused as one more ranked list (weight ``speaker``) into the candidates' reciprocal-rank order;
- ``date``: when the question states a date (``8 May 2023``, ``May 2023``, ``May 8``), the candidates said in a
  session of that date (month and year; the day too when given) are fused the same way (weight ``date``);
- ``filler``: turns with fewer than ``filler`` content words ("How's it going?") move behind all others;
- ``neighbors``: the turns just before and after each of the first ``neighbors`` candidates are placed right
  after it (they need not be candidates: the conversation's turns are all known to the packer).

Frames (:func:`fill_framed`, :func:`render_framed`): ``line`` writes every turn ``[date] Speaker: text``;
``session`` and ``session_rank`` write one ``[date]`` header per session, then that session's turns as
``Speaker: text`` lines (``session``: sessions and turns in conversation order; ``session_rank``: in the order of
their best packed turn). The budget is charged for every header; the date of every turn stays unambiguous (the
header above it).

Session windows (:class:`Windows`, :class:`WindowIndex`; off by default): a turn is also ranked by its *window*,
the turns of its session within ``width`` turns of it, itself included. Two lists join the turn ranking: BM25 over
the window's text and cosine to the window's vector (the turns' vectors weighted 2^-distance, normalised). A turn
that says "it's like therapy" right after "I've been working on cars" is then reachable by a question about cars,
although it shares no content word with it (coreference, ellipsis, a short answer to a question).

:class:`TurnBM25` is the one BM25 over turn texts that the packers and the RAG baselines use.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from memcore.packing.budget import fill_units
from memcore.text import count_tokens, truncate_to_tokens
from memcore.turn_ids import neighbour_ids, session_number, turn_id, turn_number

FRAMES = ("line", "session", "session_rank")

_MONTHS = (
    "january february march april may june july august september october november december".split()  # noqa: SIM905
)
_MONTH = "|".join(m.capitalize() for m in _MONTHS)
_DATE_PATTERNS = (
    re.compile(rf"\b(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month>{_MONTH}),?\s+(?P<year>\d{{4}})\b"),
    re.compile(rf"\b(?P<month>{_MONTH})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<year>\d{{4}})\b"),
    re.compile(rf"\b(?P<month>{_MONTH}),?\s+(?P<year>\d{{4}})\b"),
)
_WORD = re.compile(r"[A-Za-z][A-Za-z']+")
_STOP = frozenset(
    """a about after again all also am an and any are as at be because been before being but by can could did do
    does doing don't for from had has have having he her here hers him his how i i'm i've if in into is it it's its
    just let's me more most my no nor not now of off oh on once only or other our out over own really same she
    should so some such than that that's the their them then there these they this those through to too up very
    was we we're were what when where which while who whom why will with would yeah yes you you're your yours
    hey hi hello thanks thank great good nice wow awesome cool sounds sure glad ok okay going how's what's""".split()  # noqa: SIM905
)


@dataclass(frozen=True)
class TurnMeta:
    """What the cues and the frame read of one turn. ``dia_id`` is ``D<session>:<turn>``; ``date`` the session's
    date as written (``1:56 pm on 8 May, 2023``)."""

    dia_id: str
    speaker: str
    text: str
    date: str

    @property
    def session(self) -> int:
        return session_number(self.dia_id)

    @property
    def turn(self) -> int:
        return turn_number(self.dia_id) or 0

    def line(self) -> str:
        """``Speaker: text``."""
        return f"{self.speaker}: {self.text}"

    @cached_property
    def line_tokens(self) -> int:
        """Tokens of ``Speaker: text`` (counted once per turn: the packer costs every candidate per question)."""
        return count_tokens(self.line())

    @cached_property
    def content_word_count(self) -> int:
        """:func:`content_words` of the text (the filler cue reads it for every candidate of every question)."""
        return content_words(self.text)

    @cached_property
    def header_tokens(self) -> int:
        """Tokens of the ``[date]`` header (0 without a date)."""
        return count_tokens(f"[{self.date}]") if self.date else 0

    @cached_property
    def dated_tokens(self) -> int:
        """Tokens of ``[date] Speaker: text``."""
        return count_tokens(f"[{self.date}] {self.line()}") if self.date else self.line_tokens


@dataclass(frozen=True)
class Cues:
    """Re-ranking knobs (0 = off). ``rrf_k``: the constant the cue lists are fused with."""

    speaker: float = 0.0
    date: float = 0.0
    filler: int = 0
    neighbors: int = 0
    rrf_k: int = 60

    @property
    def active(self) -> bool:
        return bool(self.speaker or self.date or self.filler or self.neighbors)


def stated_dates(question: str) -> list[tuple[int | None, int, int]]:
    """(day or None, month, year) of every date the question states."""
    out: list[tuple[int | None, int, int]] = []
    taken: list[tuple[int, int]] = []
    for pat in _DATE_PATTERNS:
        for m in pat.finditer(question):
            if any(a <= m.start() < b for a, b in taken):
                continue
            taken.append(m.span())
            day = m.groupdict().get("day")
            out.append((int(day) if day else None, _MONTHS.index(m["month"].lower()) + 1, int(m["year"])))
    return out


def _session_date(date: str) -> tuple[int, int, int] | None:
    """(day, month, year) of a LoCoMo session date string, or None when it has no recognisable date."""
    for pat in _DATE_PATTERNS[:2]:
        m = pat.search(date)
        if m:
            return int(m["day"]), _MONTHS.index(m["month"].lower()) + 1, int(m["year"])
    return None


@lru_cache(maxsize=1 << 16)  # the same turns are counted for every question of their conversation
def content_words(text: str) -> int:
    """Words of ``text`` that are not stop words or small talk."""
    return sum(1 for w in _WORD.findall(text.lower()) if w not in _STOP)


@lru_cache(maxsize=1 << 16)
def content_word_set(text: str) -> frozenset[str]:
    """The distinct lower-cased words of ``text`` that :func:`content_words` counts."""
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def named_speaker(question: str, speakers: Sequence[str]) -> str | None:
    """The one speaker whose (first) name the question contains, or None (no speaker or both named)."""
    words = set(_WORD.findall(question))
    named = [s for s in speakers if s and s.split()[0] in words]
    return named[0] if len(named) == 1 else None


def rerank(
    order: Sequence[str],
    question: str,
    meta: Callable[[str], TurnMeta | None],
    speakers: Sequence[str],
    cues: Cues,
) -> list[str]:
    """``order`` (dia_ids, best first) re-ranked by ``cues`` for ``question``. ``meta`` gives a turn's metadata
    (None for an unknown id, which is then never added as a neighbour); ``speakers`` are the conversation's."""
    if not cues.active or not order:
        return list(order)
    scores = {d: 1.0 / (cues.rrf_k + r + 1) for r, d in enumerate(order)}
    if cues.speaker:
        who = named_speaker(question, speakers)
        if who is not None:
            hits = [d for d in order if (m := meta(d)) is not None and m.speaker == who]
            for r, d in enumerate(hits):
                scores[d] += cues.speaker / (cues.rrf_k + r + 1)
    if cues.date:
        stated = stated_dates(question)
        if stated:

            def matches(d: str) -> bool:
                m = meta(d)
                got = _session_date(m.date) if m is not None else None
                return got is not None and any(
                    mo == got[1] and y == got[2] and (day is None or day == got[0]) for day, mo, y in stated
                )

            for r, d in enumerate([d for d in order if matches(d)]):
                scores[d] += cues.date / (cues.rrf_k + r + 1)
    ranked = sorted(order, key=lambda d: -scores[d])
    if cues.filler:  # filler turns move behind the rest, each part in its order
        kept: list[str] = []
        filler: list[str] = []
        for d in ranked:
            m = meta(d)
            (filler if m is not None and m.content_word_count < cues.filler else kept).append(d)
        ranked = kept + filler
    if cues.neighbors:
        out: list[str] = []
        placed: set[str] = set()
        for r, d in enumerate(ranked):
            if d in placed:
                continue
            out.append(d)
            placed.add(d)
            if r < cues.neighbors and (m := meta(d)) is not None:
                for t in (m.turn - 1, m.turn + 1):
                    nb = turn_id(m.session, t)
                    if nb not in placed and meta(nb) is not None:
                        out.append(nb)
                        placed.add(nb)
        ranked = out
    return ranked


@dataclass(frozen=True)
class Framed:
    """What :func:`fill_framed` packed: dia_ids in rank order, tokens used (headers included), whether the one
    turn taken was cut to fit, how many candidates were skipped."""

    dia_ids: list[str]
    used: int
    cut: bool
    skipped: int


def line_cost(m: TurnMeta) -> int:
    """Tokens of ``[date] Speaker: text``."""
    return m.dated_tokens


def fill_framed(order: Sequence[str], meta: Mapping[str, TurnMeta], tokens: int, frame: str) -> Framed:
    """Greedy fill of ``order`` within ``tokens`` under ``frame``: a turn enters when it fits the tokens left,
    charged its line plus, in a session frame, its session's ``[date]`` header when that session is not open yet.
    When nothing fits, the best turn is taken and marked cut (:func:`render_framed` cuts it)."""
    if frame not in FRAMES:
        raise ValueError(f"unknown frame {frame!r}; known: {', '.join(FRAMES)}")
    if frame == "line":
        fill = fill_units([line_cost(meta[d]) for d in order], tokens)
        return Framed([order[i] for i in fill.taken], fill.used, fill.cut, fill.skipped)
    taken: list[str] = []
    opened: set[str] = set()
    used = skipped = 0
    for d in order:
        m = meta[d]
        cost = m.line_tokens + (m.header_tokens if m.date not in opened else 0)
        if used + cost <= tokens:
            taken.append(d)
            used += cost
            if m.date:
                opened.add(m.date)
        else:
            skipped += 1
    if not taken and order:
        return Framed([order[0]], tokens, True, len(order) - 1)
    return Framed(taken, used, False, skipped)


def render_framed(dia_ids: Sequence[str], meta: Mapping[str, TurnMeta], frame: str, *, cut_to: int = 0) -> str:
    """The context text of packed turns (rank order in ``dia_ids``) under ``frame``; ``cut_to`` > 0 cuts the text
    to that many tokens (the one-turn-larger-than-the-budget case)."""
    if frame == "line":
        text = "\n".join(f"[{meta[d].date}] {meta[d].line()}" if meta[d].date else meta[d].line() for d in dia_ids)
    else:
        groups: dict[str, list[str]] = {}
        for d in dia_ids:
            groups.setdefault(meta[d].date, []).append(d)
        keys = list(groups)
        if frame == "session":
            keys.sort(key=lambda k: min(meta[d].session for d in groups[k]))
            for k in keys:
                groups[k].sort(key=lambda d: (meta[d].session, meta[d].turn))
        lines: list[str] = []
        for k in keys:
            if k:
                lines.append(f"[{k}]")
            lines += [meta[d].line() for d in groups[k]]
        text = "\n".join(lines)
    return truncate_to_tokens(text, cut_to) if cut_to > 0 else text


class TurnBM25:
    """Okapi BM25 (Lucene idf) over turn texts: lower-cased word tokens minus English stop words, via bm25s.
    Thread-safe (a search holds a lock)."""

    def __init__(self, texts: Sequence[str], k1: float = 1.5, b: float = 0.75) -> None:
        import bm25s

        self._bm25s = bm25s
        self.n = len(texts)
        self._lock = threading.Lock()
        self._retriever = bm25s.BM25(k1=k1, b=b)
        corpus = bm25s.tokenize(list(texts), stopwords="en", show_progress=False) if texts else None
        if corpus is None or not corpus.vocab:  # nothing but stop words: no text can match a query
            self.n = 0
        else:
            self._retriever.index(corpus, show_progress=False)

    def _tokens(self, query: str) -> Any:
        """``query`` tokenised as the texts were, or None when it has no word that is not a stop word."""
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        return tokens if tokens.vocab else None

    def _retrieve(self, query: str, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        tokens = self._tokens(query)
        if tokens is None:
            return None
        with self._lock:
            docs, scores = self._retriever.retrieve(tokens, k=k, show_progress=False)
        return docs[0], scores[0]

    def _scores(self, query: str) -> np.ndarray | None:
        """Every text's score for ``query`` (the scores ``_retrieve`` ranks, without its top-k sort), or None
        when the query has no word that is not a stop word."""
        tokens = self._tokens(query)
        if tokens is None:
            return None
        words = self._bm25s.tokenization.convert_tokenized_to_string_list(tokens)[0]
        with self._lock:
            return self._retriever.get_scores(words)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """The best ``k`` texts for ``query`` with a score > 0, as (index, score), best first."""
        if self.n == 0:
            return []
        got = self._retrieve(query, min(k, self.n))
        if got is None:
            return []
        return [(int(d), float(s)) for d, s in zip(*got, strict=True) if s > 0]

    def ranked(self, query: str, rows: np.ndarray | Sequence[int]) -> list[int]:
        """``rows`` (text indices) with a score > 0 for ``query``, best first (ties in ``rows`` order)."""
        rows = np.asarray(rows, dtype=np.int64)
        if self.n == 0 or len(rows) == 0:
            return []
        score = self._scores(query)
        if score is None:
            return []
        mine = score[rows]
        order = np.argsort(-mine, kind="stable")
        return rows[order[mine[order] > 0]].tolist()


@dataclass(frozen=True)
class Windows:
    """The session-window lists' knobs: RRF weights of BM25 over each turn's window text (``bm25``) and of cosine
    to its window vector (``dense``), 0 = off; ``width``: turns on each side, in the same session."""

    bm25: float = 0.0
    dense: float = 0.0
    width: int = 2

    @property
    def active(self) -> bool:
        return bool(self.bm25 or self.dense) and self.width > 0


def session_windows(dia_ids: Sequence[str], width: int) -> list[list[tuple[int, int]]]:
    """For each position of ``dia_ids`` (``D<session>:<turn>`` ids), the positions of the turns of its session
    within ``width`` turns of it, as (position, distance), itself first at distance 0. A turn repeated in
    ``dia_ids`` stands at its first position."""
    first: dict[str, int] = {}
    for i, d in enumerate(dia_ids):
        first.setdefault(d, i)
    out: list[list[tuple[int, int]]] = []
    for i, d in enumerate(dia_ids):
        window = [(i, 0)]
        for nb, dist in neighbour_ids(d, width):
            j = first.get(nb)
            if j is not None:
                window.append((j, dist))
        out.append(window)
    return out


class WindowIndex:
    """Every turn's session window (:func:`session_windows`): its vector (the turns' ``vectors`` weighted
    2^-distance, L2-normalised) and a :class:`TurnBM25` over its text (the window's turns in conversation order).
    Read-only after construction."""

    def __init__(self, dia_ids: Sequence[str], texts: Sequence[str], vectors: np.ndarray, width: int) -> None:
        windows = session_windows(dia_ids, width)
        self.vectors = np.zeros_like(vectors)
        window_texts: list[str] = []
        for i, window in enumerate(windows):
            for j, dist in window:
                self.vectors[i] += vectors[j] * 0.5**dist
            window_texts.append(" ".join(texts[j] for j, _ in sorted(window)))
        norms = np.linalg.norm(self.vectors, axis=1, keepdims=True)
        self.vectors /= np.where(norms > 0, norms, 1.0)
        self.bm25 = TurnBM25(window_texts)

    def lists(self, question: str, qvec: np.ndarray, windows: Windows) -> tuple[dict[str, list[int]], dict[str, float]]:
        """The window lists for ``question`` (its vector ``qvec``) over every turn, with their RRF weights: ranked
        lists of turn positions named ``window_bm25`` / ``window_dense`` (only those with a weight > 0)."""
        lists: dict[str, list[int]] = {}
        weights: dict[str, float] = {}
        if windows.bm25 > 0:
            lists["window_bm25"] = self.bm25.ranked(question, np.arange(len(self.vectors)))
            weights["window_bm25"] = windows.bm25
        if windows.dense > 0 and len(self.vectors):
            sims = self.vectors @ qvec
            lists["window_dense"] = np.argsort(-sims, kind="stable").tolist()
            weights["window_dense"] = windows.dense
        return lists, weights

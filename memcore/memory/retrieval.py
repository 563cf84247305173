"""Tri-pathway retrieval: query decomposition, topic and keyword channels, RRF, one-hop neighbour expansion.

Read-only after ``finalize``: every method here may run from several threads at once.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcore.fusion import rrf_fuse
from memcore.interfaces import ChatBackbone, Embedder
from memcore.llm.json_reply import complete_json
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.ingestion import StatisticalKeywords
from memcore.memory.keywords import KeywordIndex, normalise_keywords
from memcore.memory.notes import NoteStore, VectorMatrix
from memcore.memory.prompts import decompose as DECOMPOSE_PROMPT
from memcore.memory.topics import Topics

CHANNELS = ("topic", "keyword", "neighbor")
MAX_ENTITIES = 6
_WORD_RE = re.compile(r"[A-Za-z0-9][\w'\-]*")
QUESTION_WORDS = frozenset(
    {
        "what",
        "when",
        "where",
        "who",
        "whom",
        "whose",
        "which",
        "why",
        "how",
        "did",
        "does",
        "do",
        "is",
        "are",
        "was",
        "were",
        "has",
        "have",
        "had",
        "would",
        "could",
        "should",
        "will",
        "can",
        "may",
        "might",
        "the",
        "a",
        "an",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "with",
        "about",
        "and",
        "or",
        "by",
        "from",
        "as",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "he",
        "she",
        "they",
        "them",
        "his",
        "her",
        "their",
        "i",
        "you",
        "we",
        "me",
        "my",
        "your",
        "our",
        "be",
        "been",
        "being",
        "kind",
        "type",
        "sort",
        "likely",
    }
)


@dataclass(frozen=True)
class QueryPlan:
    """A (sub-)query: the topic description drives the topic channel, the entities the keyword channel."""

    query: str
    topic: str
    entities: tuple[str, ...]
    fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"query": self.query, "topic": self.topic, "entities": list(self.entities)}


def cheap_plan(query: str, extractor: StatisticalKeywords, max_entities: int = MAX_ENTITIES) -> QueryPlan:
    """Non-LLM decomposition: topic = the question; entities = YAKE phrases of the question that contain
    no question word or auxiliary ("pet does caroline" is dropped) and share no word with a better phrase
    (at most half the slots), then the question's content words, then the remaining phrases."""
    phrases = [p for p in extractor.phrases(query) if not set(p.split()) & QUESTION_WORDS]
    distinct: list[str] = []
    used: set[str] = set()
    for p in phrases:
        if len(distinct) < max(1, max_entities // 2) and not used & set(p.split()):
            distinct.append(p)
            used |= set(p.split())
    words = [w.lower() for w in _WORD_RE.findall(query)]
    content = extractor.content_words([w for w in words if w not in QUESTION_WORDS])
    entities = list(dict.fromkeys([*distinct, *content, *phrases]))
    return QueryPlan(query, query, tuple(entities[:max_entities]))


def _validate_plan(obj: Any) -> tuple[str, list[str]]:
    if not isinstance(obj, dict):
        raise ValueError("decompose reply is not a JSON object")
    topic, entities = obj.get("topic"), obj.get("entities", [])
    if not isinstance(topic, str) or not topic.strip():
        raise ValueError("decompose reply has no 'topic' string")
    if isinstance(entities, str):
        entities = [e for e in re.split(r"[;,]", entities) if e.strip()]
    if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
        raise ValueError("decompose reply 'entities' is not a list of strings")
    return topic.strip(), entities


class Decomposer:
    """Question → ``QueryPlan``: the LLM when ``backbone`` is given, else the cheap rule."""

    def __init__(
        self, backbone: ChatBackbone | None, extractor: StatisticalKeywords, cfg: MemCoReConfig, seed: int
    ) -> None:
        self.backbone = backbone
        self.extractor = extractor
        self.cfg = cfg
        self.seed = seed
        self._cheap: dict[str, QueryPlan] = {}
        self._lock = threading.Lock()

    def cheap(self, query: str) -> QueryPlan:
        """:func:`cheap_plan` of ``query``, computed once per question (prefetch and retrieval share it)."""
        with self._lock:
            plan = self._cheap.get(query)
        if plan is None:
            plan = cheap_plan(query, self.extractor)
            with self._lock:
                self._cheap[query] = plan
        return plan

    def plan(self, query: str) -> QueryPlan:
        if self.backbone is None:
            return self.cheap(query)
        res = complete_json(
            self.backbone,
            [
                {"role": "system", "content": DECOMPOSE_PROMPT.SYSTEM},
                {"role": "user", "content": DECOMPOSE_PROMPT.USER.format(question=query)},
            ],
            stage="retrieve",
            validate=_validate_plan,
            fallback=("", []),
            fallback_kind="decompose:statistical_plan",
            prompt_version=DECOMPOSE_PROMPT.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        if not res.ok:
            p = cheap_plan(query, self.extractor)
            return QueryPlan(query, p.topic, p.entities, fallback="decompose:statistical_plan")
        topic, entities = res.value
        ents = normalise_keywords(entities, limit=MAX_ENTITIES) or list(cheap_plan(query, self.extractor).entities)
        return QueryPlan(query, topic, tuple(ents))


@dataclass
class RoundResult:
    """One pass of the channels for one (sub-)query."""

    ranked: list[int]
    scores: dict[int, float]
    channels: dict[int, set[str]]
    entity_keywords: dict[str, list[int]] = field(default_factory=dict)
    topics: list[int] = field(default_factory=list)
    keywords: list[int] = field(default_factory=list)
    keyword_matches: list[tuple[int, float]] = field(default_factory=list)  # (keyword id, cosine), as matched


@dataclass
class RetrievalIndex:
    """The frozen read-only structures retrieval runs on (built at finalize / load)."""

    store: NoteStore
    kindex: KeywordIndex
    topics: Topics
    kw_vectors: VectorMatrix
    idf: np.ndarray
    post_indptr: np.ndarray
    post_ids: np.ndarray


class Retriever:
    def __init__(self, index: RetrievalIndex, embedder: Embedder, cfg: MemCoReConfig, switches: Switches) -> None:
        self.ix = index
        self.embedder = embedder
        self.cfg = cfg
        self.sw = switches

    # --------------------------------------------------------------- channels
    def topic_channel(self, q: np.ndarray, depth: int) -> tuple[list[int], list[int]]:
        """Top ``k_topic`` topics by centroid cosine → their notes ranked by cosine to ``q``."""
        t = self.ix.topics
        if len(t) == 0:
            return [], []
        tsims = t.centroids @ q
        k = min(self.cfg.k_topic, len(t))
        # = np.argsort(-tsims, kind="stable")[:k] (ties by topic id) without sorting every topic: that full sort
        # was ~12 ms of a query at 35k topics (1M notes).
        kth = np.partition(-tsims, k - 1)[k - 1]
        best = np.flatnonzero(-tsims <= kth)
        top = best[np.argsort(-tsims[best], kind="stable")][:k]
        cand = np.unique(np.concatenate([t.notes[i] for i in top]))
        if len(cand) == 0:
            return [], [int(i) for i in top]
        sims = self.ix.store.vectors.matrix[cand] @ q
        order = np.argsort(-sims, kind="stable")[:depth]
        return [int(x) for x in cand[order]], [int(i) for i in top]

    def match_keywords(
        self, ent_vecs: np.ndarray, entities: Sequence[str]
    ) -> tuple[list[tuple[int, float]], dict[str, list[int]]]:
        """Entities → stored keywords by cosine: per entity its matches with sim ≥ keyword_min_sim, merged
        round-robin across entities (so one entity cannot take every slot) up to ``k_key`` keywords."""
        if len(self.ix.kw_vectors) == 0 or len(entities) == 0:
            return [], {}
        scores, rows = self.ix.kw_vectors.search(ent_vecs, self.cfg.k_key)
        per_entity: list[list[tuple[int, float]]] = []
        by_entity: dict[str, list[int]] = {}
        for e, (sc, rw) in enumerate(zip(scores, rows, strict=True)):
            ok = [(int(r), float(s)) for r, s in zip(rw, sc, strict=True) if s >= self.cfg.keyword_min_sim]
            per_entity.append(ok)
            by_entity[entities[e]] = [r for r, _ in ok]
        chosen: dict[int, float] = {}
        depth = 0
        while len(chosen) < self.cfg.k_key and any(depth < len(p) for p in per_entity):
            for p in per_entity:
                if depth < len(p) and len(chosen) < self.cfg.k_key:
                    kid, s = p[depth]
                    chosen[kid] = max(s, chosen.get(kid, 0.0))
            depth += 1
        return list(chosen.items()), by_entity

    def keyword_channel(self, matched: list[tuple[int, float]], q: np.ndarray, depth: int) -> list[int]:
        """Notes of the matched keywords, ranked by Σ cosine·idf over their matched keywords, ties by cosine to ``q``."""
        if not matched:
            return []
        kids = np.array([k for k, _ in matched], dtype=np.int64)
        w = np.array([s for _, s in matched], dtype=np.float32) * self.ix.idf[kids]
        starts, ends = self.ix.post_indptr[kids], self.ix.post_indptr[kids + 1]
        lens = ends - starts
        if lens.sum() == 0:
            return []
        ids = np.concatenate([self.ix.post_ids[s:e] for s, e in zip(starts, ends, strict=True)])
        weights = np.repeat(w, lens).astype(np.float64)
        if len(ids) * 16 < len(self.ix.store):
            # few postings: sum per distinct note (a bincount over every note costs O(notes), 14 ms at 1M)
            uniq, inv = np.unique(ids, return_inverse=True)
            summed = np.bincount(inv, weights=weights)
            nz = summed != 0
            notes, score = uniq[nz], summed[nz]
        else:
            # bincount over all notes: linear in the postings, no sort (hub keywords can have huge postings)
            dense_score = np.bincount(ids, weights=weights, minlength=len(self.ix.store))
            notes = np.flatnonzero(dense_score)
            score = dense_score[notes]
        cap = max(4 * depth, 200)
        if len(notes) > cap:
            keep = np.argpartition(-score, cap - 1)[:cap]
            notes, score = notes[keep], score[keep]
        tie = self.ix.store.vectors.matrix[notes] @ q
        order = np.lexsort((notes, -tie, -np.round(score, 6)))[:depth]
        return [int(x) for x in notes[order]]

    # --------------------------------------------------------------- one round
    def run(self, plan: QueryPlan, k_final: int) -> RoundResult:
        """Channels → RRF → neighbour expansion; returns the ranked pool (longer than ``k_final``)."""
        depth = max(self.cfg.channel_depth, k_final)
        texts = [plan.topic or plan.query, *plan.entities]
        vecs = self.embedder.encode(texts)
        q, ent_vecs = vecs[0], vecs[1:]
        lists: dict[str, list[int]] = {}
        topics: list[int] = []
        matched: list[tuple[int, float]] = []
        by_entity: dict[str, list[int]] = {}
        if self.sw.topic:
            lists["topic"], topics = self.topic_channel(q, depth)
        if self.sw.keyword or self.sw.ier:  # IER's coverage check needs the entity matches even without the channel
            matched, by_entity = self.match_keywords(ent_vecs, plan.entities)
        if self.sw.keyword:
            lists["keyword"] = self.keyword_channel(matched, q, depth)
        fused = rrf_fuse(lists, k=self.cfg.rrf_k, weights={"topic": self.cfg.topic_weight, "keyword": 1.0})
        scores = {nid: s for nid, s in fused}
        members = {name: set(lst) for name, lst in lists.items()}
        channels: dict[int, set[str]] = {nid: {name for name, m in members.items() if nid in m} for nid, _ in fused}
        if self.sw.neighbor and fused:
            self._expand(fused[:k_final], scores, channels)
        ranked = sorted(scores, key=lambda n: (-scores[n], n))
        return RoundResult(ranked, scores, channels, by_entity, topics, [k for k, _ in matched], matched)

    def _expand(
        self, anchors: list[tuple[int, float]], scores: dict[int, float], channels: dict[int, set[str]]
    ) -> None:
        """One hop along the gate's edges: neighbour score = max over adjacent anchors of anchor score × edge
        weight × neighbor_weight, capped just below the lowest anchor that both channels found (so expansion adds
        evidence but never pushes out an anchor the two channels agree on); a note takes it when it beats the
        note's own fused score."""
        indptr, nbrs, weights = self.ix.store.neighbours_csr()
        ids = np.array([a for a, _ in anchors], dtype=np.int64)
        a_scores = np.array([s for _, s in anchors], dtype=np.float64)
        starts, ends = indptr[ids], indptr[ids + 1]
        lens = ends - starts
        if lens.sum() == 0:
            return
        nb = np.concatenate([nbrs[s:e] for s, e in zip(starts, ends, strict=True)])
        prop = np.concatenate([weights[s:e] for s, e in zip(starts, ends, strict=True)]).astype(np.float64) * np.repeat(
            a_scores, lens
        )
        prop *= self.cfg.neighbor_weight
        dual = [sc for a, sc in anchors if len(channels.get(a, ())) >= 2]
        if dual:
            np.minimum(prop, np.nextafter(min(dual), 0.0), out=prop)
        uniq, inv = np.unique(nb, return_inverse=True)
        best = np.full(len(uniq), -np.inf)
        np.maximum.at(best, inv, prop)
        for nid, s in zip(uniq.tolist(), best.tolist(), strict=True):
            if s > scores.get(nid, 0.0):
                scores[nid] = s
                channels.setdefault(nid, set()).add("neighbor")

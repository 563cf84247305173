"""Flat retrieval over raw turns: dense (embedder cosine), BM25, and their RRF hybrid.

``rag_dense`` / ``rag_bm25`` / ``rag_hybrid`` are this harness's plain retrieval baselines (top-20 turns,
rendered as ``[date] Speaker: text`` lines); they are not LoCoMo's RAG setting. ``rag_locomo`` is that
setting: ``get_rag_context`` of the official snap-research/locomo ``task_eval/evaluate_gpts.py`` in
``rag_mode=dialog`` with its default ``--top-k 5``: the question embedding's dot product with every turn
``<speaker> said, "<text>"``, the top 5 in score order, each line ``<session date>: <turn>``. Their
retrievers were DPR, Contriever, DRAGON or OpenAI embeddings; here it is the run's embedder, on the same
``<speaker> said, "<text>"`` strings. Their dialog database holds ``clean_text``, never an image caption: in the
``locomo`` format the caption tag the loader appends to ``Turn.text`` is left out (``locomo_captions: none``);
``inline`` keeps it, as this harness did before. The ``notes`` format always keeps it (equal for all methods).

Retrievers of the official code (``embedder=contriever`` / ``embedder=dragon``, ``configs/embedder/``) load from
the Hugging Face hub where it is reachable; here it is not, and the run stops with one line before any work.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from baselines.turns import load_turns, save_turns, text_without_caption, turn_note
from memcore.fusion import rrf_fuse
from memcore.interfaces import BadConfig, Embedder, MethodContext, MethodSpec
from memcore.packing.budget import BUDGET_KEY, budget_record, cut_note, fill_units, note_line
from memcore.packing.knobs import TURN_KNOB_DEFAULTS, TurnPackingKnobs, turn_packing_label
from memcore.packing.turns import (
    Cues,
    TurnBM25,
    TurnMeta,
    WindowIndex,
    fill_framed,
    render_framed,
    rerank,
)
from memcore.schema import POS, UNIT, Rule, bad_value, knob, method_validator
from memcore.text import count_tokens, truncate_to_tokens
from memcore.types import Evidence, Turn

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {
    "rag_dense": "baselines.rag:RAG_DENSE",
    "rag_bm25": "baselines.rag:RAG_BM25",
    "rag_hybrid": "baselines.rag:RAG_HYBRID",
    "rag_locomo": "baselines.rag:RAG_LOCOMO",
}


RETRIEVERS = ("dense", "bm25", "hybrid")
CONTEXT_FORMATS = ("notes", "locomo")
LOCOMO_CAPTIONS = ("none", "inline")


@dataclass(frozen=True)
class RAGConfig(TurnPackingKnobs):
    name: str = "rag_hybrid"
    retriever: str = knob("hybrid", build=True, rule=Rule(choices=RETRIEVERS))  # dense | bm25 | hybrid
    top_k: int = knob(20, rule=POS)
    rrf_k: int = knob(60, rule=POS)
    bm25_k1: float = 1.5
    bm25_b: float = knob(0.75, rule=UNIT)
    chronological_context: bool = False  # order the retrieved turns by time in the answer prompt
    # notes: [date] Speaker: text | locomo: <date>: Speaker said, "text" (official RAG); the indexed text follows it
    context_format: str = knob("notes", build=True, rule=Rule(choices=CONTEXT_FORMATS))
    # locomo format only: none (the official dialog database, clean_text) | inline ("[shares an image: …]" kept)
    locomo_captions: str = knob("none", build=True, rule=Rule(choices=LOCOMO_CAPTIONS))
    # under eval.token_cap (retrieve_within): the frame, cues and windows of TurnPackingKnobs
    # (memcore/packing/knobs.py), as MemCoRe's packer; pack_window_dense needs the dense vectors (retriever dense
    # or hybrid)

    @property
    def cues(self) -> Cues:
        return self.cues_fused_with(self.rrf_k)


def locomo_said(turn: Turn, captions: str = "none") -> str:
    """``<speaker> said, "<text>"``, the official dialog database's string (``captions="inline"``: the text keeps
    the loader's ``[shares an image: …]`` tag)."""
    text = turn.text if captions == "inline" else text_without_caption(turn)
    return f'{turn.speaker} said, "{text}"'


def locomo_rag_line(turn: Turn, captions: str = "none") -> str:
    """One retrieved turn as LoCoMo's dialog RAG writes it: ``<date>: <speaker> said, "<text>"``."""
    return f"{turn.session_time_raw}: {locomo_said(turn, captions)}"


class RAG:
    def __init__(self, cfg: RAGConfig, embedder_provider: Any) -> None:
        if cfg.retriever not in ("dense", "bm25", "hybrid"):
            raise ValueError(f"unknown retriever {cfg.retriever!r}; known: dense, bm25, hybrid")
        if cfg.context_format not in CONTEXT_FORMATS:
            raise ValueError(f"unknown context_format {cfg.context_format!r}; known: {', '.join(CONTEXT_FORMATS)}")
        self.cfg = cfg
        self._embedder_provider = embedder_provider
        self.turns: list[Turn] = []
        self.vectors: np.ndarray | None = None
        self.bm25: TurnBM25 | None = None
        self._windows: WindowIndex | None = None
        self._meta: dict[str, TurnMeta] | None = None
        self._index: dict[str, int] = {}
        self._speakers: list[str] = []

    @property
    def embedder(self) -> Embedder:
        return self._embedder_provider()

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)

    def _doc(self, turn: Turn) -> str:
        """The text a turn is indexed under: LoCoMo's ``<speaker> said, "<text>"`` for its RAG setting."""
        return locomo_said(turn, self.cfg.locomo_captions) if self.cfg.context_format == "locomo" else turn.render()

    def finalize(self) -> None:
        texts = [self._doc(t) for t in self.turns]
        if self.cfg.retriever in ("dense", "hybrid"):
            self.vectors = self.embedder.encode(texts)
        self._build_bm25()

    def _build_bm25(self) -> None:
        if self.cfg.retriever in ("bm25", "hybrid"):
            self.bm25 = TurnBM25([self._doc(t) for t in self.turns], self.cfg.bm25_k1, self.cfg.bm25_b)

    def _dense(self, query: str, k: int) -> list[tuple[int, float]]:
        assert self.vectors is not None
        if not len(self.turns):
            return []
        q = self._encode_queries([query])[0]
        sims = self.vectors @ q
        k = min(k, len(sims))
        top = np.argpartition(-sims, k - 1)[:k]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [(int(i), float(sims[i])) for i in top]

    def _ranked(self, query: str, k: int, *, windows: bool = False) -> list[tuple[int, float, tuple[str, ...]]]:
        """The top ``k`` turns as (turn index, score, channels), best first. ``windows``: the session-window lists
        (when the config turns them on) are fused in, each as deep as the retriever's own lists."""
        use_windows = windows and self.cfg.windows.active
        if self.cfg.retriever == "dense" and not use_windows:
            return [(i, s, ("dense",)) for i, s in self._dense(query, k)]
        if self.cfg.retriever == "bm25" and not use_windows:
            assert self.bm25 is not None
            return [(i, s, ("bm25",)) for i, s in self.bm25.search(query, k)]
        depth = max(k, 2 * k)
        lists: dict[str, list[int]] = {}
        weights: dict[str, float] = {}
        if self.cfg.retriever in ("dense", "hybrid"):
            lists["dense"] = [i for i, _ in self._dense(query, depth)]
        if self.cfg.retriever in ("bm25", "hybrid"):
            assert self.bm25 is not None
            lists["bm25"] = [i for i, _ in self.bm25.search(query, depth)]
        if use_windows:
            wl, weights = self._window_index().lists(query, self._query_vector(query), self.cfg.windows)
            lists.update({name: ranked[:depth] for name, ranked in wl.items()})
        fused = rrf_fuse(lists, k=self.cfg.rrf_k, weights=weights)[:k]
        return [(i, s, tuple(ch for ch, lst in lists.items() if i in lst)) for i, s in fused]

    def _query_vector(self, query: str) -> np.ndarray:
        """The query's vector, or zeros when this retriever has no dense vectors (window_dense is then refused)."""
        if self.vectors is None:
            return np.zeros(0, dtype=np.float32)
        return self._encode_queries([query])[0]

    def _encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query vectors: through the embedder's query side when it has one (a dual encoder), else ``encode``."""
        embedder = self.embedder
        return getattr(embedder, "encode_queries", embedder.encode)(list(texts))

    def _window_index(self) -> WindowIndex:
        if self._windows is None:
            texts = [self._doc(t) for t in self.turns]
            vectors = self.vectors if self.vectors is not None else np.zeros((len(texts), 0), dtype=np.float32)
            self._windows = WindowIndex([t.dia_id for t in self.turns], texts, vectors, self.cfg.pack_window_width)
        return self._windows

    def _evidence(
        self, ranked: list[tuple[int, float, tuple[str, ...]]], extra: dict[str, Any] | None = None
    ) -> Evidence:
        if self.cfg.chronological_context:
            ranked = sorted(ranked, key=lambda r: r[0])
        notes = [turn_note(self.turns[i], s, ch) for i, s, ch in ranked]
        if self.cfg.context_format == "locomo":
            context = "\n".join(locomo_rag_line(self.turns[i], self.cfg.locomo_captions) for i, _, _ in ranked)
            return Evidence(notes=notes, context=context, extra=dict(extra or {}))
        return Evidence(notes=notes, extra=dict(extra or {}))

    def prefetch_queries(self, questions: Sequence[str]) -> None:
        """Embed the questions in one batch (dense and hybrid retrievers: the query is the question as asked)."""
        if self.vectors is not None and self.turns and questions:
            self._encode_queries(questions)

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        return self._evidence(self._ranked(query, budget or self.cfg.top_k))

    def _line(self, i: int) -> str:
        turn = self.turns[i]
        if self.cfg.context_format == "locomo":
            return locomo_rag_line(turn, self.cfg.locomo_captions)
        return note_line(turn_note(turn))

    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
        """``memcore.packing.budget.ContextBudgeted``: the ranking taken as deep as the budget can hold (at most
        ``budget`` turns when set), filled by the shared rule; a single turn larger than the budget is cut."""
        depth = min(len(self.turns), budget or tokens // 8 + 20)
        ranked = self._ranked(query, max(1, depth), windows=True)
        if self.cfg.context_format == "notes" and (self.cfg.pack_frame != "line" or self.cfg.cues.active):
            return self._within_framed(query, ranked, tokens)
        fill = fill_units([count_tokens(self._line(i)) for i, _, _ in ranked], tokens)
        kept = [ranked[j] for j in fill.taken]
        rec = budget_record(tokens, kept=len(kept), dropped=fill.skipped, cut=fill.cut, how="rag_ranking")
        ev = self._evidence(kept, {BUDGET_KEY: rec})
        if fill.cut and self.cfg.context_format == "locomo":
            ev.context = truncate_to_tokens(ev.context, tokens)
        elif fill.cut:
            ev.notes = [cut_note(ev.notes[0], tokens)]
        return ev

    def _within_framed(self, query: str, ranked: list[tuple[int, float, tuple[str, ...]]], tokens: int) -> Evidence:
        """The ranking re-ranked by the cues and filled under the frame (:mod:`memcore.packing.turns`)."""
        if self._meta is None:
            self._meta = {t.dia_id: TurnMeta(t.dia_id, t.speaker, t.text, t.session_time_raw) for t in self.turns}
            self._index = {t.dia_id: i for i, t in enumerate(self.turns)}
            self._speakers = sorted({t.speaker for t in self.turns})
        meta, index = self._meta, self._index
        found = {self.turns[i].dia_id: (s, ch) for i, s, ch in ranked}
        order = rerank([self.turns[i].dia_id for i, _, _ in ranked], query, meta.get, self._speakers, self.cfg.cues)
        framed = fill_framed(order, meta, tokens, self.cfg.pack_frame)
        notes = [turn_note(self.turns[index[d]], *found.get(d, (0.0, ()))) for d in framed.dia_ids]
        context = render_framed(framed.dia_ids, meta, self.cfg.pack_frame, cut_to=tokens if framed.cut else 0)
        if framed.cut:
            notes = [cut_note(notes[0], tokens)]
        how = f"rag_ranking, {self.cfg.pack_frame} frame"
        rec = budget_record(tokens, kept=len(notes), dropped=framed.skipped, cut=framed.cut, how=how)
        return Evidence(notes=notes, context=context, extra={BUDGET_KEY: rec})

    def save(self, path: Path) -> None:
        save_turns(self.turns, path / "turns.jsonl")
        if self.vectors is not None:
            np.save(path / "vectors.npy", self.vectors)
        (path / "rag.json").write_text(json.dumps({"retriever": self.cfg.retriever, "n": len(self.turns)}))

    def load(self, path: Path) -> None:
        self.turns = load_turns(path / "turns.jsonl")
        if (path / "vectors.npy").exists():
            self.vectors = np.load(path / "vectors.npy")
        self._build_bm25()

    def stats(self) -> dict[str, Any]:
        return {"turns": len(self.turns), "retriever": self.cfg.retriever}


def _check_retriever(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    """``rag_<retriever>`` runs that retriever; another one is a different method (and table label)."""
    expected = name.removeprefix("rag_")
    if expected in RETRIEVERS and cfg.get("retriever", expected) != expected:
        where = f"method {name}"
        raise bad_value("method.retriever", cfg["retriever"], f"{expected} (use method=rag_{cfg['retriever']})", where)
    if cfg.get("pack_window_dense", 0) and cfg.get("retriever", expected) == "bm25":
        raise bad_value(
            "method.pack_window_dense", cfg["pack_window_dense"], "0 (rag_bm25 has no dense vectors)", f"method {name}"
        )


#: RAG knobs added after runs were recorded, with the value that reproduces those runs (the packing frame, cues and
#: session windows under eval.token_cap: all off).
ADDED_KEY_DEFAULTS: dict[str, Any] = dict(TURN_KNOB_DEFAULTS)


def _spec(name: str, retriever: str, description: str, bad_config: BadConfig, upstream_answer: str = "") -> MethodSpec:
    def factory(ctx: MethodContext) -> RAG:
        cfg = RAGConfig(**{"retriever": retriever, **ctx.config})
        return RAG(cfg, lambda: ctx.embedder)

    return MethodSpec(
        name=name,
        factory=factory,
        ingest_uses_llm=lambda c, a: False,
        config_schema=(RAGConfig,),
        validate_config=method_validator(RAGConfig, after=_check_retriever),
        description=description,
        upstream_answer=upstream_answer,
        bad_configs=(bad_config,),
        added_key_defaults=ADDED_KEY_DEFAULTS,
        packing_label=turn_packing_label,
    )


# Every rag_* method keys its snapshots on both build fields (retriever and context_format: the embedded text
# depends on the format), so a context_format override never reuses vectors embedded in the other format.
RAG_DENSE = _spec(
    "rag_dense",
    "dense",
    "dense retrieval over raw turns (this harness's baseline, not LoCoMo's RAG)",
    (("method.top_k=0",), ("method.top_k=0", "rag_dense", ">= 1")),
)
RAG_BM25 = _spec(
    "rag_bm25",
    "bm25",
    "BM25 over raw turns (this harness's baseline, not LoCoMo's RAG)",
    (("method.bm25_b=2",), ("method.bm25_b=2", "in [0, 1]")),
)
RAG_HYBRID = _spec(
    "rag_hybrid",
    "hybrid",
    "RRF of dense + BM25 over raw turns (this harness's baseline)",
    (("method.retriever=bm25",), ("method.retriever='bm25'", "hybrid", "method=rag_bm25")),
)
RAG_LOCOMO = _spec(
    "rag_locomo",
    "dense",
    "LoCoMo's RAG setting: top-5 turns by dense score (dialog mode)",
    (("method.context_format=html",), ("method.context_format='html'", "notes, locomo")),
    upstream_answer="baselines.locomo_answer_prompt:UPSTREAM_RAG",
)

"""Semantic ingestion: one turn → denoised context c and keywords K.

LLM mode: one JSON call per turn (session date and the previous turns in the prompt, so relative dates
and references resolve). Cheap mode (``judge=embedding``) and wo_denoise: c is the cleaned raw turn;
cheap mode takes keywords from YAKE (statistical, offline). The speaker's name is always a keyword.

With ``resolve_dates`` every relative date expression is resolved in code against the turn's session date
(:mod:`memcore.memory.relative_dates`): the turn and the previous turns in the prompt read "yesterday [= 7 May
2023]", and so does the context c (the LLM's, where it kept an expression, or the raw one), which the gate, merge
and link-update prompts show. The raw turn r stays verbatim; keywords are taken from the unannotated text.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memcore.interfaces import ChatBackbone
from memcore.llm.json_reply import complete_json
from memcore.memory.keywords import normalise_keywords
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.memory.relative_dates import annotate
from memcore.types import Turn

# Symbols outside the BMP (emoji) and pictographs in the BMP that carry no retrievable content.
_EMOJI_RE = re.compile("[\U00010000-\U0010ffff\u2600-\u27bf\ufe0f\u200d]+")
_REPEAT_PUNCT_RE = re.compile(r"([!?.,~])\1+")
_SPACE_RE = re.compile(r"\s+")

#: Conversational words that YAKE happily returns as "keywords" but that anchor nothing.
FILLER_WORDS = frozenset(
    {
        "hey",
        "hi",
        "hello",
        "wow",
        "yeah",
        "yes",
        "no",
        "oh",
        "ok",
        "okay",
        "thanks",
        "thank",
        "lol",
        "haha",
        "good",
        "great",
        "cool",
        "awesome",
        "nice",
        "amazing",
        "really",
        "sure",
        "glad",
        "happy",
        "love",
        "totally",
        "definitely",
        "super",
        "bye",
        "see",
        "soon",
        "today",
        "yesterday",
        "tomorrow",
        "tonight",
        "time",
        "lot",
        "lots",
        "thing",
        "things",
        "stuff",
        "way",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "pretty",
    }
)


def clean_text(text: str) -> str:
    """Drop emoji, collapse repeated punctuation and whitespace; the words are kept verbatim."""
    s = _EMOJI_RE.sub(" ", text)
    s = _REPEAT_PUNCT_RE.sub(r"\1", s)
    return _SPACE_RE.sub(" ", s).strip()


def drop_filler(keywords: Sequence[str]) -> list[str]:
    return [k for k in keywords if not all(tok in FILLER_WORDS for tok in k.split())]


class StatisticalKeywords:
    """YAKE keyword extraction (thread-safe: one extractor behind a lock)."""

    def __init__(self, ngram: int = 3, top: int = 12) -> None:
        import yake

        self._extractor = yake.KeywordExtractor(lan="en", n=ngram, dedup_lim=0.9, top=top)
        self.stopwords: frozenset[str] = frozenset(self._extractor.stopword_set)
        self._lock = threading.Lock()

    def phrases(self, text: str) -> list[str]:
        """YAKE's candidate phrases, best first, normalised, conversational filler removed."""
        if not text.strip():
            return []
        with self._lock:
            scored = self._extractor.extract_keywords(text)
        return drop_filler(normalise_keywords(k for k, _ in scored))

    def content_words(self, phrases: Sequence[str]) -> list[str]:
        """The content words of ``phrases`` in order: no stop word, filler, number or 1–2 letter token."""
        words = (w for p in phrases for w in p.split())
        return normalise_keywords(
            w for w in words if len(w) > 2 and not w.isdigit() and w not in self.stopwords and w not in FILLER_WORDS
        )

    def extract(self, text: str, limit: int, unigrams: int = 0) -> list[str]:
        """Up to ``limit`` YAKE phrases plus up to ``unigrams`` of their content words not already kept."""
        phrases = self.phrases(text)
        out = phrases[:limit]
        if unigrams:
            kept = set(out)
            extra = [w for w in self.content_words(phrases) if w not in kept][:unigrams]
            out = out + extra
        return out


@dataclass(frozen=True)
class IngestResult:
    context: str
    keywords: list[str]
    denoised: bool
    fallback: str | None = None
    llm_calls: int = 0


def _validate_ingest(obj: Any) -> tuple[str, list[str]]:
    if not isinstance(obj, dict):
        raise ValueError("ingest reply is not a JSON object")
    context = obj.get("context")
    keywords = obj.get("keywords", [])
    if not isinstance(context, str) or not context.strip():
        raise ValueError("ingest reply has no 'context' string")
    if isinstance(keywords, str):
        keywords = [k for k in re.split(r"[;,]", keywords) if k.strip()]
    if not isinstance(keywords, list) or not all(isinstance(k, str) for k in keywords):
        raise ValueError("ingest reply 'keywords' is not a list of strings")
    return context.strip(), keywords


class Ingestor:
    """Turns a turn into an ``IngestResult``. ``backbone`` is None in cheap mode (never touched)."""

    def __init__(
        self,
        *,
        backbone: ChatBackbone | None,
        denoise: bool,
        max_keywords: int,
        context_turns: int,
        ngram: int,
        unigrams: int,
        temperature: float,
        max_tokens: int,
        seed: int,
        resolve_dates: bool = False,
    ) -> None:
        self.backbone = backbone
        self.resolve_dates = resolve_dates
        self.denoise = denoise
        self.max_keywords = max_keywords
        self.context_turns = context_turns
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.unigrams = unigrams
        self.statistical = StatisticalKeywords(ngram=ngram) if backbone is None else None

    def _with_speaker(self, turn: Turn, keywords: list[str]) -> list[str]:
        return normalise_keywords([turn.speaker, *keywords])

    def shown(self, turn: Turn, text: str) -> str:
        """``text`` (of ``turn``, or written about it) as prompts see it: with ``resolve_dates`` each relative
        date expression is followed by its absolute date, ``[= …]``; else ``text`` unchanged."""
        return annotate(text, turn.session_time) if self.resolve_dates else text

    def ingest(self, turn: Turn, previous: Sequence[Turn]) -> IngestResult:
        raw_context = self.shown(turn, clean_text(turn.render()))
        if self.backbone is None:
            assert self.statistical is not None
            kws = self.statistical.extract(clean_text(turn.text), self.max_keywords, self.unigrams)
            return IngestResult(raw_context, self._with_speaker(turn, kws), denoised=False)
        prev = previous[-self.context_turns :] if self.context_turns else []
        user = INGEST_PROMPT.USER.format(
            session_date=turn.session_time_raw,
            previous="\n".join(self.shown(t, clean_text(t.render())) for t in prev) or "(none)",
            dia_id=turn.dia_id,
            speaker=turn.speaker,
            text=self.shown(turn, clean_text(turn.text)),
            max_keywords=self.max_keywords,
        )
        res = complete_json(
            self.backbone,
            [{"role": "system", "content": INGEST_PROMPT.SYSTEM}, {"role": "user", "content": user}],
            stage="ingest",
            validate=_validate_ingest,
            fallback=(raw_context, []),
            fallback_kind="ingest:raw_context_no_keywords",
            prompt_version=INGEST_PROMPT.VERSION,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        context, keywords = res.value
        kws = drop_filler(normalise_keywords(keywords, limit=self.max_keywords))
        if not res.ok:
            return IngestResult(
                raw_context, self._with_speaker(turn, []), False, "ingest:raw_context_no_keywords", res.attempts
            )
        if not self.denoise:
            return IngestResult(raw_context, self._with_speaker(turn, kws), False, None, res.attempts)
        return IngestResult(self.shown(turn, context), self._with_speaker(turn, kws), True, None, res.attempts)

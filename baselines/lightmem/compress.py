"""Sensory pre-compression stand-in for LLMLingua-2.

LightMem compresses every message before segmentation (LLMLingua-2 at rate 0.6, or its
``entropy_compress`` variant that keeps the words with the highest self-information under a small
LM). Neither model's weights can be loaded offline here, so this keeps the ``rate`` share of words
with the highest *unigram* informativeness instead: inverse document frequency over the turns seen
so far (causal, so the built memory never depends on later turns), stop-words and chat fillers
scored zero, numbers and capitalised words that do not start a sentence (names, places, titles) always ranked first.
Kept words stay in their original order, with their punctuation.
"""

from __future__ import annotations

import math
import re
from collections import Counter

_WORD_RE = re.compile(r"\S+")
_CORE_RE = re.compile(r"[A-Za-z0-9']+")

# A small English stop-word list (function words) plus chat fillers; shipped as a constant.
_STOP_TEXT = """a about above after again against all am an and any are aren't as at be because been before being below
    between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each few
    for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself him
    himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself let's me more most mustn't my
    myself no nor not of off on once only or other ought our ours ourselves out over own same shan't she she'd
    she'll she's should shouldn't so some such than that that's the their theirs them themselves then there
    there's these they they'd they'll they're they've this those through to too under until up very was wasn't we
    we'd we'll we're we've were weren't what what's when when's where where's which while who who's whom why why's
    with won't would wouldn't you you'd you'll you're you've your yours yourself yourselves just also really so
    well oh ah um uh hmm lol haha hey hi hello yeah yep yes ok okay wow awesome cool great thanks thank totally
    definitely absolutely gonna wanna got get like know think sure lot lots super pretty quite"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())


def _core(word: str) -> str:
    m = _CORE_RE.findall(word)
    return "".join(m).lower()


class IdfCompressor:
    """Keeps ``rate`` of each message's words by informativeness; stateful (document frequencies of
    the turns seen so far), so call ``compress`` once per turn in conversation order."""

    def __init__(self, rate: float) -> None:
        if not 0.0 < rate <= 1.0:
            raise ValueError(f"compress rate must be in (0, 1], got {rate}")
        self.rate = rate
        self.n_docs = 0
        self.df: Counter[str] = Counter()

    def _score(self, word: str, sentence_start: bool) -> float:
        core = _core(word)
        if not core:
            return -1.0
        if any(ch.isdigit() for ch in core):
            return 100.0
        if not sentence_start and word[:1].isupper() and core not in STOP_WORDS:
            return 50.0 + self._idf(core)
        if core in STOP_WORDS:
            return 0.0
        return self._idf(core)

    def _idf(self, core: str) -> float:
        return math.log((1 + self.n_docs) / (1 + self.df[core])) + 1.0

    def compress(self, text: str) -> str:
        """The compressed message; updates the document frequencies with ``text`` afterwards."""
        words = _WORD_RE.findall(text)
        out = text
        if words and self.rate < 1.0:
            keep_n = max(1, math.ceil(len(words) * self.rate))
            starts = [i == 0 or words[i - 1][-1:] in ".!?" for i in range(len(words))]
            scores = [self._score(w, starts[i]) for i, w in enumerate(words)]
            # highest score first, earlier position breaks ties (stable and deterministic)
            order = sorted(range(len(words)), key=lambda i: (-scores[i], i))[:keep_n]
            out = " ".join(words[i] for i in sorted(order))
        self.n_docs += 1
        self.df.update({c for c in (_core(w) for w in words) if c})
        return out


class IdentityCompressor:
    """``compressor: none`` — messages pass through unchanged."""

    def compress(self, text: str) -> str:
        return text

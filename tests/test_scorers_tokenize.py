"""memcore.metrics.scorers.tokenize.word_tokenize must equal nltk.word_tokenize (English, default settings).

nltk's Punkt data cannot be downloaded here, so the fixture writes the bundled English model as a
``punkt_tab/english`` directory (nltk's own tab format) and points ``nltk.data.path`` at it; the
real ``nltk.word_tokenize`` then runs unmodified.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import nltk
import pytest
from nltk.tabdata import TabEncoder
from nltk.tokenize import word_tokenize as nltk_word_tokenize

from memcore.metrics.scorers.tokenize import punkt_parameters, sent_tokenize, word_tokenize

EDGE_CASES = [
    "",
    "Paris",
    "2022",
    "7 May 2023",
    "At home. Then later.",
    "at home. then later.",
    "Dr. Smith paid $3.50 on Jan. 5th, didn't he?",
    "I went to the U.S. last week. It was great! Mr. Lee came too.",
    "J.K. Rowling, R.R. Martin, and J. R. R. Tolkien.",
    "Not mentioned in the conversation",
    '"Charlotte\'s Web" -- she said: (yes) ...',
    "She moved on 1 Jan., 2023... then left?! Ok.",
]


@pytest.fixture(scope="module")
def nltk_punkt_tab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    root = tmp_path_factory.mktemp("nltk_data")
    lang = root / "tokenizers" / "punkt_tab" / "english"
    lang.mkdir(parents=True)
    params = punkt_parameters()
    enc = TabEncoder()
    (lang / "collocations.tab").write_text(enc.tups2tab(params.collocations), newline="")
    (lang / "sent_starters.txt").write_text(enc.set2txt(params.sent_starters), newline="")
    (lang / "abbrev_types.txt").write_text(enc.set2txt(params.abbrev_types), newline="")
    (lang / "ortho_context.tab").write_text(enc.ivdict2tab(params.ortho_context), newline="")
    getter = getattr(nltk.tokenize, "_get_punkt_tokenizer", None)
    nltk.data.path.insert(0, str(root))
    if getter is not None and hasattr(getter, "cache_clear"):
        getter.cache_clear()
    yield
    nltk.data.path.remove(str(root))
    if getter is not None and hasattr(getter, "cache_clear"):
        getter.cache_clear()


def test_bundled_model_sizes_match_nltk_punkt_tab_english() -> None:
    params = punkt_parameters()
    # Sizes of nltk_data tokenizers/punkt_tab/english (abbrev_types.txt, sent_starters.txt,
    # collocations.tab, ortho_context.tab lines).
    assert len(params.abbrev_types) == 156
    assert len(params.sent_starters) == 39
    assert len(params.collocations) == 37
    assert len(params.ortho_context) == 20366
    assert {"dr", "mr", "u.s", "jan"} <= params.abbrev_types


@pytest.mark.parametrize("text", EDGE_CASES)
def test_equals_nltk_word_tokenize(nltk_punkt_tab: None, text: str) -> None:
    assert word_tokenize(text) == nltk_word_tokenize(text)


def test_equals_nltk_on_locomo_strings(nltk_punkt_tab: None, locomo_path: Path) -> None:
    data = json.loads(Path(locomo_path).read_text())
    texts: list[str] = []
    for conv in data:
        for qa in conv["qa"]:
            texts.append(qa["question"])
            for key in ("answer", "adversarial_answer"):
                if key in qa:
                    texts.append(str(qa[key]).lower())
        for key, turns in conv["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts.extend(t["text"] for t in turns[::5])
    assert len(texts) > 4000
    mismatches = [t for t in texts if word_tokenize(t) != nltk_word_tokenize(t)]
    assert mismatches == []


def test_single_sentence_equals_preserve_line() -> None:
    for text in ["Paris", "7 May 2023", "She likes dogs.", "Dr. Smith paid $3.50, didn't he?"]:
        assert len(sent_tokenize(text)) == 1
        assert word_tokenize(text) == nltk_word_tokenize(text, preserve_line=True)


def test_sentence_split_changes_tokens() -> None:
    text = "at home. then later."
    assert sent_tokenize(text) == ["at home.", "then later."]
    assert word_tokenize(text) == ["at", "home", ".", "then", "later", "."]
    assert nltk_word_tokenize(text, preserve_line=True) == ["at", "home.", "then", "later", "."]


def test_abbreviations_do_not_split() -> None:
    assert sent_tokenize("Dr. Smith went home. He was tired.") == ["Dr. Smith went home.", "He was tired."]
    assert word_tokenize("Mr. Lee came.") == ["Mr.", "Lee", "came", "."]

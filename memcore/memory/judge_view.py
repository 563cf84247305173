"""What the IER judge sees of one note: its dates, its context and its turns that best match the question, in a
per-note token budget, so that all K_final notes of the pool fit the judge's prompt.

Whole notes (context + every raw turn, ≈ 340 tokens for a merged note) let a 3,000-token budget show about 8
of 20 notes; the judge then called the pool "insufficient" for evidence it was never shown. Here each note
gets ``budget`` tokens: the context (when the answerer sees one) and the raw turns ranked by how many of the
question's content words they share (ties keep conversation order). Pure functions; no I/O.
"""

from __future__ import annotations

import re

from memcore.memory.ingestion import FILLER_WORDS
from memcore.memory.notes import Note
from memcore.memory.retrieval import QUESTION_WORDS
from memcore.text import count_tokens, truncate_to_tokens

_WORD_RE = re.compile(r"[a-z0-9]+")
#: A note is never given fewer tokens than this, however many notes share the budget.
MIN_NOTE_TOKENS = 40
ELLIPSIS = " …"


def content_words(text: str) -> set[str]:
    """Lower-cased words of ``text`` that can match: no question word, filler or 1–2 letter token."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) > 2 and w not in QUESTION_WORDS | FILLER_WORDS}


def rank_turns(note: Note, question: str) -> list[int]:
    """Indices of ``note.raws``, best match for ``question`` first (shared content words; ties by order)."""
    q = content_words(question)
    return sorted(range(len(note.raws)), key=lambda i: (-len(q & content_words(note.raws[i].text)), i))


def _cut(text: str, tokens: int) -> str:
    """``text`` within ``tokens`` approximate tokens, marked with an ellipsis when cut."""
    if count_tokens(text) <= tokens:
        return text
    return truncate_to_tokens(text, max(1, tokens - 1)) + ELLIPSIS


def note_view(note: Note, question: str, budget: int, evidence_text: str) -> str:
    """``(dates) context`` then ``> turn`` lines (best match first) within ``budget`` tokens. ``evidence_text``
    is the answerer's view (raw | context | both): the judge sees the same parts of the note, never more."""
    head = f"({note.timestamp})"
    show_context = evidence_text == "context" or (evidence_text == "both" and note.denoised)
    show_raws = evidence_text != "context"
    dated = len(note.dates) > 1
    turns = [note.raws[i].render_dated() if dated else note.raws[i].render() for i in rank_turns(note, question)]
    marker_cost = count_tokens(_more(len(turns))) if show_raws and len(turns) > 1 else 0
    left = budget - count_tokens(head) - marker_cost
    parts = [head]
    if show_context:
        # the context leaves room for (at least half of) the best turn
        reserve = min(count_tokens(turns[0]) + 1, left // 2) if show_raws and turns else 0
        context = _cut(note.context, max(1, left - reserve))
        parts[0] = f"{head} {context}"
        left -= count_tokens(context)
    if not show_raws:
        return parts[0]
    shown = 0
    for i, turn in enumerate(turns):
        line = f"  > {turn}"
        cost = count_tokens(line)
        if cost > left:
            if i == 0 and left > 2:  # the best turn is shown, cut, rather than not at all
                parts.append(_cut(line, left))
                shown = 1
            break
        parts.append(line)
        left -= cost
        shown += 1
    if shown < len(turns):
        parts.append(_more(len(turns) - shown))
    return "\n".join(parts)


def _more(n: int) -> str:
    return f"  (+{n} more turns)"


def per_note_budget(total: int, n_notes: int) -> int:
    """Tokens each of ``n_notes`` notes gets from the judge's ``total``: an equal share, ≥ ``MIN_NOTE_TOKENS``."""
    return max(MIN_NOTE_TOKENS, total // max(1, n_notes))

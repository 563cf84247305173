"""Context-token budgets (``eval.token_cap``): the one fill rule every method's evidence is cut by.

Tokens are :func:`memcore.text.count_tokens` of the rendered context, the counter the scorer's
``tokens_used`` uses. The rule (:func:`fill_units`): units (notes, turns) are taken in rank order; a unit
that does not fit the tokens left is skipped and the next one tried; when no unit fits at all, the best one is
cut at the budget (:func:`cut_line`) and marked, so a budget smaller than one unit never yields an empty context
without a word. A method that can do better than cutting its own whole notes implements
:class:`ContextBudgeted` (MemCoRe's packing, full_context's "most recent turns", the RAG baselines' deeper
ranking); every other method's evidence goes through :func:`fit_evidence`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from memcore.text import count_tokens, truncate_to_tokens
from memcore.types import Evidence, EvidenceNote

#: ``Evidence.extra`` key where a budgeted retrieval records what the budget did.
BUDGET_KEY = "context_budget"


@runtime_checkable
class ContextBudgeted(Protocol):
    """A memory system that builds its own evidence for a context-token budget: ``retrieve_within`` returns
    evidence whose rendered context (``Evidence.render()``) is at most ``tokens`` tokens, and records what it
    did under ``extra["context_budget"]`` (:func:`budget_record`)."""

    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence: ...


@dataclass(frozen=True)
class Fill:
    """The outcome of :func:`fill_units`: indices of the units taken (rank order), the tokens they use, and
    whether the one unit taken had to be cut to fit (then ``cut_tokens`` is its size after the cut)."""

    taken: list[int]
    used: int
    cut: bool = False
    skipped: int = 0


def fill_units(costs: Sequence[int], tokens: int) -> Fill:
    """Greedy fill: in rank order, take each unit whose cost fits the tokens left, skip the others. When nothing
    fits (every unit is larger than ``tokens``), the first unit is taken and marked ``cut``."""
    if tokens < 1:
        raise ValueError(f"a context budget must be >= 1 token, got {tokens}")
    taken: list[int] = []
    used = 0
    skipped = 0
    for i, cost in enumerate(costs):
        if used + int(cost) <= tokens:
            taken.append(i)
            used += int(cost)
        else:
            skipped += 1
    if not taken and len(costs):
        return Fill([0], tokens, cut=True, skipped=len(costs) - 1)
    return Fill(taken, used, skipped=skipped)


def note_line(note: EvidenceNote) -> str:
    """A note as :meth:`Evidence.render` writes it (``[timestamp] text``)."""
    return f"[{note.timestamp}] {note.text}" if note.timestamp else note.text


def rendered_tokens(notes: Sequence[EvidenceNote]) -> int:
    """``count_tokens(Evidence(notes=notes).render())`` without rendering it: the sum over its lines, since no
    token spans the newline that joins them (and each line's count is memoised)."""
    return sum(count_tokens(note_line(n)) for n in notes)


def cut_note(note: EvidenceNote, tokens: int) -> EvidenceNote:
    """``note`` cut so that its rendered line is at most ``tokens`` tokens: the text is cut after its timestamp;
    when the timestamp alone does not fit, it is dropped and the text cut."""
    stamp = count_tokens(f"[{note.timestamp}] ") if note.timestamp else 0
    if note.timestamp and stamp < tokens:
        return replace(note, text=truncate_to_tokens(note.text, tokens - stamp))
    return replace(note, text=truncate_to_tokens(note.text, tokens), timestamp=None)


def budget_record(tokens: int, *, kept: int, dropped: int, cut: bool, how: str, **more: Any) -> dict[str, Any]:
    """What ``extra["context_budget"]`` holds: the budget, units kept and dropped, whether a unit was cut to fit,
    and how the method filled it."""
    return {"tokens": int(tokens), "kept": int(kept), "dropped": int(dropped), "cut": bool(cut), "how": how, **more}


def fill_notes(notes: Sequence[EvidenceNote], tokens: int) -> tuple[list[EvidenceNote], Fill]:
    """:func:`fill_units` over notes costed by their rendered line; the cut note (if any) is cut to ``tokens``."""
    fill = fill_units([count_tokens(note_line(n)) for n in notes], tokens)
    kept = [notes[i] for i in fill.taken]
    if fill.cut:
        kept = [cut_note(kept[0], tokens)]
    return kept, fill


def fit_evidence(evidence: Evidence, tokens: int) -> Evidence:
    """``evidence`` cut to ``tokens`` context tokens by the shared rule, for a method without its own
    (:class:`ContextBudgeted`). With the default rendering the notes are filled (:func:`fill_notes`). A method
    that writes its own ``context`` keeps its first ``tokens`` tokens, and the notes counted as retrieved are the
    ones whose text is still in it (when none of its notes' texts appear in its context verbatim, the notes are
    filled by their own size instead, and the record says so)."""
    if count_tokens(evidence.render()) <= tokens:
        rec = budget_record(tokens, kept=len(evidence.notes), dropped=0, cut=False, how="fits")
        return replace(evidence, extra={**evidence.extra, BUDGET_KEY: rec})
    if not evidence.context:
        kept, fill = fill_notes(evidence.notes, tokens)
        rec = budget_record(tokens, kept=len(kept), dropped=fill.skipped, cut=fill.cut, how="fill_notes")
        return replace(evidence, notes=kept, extra={**evidence.extra, BUDGET_KEY: rec})
    context = truncate_to_tokens(evidence.context, tokens)
    located = [n for n in evidence.notes if n.text and n.text in evidence.context]
    if located:
        kept = [n for n in evidence.notes if n.text and n.text in context]
        how = "head_of_context"
    else:
        kept = [evidence.notes[i] for i in fill_units([count_tokens(n.text) for n in evidence.notes], tokens).taken]
        how = "head_of_context, notes filled by their own size"
    rec = budget_record(tokens, kept=len(kept), dropped=len(evidence.notes) - len(kept), cut=True, how=how)
    return replace(evidence, notes=kept, context=context, extra={**evidence.extra, BUDGET_KEY: rec})


def retrieve_within(system: Any, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
    """The evidence of ``system`` for ``query`` within ``tokens`` context tokens: its own
    :meth:`ContextBudgeted.retrieve_within` when it has one, else :func:`fit_evidence` of its ``retrieve``.
    Raises RuntimeError when a method's own evidence exceeds the budget (a bug in that method)."""
    if isinstance(system, ContextBudgeted):
        ev = system.retrieve_within(query, tokens, budget=budget)
    else:
        ev = fit_evidence(system.retrieve(query, budget=budget), tokens)
    used = count_tokens(ev.render())
    if used > tokens:
        raise RuntimeError(f"{type(system).__name__} returned {used} context tokens for a budget of {tokens}")
    return ev

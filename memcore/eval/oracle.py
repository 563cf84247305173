"""The oracle at a context-token budget: what the budget allows when retrieval is perfect.

For one question the oracle's context is its gold turns themselves, each rendered as the packing methods render a
turn (``[session date] Speaker: text``, :func:`memcore.packing.budget.note_line` of the turn) and taken smallest first by
the shared fill rule (:func:`memcore.packing.budget.fill_units`, so a gold set larger than the budget keeps as many gold
turns as fit, and a single gold turn larger than the budget is cut and still counted, as every method's cut unit
is). Its recall at N tokens is the ceiling a method's recall at N can be read against.

:func:`oracle_items` writes the oracle's per-item records in the shape of a run's ``items.jsonl`` (item id,
category, gold, packed dia_ids, recall, hit, context tokens, one note per turn), so the equal-token report reads
an oracle run like any other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memcore.metrics.scorers.evidence import evidence_scores
from memcore.packing.budget import BUDGET_KEY, budget_record, fill_units
from memcore.text import count_tokens
from memcore.types import Conversation, Turn

#: How the oracle renders one gold turn (the line every turn-packing method writes by default).
LINE_FORMAT = "[session date] Speaker: text"


def turn_line(turn: Turn) -> str:
    """One turn as the packing methods write it: ``[session date] Speaker: text``."""
    return f"[{turn.session_time_raw}] {turn.render()}"


def oracle_fill(gold: Iterable[str], cost_of: Mapping[str, int], tokens: int) -> tuple[list[str], int, bool]:
    """(gold dia_ids kept smallest first, tokens used, whether the one kept turn was cut) within ``tokens``.
    Ties in size are broken by dia_id, so the outcome is deterministic. Raises KeyError for a gold id not in
    ``cost_of`` (gold evidence names a turn the conversation does not have)."""
    order = sorted(set(gold), key=lambda d: (int(cost_of[d]), d))
    if not order:
        return [], 0, False
    fill = fill_units([int(cost_of[d]) for d in order], tokens)
    return [order[i] for i in fill.taken], fill.used, fill.cut


def oracle_items(
    items: Sequence[Mapping[str, Any]], conversations: Iterable[Conversation], tokens: int
) -> list[dict[str, Any]]:
    """The oracle's item records at ``tokens`` for the questions of ``items`` (any run's items: ``item_id``,
    ``conv_id``, ``qa_index``, ``category``, ``evidence`` are read). Items without gold evidence get an empty
    context and recall None, as in every run."""
    costs: dict[str, dict[str, int]] = {}
    for conv in conversations:
        costs[conv.conv_id] = {t.dia_id: count_tokens(turn_line(t)) for t in conv.turns}
    out: list[dict[str, Any]] = []
    for it in items:
        cost_of = costs[str(it["conv_id"])]
        kept, used, cut = oracle_fill(it.get("evidence") or [], cost_of, tokens)
        scores = evidence_scores(it.get("evidence") or [], kept)
        dropped = len(set(it.get("evidence") or [])) - len(kept)
        rec = budget_record(tokens, kept=len(kept), dropped=dropped, cut=cut, how="oracle_smallest_first")
        out.append(
            {
                "item_id": it["item_id"],
                "conv_id": it["conv_id"],
                "qa_index": it["qa_index"],
                "category": it["category"],
                "evidence": list(it.get("evidence") or []),
                "retrieved_dia_ids": kept,
                "recall": scores["recall"],
                "hit": scores["hit"],
                "scores": {},
                "tokens_used": used,
                "notes": [{"dia_ids": [d], "tokens": min(cost_of[d], tokens)} for d in kept],
                "extra": {BUDGET_KEY: rec},
            }
        )
    return out

"""Dataset slices: which conversations, how many sessions, which QA items; the same cuts for every dataset.

E.g. LoCoMo's ``locomo-mini`` = ``select(conversations, conversations=["conv-26"], max_sessions=3,
evidence_inside=True)`` (58 turns, 25 QA over all five categories); one conversation = ``conversations=[id]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from memcore.datasets.errors import DataError
from memcore.schema import bad_value
from memcore.types import Conversation, QAItem

#: The dataset knobs that cut by a list, with what one entry looks like (for the message of an empty list).
LIST_CUTS = {
    "conversations": "conversation ids like 'conv-26' (or indices)",
    "categories": "category ids",
    "item_ids": "QA item ids like 'conv-26#3' (an items.jsonl's item_id)",
}
#: The dataset knobs that cut by a count.
COUNT_CUTS = {"max_sessions": "session", "max_qa": "QA item"}


class HasConversations(Protocol):
    """A loaded dataset file (e.g. a :class:`~memcore.datasets.spec.DatasetFile`)."""

    @property
    def conversations(self) -> Sequence[Conversation]: ...


def select(
    dataset: HasConversations | Sequence[Conversation],
    *,
    conversations: Sequence[str | int] | None = None,
    max_sessions: int | None = None,
    max_qa: int | None = None,
    evidence_inside: bool = True,
) -> list[Conversation]:
    """Cut the dataset down; returns new :class:`Conversation` values, the input is untouched.

    - ``conversations``: ids (``"conv-26"``) or 0-based indices, in the order given; ``None`` = all.
    - ``max_sessions``: keep the first N sessions of each conversation.
    - ``evidence_inside``: keep only QA items whose (cleaned) evidence lies wholly in the kept turns;
      items with empty evidence are kept only when no session was cut (nothing shows they are answerable).
    - ``max_qa``: then keep the first N items per conversation.
    Unknown ids or indices raise :class:`DataError` listing the known ids.
    """
    convs = tuple(dataset if isinstance(dataset, Sequence) else dataset.conversations)
    for name, value in (("max_sessions", max_sessions), ("max_qa", max_qa)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise DataError(f"{name} must be a positive integer or null, got {value!r}", field=name, hint=None)
    chosen = _choose(convs, conversations)
    return [_cut(c, max_sessions=max_sessions, max_qa=max_qa, evidence_inside=evidence_inside) for c in chosen]


def check_cuts(dataset: Mapping[str, Any]) -> None:
    """Refuse a cut that selects nothing by itself, whatever the data: an explicitly empty list of
    ``conversations``, ``categories`` or ``item_ids``, or a ``max_sessions`` / ``max_qa`` below 1. Absent or null
    means no cut (every conversation, category, item). Raises :class:`~memcore.errors.ConfigError`, one line naming
    the key."""
    where = f"dataset {dataset.get('name')}" if dataset.get("name") else "dataset"
    for key, entries in LIST_CUTS.items():
        value = dataset.get(key)
        if value is not None and not isinstance(value, str | int) and len(value) == 0:
            raise bad_value(
                f"dataset.{key}",
                [],
                f"a non-empty list of {entries}, or null for no cut (an empty list selects nothing)",
                where,
            )
    for key, unit in COUNT_CUTS.items():
        value = dataset.get(key)
        if value is not None and not isinstance(value, bool) and isinstance(value, int) and value < 1:
            raise bad_value(f"dataset.{key}", value, f">= 1, or null for no cut ({value} keeps no {unit})", where)


def _choose(convs: tuple[Conversation, ...], wanted: Sequence[str | int] | None) -> list[Conversation]:
    if wanted is None:
        return list(convs)
    if isinstance(wanted, str | int):  # a lone id from a config is a common slip; accept it
        wanted = [wanted]
    by_id = {c.conv_id: c for c in convs}
    out: list[Conversation] = []
    for w in wanted:
        conv: Conversation | None = None
        if isinstance(w, int) and not isinstance(w, bool):
            conv = convs[w] if 0 <= w < len(convs) else None
        elif isinstance(w, str):
            conv = by_id.get(w.strip())
            if conv is None and w.strip().isdigit() and int(w) < len(convs):
                conv = convs[int(w)]
        if conv is None:
            raise DataError(
                f"unknown conversation {w!r}; known ids: {', '.join(by_id)} (or an index 0-{len(convs) - 1})",
                field="dataset.conversations",
                hint=None,
            )
        if all(conv.conv_id != o.conv_id for o in out):
            out.append(conv)
    return out


def _cut(conv: Conversation, *, max_sessions: int | None, max_qa: int | None, evidence_inside: bool) -> Conversation:
    sessions = conv.sessions if max_sessions is None else conv.sessions[:max_sessions]
    cut = len(sessions) < len(conv.sessions)
    qa: tuple[QAItem, ...] = conv.qa
    if evidence_inside and cut:
        kept_ids = frozenset(t.dia_id for s in sessions for t in s.turns)
        qa = tuple(q for q in qa if q.evidence and kept_ids.issuperset(q.evidence))
    if max_qa is not None:
        qa = qa[:max_qa]
    if not cut and qa is conv.qa:
        return conv
    return dataclasses.replace(conv, sessions=sessions, qa=qa)

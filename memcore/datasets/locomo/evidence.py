"""Evidence-id cleaning: a pure function from raw evidence strings to valid, unique dia_ids.

Rules, applied in this order to every raw string of one QA item:

1. ``split``: a string holding several ids (``"D8:6; D9:17"``, ``"D9:1 D4:4"``) is split on ``;``, ``,``
   and whitespace (counted once per raw string that held more than one token);
2. ``colon_fixed``: ``D:11:26`` → ``D11:26``;
3. ``garbage_dropped``: a token that is no ``D<session>:<turn>`` id at all (``"D"``) is dropped;
4. ``zero_stripped``: ``D30:05`` → ``D30:5``;
5. ``unknown_dropped``: an id naming no turn of the conversation is dropped;
6. ``duplicate_dropped``: an id already kept for this item is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from memcore.turn_ids import turn_id

EVIDENCE_FIX_KINDS: tuple[str, ...] = (
    "split",
    "colon_fixed",
    "zero_stripped",
    "garbage_dropped",
    "unknown_dropped",
    "duplicate_dropped",
)

_SEPARATORS = re.compile(r"[;,\s]+")
_DIA_ID = re.compile(r"D(:?)(\d+):(\d+)")


@dataclass(frozen=True)
class CleanedEvidence:
    """Result of :func:`clean_evidence`: kept ids in first-seen order and ``(kind, detail)`` fixes."""

    ids: tuple[str, ...]
    fixes: tuple[tuple[str, str], ...]


def clean_evidence(raw: Iterable[str], turn_ids: Collection[str]) -> CleanedEvidence:
    """Clean one QA item's evidence strings against the conversation's ``turn_ids``.

    Pure: no I/O, inputs untouched. Callers validate that ``raw`` holds strings.
    """
    kept: list[str] = []
    seen: set[str] = set()
    fixes: list[tuple[str, str]] = []
    for item in raw:
        tokens = [t for t in _SEPARATORS.split(item) if t]
        if len(tokens) > 1:
            fixes.append(("split", f"{item!r} -> {', '.join(tokens)}"))
        for token in tokens:
            m = _DIA_ID.fullmatch(token)
            if m is None:
                fixes.append(("garbage_dropped", repr(token)))
                continue
            colon, session, turn = m.groups()
            cleaned = turn_id(int(session), int(turn))
            if colon:
                fixes.append(("colon_fixed", f"{token!r} -> {cleaned!r}"))
            if f"D{session}:{turn}" != cleaned:
                fixes.append(("zero_stripped", f"{token!r} -> {cleaned!r}"))
            if cleaned not in turn_ids:
                fixes.append(("unknown_dropped", repr(cleaned)))
                continue
            if cleaned in seen:
                fixes.append(("duplicate_dropped", repr(cleaned)))
                continue
            seen.add(cleaned)
            kept.append(cleaned)
    return CleanedEvidence(tuple(kept), tuple(fixes))

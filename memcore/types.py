"""Core value types shared by the data loader, memory systems, runner and metrics.

Everything here is a plain, immutable-by-convention dataclass: no I/O, no global state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class Turn:
    """One dialogue turn. ``text`` already carries the image caption when the turn shares an image."""

    dia_id: str
    speaker: str
    text: str
    session_index: int
    session_time: datetime
    session_time_raw: str
    image_caption: str | None = None
    has_img_url: bool = False  # the raw turn has an ``img_url`` (A-MEM's loader captions only those)

    def render(self) -> str:
        """Speaker-prefixed text, the form every method ingests."""
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class Session:
    index: int
    time: datetime
    time_raw: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class QAItem:
    """One question of a dataset.

    ``category`` is one of the dataset's declared category ids (:class:`memcore.datasets.spec.DatasetCategories`;
    a dataset may store an ``IntEnum`` member, the harness reads it as its int). ``answer`` is the original gold
    (``None`` when the question has none, e.g. most of LoCoMo's adversarial items), always a stripped string when
    present; ``evidence`` holds cleaned ids of the turns (``Turn.dia_id``) that answer it. The gold string an item
    is scored against is the evaluation protocol's rule (``protocol.gold(item)``). ``question_date``: when the
    question is asked, as the dataset writes it (None when the dataset has no such date). ``metadata``: what
    else the dataset knows of the item that its own protocols read (LoCoMo's ``adversarial_answer``, a
    LongMemEval question's ``question_type`` and ``evidence_sessions``); JSON-ready values, never hashed.
    """

    conv_id: str
    index: int
    question: str
    category: int
    answer: str | None
    evidence: tuple[str, ...]
    raw_evidence: tuple[str, ...] = ()
    question_date: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def item_id(self) -> str:
        return f"{self.conv_id}#{self.index}"


@dataclass(frozen=True)
class Conversation:
    conv_id: str
    speaker_a: str
    speaker_b: str
    sessions: tuple[Session, ...]
    qa: tuple[QAItem, ...]

    @property
    def turns(self) -> tuple[Turn, ...]:
        return tuple(t for s in self.sessions for t in s.turns)

    @property
    def turn_ids(self) -> frozenset[str]:
        return frozenset(t.dia_id for t in self.turns)


@dataclass
class EvidenceNote:
    """One retrieved memory unit: its text, the turns it came from, and which channels found it."""

    note_id: str
    text: str
    dia_ids: tuple[str, ...]
    score: float = 0.0
    channels: tuple[str, ...] = ()
    timestamp: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "note_id": self.note_id,
            "dia_ids": list(self.dia_ids),
            "score": round(float(self.score), 6),
            "channels": list(self.channels),
        }


@dataclass
class Evidence:
    """What a memory system hands the answerer: ordered notes plus bookkeeping.

    ``context`` is the exact text placed in the answer prompt (methods may format it their own way);
    ``rounds`` is the number of retrieval rounds (IER) used. ``layout``: the structured context a method's
    upstream answer prompt is filled from (``eval.answer_prompt=upstream``); not recorded in items.
    """

    notes: list[EvidenceNote] = field(default_factory=list)
    context: str = ""
    rounds: int = 1
    extra: dict[str, Any] = field(default_factory=dict)
    layout: dict[str, Any] = field(default_factory=dict)

    @property
    def dia_ids(self) -> list[str]:
        """Union of source dia_ids in retrieval order, without repeats."""
        seen: dict[str, None] = {}
        for note in self.notes:
            for d in note.dia_ids:
                seen.setdefault(d, None)
        return list(seen)

    def render(self) -> str:
        """Default context rendering: one note per line, with its timestamp when known."""
        if self.context:
            return self.context
        lines = []
        for note in self.notes:
            prefix = f"[{note.timestamp}] " if note.timestamp else ""
            lines.append(f"{prefix}{note.text}")
        return "\n".join(lines)

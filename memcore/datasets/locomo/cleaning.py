"""Counts of every cleaning the loader applied, by kind, with a few examples each."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

# kind → one-line meaning; the README table and ``CleaningReport.format`` use these.
KIND_DESCRIPTIONS: dict[str, str] = {
    "utf8_bom": "UTF-8 byte-order mark at the start of the file ignored",
    "orphan_session_date": "session_N_date_time without a session_N ignored",
    "caption_appended": "image turn: blip_caption appended to the text",
    "caption_without_img_url": "…of which the turn has no img_url (A-MEM's loader, and method=amem, leave its caption out)",
    "int_answer": "integer answer turned into a string",
    "answer_stripped": "surrounding whitespace stripped from an answer",
    "duplicate_qa": "question text repeated within one conversation (kept)",
    "duplicate_qa_dropped": "question text repeated within one conversation (later copy dropped)",
    "empty_evidence": "QA item with no evidence after cleaning (kept; excluded from recall)",
    "split": "evidence string holding several ids split on ; , or whitespace",
    "colon_fixed": "evidence id D:11:26 rewritten as D11:26",
    "zero_stripped": "leading zeros stripped from an evidence id (D30:05 → D30:5)",
    "garbage_dropped": "evidence token that is no dia_id at all dropped",
    "unknown_dropped": "evidence id naming no turn of the conversation dropped",
    "duplicate_dropped": "evidence id repeated within one QA item dropped",
}


@dataclass
class CleaningReport:
    """Mutable tally filled while loading; read-only afterwards by convention."""

    counts: dict[str, int] = field(default_factory=dict)
    examples: dict[str, list[str]] = field(default_factory=dict)
    max_examples: int = 5

    def add(self, kind: str, example: str = "", n: int = 1) -> None:
        """Count ``n`` fixes of ``kind``; keep ``example`` while fewer than ``max_examples`` are kept."""
        self.counts[kind] = self.counts.get(kind, 0) + n
        if example:
            kept = self.examples.setdefault(kind, [])
            if len(kept) < self.max_examples:
                kept.append(example)

    def add_all(self, fixes: Iterable[tuple[str, str]], *, where: str = "") -> None:
        """Count ``(kind, detail)`` pairs, prefixing each example with ``where``."""
        for kind, detail in fixes:
            self.add(kind, f"{where}: {detail}" if where else detail)

    def __getitem__(self, kind: str) -> int:
        return self.counts.get(kind, 0)

    def __iter__(self) -> Iterator[str]:
        return iter(self.counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``{kind: {"count": n, "examples": [...]}}`` in a stable order."""
        order = [k for k in KIND_DESCRIPTIONS if k in self.counts] + sorted(
            k for k in self.counts if k not in KIND_DESCRIPTIONS
        )
        return {k: {"count": self.counts[k], "examples": list(self.examples.get(k, []))} for k in order}

    def format(self) -> str:
        """Human-readable lines: ``kind  count  (meaning) e.g. …``."""
        if not self.counts:
            return "no cleaning needed"
        lines = []
        for kind, entry in self.to_dict().items():
            desc = KIND_DESCRIPTIONS.get(kind, "")
            ex = entry["examples"][0] if entry["examples"] else ""
            lines.append(f"{kind:<24}{entry['count']:>6}  {desc}" + (f"  e.g. {ex}" if ex else ""))
        return "\n".join(lines)

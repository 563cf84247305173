"""Map a published file's records to the dataset's QA items by conversation and index (never by question text:
LoCoMo repeats 23 question texts within conversations), and check that the file answers a whole slice.

Rules. A record names its conversation by index in the dataset's file order or by ``sample_id``. Under
``position`` indexing, a conversation's records are its category 1-4 items in dataset order, so their count must
equal that conversation's category 1-4 items; under ``qa_index`` indexing each record names one item of the
conversation's whole ``qa`` list, and the records of a conversation must cover its category 1-4 items (category 5
all or none). Conversations the file does not name are left out of the slice. Anything else (an unknown
conversation, an index out of range or repeated, counts that do not match) is one :class:`DataError` naming the file.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memcore.published.records import ParsedFile, PublishedRecord, file_error
from memcore.types import Conversation, QAItem

#: The category the published files leave out (LoCoMo's adversarial questions).
ADVERSARIAL = 5


@dataclass(frozen=True)
class MappedItem:
    """One record paired with the dataset's item it answers; ``question_differs``: the file's question text is
    not the dataset's (after normalising case, punctuation and white space)."""

    item: QAItem
    record: PublishedRecord
    question_differs: bool


@dataclass(frozen=True)
class Mapping:
    """Every answered item in dataset order, and the slice it makes: the conversations named, in dataset order,
    and the categories (None: all of them; else every category but 5, which the file leaves out)."""

    items: list[MappedItem]
    conversations: list[str]
    categories: list[int] | None

    @property
    def mismatched(self) -> list[MappedItem]:
        return [m for m in self.items if m.question_differs]


def normalise_question(text: str) -> str:
    """Lower case, punctuation dropped, white space collapsed: what two copies of a question share."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _conversation(
    path: Path, record: PublishedRecord, by_index: Sequence[Conversation], by_id: dict[str, Conversation]
) -> Conversation:
    key = record.conversation
    if isinstance(key, int):
        if not 0 <= key < len(by_index):
            raise file_error(
                path,
                f"{record.where}: conversation index {key} is out of range (the dataset has {len(by_index)}); "
                "a file of another dataset?",
            )
        return by_index[key]
    if key not in by_id:
        raise file_error(path, f"{record.where}: conversation {key!r} is not in the dataset (ids: {', '.join(by_id)})")
    return by_id[key]


def map_records(path: Path, parsed: ParsedFile, conversations: Sequence[Conversation]) -> Mapping:
    """Pair each record of ``parsed`` (read from ``path``, named in errors) with its item among ``conversations``
    (the whole dataset, in file order) under the module's rules."""
    by_id = {c.conv_id: c for c in conversations}
    grouped: dict[str, list[PublishedRecord]] = {}
    for record in parsed.records:
        conv = _conversation(path, record, conversations, by_id)
        grouped.setdefault(conv.conv_id, []).append(record)
    items: list[MappedItem] = []
    answered_cats: set[int] = set()
    for conv in conversations:
        records = grouped.get(conv.conv_id)
        if not records:
            continue
        if parsed.index_kind == "position":
            pairs = _by_position(path, conv, records)
        else:
            pairs = _by_qa_index(path, conv, records)
        answered_cats |= {int(item.category) for item, _ in pairs}
        for item, record in pairs:
            differs = record.question is not None and normalise_question(str(record.question)) != normalise_question(
                item.question
            )
            items.append(MappedItem(item, record, differs))
    if ADVERSARIAL in answered_cats:  # all or none over the whole file, not only within a conversation
        answered = {m.item.item_id for m in items}
        named = [c for c in conversations if c.conv_id in grouped]
        gap = [q for c in named for q in c.qa if int(q.category) == ADVERSARIAL and q.item_id not in answered]
        if gap:
            raise file_error(
                path,
                f"category 5 is answered for some items but not for {gap[0].item_id} ({len(gap)} unanswered): "
                "counts that do not match; answer category 5 for all items of the conversations named, or none",
            )
    all_cats = sorted({int(q.category) for c in conversations for q in c.qa})
    cats = None if ADVERSARIAL in answered_cats else [c for c in all_cats if c != ADVERSARIAL]
    return Mapping(items, [c.conv_id for c in conversations if c.conv_id in grouped], cats)


def _headline(conv: Conversation) -> list[QAItem]:
    return [q for q in conv.qa if int(q.category) != ADVERSARIAL]


def _by_position(
    path: Path, conv: Conversation, records: list[PublishedRecord]
) -> list[tuple[QAItem, PublishedRecord]]:
    wanted = _headline(conv)
    if len(records) != len(wanted):
        raise file_error(
            path,
            f"{len(records)} records for conversation {conv.conv_id}, which has {len(wanted)} category 1-4 items: "
            "counts that do not match (a file of another dataset or slice?)",
        )
    seen: set[int] = set()
    for record in records:
        if record.index in seen:
            raise file_error(path, f"{record.where}: position {record.index} of {conv.conv_id} repeats")
        seen.add(record.index)
    return [(wanted[r.index], r) for r in sorted(records, key=lambda r: r.index)]


def _by_qa_index(
    path: Path, conv: Conversation, records: list[PublishedRecord]
) -> list[tuple[QAItem, PublishedRecord]]:
    by_index: dict[int, PublishedRecord] = {}
    for record in records:
        if not 0 <= record.index < len(conv.qa):
            raise file_error(
                path,
                f"{record.where}: qa_index {record.index} is out of range for {conv.conv_id} "
                f"(its qa list has {len(conv.qa)} items, indices 0-{len(conv.qa) - 1})",
            )
        if record.index in by_index:
            raise file_error(
                path,
                f"{record.where}: qa_index {record.index} of {conv.conv_id} repeats ({by_index[record.index].where})",
            )
        by_index[record.index] = record
    missing = [q for q in _headline(conv) if q.index not in by_index]
    adversarial = [q for q in conv.qa if int(q.category) == ADVERSARIAL]
    n_adv = sum(1 for q in adversarial if q.index in by_index)
    if missing or 0 < n_adv < len(adversarial):
        gap = missing or [q for q in adversarial if q.index not in by_index]
        raise file_error(
            path,
            f"{len(by_index)} records for conversation {conv.conv_id}, which has {len(_headline(conv))} category 1-4 "
            f"items (+{len(adversarial)} of category 5, all or none): counts that do not match, first missing "
            f"{gap[0].item_id} (a file of another dataset or slice?)",
        )
    return [(q, by_index[q.index]) for q in conv.qa if q.index in by_index]

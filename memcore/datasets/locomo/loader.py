"""Load and validate locomo10.json into :mod:`memcore.types` values.

Every anomaly is either fatal (one :class:`DataError` naming file, conversation and field) or a
counted cleaning recorded in the dataset's :class:`CleaningReport`; ``README.md`` beside this module lists
which is which.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.cleaning import CleaningReport
from memcore.datasets.locomo.download import LOCOMO_SHA256
from memcore.datasets.locomo.evidence import clean_evidence
from memcore.types import Conversation, QAItem, Session, Turn

_SESSION_KEY = re.compile(r"session_(\d+)")
_DATE_KEY = re.compile(r"session_(\d+)_date_time")
_TURN_ID = re.compile(r"D\d+:\d+")
_SESSION_TIME = re.compile(
    r"\s*(\d{1,2}):(\d{2})\s*([ap])\.?\s*m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})\s*", re.IGNORECASE
)
_MONTHS = {
    name: i
    for i, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
_KNOWN_CATEGORIES = ", ".join(c.title for c in Category)


def with_image_caption(text: str, caption: str) -> str:
    """The text of a turn that shares an image: ``"<text> [shares an image: <caption>]"``."""
    tag = f"[shares an image: {caption}]"
    return f"{text} {tag}" if text else tag


def parse_session_time(raw: str) -> datetime:
    """Parse a LoCoMo session timestamp such as ``"1:56 pm on 8 May, 2023"`` (locale-independent).

    Raises ``ValueError`` when ``raw`` has another shape or names an impossible date.
    """
    m = _SESSION_TIME.fullmatch(raw)
    if m is None:
        raise ValueError(f"expected a time like '1:56 pm on 8 May, 2023', got {raw!r}")
    hour, minute, ampm, day, month_name, year = m.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unknown month {month_name!r} in {raw!r}")
    h = int(hour)
    if not 1 <= h <= 12:
        raise ValueError(f"hour {h} is not a 12-hour clock hour in {raw!r}")
    h = h % 12 + (12 if ampm.lower() == "p" else 0)
    return datetime(int(year), month, int(day), h, int(minute))


@dataclass(frozen=True)
class LoCoMoDataset:
    """A loaded, validated LoCoMo file: conversations in file order, what was cleaned, and the file's sha256."""

    path: Path
    sha256: str
    conversations: tuple[Conversation, ...]
    report: CleaningReport = field(compare=False)

    @property
    def conv_ids(self) -> tuple[str, ...]:
        return tuple(c.conv_id for c in self.conversations)

    @property
    def is_official(self) -> bool:
        """True when the file is byte-identical to the official release."""
        return self.sha256 == LOCOMO_SHA256

    def conversation(self, conv_id: str) -> Conversation:
        for conv in self.conversations:
            if conv.conv_id == conv_id:
                return conv
        raise DataError(
            f"unknown conversation {conv_id!r}; known: {', '.join(self.conv_ids)}", path=self.path, hint=None
        )

    def counts(self) -> dict[str, int]:
        """Sizes: conversations, sessions, turns, qa."""
        return {
            "conversations": len(self.conversations),
            "sessions": sum(len(c.sessions) for c in self.conversations),
            "turns": sum(len(s.turns) for c in self.conversations for s in c.sessions),
            "qa": sum(len(c.qa) for c in self.conversations),
        }


def load_locomo(path: Path | str, *, dedupe_qa: bool = False) -> LoCoMoDataset:
    """Read, validate and clean a locomo10.json file.

    ``dedupe_qa``: when a question text repeats within one conversation, keep only the first item
    (counted as ``duplicate_qa_dropped``). Off by default: the official file has 12 such repeats and every
    published LoCoMo table scores all 1,986 items, so they stay (counted as ``duplicate_qa``).
    Raises :class:`DataError` for anything that cannot be repaired safely.
    """
    path = Path(path).expanduser()
    report = CleaningReport()
    data = _read_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    raw = _parse_json(_decode(data, path, report), path)
    conversations = _Parser(path, report, dedupe_qa).dataset(raw)
    return LoCoMoDataset(path=path, sha256=sha, conversations=conversations, report=report)


def _read_bytes(path: Path) -> bytes:
    if not path.exists():
        raise DataError(
            "file not found",
            path=path,
            hint="Download it with `python scripts/get_locomo.py`, or point MEMCORE_DATA / dataset.path at your copy.",
        )
    if not path.is_file():
        raise DataError("is not a file", path=path, hint="Point dataset.path or MEMCORE_DATA at locomo10.json itself.")
    data = path.read_bytes()
    if not data.strip():
        raise DataError("file is empty", path=path, hint="Re-download it with `python scripts/get_locomo.py --force`.")
    return data


def _decode(data: bytes, path: Path, report: CleaningReport) -> str:
    if data.startswith(b"\xef\xbb\xbf"):
        report.add("utf8_bom", str(path))
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(
            f"not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})",
            path=path,
            hint="Save the file as UTF-8, or re-download it with `python scripts/get_locomo.py --force`.",
        ) from None


def _parse_json(text: str, path: Path) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # JSON strings cannot hold raw newlines, so an unterminated one almost always means the file was cut.
        truncated = exc.pos >= len(text.rstrip()) - 1 or exc.msg.startswith("Unterminated string")
        what = "truncated JSON (ends early)" if truncated else "invalid JSON"
        raise DataError(
            f"{what}: {exc.msg} (line {exc.lineno}, column {exc.colno})",
            path=path,
            hint="Re-download it with `python scripts/get_locomo.py --force`.",
        ) from None


class _Parser:
    """One pass over the parsed JSON; raises on the first fatal problem, counts every fix."""

    def __init__(self, path: Path, report: CleaningReport, dedupe_qa: bool) -> None:
        self.path = path
        self.report = report
        self.dedupe_qa = dedupe_qa

    def fail(
        self, problem: str, *, conv: str | None = None, fld: str | None = None, hint: str | None = None
    ) -> DataError:
        kwargs: dict[str, Any] = {"path": self.path, "conversation": conv, "field": fld}
        if hint is not None:
            kwargs["hint"] = hint
        return DataError(problem, **kwargs)

    def dataset(self, raw: Any) -> tuple[Conversation, ...]:
        if not isinstance(raw, list):
            raise self.fail(
                f"top level is a JSON {_kind(raw)}, expected a list of conversations",
                hint="Use locomo10.json (a list of 10 conversations), e.g. from `python scripts/get_locomo.py`.",
            )
        if not raw:
            raise self.fail("top-level list is empty: no conversations")
        convs: list[Conversation] = []
        seen: dict[str, int] = {}
        for i, obj in enumerate(raw):
            conv = self.conversation(i, obj)
            if conv.conv_id in seen:
                raise self.fail(
                    f"sample_id {conv.conv_id!r} repeats the one of conversation index {seen[conv.conv_id]}",
                    conv=f"{conv.conv_id!r} (index {i})",
                    fld="sample_id",
                )
            seen[conv.conv_id] = i
            convs.append(conv)
        return tuple(convs)

    def conversation(self, i: int, obj: Any) -> Conversation:
        label = f"index {i}"
        if not isinstance(obj, dict):
            raise self.fail(f"is a JSON {_kind(obj)}, expected an object", conv=label)
        sample_id = obj.get("sample_id")
        if not isinstance(sample_id, str) or not sample_id.strip():
            raise self.fail("missing or empty (it names the conversation in results)", conv=label, fld="sample_id")
        conv_id = sample_id.strip()
        label = f"{conv_id!r} (index {i})"
        body = obj.get("conversation")
        if not isinstance(body, dict):
            problem = "missing" if body is None else f"is a JSON {_kind(body)}, expected an object"
            raise self.fail(problem, conv=label, fld="conversation")
        speakers = []
        for key in ("speaker_a", "speaker_b"):
            name = body.get(key)
            if not isinstance(name, str) or not name.strip():
                raise self.fail("missing or empty", conv=label, fld=f"conversation.{key}")
            speakers.append(name.strip())
        sessions = self.sessions(label, body)
        qa = self.qa_items(label, conv_id, obj.get("qa"), frozenset(t.dia_id for s in sessions for t in s.turns))
        return Conversation(conv_id=conv_id, speaker_a=speakers[0], speaker_b=speakers[1], sessions=sessions, qa=qa)

    def sessions(self, label: str, body: Mapping[str, Any]) -> tuple[Session, ...]:
        numbers = sorted(int(m.group(1)) for k in body if (m := _SESSION_KEY.fullmatch(k)))
        if not numbers:
            raise self.fail("no session_N keys: the conversation has no dialogue", conv=label, fld="conversation")
        for k in body:
            m = _DATE_KEY.fullmatch(k)
            if m and f"session_{m.group(1)}" not in body:
                self.report.add("orphan_session_date", f"{label}: {k}")
        sessions: list[Session] = []
        seen_ids: set[str] = set()
        for n in numbers:
            date_key = f"session_{n}_date_time"
            time_raw = body.get(date_key)
            if not isinstance(time_raw, str) or not time_raw.strip():
                raise self.fail(
                    "missing or empty: every session needs its date", conv=label, fld=f"conversation.{date_key}"
                )
            try:
                time = parse_session_time(time_raw)
            except ValueError as exc:
                raise self.fail(
                    f"unparseable session date: {exc}", conv=label, fld=f"conversation.{date_key}"
                ) from None
            raw_turns = body[f"session_{n}"]
            if not isinstance(raw_turns, list):
                raise self.fail(
                    f"is a JSON {_kind(raw_turns)}, expected a list of turns",
                    conv=label,
                    fld=f"conversation.session_{n}",
                )
            turns = tuple(
                self.turn(label, f"conversation.session_{n}[{j}]", t, n, time, time_raw, seen_ids)
                for j, t in enumerate(raw_turns)
            )
            sessions.append(Session(index=n, time=time, time_raw=time_raw, turns=turns))
        return tuple(sessions)

    def turn(self, label: str, where: str, obj: Any, n: int, time: datetime, time_raw: str, seen_ids: set[str]) -> Turn:
        if not isinstance(obj, dict):
            raise self.fail(f"is a JSON {_kind(obj)}, expected a turn object", conv=label, fld=where)
        dia_id = obj.get("dia_id")
        if not isinstance(dia_id, str) or not dia_id:
            raise self.fail("turn has no dia_id", conv=label, fld=f"{where}.dia_id")
        if not _TURN_ID.fullmatch(dia_id):
            raise self.fail(
                f"dia_id {dia_id!r} is not of the form D<session>:<turn>", conv=label, fld=f"{where}.dia_id"
            )
        if dia_id in seen_ids:
            raise self.fail(
                f"dia_id {dia_id!r} appears twice; evidence ids would be ambiguous", conv=label, fld=f"{where}.dia_id"
            )
        seen_ids.add(dia_id)
        speaker = obj.get("speaker")
        if not isinstance(speaker, str) or not speaker.strip():
            raise self.fail(f"turn {dia_id} has no speaker", conv=label, fld=f"{where}.speaker")
        text = obj.get("text")
        caption = obj.get("blip_caption")
        if caption is not None and not isinstance(caption, str):
            raise self.fail(
                f"turn {dia_id}: blip_caption is a JSON {_kind(caption)}, expected a string",
                conv=label,
                fld=f"{where}.blip_caption",
            )
        caption = caption.strip() if caption else None
        if not isinstance(text, str) or not (text.strip() or caption):
            problem = "has no text" if text is None else f"text is {'empty' if text == '' else repr(text)}"
            raise self.fail(f"turn {dia_id} {problem}", conv=label, fld=f"{where}.text")
        if caption:
            text = with_image_caption(text, caption)
            self.report.add("caption_appended", f"{label} {dia_id}")
            if "img_url" not in obj:
                self.report.add("caption_without_img_url", f"{label} {dia_id}")
        return Turn(
            dia_id=dia_id,
            speaker=speaker.strip(),
            text=text,
            session_index=n,
            session_time=time,
            session_time_raw=time_raw,
            image_caption=caption,
            has_img_url="img_url" in obj,
        )

    def qa_items(self, label: str, conv_id: str, raw: Any, turn_ids: frozenset[str]) -> tuple[QAItem, ...]:
        if not isinstance(raw, list):
            problem = "missing" if raw is None else f"is a JSON {_kind(raw)}, expected a list of QA items"
            raise self.fail(problem, conv=label, fld="qa")
        items: list[QAItem] = []
        first_index: dict[str, int] = {}
        for j, obj in enumerate(raw):
            item = self.qa_item(label, conv_id, j, obj, turn_ids)
            if item.question in first_index:
                example = f"{label} qa[{j}] repeats qa[{first_index[item.question]}]: {item.question!r}"
                if self.dedupe_qa:
                    self.report.add("duplicate_qa_dropped", example)
                    continue
                self.report.add("duplicate_qa", example)
            else:
                first_index[item.question] = j
            if not item.evidence:
                self.report.add("empty_evidence", f"{label} qa[{j}] (category {int(item.category)})")
            items.append(item)
        return tuple(items)

    def qa_item(self, label: str, conv_id: str, j: int, obj: Any, turn_ids: frozenset[str]) -> QAItem:
        where = f"qa[{j}]"
        if not isinstance(obj, dict):
            raise self.fail(f"is a JSON {_kind(obj)}, expected a QA object", conv=label, fld=where)
        question = obj.get("question")
        if not isinstance(question, str) or not question.strip():
            raise self.fail("missing or empty question", conv=label, fld=f"{where}.question")
        raw_cat = obj.get("category")
        if isinstance(raw_cat, bool) or not isinstance(raw_cat, int) or raw_cat not in Category._value2member_map_:
            raise self.fail(
                f"unknown category {raw_cat!r}; known: {_KNOWN_CATEGORIES}", conv=label, fld=f"{where}.category"
            )
        category = Category(raw_cat)
        raw_ev = obj.get("evidence")
        if not isinstance(raw_ev, list) or not all(isinstance(e, str) for e in raw_ev):
            problem = "missing" if raw_ev is None else f"must be a list of strings like ['D1:3'], got {raw_ev!r}"
            raise self.fail(problem, conv=label, fld=f"{where}.evidence")
        cleaned = clean_evidence(raw_ev, turn_ids)
        self.report.add_all(cleaned.fixes, where=f"{label} {where}")
        answer = self.answer(label, f"{where}.answer", obj.get("answer"))
        adversarial = self.answer(label, f"{where}.adversarial_answer", obj.get("adversarial_answer"))
        if category is Category.ADVERSARIAL:
            if adversarial is None:
                raise self.fail(
                    "category-5 item without adversarial_answer", conv=label, fld=f"{where}.adversarial_answer"
                )
        elif answer is None:
            raise self.fail(
                f"category-{int(category)} item without an answer (only category 5 may lack one)",
                conv=label,
                fld=f"{where}.answer",
            )
        return QAItem(
            conv_id=conv_id,
            index=j,
            question=question.strip(),
            category=category,
            answer=answer,
            evidence=cleaned.ids,
            raw_evidence=tuple(raw_ev),
            metadata={} if adversarial is None else {"adversarial_answer": adversarial},
        )

    def answer(self, label: str, fld: str, value: Any) -> str | None:
        """Gold strings: ints become strings, whitespace is stripped, ``None``/empty means absent."""
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            self.report.add("int_answer", f"{label} {fld}: {value!r}")
            return str(value)
        if not isinstance(value, str):
            raise self.fail(f"is a JSON {_kind(value)} ({value!r}), expected a string", conv=label, fld=fld)
        stripped = value.strip()
        if stripped != value:
            self.report.add("answer_stripped", f"{label} {fld}: {value!r}")
        return stripped or None


def _kind(value: Any) -> str:
    """JSON type name of a parsed value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"

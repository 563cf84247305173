"""Loading a LongMemEval release file (``longmemeval_s_cleaned.json``, ``_m``, ``_oracle``: one JSON list of
questions) into the harness's values. Each question brings its own chat history, so each question is one
:class:`~memcore.types.Conversation` (``conv_id`` = its ``question_id``) holding its haystack sessions and its
one QA item. ``README.md`` beside this module lists every field read and every rule.

Turns are named with the harness's turn id (:mod:`memcore.turn_ids`): ``D<s>:<t>`` for the t-th turn of the s-th
haystack session (1-based, file order); the release's session ids stay in the item's metadata.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from memcore.datasets.errors import DataError
from memcore.datasets.longmemeval.categories import ABSTENTION_SUFFIX, category_of
from memcore.datasets.spec import DatasetFile
from memcore.turn_ids import session_key, turn_id
from memcore.types import Conversation, QAItem, Session, Turn

HINT = "Fix the file, or fetch the official release with `python scripts/get_longmemeval.py`."
#: Every field a question must carry, with the JSON type it must have.
REQUIRED_FIELDS: tuple[tuple[str, type | tuple[type, ...]], ...] = (
    ("question_id", str),
    ("question_type", str),
    ("question", str),
    ("answer", (str, int, float)),
    ("question_date", str),
    ("haystack_session_ids", list),
    ("haystack_dates", list),
    ("haystack_sessions", list),
    ("answer_session_ids", list),
)
ROLES: tuple[str, ...] = ("user", "assistant")
#: ``2023/05/20 (Sat) 02:21``, the release's date format (question dates and session dates alike).
_DATE = re.compile(r"^\s*(\d{4})/(\d{1,2})/(\d{1,2})\s*(?:\([A-Za-z]{3}\))?\s*(\d{1,2}):(\d{2})\s*$")


def parse_date(text: str) -> datetime | None:
    """A release date (``2023/05/20 (Sat) 02:21``) as a datetime; None when it is not of that form."""
    m = _DATE.match(text)
    if m is None:
        return None
    year, month, day, hour, minute = (int(g) for g in m.groups())
    try:
        return datetime(year, month, day, hour, minute)
    except ValueError:
        return None


class _Question:
    """Reads one question object, failing with a :class:`DataError` that names its question id."""

    def __init__(self, path: Path, index: int, obj: Any) -> None:
        self.path = path
        self.qid = f"#{index}"
        if not isinstance(obj, dict):
            raise self.fail(f"entry {index} is a JSON {type(obj).__name__}, not an object")
        qid = obj.get("question_id")
        if isinstance(qid, str) and qid:
            self.qid = qid
        self.obj = obj

    def fail(self, problem: str, fld: str | None = None) -> DataError:
        return DataError(problem, path=self.path, unit="question", conversation=self.qid, field=fld, hint=HINT)

    def fields(self) -> Mapping[str, Any]:
        for name, kind in REQUIRED_FIELDS:
            if name not in self.obj:
                raise self.fail("missing field", name)
            value = self.obj[name]
            if not isinstance(value, kind) or isinstance(value, bool):
                raise self.fail(f"must be {_kind_name(kind)}, got {type(value).__name__}", name)
        return self.obj

    def conversation(self) -> Conversation:
        obj = self.fields()
        try:
            category = category_of(obj["question_type"])
        except ValueError as exc:
            raise self.fail(str(exc), "question_type") from None
        ids, dates, sessions = obj["haystack_session_ids"], obj["haystack_dates"], obj["haystack_sessions"]
        if not (len(ids) == len(dates) == len(sessions)):
            raise self.fail(
                f"haystack_session_ids has {len(ids)} entries, haystack_dates {len(dates)}, haystack_sessions "
                f"{len(sessions)}: one of each per session",
                "haystack_session_ids",
            )
        if len(set(map(str, ids))) != len(ids):
            raise self.fail("a session id repeats", "haystack_session_ids")
        if parse_date(obj["question_date"]) is None:
            raise self.fail(f"{obj['question_date']!r} is no date like '2023/05/20 (Sat) 02:21'", "question_date")
        built: list[Session] = []
        evidence: list[str] = []
        answer_sessions = {str(s) for s in obj["answer_session_ids"]}
        unknown = sorted(answer_sessions - set(map(str, ids)))
        if unknown:
            raise self.fail(f"names no haystack session: {', '.join(unknown)}", "answer_session_ids")
        for s, (sid, raw_date, turns) in enumerate(zip(ids, dates, sessions, strict=True), start=1):
            where = f"haystack_sessions[{s - 1}]"
            when = parse_date(raw_date) if isinstance(raw_date, str) else None
            if when is None:
                raise self.fail(f"{raw_date!r} is no date like '2023/05/20 (Sat) 02:21'", f"haystack_dates[{s - 1}]")
            if not isinstance(turns, list):
                raise self.fail(f"must be a list of turns, got {type(turns).__name__}", where)
            built_turns: list[Turn] = []
            for t, turn in enumerate(turns, start=1):
                fld = f"{where}[{t - 1}]"
                if (
                    not isinstance(turn, dict)
                    or turn.get("role") not in ROLES
                    or not isinstance(turn.get("content"), str)
                ):
                    raise self.fail('a turn is {"role": "user" | "assistant", "content": str}', fld)
                dia_id = turn_id(s, t)
                built_turns.append(Turn(dia_id, turn["role"], turn["content"], s, when, raw_date))
                # the official retrieval evaluation's targets: user turns marked has_answer in answer sessions
                if turn.get("has_answer") is True and turn["role"] == "user" and str(sid) in answer_sessions:
                    evidence.append(dia_id)
            built.append(Session(s, when, raw_date, tuple(built_turns)))
        qid = str(obj["question_id"])
        abstention = qid.endswith(ABSTENTION_SUFFIX)
        by_id = {str(sid): s for s, sid in enumerate(ids, start=1)}
        evidence_sessions = [session_key(turn_id(by_id[str(a)], 1)) for a in obj["answer_session_ids"]]
        item = QAItem(
            conv_id=qid,
            index=0,
            question=obj["question"].strip(),
            category=category,
            answer=str(obj["answer"]).strip(),
            evidence=() if abstention else tuple(evidence),
            raw_evidence=tuple(str(a) for a in obj["answer_session_ids"]),
            question_date=obj["question_date"],
            metadata={
                "question_type": obj["question_type"],
                "abstention": abstention,
                "evidence_sessions": evidence_sessions,
                "haystack_session_ids": [str(i) for i in ids],
            },
        )
        return Conversation(qid, "user", "assistant", tuple(built), (item,))


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {str: "a string", int: "a number", float: "a number", list: "a list"}
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(dict.fromkeys(names[k] for k in kinds))


def load_longmemeval(path: Path) -> DatasetFile:
    """The questions of a release file, each as one conversation, in file order. Raises :class:`DataError` (one
    line naming the question id and the field) for a file that is not of the release's format."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror}", path=path, hint=HINT) from None
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise DataError(f"not JSON: {exc}", path=path, hint=HINT) from None
    if not isinstance(data, list) or not data:
        raise DataError("must be a non-empty JSON list of questions", path=path, hint=HINT)
    conversations: list[Conversation] = []
    seen: set[str] = set()
    for index, obj in enumerate(data):
        conv = _Question(path, index, obj).conversation()
        if conv.conv_id in seen:
            raise DataError("question_id repeats", path=path, unit="question", conversation=conv.conv_id, hint=HINT)
        seen.add(conv.conv_id)
        conversations.append(conv)
    return DatasetFile(tuple(conversations), hashlib.sha256(raw).hexdigest(), {})

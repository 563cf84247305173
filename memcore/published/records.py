"""What every layout parses a published answer file into: one :class:`PublishedRecord` per answered item, in the
file's order, plus what the file says about itself (:class:`ParsedFile`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from memcore.datasets.errors import DataError

#: How a record's ``index`` addresses its item: ``position`` among the conversation's category 1-4 items in dataset
#: order (files that leave category 5 out), or ``qa_index`` into the conversation's whole ``qa`` list.
IndexKind = Literal["position", "qa_index"]

PUBLISHED_HINT = "Check --layout (docs/published.md describes each layout) or convert the file to the jsonl layout."


@dataclass(frozen=True)
class PublishedRecord:
    """One answer of a published file.

    ``conversation``: the conversation's index in the dataset's file order (an int) or its ``sample_id`` (a str);
    ``index``: see :data:`IndexKind`; ``grade``: the vendor judge's verdict as a fraction in [0, 1] (the mean of
    ``judgements`` when it judged several times; None when the file has no grade); ``question``: the question text
    the file carries (checked against the dataset's, never used to map); ``where``: the record's place in the file
    for messages (``results.json ["3"][12]``); ``vendor_scores``: scores the file itself records (e.g. its F1)."""

    conversation: int | str
    index: int
    answer: str
    where: str
    grade: float | None = None
    judgements: tuple[bool, ...] = ()
    question: str | None = None
    judge: str | None = None
    vendor_scores: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ParsedFile:
    """The records of one or more files of one layout, how they are indexed and what the files state about the
    run (``answer_model``, ``judge``, ``answer_prompt``: None where they say nothing)."""

    records: list[PublishedRecord]
    index_kind: IndexKind
    answer_model: str | None = None
    judge: str | None = None
    answer_prompt: str | None = None


@dataclass(frozen=True)
class Layout:
    """A registered file layout: its name, a one-line description, and ``parse`` (the files → :class:`ParsedFile`,
    raising :class:`DataError` naming the file and the problem)."""

    name: str
    description: str
    parse: Callable[[Sequence[Path]], ParsedFile]


def file_error(path: Path, problem: str) -> DataError:
    """The one error a malformed published file raises: the file and the problem, then what to do."""
    return DataError(problem, path=path, hint=PUBLISHED_HINT)


def read_json(path: Path) -> Any:
    """``path`` parsed as JSON; a file that is not JSON (or not readable text) is a :func:`file_error`."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise file_error(path, f"not JSON ({exc})") from None
    except OSError as exc:
        raise file_error(path, f"cannot be read ({exc.strerror or exc})") from None


def expect(path: Path, value: Any, kind: type | tuple[type, ...], what: str) -> Any:
    """``value`` when it is a ``kind``, else a :func:`file_error` saying what ``what`` should have been."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise file_error(path, f"{what} is a {type(value).__name__}, not a {names}")
    return value


def answer_of(path: Path, record: Any, key: str, where: str) -> str:
    """The system's answer ``record[key]`` as a string (LoCoMo-style files hold some numbers); a record without
    that field, or with a non-scalar one, is a :func:`file_error`."""
    if not isinstance(record, dict):
        raise file_error(path, f"{where} is a {type(record).__name__}, not a record (a JSON object)")
    if key not in record:
        raise file_error(path, f"{where} has no answer field {key!r} (fields: {', '.join(sorted(record)) or 'none'})")
    value = record[key]
    if value is None:
        return ""
    if isinstance(value, dict | list):
        raise file_error(path, f"{where}: answer field {key!r} is a {type(value).__name__}, not text")
    return str(value)


def grade_of(path: Path, value: Any, where: str) -> float | None:
    """A grade as a fraction: a bool, 0/1, or a number in [0, 1]; None stays None; anything else is an error."""
    if value is None:
        return None
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float) and 0.0 <= float(value) <= 1.0:
        return float(value)
    raise file_error(path, f"{where}: grade {value!r} is neither a bool nor a number in [0, 1]")


def conversation_lists(path: Path, data: Any, prefix: str, where: str) -> list[tuple[int, str, list[Any]]]:
    """``(conversation index, key, records)`` of a dict keyed ``<prefix><N>`` (N = the conversation's index in file
    order), sorted by N: the layout of Zep's, Memobase's and the audit's files."""
    expect(path, data, dict, where)
    out = []
    for key, records in data.items():
        suffix = str(key)[len(prefix) :] if str(key).startswith(prefix) else ""
        if not suffix.isdigit():
            raise file_error(path, f"{where}: key {key!r} is not {prefix}<conversation index>")
        out.append((int(suffix), str(key), expect(path, records, list, f"{where}[{key!r}]")))
    return sorted(out)


def positional_record(
    path: Path,
    rec: Any,
    *,
    conversation: int | str,
    position: int,
    where: str,
    answer_key: str,
    grade: Callable[[dict[str, Any]], Any],
    vendor_scores: Callable[[dict[str, Any]], dict[str, float]] | None = None,
) -> PublishedRecord:
    """The record of ``rec``, the item at ``position`` among its conversation's category 1-4 items: the answer under
    ``answer_key`` (checked first: ``rec`` must be a JSON object holding it), the vendor's verdict ``grade(rec)``
    (:func:`grade_of`), the question text, and the file's own scores ``vendor_scores(rec)``."""
    answer = answer_of(path, rec, answer_key, where)
    return PublishedRecord(
        conversation=conversation,
        index=position,
        answer=answer,
        where=where,
        grade=grade_of(path, grade(rec), where),
        question=rec.get("question"),
        vendor_scores=vendor_scores(rec) if vendor_scores is not None else {},
    )

"""The generic layout any other vendor's file converts to: JSON Lines, one record per answered item.

Fields: ``sample_id`` (the LoCoMo conversation), ``qa_index`` (the index into that conversation's whole ``qa``
list, category 5 included), ``answer`` (the system's answer); optional ``grade`` (the vendor judge's verdict: a
bool, or a number in [0, 1] for the share of several judgements), ``question`` (checked against the dataset's;
never used to map) and ``judge`` (the judge's name; one name per file). Blank lines are skipped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from memcore.published.records import Layout, ParsedFile, PublishedRecord, answer_of, file_error, grade_of


def parse(paths: Sequence[Path]) -> ParsedFile:
    records = []
    judges: set[str] = set()
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise file_error(path, f"cannot be read as text ({exc})") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"line {number}"
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                raise file_error(path, f"{where} is not JSON ({exc})") from None
            answer = answer_of(path, rec, "answer", where)
            sample_id, qa_index = rec.get("sample_id"), rec.get("qa_index")
            if not isinstance(sample_id, str) or not sample_id:
                raise file_error(path, f"{where} has no 'sample_id' (the LoCoMo conversation, e.g. conv-26)")
            if not isinstance(qa_index, int) or isinstance(qa_index, bool):
                raise file_error(path, f"{where}: 'qa_index' {qa_index!r} is not an integer index into the qa list")
            if rec.get("judge") is not None:
                judges.add(str(rec["judge"]))
            records.append(
                PublishedRecord(
                    conversation=sample_id,
                    index=qa_index,
                    answer=answer,
                    where=f"{path.name} {where}",
                    grade=grade_of(path, rec.get("grade"), where),
                    question=rec.get("question"),
                    judge=rec.get("judge"),
                )
            )
    if not records:
        raise file_error(paths[0], "holds no record")
    if len(judges) > 1:
        raise file_error(paths[0], f"names {len(judges)} judges ({', '.join(sorted(judges))}); import one per run")
    return ParsedFile(records, "qa_index", judge=next(iter(judges), None))


LAYOUT = Layout(
    name="jsonl",
    description="generic JSON Lines: {sample_id, qa_index, answer, grade?, question?, judge?} per line",
    parse=parse,
)

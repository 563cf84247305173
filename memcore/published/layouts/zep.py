"""Zep's LoCoMo files (``zep_locomo_grades.json``, ``zep_locomo_responses.json``): a dict
``locomo_experiment_user_<N>`` → that conversation's category 1-4 items in dataset order, each with the system's
``answer`` and (grades file only) Zep's judge's ``grade``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.published.records import (
    Layout,
    ParsedFile,
    conversation_lists,
    file_error,
    positional_record,
    read_json,
)

PREFIX = "locomo_experiment_user_"


def _grade(rec: dict[str, Any]) -> Any:
    return rec.get("grade")


def parse(paths: Sequence[Path]) -> ParsedFile:
    if len(paths) != 1:
        raise file_error(paths[0], f"the zep layout reads one file, got {len(paths)}")
    path = paths[0]
    records = []
    for conv, key, items in conversation_lists(path, read_json(path), PREFIX, "the file"):
        for pos, rec in enumerate(items):
            where = f"[{key!r}][{pos}]"
            records.append(
                positional_record(
                    path, rec, conversation=conv, position=pos, where=where, answer_key="answer", grade=_grade
                )
            )
    return ParsedFile(records, "position", judge="gpt-4o-mini (Zep's grader)")


LAYOUT = Layout(
    name="zep",
    description="Zep: {locomo_experiment_user_N: [{question, answer, golden_answer, grade, category}]}",
    parse=parse,
)

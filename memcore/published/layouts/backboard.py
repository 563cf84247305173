"""Backboard's LoCoMo files: one ``locomo_conversation_<K>.json`` per conversation, ``conversation_id`` the
LoCoMo ``sample_id``, ``responses`` that conversation's category 1-4 items in dataset order, each with the
system's ``ai_response`` and its judge's ``evaluation.is_correct``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.published.records import (
    Layout,
    ParsedFile,
    expect,
    file_error,
    positional_record,
    read_json,
)


def _grade(rec: dict[str, Any]) -> Any:
    evaluation = rec.get("evaluation")
    return evaluation.get("is_correct") if isinstance(evaluation, dict) else None


def parse(paths: Sequence[Path]) -> ParsedFile:
    records = []
    seen: dict[str, Path] = {}
    for path in paths:
        data = expect(path, read_json(path), dict, "the file")
        conv = data.get("conversation_id")
        if not isinstance(conv, str) or not conv:
            raise file_error(path, "no 'conversation_id' naming the LoCoMo sample_id")
        if conv in seen:
            raise file_error(path, f"conversation {conv} is also in {seen[conv].name}: each file is one conversation")
        seen[conv] = path
        responses = expect(path, data.get("responses"), list, "'responses'")
        for pos, rec in enumerate(responses):
            records.append(
                positional_record(
                    path,
                    rec,
                    conversation=conv,
                    position=pos,
                    where=f"{path.name} responses[{pos}]",
                    answer_key="ai_response",
                    grade=_grade,
                )
            )
    return ParsedFile(records, "position", judge="gpt-4.1 (Backboard's judge, per its code)")


LAYOUT = Layout(
    name="backboard",
    description="Backboard: one file per conversation, {conversation_id (sample_id), responses: [{question, "
    "ai_response, evaluation {is_correct}}]}",
    parse=parse,
)

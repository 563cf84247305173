"""Backboard's LoCoMo files: one ``locomo_conversation_<K>.json`` per conversation, ``conversation_id`` the
LoCoMo ``sample_id``, ``responses`` that conversation's category 1-4 items in dataset order, each with the
system's ``ai_response`` and its judge's ``evaluation.is_correct``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memcore.published.records import (
    Layout,
    ParsedFile,
    PublishedRecord,
    answer_of,
    expect,
    file_error,
    grade_of,
    read_json,
)


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
            where = f"{path.name} responses[{pos}]"
            answer = answer_of(path, rec, "ai_response", f"responses[{pos}]")
            evaluation = rec.get("evaluation") if isinstance(rec.get("evaluation"), dict) else {}
            records.append(
                PublishedRecord(
                    conversation=conv,
                    index=pos,
                    answer=answer,
                    where=where,
                    grade=grade_of(path, evaluation.get("is_correct"), f"responses[{pos}]"),
                    question=rec.get("question"),
                )
            )
    return ParsedFile(records, "position", judge="gpt-4.1 (Backboard's judge, per its code)")


LAYOUT = Layout(
    name="backboard",
    description="Backboard: one file per conversation, {conversation_id (sample_id), responses: [{question, "
    "ai_response, evaluation {is_correct}}]}",
    parse=parse,
)

"""The locomo-audit's full-context runs (``fc-baseline/results/<run>/eval_results.json``): ``detailed_results``
``locomo_exp_user_<N>`` → records whose ``question_id`` ``locomo_<N>_qa<i>`` indexes the conversation's whole
``qa`` list (category 5 included), with the ``generated_answer`` and three ``llm_judgments``; ``metadata`` names
the answer and judge models and the answer prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from memcore.published.records import (
    Layout,
    ParsedFile,
    PublishedRecord,
    answer_of,
    conversation_lists,
    expect,
    file_error,
    read_json,
)

PREFIX = "locomo_exp_user_"
QUESTION_ID = re.compile(r"^locomo_(\d+)_qa(\d+)$")


def parse(paths: Sequence[Path]) -> ParsedFile:
    if len(paths) != 1:
        raise file_error(paths[0], f"the dial481 layout reads one file, got {len(paths)}")
    path = paths[0]
    data = expect(path, read_json(path), dict, "the file")
    if "detailed_results" not in data:
        raise file_error(path, f"no 'detailed_results' (keys: {', '.join(sorted(data)) or 'none'})")
    meta = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    records = []
    for conv, key, items in conversation_lists(path, data["detailed_results"], PREFIX, "detailed_results"):
        for pos, rec in enumerate(items):
            where = f"detailed_results[{key!r}][{pos}]"
            answer = answer_of(path, rec, "generated_answer", where)
            match = QUESTION_ID.match(str(rec.get("question_id", "")))
            if match is None or int(match.group(1)) != conv:
                raise file_error(path, f"{where}: question_id {rec.get('question_id')!r} is not locomo_{conv}_qa<i>")
            judgements = rec.get("llm_judgments") or {}
            expect(path, judgements, dict, f"{where}.llm_judgments")
            votes = tuple(bool(judgements[k]) for k in sorted(judgements))
            records.append(
                PublishedRecord(
                    conversation=conv,
                    index=int(match.group(2)),
                    answer=answer,
                    where=where,
                    grade=sum(votes) / len(votes) if votes else None,
                    judgements=votes,
                    question=rec.get("question"),
                )
            )
    runs = meta.get("num_runs")
    judge = meta.get("judge_model")
    return ParsedFile(
        records,
        "qa_index",
        answer_model=meta.get("answer_model"),
        judge=None if judge is None else f"{judge}" + (f" ×{runs}" if runs else ""),
        answer_prompt=meta.get("answer_prompt"),
    )


LAYOUT = Layout(
    name="dial481",
    description="locomo-audit eval_results.json: detailed_results {locomo_exp_user_N: [{question_id locomo_N_qa<i>, "
    "generated_answer, llm_judgments}]}, metadata",
    parse=parse,
)

"""Memobase's LoCoMo fixtures (``memobase_eval_<date>_3000.json``), also the layout of Mem0's evaluation
``results.json``: a dict ``"0"``–``"9"`` (conversation index; not in numeric order in the file) → that
conversation's category 1-4 items in dataset order, each with the system's ``response`` (``answer`` is the gold
there), the judge's ``llm_score`` (0/1) and the file's own ``f1_score`` and ``bleu_score``."""

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

#: The file's own scores kept beside each answer, under the harness's metric names.
VENDOR_SCORES = {"f1_score": "f1", "bleu_score": "bleu1"}


def _grade(rec: dict[str, Any]) -> Any:
    return rec.get("llm_score")


def _vendor_scores(rec: dict[str, Any]) -> dict[str, float]:
    return {
        ours: float(rec[theirs]) for theirs, ours in VENDOR_SCORES.items() if isinstance(rec.get(theirs), int | float)
    }


def parse_results_dict(paths: Sequence[Path], layout: str, judge: str | None) -> ParsedFile:
    """The records of a Mem0-evaluation-style results dict (see the module doc)."""
    if len(paths) != 1:
        raise file_error(paths[0], f"the {layout} layout reads one file, got {len(paths)}")
    path = paths[0]
    records = []
    for conv, key, items in conversation_lists(path, read_json(path), "", "the file"):
        for pos, rec in enumerate(items):
            where = f"[{key!r}][{pos}]"
            records.append(
                positional_record(
                    path,
                    rec,
                    conversation=conv,
                    position=pos,
                    where=where,
                    answer_key="response",
                    grade=_grade,
                    vendor_scores=_vendor_scores,
                )
            )
    return ParsedFile(records, "position", judge=judge)


def parse(paths: Sequence[Path]) -> ParsedFile:
    return parse_results_dict(paths, "memobase", "gpt-4o-mini (Mem0's ACCURACY_PROMPT)")


LAYOUT = Layout(
    name="memobase",
    description='Memobase / Mem0 evaluation results: {"0".."9": [{question, answer (gold), response, category, '
    "bleu_score, f1_score, llm_score}]}",
    parse=parse,
)

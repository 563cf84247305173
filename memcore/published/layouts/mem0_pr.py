"""The Mem0 evaluation's ``results.json`` as a third party's pull request published it: the results-dict layout
of :mod:`memcore.published.layouts.memobase`, judged by the run's own model (Qwen3-14B)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memcore.published.layouts.memobase import parse_results_dict
from memcore.published.records import Layout, ParsedFile


def parse(paths: Sequence[Path]) -> ParsedFile:
    return parse_results_dict(paths, "mem0-pr", "Qwen3-14B (Mem0's ACCURACY_PROMPT)")


LAYOUT = Layout(
    name="mem0-pr",
    description='Mem0 evaluation results.json: {"0".."9": [{question, answer (gold), response, category, '
    "bleu_score, f1_score, llm_score}]}",
    parse=parse,
)

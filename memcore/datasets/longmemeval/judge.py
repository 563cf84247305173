"""LongMemEval's judge preset ``longmemeval-judge`` (the default and only judge of ``protocol=longmemeval``): the
official answer check of ``src/evaluation/evaluate_qa.py`` (xiaowu0162/LongMemEval @ 9e0b455), as that script runs
it: one user message, the template of the item's question type (:data:`.prompts.judge.BY_TYPE`) or, for an
abstention question, the abstention template, filled with the question, the reference answer (the rubric of a
preference question, the explanation of an abstention one) and the model's response; gpt-4o (``gpt-4o-2024-08-06``,
the backbone preset ``gpt-4o``), temperature 0, 10 tokens, one run; the reply counts as correct when it contains
"yes" (lower-cased), so every reply reads and none is retried. Every question type is graded.
"""

from __future__ import annotations

from memcore.datasets.judge import JudgePreset
from memcore.datasets.longmemeval.categories import QUESTION_TYPES
from memcore.datasets.longmemeval.prompts import judge as prompts
from memcore.datasets.protocol import EvalProtocol
from memcore.interfaces import Message
from memcore.types import QAItem

NAME = "longmemeval-judge"
#: The backbone preset of the official judge model (``gpt-4o`` = ``gpt-4o-2024-08-06``, as ``model_zoo`` maps it).
BACKBONE = "gpt-4o"


def messages(item: QAItem, gold_item: QAItem, answer: str, protocol: EvalProtocol) -> list[Message]:
    """``get_anscheck_prompt(question_type, question, answer, response, abstention)`` as one user message."""
    content = prompts.anscheck_prompt(
        str(item.metadata["question_type"]),
        item.question,
        gold_item.answer or "",
        answer,
        abstention=bool(item.metadata.get("abstention")),
    )
    return [{"role": "user", "content": content}]


def read(reply: str) -> tuple[str, str]:
    """The official reading of a reply (:func:`.prompts.judge.judged_correct`), the reply kept as the reason."""
    text = reply.strip()
    return ("CORRECT" if prompts.judged_correct(text) else "WRONG"), text


LONGMEMEVAL_JUDGE = JudgePreset(
    name=NAME,
    version=prompts.VERSION,
    hash_parts=lambda: (
        prompts.GENERAL,
        prompts.TEMPORAL_REASONING,
        prompts.KNOWLEDGE_UPDATE,
        prompts.SINGLE_SESSION_PREFERENCE,
        prompts.ABSTENTION,
    ),
    messages=messages,
    read=read,
    categories=tuple(range(1, len(QUESTION_TYPES) + 1)),
    default_backbone=BACKBONE,
    default_runs=1,
    max_tokens=prompts.MAX_TOKENS,
    source=prompts.SOURCE,
    json_reply=False,
)

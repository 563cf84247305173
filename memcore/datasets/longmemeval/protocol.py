"""LongMemEval's evaluation protocol (``protocol=longmemeval``): the official answer prompt (500 tokens,
temperature 0), the gold answer as written, an abstention question expecting a refusal, and the retrieval
metrics of the official retrieval evaluation at session and turn level beside the harness's recall and hit.

The official answer check is an LLM judge with one template per question type, the run's J with
``eval.judge=true`` (:mod:`.judge`); the harness's token F1 and BLEU-1 are not LongMemEval's metrics and are not
scored.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from memcore.datasets.longmemeval.judge import NAME as JUDGE
from memcore.datasets.longmemeval.prompts import answer as prompts
from memcore.datasets.protocol import EvalProtocol
from memcore.interfaces import Message
from memcore.types import QAItem

#: What a run under this protocol scores: the official judge's J (with ``eval.judge=true``), turn-level recall and
#: hit over the whole context (the harness's), then the official recall_all@k at session and turn level.
METRICS: tuple[str, ...] = (
    "judge",
    "recall",
    "hit",
    "session_recall_all_5",
    "session_recall_all_10",
    "turn_recall_all_5",
    "turn_recall_all_10",
)

NOTE = (
    "protocol=longmemeval: Session / Turn R_all@k is the official retrieval evaluation's recall_all@k "
    "(src/retrieval/eval_utils.py of xiaowu0162/LongMemEval @ 9e0b455): every gold session (turn) among the first "
    "k distinct retrieved sessions (turns); abstention questions and questions without a gold user turn are skipped."
)


def is_abstention(item: QAItem) -> bool:
    return bool(item.metadata.get("abstention"))


@dataclass(frozen=True)
class LongMemEvalProtocol(EvalProtocol):
    """The official LongMemEval answer prompt and retrieval metrics."""

    def prompt_version(self) -> str:
        return f"{prompts.VERSION}/{self.name}"

    def expects_refusal(self, item: QAItem) -> bool:
        return is_abstention(item)

    def table_notes(self, categories: Collection[str] = ()) -> tuple[str, ...]:
        return (NOTE,)

    def messages(self, item: QAItem, context: str, options: tuple[str, ...]) -> list[Message]:
        prompt = prompts.ANSWER_PROMPT.format(context, item.question_date or "", item.question)
        return [{"role": "user", "content": prompt}]


LONGMEMEVAL_PROTOCOL = LongMemEvalProtocol(
    name="longmemeval",
    prompt_name="official LongMemEval answer prompt (src/generation/run_generation.py, no CoT)",
    temperature_default=0.0,
    max_tokens=500,
    json_reply=False,
    metrics=METRICS,
    judges=(JUDGE,),
)

"""LoCoMo's two judge presets (``eval.judge_preset``), registered through this package's ``JUDGES``:

- ``judge-v1`` (the default of LoCoMo's protocols): the project's own prompt (:mod:`.prompts.judge`), JSON reason +
  label, every category (a category-5 refusal is graded under ``protocol=locomo``), the run's backbone, 1 run; the
  gold is the answer protocol's (so J and F1 share a target).
- ``mem0-judge``: the protocol behind published LoCoMo J numbers: Mem0's ``ACCURACY_PROMPT`` verbatim
  (:mod:`.prompts.judge_mem0`) as one user message, gpt-4o-mini, temperature 0, a JSON label only, CORRECT iff the
  label is exactly ``"CORRECT"`` (as Mem0's script), gold = the item's ``answer``, category 5 not judged, 3 runs.
"""

from __future__ import annotations

from typing import Any

from memcore.datasets.judge import LABELS, JudgeMessages, JudgePreset, TextMessages
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.prompts import judge as prompts
from memcore.datasets.locomo.prompts import judge_mem0
from memcore.datasets.protocol import EvalProtocol
from memcore.interfaces import Message
from memcore.types import QAItem

#: The judge presets of LoCoMo's protocols, the default first.
LOCOMO_JUDGES: tuple[str, ...] = ("judge-v1", "mem0-judge")


def read_v1(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError('expected {"reason": ..., "label": "CORRECT"|"WRONG"}')
    label = str(obj["label"]).strip().upper()
    if label not in LABELS:
        raise ValueError(f"label {obj['label']!r} is neither CORRECT nor WRONG")
    return label, str(obj.get("reason", "")).strip()


def read_mem0(obj: Any) -> tuple[str, str]:
    """Mem0's reading: ``json.loads(...)["label"]``, scored 1 iff it equals ``"CORRECT"`` (no stripping or
    case folding); a reply without a ``label`` key (a KeyError that stops Mem0's script) is retried here."""
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError('expected {"label": "CORRECT"|"WRONG"}')
    return ("CORRECT" if obj["label"] == "CORRECT" else "WRONG"), ""


def text_v1(question: str, gold: str, answer: str, refusal: bool) -> list[Message]:
    user = prompts.USER.format(
        question=question, gold=gold, answer=answer, adversarial_note=prompts.ADVERSARIAL_NOTE if refusal else ""
    )
    return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": user}]


def text_mem0(question: str, gold: str, answer: str, refusal: bool) -> list[Message]:
    content = judge_mem0.ACCURACY_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)
    return [{"role": "user", "content": content}]


def judge_gold(item: QAItem, protocol: EvalProtocol, gold_field: str = "protocol") -> tuple[str, bool]:
    """The gold text shown to the judge and whether a refusal is the expected answer: ``gold_field`` ``"answer"``
    grades against the item's ``answer``, ``"protocol"`` against the answer ``protocol``'s gold (a refusal when it
    expects one)."""
    if gold_field == "answer":
        return item.answer or protocol.gold(item), False
    if protocol.expects_refusal(item):
        return prompts.REFUSAL_GOLD, True
    return protocol.gold(item), False


def _item_messages(text: TextMessages, gold_field: str) -> JudgeMessages:
    """The preset's item messages: ``text`` of the asked question and the gold :func:`judge_gold` picks."""

    def messages(item: QAItem, gold_item: QAItem, answer: str, protocol: EvalProtocol) -> list[Message]:
        gold, refusal = judge_gold(gold_item, protocol, gold_field)
        return text(item.question, gold, answer, refusal)

    return messages


JUDGE_V1 = JudgePreset(
    name="judge-v1",
    version=prompts.VERSION,
    hash_parts=lambda: (prompts.SYSTEM, prompts.USER, prompts.ADVERSARIAL_NOTE, prompts.REFUSAL_GOLD),
    messages=_item_messages(text_v1, "protocol"),
    read=read_v1,
    categories=tuple(int(c) for c in Category),
    default_backbone=None,
    default_runs=1,
    max_tokens=128,
    source="memcore/datasets/locomo/prompts/judge.py (this project)",
    text_messages=text_v1,
)

MEM0_JUDGE = JudgePreset(
    name="mem0-judge",
    version=judge_mem0.VERSION,
    hash_parts=lambda: (judge_mem0.ACCURACY_PROMPT,),
    messages=_item_messages(text_mem0, "answer"),
    read=read_mem0,
    categories=tuple(int(c) for c in Category if c is not Category.ADVERSARIAL),
    default_backbone="gpt-4o-mini",
    default_runs=3,
    max_tokens=256,
    source=f"{judge_mem0.SOURCE_REPO} {judge_mem0.SOURCE_PATH} @ {judge_mem0.SOURCE_COMMIT}",
    text_messages=text_mem0,
)

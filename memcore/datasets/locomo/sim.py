"""The simulator's replies to LoCoMo's prompts (its two answer protocols and its two judge presets), declared in
this package's ``SIM_REPLIES`` (:class:`memcore.testing.sim_text.SimReplies`): content-free, a pure function of the
messages, never a result."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from memcore.datasets.locomo.prompts import answer as ANSWER_PROMPT
from memcore.datasets.locomo.prompts import judge as JUDGE_PROMPT
from memcore.datasets.locomo.prompts import judge_mem0
from memcore.interfaces import Message
from memcore.testing.sim_text import (
    SimReplies,
    between,
    first_text,
    first_words,
    last_text,
    overlap,
    system_text,
    user_text,
    words,
)

_QUESTION_RE = re.compile(r"Question:\s*(.+?)\s*(?:Short answer:|\n|$)", re.DOTALL)
_MEM0_JUDGE_HEAD = judge_mem0.ACCURACY_PROMPT[:80]

KINDS = ("answer_amem", "answer_locomo", "judge", "judge_mem0")


def short_answer(text: str) -> str:
    """The last six words of the context line sharing most words with the question (deterministic, non-trivial
    F1 on some items)."""
    found = _QUESTION_RE.findall(text)
    question = found[-1] if found else ""
    q_words = {w.lower() for w in words(question) if len(w) > 3}
    best, best_score = "", 0
    for line in text.splitlines():
        if "Question:" in line:
            continue
        score = len(q_words & {w.lower() for w in words(line)})
        if score > best_score:
            best, best_score = line, score
    return " ".join(best.split()[-6:]) or first_words(question, 4) or "unknown"


def _verdict(text: str) -> str:
    """CORRECT iff the generated answer shares a word with the gold."""
    gold = between(text, "Gold answer:", "\n")
    answer = between(text, "Generated answer:", "\n")
    return "CORRECT" if overlap(gold, answer) > 0 else "WRONG"


def classify(msgs: Sequence[Message]) -> str | None:
    """LoCoMo's kinds: exact markers first, then any prompt ending its question with ``Short answer:`` (asked
    after every method's responder, which come first)."""
    system = system_text(msgs)
    if system == ANSWER_PROMPT.AMEM_SYSTEM:
        return "answer_amem"
    if system == JUDGE_PROMPT.SYSTEM:
        return "judge"
    if first_text(msgs).startswith(_MEM0_JUDGE_HEAD):
        return "judge_mem0"
    if "Short answer:" in first_text(msgs) or "Short answer:" in user_text(msgs):
        return "answer_locomo"
    return None


def reply(kind: str, msgs: Sequence[Message]) -> str:
    user = last_text(msgs)
    if kind == "answer_amem":
        return json.dumps({"answer": short_answer(user)})
    if kind == "answer_locomo":
        return short_answer(user)
    if kind == "judge":
        return json.dumps({"reason": "simulated", "label": _verdict(user)})
    return json.dumps({"label": _verdict(first_text(msgs))})


SIM_REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

"""The simulator's replies to LongMemEval's prompts (its answer prompt and its judge's answer checks), declared in
this package's ``SIM_REPLIES`` (:class:`memcore.testing.sim_text.SimReplies`): content-free, a pure function of the
messages, never a result."""

from __future__ import annotations

from collections.abc import Sequence

from memcore.datasets.longmemeval.prompts import answer as answer_prompt
from memcore.datasets.longmemeval.prompts import judge as judge_prompt
from memcore.interfaces import Message
from memcore.testing.sim_text import SimReplies, first_text, first_words, last_text, overlap, words

KINDS = ("answer_longmemeval", "judge_longmemeval")

_ANSWER_HEAD = answer_prompt.ANSWER_PROMPT.split("{", 1)[0]
_JUDGE_HEADS = tuple(
    dict.fromkeys(
        t.split("{", 1)[0].split(". ", 1)[0] for t in (*judge_prompt.BY_TYPE.values(), judge_prompt.ABSTENTION)
    )
)
#: What each judge template calls the reference it is given.
_REFERENCE_MARKERS = ("\n\nCorrect Answer: ", "\n\nRubric: ", "\n\nExplanation: ")
_RESPONSE_MARKER = "\n\nModel Response: "


def classify(msgs: Sequence[Message]) -> str | None:
    if len(msgs) != 1:
        return None
    text = first_text(msgs)
    if text.startswith(_ANSWER_HEAD):
        return "answer_longmemeval"
    if text.startswith(_JUDGE_HEADS):
        return "judge_longmemeval"
    return None


def _answer(text: str) -> str:
    """The last six words of the history line sharing most words with the question."""
    question = text.rsplit("\nQuestion: ", 1)[-1].removesuffix("\nAnswer:")
    q_words = {w.lower() for w in words(question) if len(w) > 3}
    history = text.rsplit("\nCurrent Date: ", 1)[0]
    best = max(history.splitlines(), key=lambda line: len(q_words & {w.lower() for w in words(line)}), default="")
    return " ".join(best.split()[-6:]) or first_words(question, 4) or "unknown"


def _verdict(text: str) -> str:
    """ "yes" iff the model response shares a word with the reference, else "no"."""
    reference = ""
    for marker in _REFERENCE_MARKERS:
        if marker in text:
            reference = text.split(marker, 1)[1].split(_RESPONSE_MARKER, 1)[0]
            break
    response = text.rsplit(_RESPONSE_MARKER, 1)[-1].rsplit("\n\n", 1)[0]
    return "yes" if overlap(reference, response) > 0 else "no"


def reply(kind: str, msgs: Sequence[Message]) -> str:
    text = last_text(msgs)
    return _answer(text) if kind == "answer_longmemeval" else _verdict(text)


SIM_REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

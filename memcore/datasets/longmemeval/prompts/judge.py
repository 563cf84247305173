"""LongMemEval's answer-check (judge) prompts, exactly as ``get_anscheck_prompt`` of ``src/evaluation/evaluate_qa.py``
in xiaowu0162/LongMemEval @ 9e0b455f4ef0e2ab8f2e582289761153549043fc (the file last changed in d6dc8b5) sends
them: one user message, filled with ``str.format`` (question, correct answer or rubric or explanation, model
response); the judge's reply is read as yes when it contains "yes" (lower-cased), as there. The type picks the
template: single-session-user, single-session-assistant and multi-session share :data:`GENERAL`; an abstention
question (id ending in ``_abs``) uses :data:`ABSTENTION` whatever its type. sha256 of each: ``README.md`` here
(checked by a test).
"""

from __future__ import annotations

VERSION = "longmemeval-anscheck-9e0b455"
SOURCE = "xiaowu0162/LongMemEval src/evaluation/evaluate_qa.py @ 9e0b455 (get_anscheck_prompt)"
#: The official judge call's sampling: one completion at temperature 0, at most 10 tokens.
TEMPERATURE = 0.0
MAX_TOKENS = 10


GENERAL = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if "
    "the response contains the correct answer. Otherwise, answer no. If the response is equivalent "
    "to the correct answer or contains all the intermediate steps to get the correct answer, you "
    "should also answer yes. If the response only contains a subset of the information required by "
    "the answer, answer no. \n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model "
    "response correct? Answer yes or no only."
)

TEMPORAL_REASONING = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if "
    "the response contains the correct answer. Otherwise, answer no. If the response is equivalent "
    "to the correct answer or contains all the intermediate steps to get the correct answer, you "
    "should also answer yes. If the response only contains a subset of the information required by "
    "the answer, answer no. In addition, do not penalize off-by-one errors for the number of days. "
    "If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one "
    "errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. "
    "\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel Response: {}\n\nIs the model response correct? Answer "
    "yes or no only."
)

KNOWLEDGE_UPDATE = (
    "I will give you a question, a correct answer, and a response from a model. Please answer yes if "
    "the response contains the correct answer. Otherwise, answer no. If the response contains some "
    "previous information along with an updated answer, the response should be considered as correct "
    "as long as the updated answer is the required answer.\n\nQuestion: {}\n\nCorrect Answer: {}\n\nModel "
    "Response: {}\n\nIs the model response correct? Answer yes or no only."
)

SINGLE_SESSION_PREFERENCE = (
    "I will give you a question, a rubric for desired personalized response, and a response from a "
    "model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. "
    "The model does not need to reflect all the points in the rubric. The response is correct as "
    "long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: "
    "{}\n\nRubric: {}\n\nModel Response: {}\n\nIs the model response correct? Answer yes or no only."
)

ABSTENTION = (
    "I will give you an unanswerable question, an explanation, and a response from a model. Please "
    "answer yes if the model correctly identifies the question as unanswerable. The model could say "
    "that the information is incomplete, or some other information is given but the asked "
    "information is not.\n\nQuestion: {}\n\nExplanation: {}\n\nModel Response: {}\n\nDoes the model "
    "correctly identify the question as unanswerable? Answer yes or no only."
)

#: The template of each question type (the non-abstention branch).
BY_TYPE: dict[str, str] = {
    "single-session-user": GENERAL,
    "single-session-assistant": GENERAL,
    "multi-session": GENERAL,
    "temporal-reasoning": TEMPORAL_REASONING,
    "knowledge-update": KNOWLEDGE_UPDATE,
    "single-session-preference": SINGLE_SESSION_PREFERENCE,
}


def anscheck_prompt(question_type: str, question: str, answer: str, response: str, abstention: bool = False) -> str:
    """The official judge prompt for one answer; KeyError for a type the official script has no template for."""
    template = ABSTENTION if abstention else BY_TYPE[question_type]
    return template.format(question, answer, response)


def judged_correct(reply: str) -> bool:
    """The official reading of the judge's reply: ``'yes' in reply.lower()``."""
    return "yes" in reply.lower()

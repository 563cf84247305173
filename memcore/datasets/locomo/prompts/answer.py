"""Answer prompts per protocol and category (filled with ``str.format``).

``amem``: A-MEM's LoCoMo prompts, character for character as ``advancedMemAgent.answer_question``
in A-MEM's ``test_advanced.py`` sends them (their f-strings carry the source indentation: 28
spaces, reproduced by ``_PAD``; "avoid using any subjects." is followed by three spaces, as there).
A-MEM sends them as the user message after the system message ``"You must respond with a JSON
object."`` with a strict ``json_schema`` response format ``{"answer": string}``; our client offers
only JSON-object mode, so the schema is stated in the system message (:data:`AMEM_SYSTEM`) -- the
one deviation. Category 1 and 4 share the general prompt; category 3 is the same text after a
newline; category 2 adds the session-DATE instruction; category 5 offers
:data:`NOT_MENTIONED` and the adversarial answer in random order.

``locomo``: the official QA prompt of snap-research/locomo ``task_eval/evaluate_gpts.py``
(single question): ``context + "\\n\\n" + QA_PROMPT.format(question)`` as one user message;
category 2 appends :data:`LOCOMO_TEMPORAL_SUFFIX` to the question; category 5 appends the
two-option suffix and uses ``QA_PROMPT_CAT_5``.
"""

from __future__ import annotations

VERSION = "answer-v1"

NOT_MENTIONED = "Not mentioned in the conversation"

# --- A-MEM -------------------------------------------------------------------------------------
_PAD = " " * 28

AMEM_SYSTEM_ORIGINAL = "You must respond with a JSON object."
AMEM_SYSTEM = AMEM_SYSTEM_ORIGINAL + ' Use exactly this format: {"answer": "<your answer as a string>"}'

AMEM_GENERAL = (
    "Based on the context: {context}, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible.\n"
    "\n"
    f"{_PAD}Question: {{question}} Short answer:\n"
    f"{_PAD}"
)

AMEM_OPEN_DOMAIN = f"\n{_PAD}" + AMEM_GENERAL

AMEM_TEMPORAL = (
    "\n"
    f"{_PAD}Based on the context: {{context}}, answer the following question. "
    "Use DATE of CONVERSATION to answer with an approximate date.\n"
    f"{_PAD}Please generate the shortest possible answer, using words from the conversation where possible, "
    "and avoid using any subjects.   \n"
    "\n"
    f"{_PAD}Question: {{question}} Short answer:\n"
    f"{_PAD}"
)

AMEM_ADVERSARIAL = (
    "\n"
    f"{_PAD}Based on the context: {{context}}, answer the following question. {{question}} \n"
    f"{_PAD}\n"
    f"{_PAD}Select the correct answer: {{option_a}} or {{option_b}}  Short answer:\n"
    f"{_PAD}"
)

AMEM_BY_CATEGORY: dict[int, str] = {
    1: AMEM_GENERAL,
    2: AMEM_TEMPORAL,
    3: AMEM_OPEN_DOMAIN,
    4: AMEM_GENERAL,
    5: AMEM_ADVERSARIAL,
}

# --- official LoCoMo ---------------------------------------------------------------------------
# QA_PROMPT and QA_PROMPT_CAT_5 of task_eval/evaluate_gpts.py (commit 9228632) verbatim, filled positionally.
LOCOMO_QA_PROMPT = (
    "\n"
    "Based on the above context, write an answer in the form of a short phrase for the following question. "
    "Answer with exact words from the context whenever possible.\n"
    "\n"
    "Question: {} Short answer:\n"
)

LOCOMO_QA_PROMPT_CAT_5 = "\nBased on the above context, answer the following question.\n\nQuestion: {} Short answer:\n"

LOCOMO_TEMPORAL_SUFFIX = " Use DATE of CONVERSATION to answer with an approximate date."

LOCOMO_ADVERSARIAL_SUFFIX = " Select the correct answer: (a) {option_a} (b) {option_b}. "

LOCOMO_QUERY = "{context}\n\n{prompt}"

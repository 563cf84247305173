"""The official LoCoMo batch QA prompt (``full_context`` with ``batch_size`` > 1).

Source: snap-research/locomo ``task_eval/evaluate_gpts.py`` @ ``9228632`` (the second, uncommented
``QA_PROMPT_BATCH``), verbatim, including the space before the first two line ends. The official code sends
``context + "\\n" + QA_PROMPT_BATCH + "\\n".join("<k>: <question>")`` as one user message (``get_gpt_answers``);
the questions carry the same category-2 and category-5 suffixes as single questions.
"""

SOURCE = "snap-research/locomo task_eval/evaluate_gpts.py @ 92286325a40764bee61f77824ddb95233b11c4d6"
VERSION = "locomo-qa-batch-9228632"

QA_PROMPT_BATCH = (
    "\n"
    "Based on the above conversations, write short answers for each of the following questions in a few words. \n"
    'Write the answers in the form of a json dictionary where each entry contains the question number as "key" '
    'and the short answer as "value". \n'
    "Use single-quote characters for named entities and double-quote characters for enclosing json elements. "
    "Answer with exact words from the conversations whenever possible.\n"
    "\n"
)


def batch_query(context: str, questions: list[str]) -> str:
    """The official batch query: the conversation context, a newline, the prompt, the numbered questions."""
    return context + "\n" + QA_PROMPT_BATCH + "\n".join(f"{k}: {q}" for k, q in enumerate(questions))

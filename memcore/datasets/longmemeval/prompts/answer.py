"""LongMemEval's answer prompt, exactly as ``prepare_prompt`` of ``src/generation/run_generation.py`` in
xiaowu0162/LongMemEval @ 9e0b455 builds it for a retriever's history without chain of thought and without key
expansion: one user message filled with ``str.format`` (the history, the question's date, the question);
temperature 0 as there. The harness's context (the method's rendering of what it retrieved) stands for the
official history string.
"""

from __future__ import annotations

VERSION = "longmemeval-answer-9e0b455"

ANSWER_PROMPT = (
    "I will give you several history chats between you and a user. Please answer the question based "
    "on the relevant chat history.\n\n\nHistory Chats:\n\n{}\n\nCurrent Date: {}\nQuestion: {}\nAnswer:"
)

# ruff: noqa: W291 (ACCURACY_PROMPT keeps the original's trailing spaces)
"""Mem0's LoCoMo judge prompt (``ACCURACY_PROMPT``), character for character: the judge behind the
published LoCoMo J numbers (Mem0, and LightMem, MemOS, EverMemOS, Backboard and MemMachine, which reuse it).

Source: mem0ai/mem0, ``evaluation/metrics/llm_judge.py`` at commit
aae5989e78a6188b3b047c104d960c9ad0927e75 (2025-07-08), the file's last version before the evaluation
folder was removed from mem0's main branch (9315e30, 2026-06-14). Read from mem0's own repository,
not a fork. The text is unchanged from 2bb0653 (2025-06-23) on; earlier versions (393a4fd ... d85fcda)
wrote "Now it’s time" (U+2019) instead of "Now it's time" (sha256 44fb3d8f...), and
several copies in other repositories differ in the same way. Its other quote marks are U+2019 (’), as
in the original, and four lines end in a space; :data:`ACCURACY_PROMPT_SHA256` pins the text.

How mem0's ``evaluate_llm_judge`` uses it (mirrored by the ``mem0-judge`` preset,
:mod:`memcore.datasets.locomo.judges`): one user message ``ACCURACY_PROMPT.format(question=..., gold_answer=...,
generated_answer=...)``, model ``gpt-4o-mini``, ``temperature=0.0``, ``response_format={"type":
"json_object"}``; the reply goes through ``extract_json`` and ``json.loads``, and the item scores 1 iff
``label == "CORRECT"`` (exact string), else 0. Category 5 is skipped; the gold is the item's ``answer``.
"""

from __future__ import annotations

VERSION = "mem0-judge-v1"

SOURCE_REPO = "mem0ai/mem0"
SOURCE_PATH = "evaluation/metrics/llm_judge.py"
SOURCE_COMMIT = "aae5989e78a6188b3b047c104d960c9ad0927e75"
MODEL = "gpt-4o-mini"

# sha256 of ACCURACY_PROMPT (UTF-8), computed from the file at SOURCE_COMMIT.
ACCURACY_PROMPT_SHA256 = "62395dd312a631dfd9355026a0b69cc936018274c3198b6365b5c2a5c9bca9e0"

# fmt: off
# The literal below is copied byte for byte (trailing spaces included); do not reformat or re-quote it.
ACCURACY_PROMPT = """
Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:
    (1) a question (posed by one user to another user), 
    (2) a ’gold’ (ground truth) answer, 
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. 

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. 
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""
# fmt: on

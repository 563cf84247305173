"""MemCoRe iterative evidence refinement, answer-first form (opt-in: ``method.ier_prompt=answer_first``).

The judge first writes the answer the notes give (or "" when they do not give it) and only then says whether
they are sufficient. With ``memcore-ier-v2`` the local 1.5B model said "insufficient" at round 1 on all 20
measured questions, 12 of them with all the gold already in the pool, and echoed the question as the missing
fact; it had found the answer in some of those replies. Writing the answer first ties the verdict to it. The
format example carries no verdict to copy."""

from memcore.memory.prompts.ier import SYSTEM

VERSION = "memcore-ier-answer-first-v1"

__all__ = ["SYSTEM", "USER", "VERSION"]

USER = """Question: {question}

Retrieved notes (each starts with the date it was said):
{evidence}

Searches already made: {searched}

Step 1: answer the question from these notes alone, in a few words. You may work a date out from a note's date ("yesterday" in a note of 8 May 2023 is 7 May 2023) or combine several notes. Write "" if the notes do not say it.
Step 2: "sufficient" is true if you wrote an answer in step 1, false if you wrote "". Only when false, name the missing fact and write up to {max_sub} NEW short searches for it (each with its key entities), different from the searches already made.

Reply with one JSON object: {{"answer": "<step 1>", "sufficient": <true or false>, "missing": "<the missing fact, or empty>", "sub_queries": [{{"query": "...", "entities": ["...", "..."]}}]}}"""

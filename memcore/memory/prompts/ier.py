"""MemCoRe iterative evidence refinement: is the evidence enough, and if not, which sub-queries (JSON).

v2: notes are shown whole with their dates (up to a token budget), the searches already made are listed so
they are not asked again, and "sufficient" is defined as "the notes contain the answer or enough for a best
answer", so that a judge can stop when the answer is there."""

VERSION = "memcore-ier-v2"

SYSTEM = (
    "You check whether retrieved memory notes are enough to answer a question about a conversation, and if not, "
    "you write focused follow-up searches. Reply with a single JSON object and nothing else."
)

USER = """Question: {question}

Retrieved notes (each starts with the date it was said):
{evidence}

Searches already made: {searched}

Do the notes contain what is needed to answer the question? Reply "sufficient": true when the answer is in the notes, or can be worked out from them (a date calculation, or combining several notes). Reply false only when a fact the question asks about is in none of the notes; then name it and write up to {max_sub} NEW short searches for the missing facts (each with its key entities), one per missing fact, different from the searches already made.

Format: {{"sufficient": true, "answer_notes": [1], "missing": "", "sub_queries": []}} or {{"sufficient": false, "answer_notes": [], "missing": "...", "sub_queries": [{{"query": "...", "entities": ["...", "..."]}}]}}"""

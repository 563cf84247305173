"""MemCoRe construction gate: judge a new note against its embedding-nearest candidates (JSON).

v2: every note shows its session date(s); the three relations have non-overlapping strength ranges; the rules
say that a new fact about the same person, or the same kind of event on another date, is not redundant."""

VERSION = "memcore-gate-v2"

#: The relation scale, its rules and the edge types; the batched gate (``memcore.memory.prompts.batch``) uses the same text.
RELATIONS = """- "redundant": the new note says the SAME fact as the existing note, about the same event: a repetition or paraphrase. Merging them would lose nothing. strength 0.7 to 1.0.
- "complementary": the same person and subject, or the same event, and the new note adds a different fact: a detail, a follow-up, a change of plan, a confirmation or a contradiction. strength 0.5 to 0.69.
- "unrelated": different facts that only share a person, words or a kind of activity. strength 0.0 to 0.49.
Rules: a new fact about the same person is NOT redundant. The same kind of event on a different date (another trip, another class, another game) is NOT redundant. If unsure between two relations, choose the weaker one.
Also give "edge": "Supports" (one confirms or explains the other), "Conflicts" (they contradict each other, e.g. changed plans) or "Related_To" (anything else).
"""

SYSTEM = (
    "You maintain a long-term memory of a conversation. You compare a new memory note with existing notes and "
    "judge how they relate. Reply with a single JSON object and nothing else."
)

USER = (
    """New note:
{new_note}

Existing notes:
{candidates}

For every existing note, judge its relation to the new note (each note starts with the date it was said):
"""
    + RELATIONS
    + """
Format: {{"judgements": [{{"id": 1, "relation": "redundant|complementary|unrelated", "strength": 0.0, "edge": "Supports|Conflicts|Related_To"}}, ...]}} with one entry per existing note."""
)

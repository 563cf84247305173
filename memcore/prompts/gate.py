"""MemCoRe construction gate: judge a new note against its embedding-nearest candidates (JSON)."""

VERSION = "memcore-gate-v1"

SYSTEM = (
    "You maintain a long-term memory of a conversation. You compare a new memory note with existing notes and "
    "judge how they relate. Reply with a single JSON object and nothing else."
)

USER = """New note:
{new_note}

Existing notes:
{candidates}

For every existing note, judge its relation to the new note:
- "redundant": both state the same fact or event (the new note repeats it or adds only a small detail). strength 0.7 to 1.0.
- "complementary": same person and subject or the same event, and together they say more (one supports, contradicts or extends the other). strength 0.5 to 0.7.
- "unrelated": different facts that merely share words or people. strength 0.0 to 0.5.
Also give "edge": "Supports" (one confirms or explains the other), "Conflicts" (they contradict each other, e.g. changed plans) or "Related_To" (anything else).

Format: {{"judgements": [{{"id": 1, "relation": "redundant|complementary|unrelated", "strength": 0.0, "edge": "Supports|Conflicts|Related_To"}}, ...]}} with one entry per existing note."""

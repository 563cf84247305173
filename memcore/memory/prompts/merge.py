"""MemCoRe merge re-synthesis and strong-link neighbour update (JSON).

v2: both notes carry their session dates, and the rewrite keeps each fact's date."""

VERSION = "memcore-merge-v2"

SYSTEM = (
    "You maintain a long-term memory of a conversation. You rewrite memory notes so they stay short, factual and "
    "complete. Reply with a single JSON object and nothing else."
)

MERGE_USER = """Two memory notes state overlapping facts. Each starts with the date it was said in parentheses. Write ONE note that keeps every distinct fact of both: names, dates, numbers, places, objects, opinions and plans. Keep explicit dates as written and say on which date each fact was stated when the dates differ; do not invent anything. At most {max_words} words.

Note A:
{a}

Note B:
{b}

Format: {{"context": "..."}}"""

LINK_VERSION = "memcore-link-update-v2"

LINK_USER = """A memory note and a new, related note ({edge}). Each starts with the date it was said in parentheses. Rewrite the existing note so that it also mentions, in a short clause with its date, how the new note relates to it (for example a follow-up, a change of plan, or a confirmation). Keep every fact of the existing note; do not copy the whole new note. At most {max_words} words.

Existing note:
{old}

New related note:
{new}

Format: {{"context": "..."}}"""

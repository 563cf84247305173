"""MemCoRe semantic ingestion: one dialogue turn → denoised context + keywords (JSON).

v2: the context states an explicit date for every event, plan or change the turn tells of."""

VERSION = "memcore-ingest-v2"

SYSTEM = (
    "You write memory notes for a long-term conversational memory. You turn one dialogue turn into a short, "
    "self-contained factual note. Reply with a single JSON object and nothing else."
)

USER = """Session date: {session_date}
Earlier turns, for reference only:
{previous}

Turn to record ({dia_id}):
{speaker}: {text}

Write a JSON object with:
- "context": one or two plain sentences stating what this turn says, in the third person, naming the speaker ({speaker}). Resolve relative dates ("yesterday", "last week", "next month") against the session date into explicit dates, and when the turn tells of an event, a plan or a change, say when it happened with an explicit date (e.g. "on 7 May 2023"). Keep names, numbers, places, objects, events, opinions and plans; drop greetings, filler and emojis. If the turn holds no fact, restate it in a few words.
- "keywords": 2 to {max_keywords} keywords: named people, places, organisations, objects, activities and events from the turn, each a short noun phrase.

Format: {{"context": "...", "keywords": ["...", "..."]}}"""

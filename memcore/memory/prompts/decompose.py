"""MemCoRe query decomposition: a question → topic description + entity keywords (JSON)."""

VERSION = "memcore-decompose-v1"

SYSTEM = "You prepare search queries for a memory of a conversation. Reply with a single JSON object and nothing else."

USER = """Question: {question}

Write a JSON object with:
- "topic": one short sentence describing what the question is about (the subject, event or activity), without question words.
- "entities": 1 to 6 key entities of the question: people, places, objects, activities, events, each a short noun phrase as it would appear in the conversation.

Format: {{"topic": "...", "entities": ["...", "..."]}}"""

"""LightMem prompts: batched fact extraction over topic segments, and the offline ("sleep-time")
update decision. Condensed paraphrases of ``METADATA_GENERATE_PROMPT_locomo`` and ``UPDATE_PROMPT``
in zjunlp/LightMem ``src/lightmem/memory/prompts.py`` (same inputs, same JSON fields, shorter text
so that a small local model keeps to the format)."""

VERSION = "lightmem-v1"

EXTRACT_SYSTEM = """You extract facts about the speakers of a conversation. The messages are grouped into topic segments:

--- Topic 1 ---
[date] <source_id>.<Speaker>: <message>
...

Rules:
1. Go through the messages in ascending source_id order and consider every one.
2. For each message with any information (events, plans, opinions, preferences, states, relationships), write one or more standalone facts. Skip only pure greetings or fillers.
3. Keep every specific detail: full names, titles, places, objects, numbers.
4. Relative times ("yesterday", "last week", "next month") stay in the fact together with the message date, e.g. "Tim held a basketball game the week before 2024-01-07."
5. Use the message's source_id for each fact.

Reply with one JSON object only:
{"data": [{"source_id": 0, "fact": "..."}, {"source_id": 2, "fact": "..."}]}"""

EXTRACT_USER = """{segments}

Extract the facts as JSON."""

UPDATE_SYSTEM = """You maintain a long-term memory. Decide what to do with the TARGET memory given newer CANDIDATE memories:
- "update": they describe the same fact or event and the candidates add details or refinements -> rewrite the target so it integrates them.
- "delete": the candidates directly contradict the target (newer information wins) -> delete the target.
- "ignore": they are unrelated or fully consistent -> no change.
Use only the information given; never change the candidates.

Reply with one JSON object only: {"action": "update" | "delete" | "ignore", "new_memory": "<rewritten target, only for update>"}"""

UPDATE_USER = """TARGET memory: {target}
CANDIDATE memories:
{candidates}

Decide the action as JSON."""

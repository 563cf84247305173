"""MemCoRe batched construction (memcore-batched, for throughput): several turns per LLM call, LightMem-style.

``INGEST_USER``: one call turns a chunk of consecutive turns into one note each (context + keywords).
``GATE_USER``: one call judges every new note of the chunk against its embedding-nearest candidates, which
may be existing notes (``E<k>``) or earlier new notes of the same chunk (``N<j>``).

Gate v2: every note shows its session date(s), and the relation scale and its rules are the single-note gate's
(:data:`memcore.memory.prompts.gate.RELATIONS`: non-overlapping strength ranges; a new fact about the same person, or the
same kind of event on another date, is not redundant). v1 showed no dates and had overlapping ranges.
"""

from memcore.memory.prompts.gate import RELATIONS

INGEST_VERSION = "memcore-ingest-batch-v1"

INGEST_SYSTEM = (
    "You write memory notes for a long-term conversational memory. You turn each dialogue turn into a short, "
    "self-contained factual note. Reply with a single JSON object and nothing else."
)

INGEST_USER = """Earlier turns, for reference only:
{previous}

Turns to record, one note per turn (each line: [turn id] (session date) speaker: text):
{turns}

For EVERY turn above write one entry with:
- "id": the turn id without brackets, e.g. "{example_id}";
- "context": one or two plain sentences stating what the turn says, in the third person, naming the speaker. Resolve relative dates ("yesterday", "last week") against the turn's session date into explicit dates. Keep names, numbers, places, objects, events, opinions and plans; drop greetings, filler and emojis. If the turn holds no fact, restate it in a few words;
- "keywords": 2 to {max_keywords} keywords: named people, places, organisations, objects, activities and events from the turn, each a short noun phrase.

Format: {{"notes": [{{"id": "...", "context": "...", "keywords": ["...", "..."]}}, ...]}} with {n} entries, in order."""

GATE_VERSION = "memcore-gate-batch-v2"

GATE_SYSTEM = (
    "You maintain a long-term memory of a conversation. You compare new memory notes with candidate notes and "
    "judge how they relate. Reply with a single JSON object and nothing else."
)

GATE_USER = (
    """Existing notes (each starts with the date or dates it was said):
{existing}

New notes (each starts with the date it was said), each with the candidates to judge it against (E = existing note, N = an earlier new note):
{new_notes}

For every pair (new note, candidate) listed above, judge the relation of the new note to the candidate (the candidate is the "existing note" below):
"""
    + RELATIONS
    + """List only the redundant and complementary pairs; leave out unrelated pairs (an empty list is fine).

Format: {{"judgements": [{{"new": "N1", "candidate": "E3", "relation": "redundant|complementary", "strength": 0.0, "edge": "Supports|Conflicts|Related_To"}}, ...]}}"""
)

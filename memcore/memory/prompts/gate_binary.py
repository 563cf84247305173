"""MemCoRe construction gate, binary form: two yes/no questions per candidate instead of a label and a strength.

Small local models (Qwen2.5-Coder 0.5B/1.5B) answered the scale form (``gate.py``) with "redundant, 0.7" for
every pair (results/benchmarks/gate_agreement.md); this form asks what the decision needs, with the weaker
answer first and no number to copy. The relation follows from the answers (same fact → redundant; same
subject → complementary; else unrelated) and its strength is the middle of that relation's range."""

from memcore.memory.prompts.gate import SYSTEM

VERSION = "memcore-gate-binary-v1"

__all__ = ["SYSTEM", "USER", "VERSION"]

USER = """New note:
{new_note}

Existing notes:
{candidates}

Each note starts with the date it was said. For every existing note answer two questions about it and the new note:
- "same_subject": are both about the same person AND the same subject or event (not just the same person)? false or true.
- "same_fact": does the new note only repeat or paraphrase what the existing note already says, about the same event on the same date? false or true. A new detail, a later update, another day's event of the same kind, or a different fact about the same person is false.
Also give "edge": "Related_To" (anything else), "Supports" (one confirms or explains the other) or "Conflicts" (they contradict each other, e.g. changed plans).

Format: {{"judgements": [{{"id": 1, "same_subject": false, "same_fact": false, "edge": "Related_To"}}, ...]}} with one entry per existing note."""

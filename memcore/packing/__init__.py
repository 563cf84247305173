"""Packing evidence into a context-token budget, in three parts: :mod:`.budget` (the one fill rule every method's
evidence is cut by, and the ``ContextBudgeted`` protocol), :mod:`.turns` (the cues and the session frame shared by
every method that packs raw turns) and :mod:`.notes` (MemCoRe's packer: the raw turns of its ranked notes)."""

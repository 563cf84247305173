"""Pure summaries of a MemCoRe memory for ``stats.json``: the shape of its notes and how retrieval behaved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import numpy as np

from memcore.memory.notes import Note
from memcore.text import count_tokens


def note_shape(notes: Sequence[Note]) -> dict[str, Any]:
    """``notes``, ``turns``, ``turns_per_note`` (mean, max, histogram) and ``tokens`` (raw turns vs stored
    contexts) of a memory."""
    turns_per_note = np.array([len(n.raws) for n in notes], dtype=np.int64) if notes else np.zeros(0, dtype=np.int64)
    raw_tokens = sum(count_tokens(r.render()) for n in notes for r in n.raws)
    context_tokens = sum(count_tokens(n.context) for n in notes)
    return {
        "notes": len(notes),
        "turns": int(turns_per_note.sum()),
        "turns_per_note": {
            "mean": round(float(turns_per_note.mean()), 4) if len(notes) else 0.0,
            "max": int(turns_per_note.max()) if len(notes) else 0,
            "histogram": {str(k): int(v) for k, v in sorted(Counter(turns_per_note.tolist()).items())},
        },
        "tokens": {
            "raw": raw_tokens,
            "stored_context": context_tokens,
            "stored_context_over_raw": round(context_tokens / raw_tokens, 4) if raw_tokens else None,
        },
    }


def retrieval_summary(
    retrieves: int,
    rounds: dict[int, int],
    ier_stops: dict[str, int],
    near_dup: float | None,
    channel_counts: dict[str, int],
    fallbacks: dict[str, int],
) -> dict[str, Any]:
    """Retrieval counters: calls, IER rounds per question (histogram and mean) and stop reasons, the mean
    near-duplicate rate of the top K, notes found per channel and the fallbacks taken."""
    return {
        "retrieves": retrieves,
        "ier_rounds": rounds,
        "ier_rounds_mean": round(sum(r * c for r, c in rounds.items()) / retrieves, 4) if retrieves else None,
        "ier_stops": ier_stops,
        "near_dup_rate_top_k_mean": None if near_dup is None else round(near_dup, 4),
        "notes_by_channel": channel_counts,
        "fallbacks": fallbacks,
    }


def distribution(values: list[int]) -> dict[str, Any]:
    """``n``, ``min``, ``median``, ``mean`` and ``max`` of ``values`` (``{"n": 0}`` when empty)."""
    if not values:
        return {"n": 0}
    a = np.asarray(values)
    return {
        "n": len(a),
        "min": int(a.min()),
        "median": float(np.median(a)),
        "mean": round(float(a.mean()), 3),
        "max": int(a.max()),
    }

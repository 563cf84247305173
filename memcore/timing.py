"""Where a run's wall time goes: seconds per stage, summed over the threads that ran them, and the line that says so.

Stages: ``start-up`` (process start to the run's first step: imports), ``load`` (config checks and the slice),
``build`` (each conversation's memory: built or loaded), ``prefetch`` (the questions' query texts embedded in one
batch), ``retrieve``, ``answer``, ``score``, ``write`` (items, then metrics / stats / table). ``embed`` is the
time the embedding model spent encoding, inside build, prefetch and retrieve, so it is not added to the total.
Conversations and items run in parallel threads, so a stage's sum can exceed the wall time it took."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

STAGES = ("start-up", "load", "build", "prefetch", "retrieve", "answer", "score", "write")


class StageClock:
    """A thread-safe sum of seconds per stage."""

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, stage: str, seconds: float) -> None:
        """Add ``seconds`` (>= 0) to ``stage``."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
        with self._lock:
            self._seconds[stage] = self._seconds.get(stage, 0.0) + max(0.0, float(seconds))

    @contextmanager
    def stage(self, stage: str) -> Iterator[None]:
        """Time the block into ``stage`` (also when it raises)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.add(stage, time.perf_counter() - t0)

    def seconds(self) -> dict[str, float]:
        """Each stage that ran, in :data:`STAGES` order, rounded to milliseconds."""
        with self._lock:
            return {s: round(self._seconds[s], 3) for s in STAGES if s in self._seconds}


def process_age_s() -> float | None:
    """Seconds since this process started (Linux ``/proc``), or None where that cannot be read."""
    try:
        with open("/proc/self/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime") as fh:
            uptime = float(fh.read().split()[0])
        return max(0.0, uptime - int(fields[19]) / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def timing_block(
    stages: Mapping[str, float], total_s: float, embeddings: Mapping[str, float] | None = None
) -> dict[str, object]:
    """``stats.json``'s ``timing``: the wall time (``total_s`` of the run plus its start-up), the stages, and the
    embedding model's share with its text counts."""
    emb = dict(embeddings or {})
    return {
        "wall_s": round(total_s + float(stages.get("start-up", 0.0)), 3),
        "stages_s": dict(stages),
        "embed_s": round(float(emb.get("seconds", 0.0)), 3),
        "embed_load_s": round(float(emb.get("load_seconds", 0.0)), 3),
        "texts_computed": int(emb.get("computed", 0)),
        "texts_from_cache": int(emb.get("from_cache", 0)),
        "note": (
            "stages summed over threads and worker processes; embed_s is inside build, prefetch and retrieve, and"
            " embed_load_s (loading the embedding model) is inside embed_s"
        ),
    }


def timing_line(block: Mapping[str, object]) -> str:
    """One line: ``time 12.3 s: start-up 0.4, load 0.2, build 3.1, ... (embed 2.0 inside them: 663 computed /
    193 cached texts)``."""
    stages = block.get("stages_s") or {}
    assert isinstance(stages, Mapping)
    parts = ", ".join(f"{s} {float(v):.1f}" for s, v in stages.items())
    load = float(block.get("embed_load_s") or 0.0)  # type: ignore[arg-type]
    loading = f", {load:.1f} of it loading the model" if load >= 0.05 else ""
    return (
        f"time {float(block['wall_s']):.1f} s: {parts or 'no stage ran'} (embed {float(block['embed_s']):.1f} inside"
        f" them{loading}: {block['texts_computed']} computed / {block['texts_from_cache']} cached texts)"
    )

"""LightMem's sensory buffer and short-term memory: compressed turns wait in the sensory buffer until it would
overflow ``sensory_buffer_tokens``; topic boundaries (``segment.py``) then cut it into segments (the tail after
the last boundary stays buffered), and segments collect in short-term memory until a batch would overflow
``stm_buffer_tokens`` (or the preset's), when the whole batch goes to fact extraction."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from baselines.lightmem.config import LightMemConfig
from baselines.lightmem.segment import adjacent_similarities, propose_boundaries
from memcore.interfaces import Embedder
from memcore.types import Turn

Batch = list[list["BufferedTurn"]]


@dataclass
class BufferedTurn:
    """A turn in the sensory / short-term buffers, with its compressed text (embedded when first cut)."""

    turn: Turn
    order: int
    compressed: str
    tokens: int
    vector: np.ndarray | None = None


@dataclass
class TopicBuffers:
    """One LightMem's buffers. ``extract(batch)`` receives every full short-term batch (segments of turns);
    ``embedder`` is a provider, called only when the sensory buffer is cut. Counts ``segments``."""

    cfg: LightMemConfig
    embedder: Callable[[], Embedder]
    extract: Callable[[Batch], None]
    counters: dict[str, int]
    _sensory: list[BufferedTurn] = field(default_factory=list, init=False)
    _stm: Batch = field(default_factory=list, init=False)
    _stm_tokens: int = field(default=0, init=False)

    @property
    def empty(self) -> bool:
        """True when no turn waits in either buffer."""
        return not self._sensory and not self._stm

    def push(self, item: BufferedTurn) -> None:
        """Buffer one turn, first cutting the sensory buffer at topic boundaries while it would overflow."""
        while self._sensory and self._sensory_tokens() + item.tokens > self.cfg.sensory_buffer_tokens:
            segments = self._cut(force=False)
            if not segments:
                break
            self._add_segments(segments, force=False)
        self._sensory.append(item)

    def flush(self) -> None:
        """Cut the whole sensory buffer and extract everything still in short-term memory."""
        if self._sensory:
            self._add_segments(self._cut(force=True), force=True)
        elif self._stm:
            self._add_segments([], force=True)

    def _sensory_tokens(self) -> int:
        return sum(b.tokens for b in self._sensory)

    def _cut(self, *, force: bool) -> Batch:
        """Split the sensory buffer at topic boundaries; the tail after the last boundary stays
        buffered unless ``force``."""
        buf = self._sensory
        missing = [b for b in buf if b.vector is None]
        if missing:
            vecs = self.embedder().encode([b.compressed for b in missing])
            for b, v in zip(missing, vecs):
                b.vector = np.asarray(v, dtype=np.float32)
        sims = adjacent_similarities(np.stack([b.vector for b in buf])) if len(buf) > 1 else np.zeros(0)  # type: ignore[misc]
        cfg = self.cfg
        bounds = propose_boundaries(
            sims,
            start=cfg.sim_threshold_start,
            maximum=cfg.sim_threshold_max,
            step=cfg.sim_threshold_step,
            tolerance=cfg.boundary_tolerance,
        )
        if not bounds:
            segments, rest = [list(buf)], []
        else:
            edges = [0, *bounds]
            segments = [buf[a:b] for a, b in itertools.pairwise(edges)]
            rest = buf[bounds[-1] :]
            if force:
                segments.append(rest)
                rest = []
        self._sensory = list(rest)
        self.counters["segments"] += len(segments)
        return segments

    def _add_segments(self, segments: Batch, *, force: bool) -> None:
        """Short-term memory: batch segments up to ``stm_buffer_tokens``, one extraction per batch."""
        for seg in segments:
            tokens = sum(b.tokens for b in seg)
            if self._stm and self._stm_tokens + tokens > self.cfg.stm_tokens:
                self.extract(self._stm)
                self._stm, self._stm_tokens = [], 0
            self._stm.append(seg)
            self._stm_tokens += tokens
        if force and self._stm:
            self.extract(self._stm)
            self._stm, self._stm_tokens = [], 0

"""LightMem's offline ("sleep-time") update: each entry's update queue holds its most similar earlier entries
("earlier" as upstream: a stamp no later than the entry's own, stamps restarting at the session's time in every
``add_memory`` call, so within a session it is the position in the extraction call, not the turn order);
an entry that appears in newer entries' queues with similarity ≥ ``update_threshold`` gets one LLM call that
updates it (integrating the newer ones), deletes it (contradicted) or keeps it. All decisions are made on the
pre-update memory (LightMem reads every entry once, then updates in parallel) and applied afterwards. An updated
entry is credited with the turns, among its own and the newer entries' source turns, whose content the new text
keeps (:func:`baselines.attribution.kept_turns`); its segment turns are the union of all of theirs."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from baselines.attribution import kept_turns
from baselines.lightmem import prompt_update as P
from baselines.lightmem.config import LightMemConfig
from baselines.lightmem.extraction import LightMemEntry
from memcore.interfaces import ChatBackbone, Embedder
from memcore.llm.json_reply import complete_json


@dataclass(frozen=True)
class UpdateDecision:
    action: str  # update | delete | ignore
    new_memory: str = ""


IGNORE = UpdateDecision("ignore")


def parse_update(obj: Any) -> UpdateDecision:
    """Validator for the offline-update reply ``{"action", "new_memory"}``."""
    if not isinstance(obj, dict):
        raise ValueError("reply must be an object")
    action = str(obj.get("action", "")).strip().lower()
    if action not in ("update", "delete", "ignore"):
        raise ValueError(f"unknown action {action!r}")
    if action != "update":
        return UpdateDecision(action)
    new = obj.get("new_memory")
    if isinstance(new, dict):  # upstream's prompt writes new_memory as { ... }; accept {"memory": "..."}
        new = new.get("memory") or new.get("text") or new.get("content")
    if not isinstance(new, str) or not new.strip():
        raise ValueError("update needs a non-empty new_memory string")
    return UpdateDecision("update", new.strip())


def stamp_seconds(stamp: str | None) -> float:
    """An entry's stamp as seconds (upstream's ``float_time_stamp``); NaN when it has none."""
    if stamp is None:
        return float("nan")
    return (datetime.fromisoformat(stamp) - datetime.min).total_seconds()


def update_queues(vectors: np.ndarray, stamps: np.ndarray, *, top_k: int, keep: int) -> list[list[tuple[int, float]]]:
    """For each entry j: its ``keep`` most similar entries i ≠ j with stamp_i ≤ stamp_j, chosen among the
    ``top_k`` nearest (LightMem's construct_update_queue_all_entries, whose ``float_time_stamp`` filter this is);
    rows of ``vectors`` are entries. An entry without a stamp (NaN) has an empty queue and is in none."""
    sims = vectors @ vectors.T
    queues: list[list[tuple[int, float]]] = []
    for j in range(len(stamps)):
        allowed = np.flatnonzero(stamps <= stamps[j])
        ranked = sorted(allowed.tolist(), key=lambda i: (-float(sims[j, i]), i))[:top_k]
        queues.append([(i, float(sims[j, i])) for i in ranked if i != j][:keep])
    return queues


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*a, *b)))


@dataclass(frozen=True)
class OfflineUpdater:
    """One LightMem's sleep-time update; counts ``update_calls``, ``update_fallbacks``, ``updated``,
    ``updates_unattributed`` (updated entries whose new text keeps no candidate turn's content: credited to
    none) and ``deleted``. ``backbone`` / ``embedder`` are providers, called only when an update needs them."""

    cfg: LightMemConfig
    backbone: Callable[[], ChatBackbone]
    embedder: Callable[[], Embedder]
    counters: dict[str, int]
    seed: int = 0

    def queues(self, entries: list[LightMemEntry], vectors: np.ndarray) -> list[list[tuple[int, float]]]:
        """The update queue of every entry (see :func:`update_queues`)."""
        stamps = np.array([stamp_seconds(e.stamp) for e in entries], dtype=np.float64)
        return update_queues(vectors, stamps, top_k=self.cfg.queue_top_k, keep=self.cfg.queue_keep)

    def run(
        self,
        entries: list[LightMemEntry],
        vectors: np.ndarray,
        turn_text: Mapping[str, str],
        speakers: Sequence[str] = (),
    ) -> tuple[list[LightMemEntry], np.ndarray]:
        """The memory after the update: updated entries changed in place (and re-embedded in ``vectors``, in
        place), deleted ones left out of the returned entries and vectors. ``turn_text`` maps every ingested
        dia_id to its rendered turn, which an update's new text is attributed against; ``speakers``' names are
        left out of that comparison."""
        sources: dict[int, list[int]] = {}
        for j, queue in enumerate(self.queues(entries, vectors)):
            for i, score in queue:
                if score >= self.cfg.update_threshold:
                    sources.setdefault(i, []).append(j)
        decisions = {target: self._decide(entries, target, sources[target]) for target in sorted(sources)}
        # The texts the update call saw came from these turns, so attribute against them, not against turns an
        # earlier update in this loop already reassigned.
        seen_sources = [e.source_dia_ids for e in entries]
        changed: list[int] = []
        for target, dec in decisions.items():
            if dec.action != "update":
                continue
            e = entries[target]
            e.text = dec.new_memory
            candidates: tuple[str, ...] = seen_sources[target]
            for c in sources[target]:
                candidates = _union(candidates, seen_sources[c])
                e.segment_dia_ids = _union(e.segment_dia_ids, entries[c].segment_dia_ids)
            e.source_dia_ids = tuple(kept_turns(e.text, [(d, turn_text[d]) for d in candidates], speakers))
            self.counters["updates_unattributed"] += int(not e.source_dia_ids)
            changed.append(target)
        if changed:
            vectors[changed] = np.asarray(self.embedder().encode([entries[i].text for i in changed]), dtype=np.float32)
        deleted = {t for t, dec in decisions.items() if dec.action == "delete"}
        keep = [i for i in range(len(entries)) if i not in deleted]
        kept = [entries[i] for i in keep]
        kept_vectors = vectors[keep] if keep else np.zeros((0, vectors.shape[1]), dtype=np.float32)
        self.counters["updated"] += len(changed)
        self.counters["deleted"] += len(deleted)
        return kept, kept_vectors

    def _decide(self, entries: list[LightMemEntry], target: int, cands: list[int]) -> UpdateDecision:
        """One LLM call: what to do with entry ``target`` given the newer entries ``cands`` (IGNORE on failure)."""
        messages = [
            {"role": "system", "content": P.UPDATE_PROMPT},
            {
                "role": "user",
                "content": P.USER_TEMPLATE.format(
                    target=entries[target].text,
                    candidates="\n".join(P.CANDIDATE_LINE.format(memory=entries[c].text) for c in cands),
                ),
            },
        ]
        self.counters["update_calls"] += 1
        res = complete_json(
            self.backbone(),
            messages,
            stage="ingest",
            validate=parse_update,
            fallback=IGNORE,
            fallback_kind="lightmem offline update → entry kept unchanged",
            prompt_version=P.VERSION,
            temperature=self.cfg.temperature,
            top_p=self.cfg.top_p,
            seed=self.seed if self.cfg.temperature > 0 else None,
            max_tokens=self.cfg.update_max_tokens,
        )
        if not res.ok:
            self.counters["update_fallbacks"] += 1
        return res.value

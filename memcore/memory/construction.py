"""Gated construction: embedding pre-screen → judge (LLM, or cosine in cheap mode) → Merge / Link / Append.

The judge sees every note with its session date(s), so the same kind of event on another day is not taken
for a repeat. Its relation label and strength must agree: the ranges do not overlap (redundant ≥ τ_m,
complementary [τ_l, τ_m), unrelated < τ_l) and when they disagree **the label decides** — the strength is
moved to the nearest end of the label's range (``resolve_label``) and the disagreement is counted; a reply
without a known label is judged by its strength alone.

For the best candidate with s ≥ τ_m (and pre-screen cosine ≥ ``merge_min_cosine``; on tied strengths the
nearest by pre-screen cosine, then the oldest) the new note is merged into it (raws kept, context re-synthesised with each turn's date, re-embedded, keywords and dia_ids unioned); every
other candidate with s ≥ τ_l gets a weighted typed edge (Supports | Conflicts | Related_To) to the note that
now holds the new turn; the strongest link with s ≥ strong_link updates that neighbour's context (LLM mode
only; the rewrite sees only the new turn, and the neighbour records that one turn's dia_id in
``linked_sources``, never the other turns of a note it was merged into). Otherwise the note is appended.

Switches: ``update`` off → plain Append (no gate at all); ``merge`` off → a redundant candidate no longer
merges (the note is appended; link-range candidates still link); ``link`` off → no edges and no neighbour
update; ``denoise`` off → contexts stay raw (merges concatenate raws; no neighbour rewrite, since c = r).
A candidate that already holds ``merge_max_turns`` turns is linked instead of merged, so notes stay small;
such an edge joins near-duplicates and is marked ``merge_cap`` (neighbour expansion ignores it). The other
redundant candidates beside the merge target are near-duplicates too: their edges are marked ``duplicate``,
which neighbour expansion and the neighbour update ignore as well.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from memcore.interfaces import ChatBackbone, Embedder
from memcore.llm.json_reply import complete_json
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.ingestion import IngestResult
from memcore.memory.keywords import KeywordIndex, normalise_keywords
from memcore.memory.notes import EDGE_TYPES, Note, NoteStore, RawTurn
from memcore.memory.prompts import gate as GATE_PROMPT
from memcore.memory.prompts import gate_binary as GATE_BINARY_PROMPT
from memcore.memory.prompts import merge as MERGE_PROMPT

RELATIONS = ("redundant", "complementary", "unrelated")
MERGED_CONTEXT_MAX_WORDS = 80


@dataclass(frozen=True)
class Judgement:
    nid: int
    strength: float
    relation: str
    edge: str
    cosine: float
    disagreed: bool = False  # the reply's strength lay outside its label's range (see ``resolve_label``)


def parse_relation(text: Any) -> str | None:
    """A reply's relation label, or None when it names none of ``RELATIONS``."""
    rel = str(text if text is not None else "").strip().lower()
    return rel if rel in RELATIONS else None


def resolve_label(
    strength: float | None, relation: str | None, tau_merge: float, tau_link: float
) -> tuple[float, str, bool]:
    """Make label and strength agree: (strength, relation, disagreed).

    The label decides: a strength outside the label's range moves to the nearest end of it (redundant
    [τ_m, 1], complementary [τ_l, τ_m), unrelated [0, τ_l)). No label → the label follows the strength. No
    strength (the binary gate form) → the middle of the label's range."""
    if strength is None:
        mid = {"redundant": (tau_merge + 1.0) / 2, "complementary": (tau_link + tau_merge) / 2}
        return mid.get(relation or "", tau_link / 2), relation or "unrelated", False
    s = min(1.0, max(0.0, float(strength)))
    by_strength = "redundant" if s >= tau_merge else "complementary" if s >= tau_link else "unrelated"
    if relation is None or relation == by_strength:
        return s, by_strength, False
    below = np.nextafter(tau_merge, 0.0) if relation == "complementary" else np.nextafter(tau_link, 0.0)
    if relation == "redundant":
        return max(s, tau_merge), relation, True
    if relation == "complementary":
        return float(min(max(s, tau_link), below)), relation, True
    return float(min(s, below)), relation, True


@dataclass
class Decision:
    action: str  # merge | link | append
    target: int | None
    links: list[Judgement]
    capped: set[int] = field(default_factory=set)  # link targets that were merge candidates but full (merge_cap)
    duplicates: set[int] = field(default_factory=set)  # redundant candidates beside the merge target (duplicate)


@dataclass
class ConstructionCounters:
    turns: int = 0
    merges: int = 0
    links: int = 0  # edges added
    appends: int = 0  # notes created without any edge
    linked_appends: int = 0  # notes created with at least one edge
    neighbour_updates: int = 0
    merge_cap_redirects: int = 0
    merge_cosine_redirects: int = 0  # "redundant" verdicts linked instead: pre-screen cosine < merge_min_cosine
    label_strength_disagreements: int = 0  # judgements whose strength lay outside their label's range
    llm_calls: int = 0  # including format retries
    edge_types: Counter[str] = field(default_factory=Counter)
    relations: Counter[str] = field(default_factory=Counter)
    fallbacks: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {
            "turns": self.turns,
            "merges": self.merges,
            "links": self.links,
            "appends": self.appends,
            "linked_appends": self.linked_appends,
            "neighbour_updates": self.neighbour_updates,
            "merge_cap_redirects": self.merge_cap_redirects,
            "merge_cosine_redirects": self.merge_cosine_redirects,
            "label_strength_disagreements": self.label_strength_disagreements,
            "llm_calls": self.llm_calls,
            "edge_types": dict(sorted(self.edge_types.items())),
            "relations": dict(sorted(self.relations.items())),
            "fallbacks": dict(sorted(self.fallbacks.items())),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> ConstructionCounters:
        return cls(
            turns=d["turns"],
            merges=d["merges"],
            links=d["links"],
            appends=d["appends"],
            linked_appends=d["linked_appends"],
            neighbour_updates=d["neighbour_updates"],
            merge_cap_redirects=d.get("merge_cap_redirects", 0),
            merge_cosine_redirects=d.get("merge_cosine_redirects", 0),
            label_strength_disagreements=d.get("label_strength_disagreements", 0),
            llm_calls=d.get("llm_calls", 0),
            edge_types=Counter(d["edge_types"]),
            relations=Counter(d["relations"]),
            fallbacks=Counter(d["fallbacks"]),
        )


def _flag(value: Any) -> bool | None:
    """A reply's yes/no answer (JSON boolean, or the strings true/false/yes/no), None when it is neither."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in ("true", "yes") else False if text in ("false", "no") else None


def binary_relation(same_subject: Any, same_fact: Any) -> str | None:
    """The binary gate form's answers → relation: same fact → redundant, same subject → complementary."""
    fact, subject = _flag(same_fact), _flag(same_subject)
    if fact is None and subject is None:
        return None
    return "redundant" if fact else "complementary" if subject else "unrelated"


def _validate_gate(n: int) -> Callable[[Any], list[tuple[float | None, str | None, str]]]:
    """Gate reply → per candidate (strength, relation, edge). Accepts the scale form (relation + strength)
    and the binary form (same_subject + same_fact: strength None, filled in by ``resolve_label``)."""

    def validate(obj: Any) -> list[tuple[float | None, str | None, str]]:
        if not isinstance(obj, dict) or not isinstance(obj.get("judgements"), list):
            raise ValueError("gate reply has no 'judgements' list")
        out: list[tuple[float | None, str | None, str]] = [(0.0, "unrelated", "Related_To")] * n
        got = 0
        for item in obj["judgements"]:
            if not isinstance(item, dict):
                continue
            edge = str(item.get("edge", "Related_To")).strip()
            edge = next((e for e in EDGE_TYPES if e.lower() == edge.lower().replace(" ", "_")), "Related_To")
            try:
                i = int(item["id"]) - 1
            except (KeyError, TypeError, ValueError):
                continue
            if not 0 <= i < n:
                continue
            binary = binary_relation(item.get("same_subject"), item.get("same_fact"))
            if binary is not None:
                out[i] = (None, binary, edge)
                got += 1
                continue
            try:
                s = float(item["strength"])
            except (KeyError, TypeError, ValueError):
                continue
            if not np.isfinite(s):
                continue
            out[i] = (min(1.0, max(0.0, s)), parse_relation(item.get("relation")), edge)
            got += 1
        if got == 0:
            raise ValueError("gate reply judged none of the candidates")
        return out

    return validate


def _validate_context(obj: Any) -> str:
    if not isinstance(obj, dict) or not isinstance(obj.get("context"), str) or not obj["context"].strip():
        raise ValueError("reply has no 'context' string")
    return obj["context"].strip()


class Constructor:
    """Applies the gate to each ingested note. ``backbone`` is None in cheap mode (cosine judge)."""

    def __init__(
        self,
        *,
        store: NoteStore,
        keywords: KeywordIndex,
        embedder: Embedder,
        backbone: ChatBackbone | None,
        cfg: MemCoReConfig,
        switches: Switches,
        seed: int,
        counters: ConstructionCounters | None = None,
    ) -> None:
        self.store = store
        self.kindex = keywords
        self.embedder = embedder
        self.backbone = backbone
        self.cfg = cfg
        self.sw = switches
        self.seed = seed
        self.counters = counters if counters is not None else ConstructionCounters()

    # ------------------------------------------------------------------ judge
    def candidates(self, vec: np.ndarray) -> list[tuple[int, float]]:
        """Embedding pre-screen: the ``cfg.candidates`` nearest notes with their cosine."""
        scores, rows = self.store.vectors.search(vec[None, :], self.cfg.candidates)
        return [(int(r), float(s)) for r, s in zip(rows[0], scores[0], strict=True)]

    def judge(self, context: str, cands: list[tuple[int, float]], *, date: str = "") -> list[Judgement]:
        """Relation, strength s ∈ [0,1] and edge type per candidate (label and strength made to agree by
        ``resolve_label``); ``date`` is the new turn's session date. Cheap mode: s = cosine."""
        if self.backbone is None:
            out = []
            for nid, cos in cands:
                s = min(1.0, max(0.0, cos))
                rel = (
                    "redundant"
                    if s >= self.cfg.tau_merge
                    else "complementary"
                    if s >= self.cfg.tau_link
                    else "unrelated"
                )
                out.append(Judgement(nid, s, rel, "Related_To", cos))
            return out
        listing = "\n".join(
            f"[{i}] {self.store.notes[nid].dated_context()}" for i, (nid, _) in enumerate(cands, start=1)
        )
        new_note = f"({date}) {context}" if date else context
        prompt = GATE_BINARY_PROMPT if self.cfg.gate_form == "binary" else GATE_PROMPT
        res = complete_json(
            self.backbone,
            [
                {"role": "system", "content": prompt.SYSTEM},
                {"role": "user", "content": prompt.USER.format(new_note=new_note, candidates=listing)},
            ],
            stage="ingest",
            validate=_validate_gate(len(cands)),
            fallback=[(0.0, "unrelated", "Related_To")] * len(cands),
            fallback_kind="gate:append",
            prompt_version=prompt.VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        self.counters.llm_calls += res.attempts
        if not res.ok:
            self.counters.fallbacks["gate:append"] += 1
        return [
            self.judgement(nid, cos, s, rel, edge) for (nid, cos), (s, rel, edge) in zip(cands, res.value, strict=True)
        ]

    def judgement(self, nid: int, cosine: float, strength: float | None, relation: str | None, edge: str) -> Judgement:
        """One LLM verdict with its label and strength made to agree (``resolve_label``)."""
        s, rel, disagreed = resolve_label(strength, relation, self.cfg.tau_merge, self.cfg.tau_link)
        return Judgement(nid, s, rel, edge, cosine, disagreed)

    def decide(self, judgements: list[Judgement]) -> Decision:
        """Pure decision rule over the judgements (see module docstring)."""
        if not self.sw.update or not judgements:
            return Decision("append", None, [])
        target: Judgement | None = None
        links: list[Judgement] = []
        capped: set[int] = set()
        duplicates: set[int] = set()
        # strongest first; on tied strengths the nearest candidate (pre-screen cosine), then the oldest
        for j in sorted(judgements, key=lambda j: (-j.strength, -j.cosine, j.nid)):
            if j.strength >= self.cfg.tau_merge:
                if not self.sw.merge:
                    continue  # redundant, but Merge is ablated: appended instead, without an edge
                if target is None and self.cfg.merge_min_cosine > 0 and j.cosine < self.cfg.merge_min_cosine:
                    self.counters.merge_cosine_redirects += 1
                    links.append(j)
                    continue
                if target is None and len(self.store.notes[j.nid].raws) < self.cfg.merge_max_turns:
                    target = j
                    continue
                if target is None:
                    self.counters.merge_cap_redirects += 1
                    capped.add(j.nid)
                else:
                    duplicates.add(j.nid)  # another near-duplicate of the turn the target now holds
                links.append(j)
            elif j.strength >= self.cfg.tau_link:
                links.append(j)
        if not self.sw.link:
            links, capped, duplicates = [], set(), set()
        if target is not None:
            return Decision("merge", target.nid, links, capped, duplicates)
        return Decision("link" if links else "append", None, links, capped, duplicates)

    # ------------------------------------------------------------------ apply
    def add(self, turn_raw: RawTurn, ing: IngestResult, vec: np.ndarray | None = None) -> Note:
        """Run the gate for one ingested turn and apply its decision; returns the note now holding it.
        ``vec`` is the embedding of ``ing.context`` when the caller already computed it (batched)."""
        self.counters.turns += 1
        self.counters.llm_calls += ing.llm_calls
        if ing.fallback:
            self.counters.fallbacks[ing.fallback] += 1
        if vec is None:
            vec = self.embedder.encode([ing.context])[0]
        judgements: list[Judgement] = []
        if self.sw.update and len(self.store):
            judgements = self.judge(ing.context, self.candidates(vec), date=turn_raw.time)
            for j in judgements:
                self.counters.relations[j.relation] += 1
                self.counters.label_strength_disagreements += int(j.disagreed)
        decision = self.decide(judgements)
        if decision.action == "merge":
            assert decision.target is not None
            note = self._merge(self.store.notes[decision.target], turn_raw, ing)
            self.counters.merges += 1
        else:
            note = self.store.add([turn_raw], ing.context, ing.keywords, vec, denoised=ing.denoised)
            self.kindex.set_note(note.nid, note.keywords)
            if decision.links:
                self.counters.linked_appends += 1
            else:
                self.counters.appends += 1
        near_duplicates = decision.capped | decision.duplicates
        for j in decision.links:
            origin = (
                "merge_cap" if j.nid in decision.capped else "duplicate" if j.nid in decision.duplicates else "gate"
            )
            if j.nid != note.nid and self.store.add_edge(note.nid, j.nid, j.strength, j.edge, origin):
                self.counters.links += 1
                self.counters.edge_types[j.edge] += 1
        strong = [
            j
            for j in decision.links
            if j.strength >= self.cfg.strong_link and j.nid != note.nid and j.nid not in near_duplicates
        ]
        if strong and self.backbone is not None and self.sw.denoise:
            best = max(strong, key=lambda j: (j.strength, j.cosine, -j.nid))
            self._update_neighbour(self.store.notes[best.nid], turn_raw, ing.context, best.edge)
        return note

    def _merge(self, target: Note, turn_raw: RawTurn, ing: IngestResult) -> Note:
        a_dated = target.dated_context()
        target.raws.append(turn_raw)
        target.keywords = normalise_keywords([*target.keywords, *ing.keywords])
        if self.backbone is not None and self.sw.denoise and target.denoised and ing.denoised:
            user = MERGE_PROMPT.MERGE_USER.format(
                a=a_dated, b=f"({turn_raw.time}) {ing.context}", max_words=MERGED_CONTEXT_MAX_WORDS
            )
            concatenated = f"{target.context} {ing.context}"
            res = complete_json(
                self.backbone,
                [{"role": "system", "content": MERGE_PROMPT.SYSTEM}, {"role": "user", "content": user}],
                stage="ingest",
                validate=_validate_context,
                fallback=concatenated,
                fallback_kind="merge:concatenated_contexts",
                prompt_version=MERGE_PROMPT.VERSION,
                temperature=self.cfg.temperature,
                max_tokens=self.cfg.max_tokens,
                seed=self.seed,
            )
            self.counters.llm_calls += res.attempts
            if not res.ok:
                self.counters.fallbacks["merge:concatenated_contexts"] += 1
            target.context = res.value
        else:
            # No LLM (cheap mode), or c = r (wo_denoise / a raw fallback context): concatenate.
            target.context = f"{target.context}\n{ing.context}"
            target.denoised = False
        self.store.set_vector(target.nid, self.embedder.encode([target.context])[0])
        self.kindex.set_note(target.nid, target.keywords)
        return target

    def _update_neighbour(self, neighbour: Note, turn_raw: RawTurn, context: str, edge: str) -> None:
        """Rewrite ``neighbour``'s context with the new turn's facts. The rewrite sees only that turn (its
        dated context ``context``), not the note now holding it (after a merge that note carries up to
        ``merge_max_turns`` turns), and credits only that turn's dia_id in ``linked_sources``."""
        assert self.backbone is not None
        if not neighbour.denoised:
            return
        user = MERGE_PROMPT.LINK_USER.format(
            old=neighbour.dated_context(),
            new=f"({turn_raw.time}) {context}",
            edge=edge,
            max_words=MERGED_CONTEXT_MAX_WORDS,
        )
        res = complete_json(
            self.backbone,
            [{"role": "system", "content": MERGE_PROMPT.SYSTEM}, {"role": "user", "content": user}],
            stage="ingest",
            validate=_validate_context,
            fallback=neighbour.context,
            fallback_kind="link_update:unchanged",
            prompt_version=MERGE_PROMPT.LINK_VERSION,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            seed=self.seed,
        )
        self.counters.llm_calls += res.attempts
        if not res.ok:
            self.counters.fallbacks["link_update:unchanged"] += 1
            return
        neighbour.context = res.value
        neighbour.updates += 1
        neighbour.linked_sources = list(dict.fromkeys([*neighbour.linked_sources, turn_raw.dia_id]))
        self.counters.neighbour_updates += 1
        self.store.set_vector(neighbour.nid, self.embedder.encode([neighbour.context])[0])

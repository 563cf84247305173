"""What MemGPT hands the answerer: its main context (core memory, summary, recent FIFO turns) plus the
question's search hits as evidence notes and context sections, and the cap to ``eval.note_cap`` notes."""

from __future__ import annotations

from baselines.memgpt.functions import Hit
from baselines.memgpt.paging import FifoMessage
from baselines.memgpt.stores import CoreMemory
from memcore.types import Evidence, EvidenceNote


def context_evidence(core: CoreMemory, summary: str, fifo: list[FifoMessage], hits: list[Hit]) -> Evidence:
    """Core-memory lines, the summary, the FIFO's turns, then the hits not already in context (a hit that
    re-finds a FIFO turn adds its channel to that note instead)."""
    notes: list[EvidenceNote] = []
    index: dict[str, EvidenceNote] = {}
    core_lines = []
    for name, lines in core.blocks.items():
        for i, line in enumerate(lines):
            note = EvidenceNote(f"core:{name}:{i}", f"{name}: {line.text}", line.dia_ids, 1.0, ("core",))
            notes.append(note)
            core_lines.append(note.text)
    if summary:
        # The recursive summary compresses every evicted turn; crediting them all would make
        # recall meaningless, so it carries no dia_ids (stats() reports its coverage).
        notes.append(EvidenceNote("summary", summary, (), 1.0, ("summary",)))
    recent = []
    for m in fifo:
        if m.kind == "turn" and m.dia_id:
            note = EvidenceNote(f"recall:{m.dia_id}", m.content, (m.dia_id,), 1.0, ("fifo",), m.timestamp)
            index[note.note_id] = note
            notes.append(note)
            recent.append(m.content)
    found = []
    for h in hits:
        if h.note_id in index:  # a search re-found a message that is in context anyway
            index[h.note_id].channels = (*index[h.note_id].channels, h.channel)
            continue
        note = EvidenceNote(h.note_id, h.text, h.dia_ids, h.score, (h.channel,), h.timestamp)
        index[h.note_id] = note
        notes.append(note)
        found.append(f"[{h.timestamp}] {h.text}")
    sections = [
        ("Core memory", core_lines),
        ("Summary of earlier conversation", [summary] if summary else []),
    ]
    sections += [("Recent messages", recent), ("Memory search results", found)]
    context = "\n\n".join(f"{title}:\n" + "\n".join(body) for title, body in sections if body)
    return Evidence(notes=notes, context=context)


def cap_evidence(evidence: Evidence, budget: int) -> Evidence:
    """At most ``budget`` notes in all (``eval.note_cap``): search hits first (the question's own retrieval, in
    rank order), then the most recent FIFO turns, then core-memory lines, then the summary; the context keeps
    MemGPT's sections with only the kept notes."""
    by_channel: dict[str, list[EvidenceNote]] = {"hit": [], "fifo": [], "core": [], "summary": []}
    for n in evidence.notes:
        first = n.channels[0] if n.channels else ""
        kind = first if first in ("fifo", "core", "summary") else "hit"
        by_channel[kind].append(n)
    order = [*by_channel["hit"], *reversed(by_channel["fifo"]), *by_channel["core"], *by_channel["summary"]]
    keep = {id(n) for n in order[:budget]}
    notes = [n for n in evidence.notes if id(n) in keep]

    def body(kind: str) -> list[str]:
        return [n.text if kind != "hit" else f"[{n.timestamp}] {n.text}" for n in by_channel[kind] if id(n) in keep]

    core = [n.text for n in by_channel["core"] if id(n) in keep]
    sections = [
        ("Core memory", core),
        ("Summary of earlier conversation", body("summary")),
        ("Recent messages", body("fifo")),
        ("Memory search results", body("hit")),
    ]
    context = "\n\n".join(f"{title}:\n" + "\n".join(lines) for title, lines in sections if lines)
    return Evidence(notes=notes, context=context)

"""FluxMem's construction: the semantic layer's units are upstream's 512-character chunks of each session's
text (``unit: chunk``, made when the session is complete), or each turn's atomic facts (``unit: fact``), or the
turn itself (``unit: turn``); at ``finalize`` the semantic layer is embedded in one batch and linked by
association edges."""

from __future__ import annotations

from baselines.fluxmem import prompts as P
from baselines.fluxmem.calls import FluxCalls, validate_facts
from baselines.fluxmem.chunking import session_chunks
from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.graph import ASSOCIATION, FluxGraph, SemanticNode
from memcore.types import Turn


def add_session_chunks(graph: FluxGraph, cfg: FluxMemConfig, turns: list[Turn]) -> None:
    """One semantic node per chunk of the session's text (``unit: chunk``); no LLM call."""
    if not turns:
        return
    speakers = ", ".join(dict.fromkeys(t.speaker for t in turns))
    for text, dia_ids in session_chunks(turns, cfg.chunk_chars):
        node = SemanticNode(graph.new_semantic_id(), text, dia_ids, speakers, turns[0].session_time_raw, "chunk")
        graph.add_semantic(node)


def add_turn(graph: FluxGraph, calls: FluxCalls, cfg: FluxMemConfig, turn: Turn) -> None:
    """Record the turn and add its facts (or the turn itself) to the semantic layer (``unit: fact | turn``;
    chunks are made per session by :func:`add_session_chunks`)."""
    graph.turns[turn.dia_id] = turn
    facts: list[str] | None = None
    if cfg.unit == "fact":
        facts = extract_facts(calls, cfg, turn)
    if facts is None:
        texts, origin = [turn.render()], "turn"
    else:
        texts, origin = facts, "fact"
    for text in texts:
        node = SemanticNode(graph.new_semantic_id(), text, (turn.dia_id,), turn.speaker, turn.session_time_raw, origin)
        graph.add_semantic(node)


def extract_facts(calls: FluxCalls, cfg: FluxMemConfig, turn: Turn) -> list[str] | None:
    """The turn's facts; None when the reply was unusable (the caller keeps the raw turn)."""
    user = P.FACTS_USER.format(
        session_date=turn.session_time_raw,
        dia_id=turn.dia_id,
        speaker=turn.speaker,
        text=turn.text,
        max_facts=cfg.max_facts_per_turn,
    )
    res = calls.json(
        "facts",
        "ingest",
        P.FACTS_SYSTEM,
        user,
        validate=lambda o: validate_facts(o, cfg.max_facts_per_turn),
        fallback=None,
        fallback_kind="keep the raw turn as one semantic node",
        max_tokens=320,
    )
    return res.value


def embed_and_link(graph: FluxGraph, calls: FluxCalls, cfg: FluxMemConfig) -> None:
    """Embed the semantic layer in one batch (unless already done) and build its association edges (once)."""
    if graph.semantic and len(graph.sem_vecs) != len(graph.semantic):
        graph.set_semantic_vectors(calls.embed([n.text for n in graph.semantic]))
    if not any(e.kind == ASSOCIATION for e in graph.edges):
        calls.counters["association_edges_built"] = graph.build_associations(cfg.assoc_k, cfg.assoc_min_sim)

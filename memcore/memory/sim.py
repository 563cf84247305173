"""The simulator's replies to MemCoRe's prompts (ingest, gate in both forms, merge, link, decompose, IER in both
forms, batched ingest and gate): the ``sim_replies`` of the MemCoRe specs (:class:`memcore.testing.sim_text.SimReplies`)."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

from memcore.interfaces import Message
from memcore.memory.prompts import batch as BATCH_PROMPT
from memcore.memory.prompts import decompose as DECOMPOSE_PROMPT
from memcore.memory.prompts import gate as GATE_PROMPT
from memcore.memory.prompts import ier as IER_PROMPT
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.memory.prompts import merge as MERGE_PROMPT
from memcore.testing.sim_text import (
    SimReplies,
    between,
    first_words,
    keywords,
    last_text,
    overlap,
    question,
    system_text,
    user_text,
)

_CANDIDATE_RE = re.compile(r"^\[(\d+)\]\s*(.*)$", re.MULTILINE)
_BATCH_TURN_RE = re.compile(r"^\[([^\]]+)\] \([^)]*\) (.*)$", re.MULTILINE)
_LABEL_RE = re.compile(r"^\[([EN]\d+)\] (.*)$", re.MULTILINE)
_REFS_RE = re.compile(r"^\[(N\d+)\] .*\n\s+candidates: (.*)$", re.MULTILINE)

KINDS = (
    "memcore_ingest",
    "memcore_gate",
    "memcore_gate_binary",
    "memcore_merge",
    "memcore_link",
    "memcore_decompose",
    "memcore_ier",
    "memcore_ier_answer_first",
    "memcore_batch_ingest",
    "memcore_batch_gate",
)


def classify(msgs: Sequence[Message]) -> str | None:
    system, user = system_text(msgs), user_text(msgs)
    if system == INGEST_PROMPT.SYSTEM:
        return "memcore_ingest"
    if system == GATE_PROMPT.SYSTEM:
        return "memcore_gate_binary" if '"same_subject"' in user else "memcore_gate"
    if system == MERGE_PROMPT.SYSTEM:
        return "memcore_link" if "New related note:" in user else "memcore_merge"
    if system == DECOMPOSE_PROMPT.SYSTEM:
        return "memcore_decompose"
    if system == IER_PROMPT.SYSTEM:
        return "memcore_ier_answer_first" if "Step 1: answer" in user else "memcore_ier"
    if system == BATCH_PROMPT.INGEST_SYSTEM:
        return "memcore_batch_ingest"
    if system == BATCH_PROMPT.GATE_SYSTEM:
        return "memcore_batch_gate"
    return None


def _ingest(user: str) -> str:
    turn = between(user, "Turn to record", "Write a JSON object")
    text = turn.split("\n", 1)[-1]
    return json.dumps({"context": first_words(text, 40) or "no fact", "keywords": keywords(text)})


def _gate_strength(new: str, text: str) -> float:
    return min(1.0, 2.5 * overlap(new, text))  # word overlap 0.28 → merge, 0.2 → link


def _gate(user: str) -> str:
    new = between(user, "New note:", "Existing notes:")
    cands = _CANDIDATE_RE.findall(between(user, "Existing notes:", "For every existing note"))
    judgements = []
    for idx, text in cands:
        s = _gate_strength(new, text)
        rel = "redundant" if s >= 0.7 else "complementary" if s >= 0.5 else "unrelated"
        judgements.append({"id": int(idx), "relation": rel, "strength": round(s, 3), "edge": "Related_To"})
    return json.dumps({"judgements": judgements})


def _gate_binary(user: str) -> str:
    new = between(user, "New note:", "Existing notes:")
    cands = _CANDIDATE_RE.findall(between(user, "Existing notes:", "Each note starts"))
    out = []
    for idx, text in cands:
        s = _gate_strength(new, text)
        out.append({"id": int(idx), "same_subject": s >= 0.5, "same_fact": s >= 0.7, "edge": "Related_To"})
    return json.dumps({"judgements": out})


def _merge(user: str) -> str:
    parts = [between(user, "Note A:", "Note B:"), between(user, "Note B:", "Format:")]
    return json.dumps({"context": first_words(" ".join(parts), 80)})


def _link(user: str) -> str:
    parts = [between(user, "Existing note:", "New related note:"), between(user, "New related note:", "Format:")]
    return json.dumps({"context": first_words(" ".join(parts), 80)})


def _decompose(user: str) -> str:
    q = question(user)
    return json.dumps({"topic": q, "entities": keywords(q, 4)})


def _sufficient(q: str) -> bool:
    return bool(zlib.crc32(q.encode()) % 3)  # two questions in three are judged sufficient


def _ier(user: str) -> str:
    q = question(user)
    if _sufficient(q):
        return json.dumps({"sufficient": True, "answer_notes": [1], "missing": "", "sub_queries": []})
    ents = keywords(q, 2)
    subs = [{"query": e, "entities": [e]} for e in ents]
    return json.dumps({"sufficient": False, "answer_notes": [], "missing": q, "sub_queries": subs})


def _ier_answer_first(user: str) -> str:
    q = question(user)
    if _sufficient(q):
        return json.dumps({"answer": first_words(q, 4), "sufficient": True, "missing": "", "sub_queries": []})
    ents = keywords(q, 2)
    subs = [{"query": e, "entities": [e]} for e in ents]
    return json.dumps({"answer": "", "sufficient": False, "missing": q, "sub_queries": subs})


def _batch_ingest(user: str) -> str:
    turns = _BATCH_TURN_RE.findall(between(user, "Turns to record", "For EVERY turn"))
    notes = [
        {"id": tid, "context": first_words(text, 40) or "no fact", "keywords": keywords(text)} for tid, text in turns
    ]
    return json.dumps({"notes": notes})


def _batch_gate(user: str) -> str:
    texts = dict(_LABEL_RE.findall(user))
    judgements = []
    for new, refs in _REFS_RE.findall(user):
        for ref in [r.strip() for r in refs.split(",") if r.strip() in texts]:
            s = _gate_strength(texts[new], texts[ref])
            if s >= 0.5:
                rel = "redundant" if s >= 0.7 else "complementary"
                judgements.append(
                    {"new": new, "candidate": ref, "relation": rel, "strength": round(s, 3), "edge": "Related_To"}
                )
    return json.dumps({"judgements": judgements})


_HANDLERS = {
    "memcore_ingest": _ingest,
    "memcore_gate": _gate,
    "memcore_gate_binary": _gate_binary,
    "memcore_merge": _merge,
    "memcore_link": _link,
    "memcore_decompose": _decompose,
    "memcore_ier": _ier,
    "memcore_ier_answer_first": _ier_answer_first,
    "memcore_batch_ingest": _batch_ingest,
    "memcore_batch_gate": _batch_gate,
}


def reply(kind: str, msgs: Sequence[Message]) -> str:
    return _HANDLERS[kind](last_text(msgs))


REPLIES = SimReplies(kinds=KINDS, classify=classify, reply=reply)

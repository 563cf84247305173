"""Content-free but well-formed replies for every MemCoRe / answer prompt, so a scripted backbone drives the
real code paths (merges, links, IER rounds) instead of the JSON fallbacks. Timing only: never a result."""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Sequence

from memcore.interfaces import Message
from memcore.prompts import answer as ANSWER_PROMPT
from memcore.prompts import batch as BATCH_PROMPT
from memcore.prompts import decompose as DECOMPOSE_PROMPT
from memcore.prompts import gate as GATE_PROMPT
from memcore.prompts import ier as IER_PROMPT
from memcore.prompts import ingest as INGEST_PROMPT
from memcore.prompts import merge as MERGE_PROMPT

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_CANDIDATE_RE = re.compile(r"^\[(\d+)\]\s*(.*)$", re.MULTILINE)
_BATCH_TURN_RE = re.compile(r"^\[([^\]]+)\] \([^)]*\) (.*)$", re.MULTILINE)
_LABEL_RE = re.compile(r"^\[([EN]\d+)\] (.*)$", re.MULTILINE)
_REFS_RE = re.compile(r"^\[(N\d+)\] .*\n\s+candidates: (.*)$", re.MULTILINE)
_STOP = frozenset(
    ["the", "and", "that", "this", "with", "have", "from", "they", "them", "what", "when", "where", "which", "would"]
)


def _words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text) if w.lower() not in _STOP]


def _keywords(text: str, limit: int = 5) -> list[str]:
    """Capitalised words first, then the longest words: deterministic stand-ins for entities."""
    words = _words(text)
    caps = [w for w in words if w[0].isupper()]
    longest = sorted({w.lower() for w in words}, key=lambda w: (-len(w), w))
    out: list[str] = []
    for w in [*caps, *longest]:
        if w.lower() not in {o.lower() for o in out}:
            out.append(w)
        if len(out) >= limit:
            break
    return out


def _overlap(a: str, b: str) -> float:
    wa, wb = {w.lower() for w in _words(a)}, {w.lower() for w in _words(b)}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def _field(text: str, start: str, end: str) -> str:
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i : j if j >= 0 else len(text)].strip()


def structured_responder(messages: Sequence[Message]) -> str:
    """A valid JSON reply for the prompt ``messages`` carry (recognised by its system message)."""
    system = messages[0].get("content", "") if messages else ""
    user = messages[-1].get("content", "") if messages else ""
    if len(messages) > 2:  # a format retry: answer the original request
        user = messages[1].get("content", "")
    if system == INGEST_PROMPT.SYSTEM:
        turn = _field(user, "Turn to record", "Write a JSON object")
        text = turn.split("\n", 1)[-1]
        return json.dumps({"context": " ".join(text.split()[:40]) or "no fact", "keywords": _keywords(text)})
    if system == GATE_PROMPT.SYSTEM:
        new = _field(user, "New note:", "Existing notes:")
        cands = _CANDIDATE_RE.findall(_field(user, "Existing notes:", "For every existing note"))
        judgements = []
        for idx, text in cands:
            s = min(1.0, 2.5 * _overlap(new, text))  # word overlap 0.28 → merge, 0.2 → link
            rel = "redundant" if s >= 0.7 else "complementary" if s >= 0.5 else "unrelated"
            judgements.append({"id": int(idx), "relation": rel, "strength": round(s, 3), "edge": "Related_To"})
        return json.dumps({"judgements": judgements})
    if system == MERGE_PROMPT.SYSTEM:
        parts = [_field(user, "Note A:", "Note B:"), _field(user, "Note B:", "Format:")]
        if not parts[0]:
            parts = [_field(user, "Existing note:", "New related note:"), ""]
        return json.dumps({"context": " ".join(" ".join(parts).split()[:80])})
    if system == DECOMPOSE_PROMPT.SYSTEM:
        q = _field(user, "Question:", "\n")
        return json.dumps({"topic": q, "entities": _keywords(q, 4)})
    if system == IER_PROMPT.SYSTEM:
        q = _field(user, "Question:", "\n")
        if zlib.crc32(q.encode()) % 3:  # two questions in three are judged sufficient
            return json.dumps({"sufficient": True, "sub_queries": []})
        ents = _keywords(q, 2)
        return json.dumps({"sufficient": False, "sub_queries": [{"query": e, "entities": [e]} for e in ents]})
    if system == BATCH_PROMPT.INGEST_SYSTEM:
        turns = _BATCH_TURN_RE.findall(_field(user, "Turns to record", "For EVERY turn"))
        notes = [
            {"id": tid, "context": " ".join(text.split()[:40]) or "no fact", "keywords": _keywords(text)}
            for tid, text in turns
        ]
        return json.dumps({"notes": notes})
    if system == BATCH_PROMPT.GATE_SYSTEM:
        texts = dict(_LABEL_RE.findall(user))
        judgements = []
        for new, refs in _REFS_RE.findall(user):
            for ref in [r.strip() for r in refs.split(",") if r.strip() in texts]:
                s = min(1.0, 2.5 * _overlap(texts[new], texts[ref]))
                if s >= 0.5:
                    rel = "redundant" if s >= 0.7 else "complementary"
                    judgements.append(
                        {"new": new, "candidate": ref, "relation": rel, "strength": round(s, 3), "edge": "Related_To"}
                    )
        return json.dumps({"judgements": judgements})
    if system == ANSWER_PROMPT.AMEM_SYSTEM:
        q = _field(user, "Question:", "Short answer:")
        return json.dumps({"answer": " ".join(q.split()[:4])})
    return " ".join(user.split()[-5:])

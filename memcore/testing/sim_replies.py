"""Content-free but schema-valid replies for every prompt the harness sends, for the OpenAI-compatible simulator
(:mod:`memcore.testing.simulator`) and the scripted benchmarks: MemCoRe's ingest / gate (scale and binary) / merge /
link / decompose / IER (v2 and answer-first) / batched prompts, A-MEM's analysis / evolution / query keywords,
mem0ai's additive extraction, mem0-two-phase's extraction and update, MemGPT's function calls and summary,
LightMem's extraction and update, FluxMem's eight prompts, both answer protocols and both judge presets.

Each prompt is recognised by a stable marker of its own prompt module (a system message or a fixed phrase), so a
prompt text change that breaks recognition shows up as the ``unknown`` kind in the simulator's statistics (a
test checks every kind is recognised). Replies are a pure function of the messages: timing and plumbing only,
never a result.
"""

from __future__ import annotations

import ast
import json
import re
import zlib
from collections.abc import Callable, Sequence

from baselines.amem import prompts as AMEM_PROMPT
from baselines.fluxmem import prompt_verify as FLUX_VERIFY
from baselines.fluxmem import prompts as FLUX_PROMPT
from baselines.lightmem import prompt_extract as LIGHT_EXTRACT
from baselines.lightmem import prompt_update as LIGHT_UPDATE
from baselines.memgpt import prompts as MEMGPT_PROMPT
from memcore.interfaces import Message
from memcore.prompts import answer as ANSWER_PROMPT
from memcore.memory.prompts import batch as BATCH_PROMPT
from memcore.memory.prompts import decompose as DECOMPOSE_PROMPT
from memcore.memory.prompts import gate as GATE_PROMPT
from memcore.memory.prompts import ier as IER_PROMPT
from memcore.memory.prompts import ingest as INGEST_PROMPT
from memcore.prompts import judge as JUDGE_PROMPT
from memcore.prompts import judge_mem0
from memcore.memory.prompts import merge as MERGE_PROMPT

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_CANDIDATE_RE = re.compile(r"^\[(\d+)\]\s*(.*)$", re.MULTILINE)
_BATCH_TURN_RE = re.compile(r"^\[([^\]]+)\] \([^)]*\) (.*)$", re.MULTILINE)
_LABEL_RE = re.compile(r"^\[([EN]\d+)\] (.*)$", re.MULTILINE)
_REFS_RE = re.compile(r"^\[(N\d+)\] .*\n\s+candidates: (.*)$", re.MULTILINE)
_LIGHT_MSG_RE = re.compile(r"^\[[^\]]*\] (\d+)\.([^:]+): (.*)$", re.MULTILINE)
_FLUX_TURN_RE = re.compile(r"Turn to record \([^)]+\):\n([^:\n]+): (.*)")
_NUMBERED_RE = re.compile(r"^\s*\[?(\d+)[\].)]", re.MULTILINE)
_MEMGPT_TURN_RE = re.compile(r"^\[([^\]]+)\] (.+)$", re.DOTALL)
_QUESTION_RE = re.compile(r"Question:\s*(.+?)\s*(?:Short answer:|\n|$)", re.DOTALL)
_STOP = frozenset(
    ["the", "and", "that", "this", "with", "have", "from", "they", "them", "what", "when", "where", "which", "would"]
)

#: Every prompt kind :func:`classify` can return (``unknown``: no marker matched).
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
    "answer_amem",
    "answer_locomo",
    "amem_analysis",
    "amem_evolution",
    "amem_query",
    "mem0_extract",
    "mem0_facts",
    "mem0_update",
    "memgpt_step",
    "memgpt_summary",
    "lightmem_extract",
    "lightmem_update",
    "fluxmem_facts",
    "fluxmem_verify",
    "fluxmem_verify_graded",
    "fluxmem_check",
    "fluxmem_reshape",
    "fluxmem_skill_extract",
    "fluxmem_skill_rerun",
    "fluxmem_skill_refine",
    "judge",
    "judge_mem0",
    "unknown",
)

_FLUX_KINDS = {
    FLUX_PROMPT.FACTS_SYSTEM: "fluxmem_facts",
    FLUX_PROMPT.VERIFY_SYSTEM: "fluxmem_verify",
    FLUX_VERIFY.VERIFY_SYSTEM: "fluxmem_verify_graded",
    FLUX_PROMPT.CHECK_SYSTEM: "fluxmem_check",
    FLUX_PROMPT.RESHAPE_SYSTEM: "fluxmem_reshape",
    FLUX_PROMPT.SKILL_EXTRACT_SYSTEM: "fluxmem_skill_extract",
    FLUX_PROMPT.SKILL_RERUN_SYSTEM: "fluxmem_skill_rerun",
    FLUX_PROMPT.SKILL_REFINE_SYSTEM: "fluxmem_skill_refine",
}
_MEM0_JUDGE_HEAD = judge_mem0.ACCURACY_PROMPT[:80]
_MEM0_EXTRACTOR_MARK = "You are a Memory Extractor"  # mem0ai's ADDITIVE_EXTRACTION_PROMPT
_MEM0_FACTS_MARK = "You are a Personal Information Organizer"  # prompts_v1 extraction system prompts
_MEM0_UPDATE_MARK = "You are a smart memory manager which controls the memory of a system."


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


def _content(m: Message) -> str:
    return str(m.get("content") or "")


def _first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def _original(messages: Sequence[Message]) -> list[Message]:
    """The request without a trailing JSON-format retry note (``complete_json``'s attempt k>1)."""
    msgs = list(messages)
    if len(msgs) > 2 and _content(msgs[-1]).startswith("Reply with one valid JSON object only"):
        msgs = msgs[:-1]
    return msgs


def classify(messages: Sequence[Message]) -> str:
    """The prompt kind of ``messages`` (one of :data:`KINDS`)."""
    msgs = _original(messages)
    if not msgs:
        return "unknown"
    system = _content(msgs[0]) if msgs[0].get("role") == "system" else ""
    user = _content(msgs[-1]) if len(msgs) > 1 or not system else ""
    first = _content(msgs[0])
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
    if system == ANSWER_PROMPT.AMEM_SYSTEM:
        return "answer_amem"
    if system == AMEM_PROMPT.SYSTEM:
        if user.startswith("Generate a structured analysis"):
            return "amem_analysis"
        if "memory evolution agent" in user:
            return "amem_evolution"
        if "generate several keywords" in user:
            return "amem_query"
    if _MEM0_EXTRACTOR_MARK in system[:400]:  # mem0ai opens it with a "# ROLE" heading
        return "mem0_extract"
    if system.startswith(_MEM0_FACTS_MARK):
        return "mem0_facts"
    if first.startswith(_MEM0_UPDATE_MARK):
        return "mem0_update"
    if system.startswith("You are MemGPT"):
        return "memgpt_step"
    if system.startswith(MEMGPT_PROMPT.SUMMARY_SYSTEM.split("{", 1)[0]):
        return "memgpt_summary"
    if system == LIGHT_EXTRACT.METADATA_GENERATE_PROMPT_LOCOMO:
        return "lightmem_extract"
    if system == LIGHT_UPDATE.UPDATE_PROMPT:
        return "lightmem_update"
    if system in _FLUX_KINDS:
        return _FLUX_KINDS[system]
    if system == JUDGE_PROMPT.SYSTEM:
        return "judge"
    if first.startswith(_MEM0_JUDGE_HEAD):
        return "judge_mem0"
    if "Short answer:" in first or "Short answer:" in user:
        return "answer_locomo"
    return "unknown"


# ------------------------------------------------------------------------------------------- MemCoRe
def _memcore_ingest(user: str) -> str:
    turn = _field(user, "Turn to record", "Write a JSON object")
    text = turn.split("\n", 1)[-1]
    return json.dumps({"context": _first_words(text, 40) or "no fact", "keywords": _keywords(text)})


def _gate_strength(new: str, text: str) -> float:
    return min(1.0, 2.5 * _overlap(new, text))  # word overlap 0.28 → merge, 0.2 → link


def _memcore_gate(user: str) -> str:
    new = _field(user, "New note:", "Existing notes:")
    cands = _CANDIDATE_RE.findall(_field(user, "Existing notes:", "For every existing note"))
    judgements = []
    for idx, text in cands:
        s = _gate_strength(new, text)
        rel = "redundant" if s >= 0.7 else "complementary" if s >= 0.5 else "unrelated"
        judgements.append({"id": int(idx), "relation": rel, "strength": round(s, 3), "edge": "Related_To"})
    return json.dumps({"judgements": judgements})


def _memcore_gate_binary(user: str) -> str:
    new = _field(user, "New note:", "Existing notes:")
    cands = _CANDIDATE_RE.findall(_field(user, "Existing notes:", "Each note starts"))
    out = []
    for idx, text in cands:
        s = _gate_strength(new, text)
        out.append({"id": int(idx), "same_subject": s >= 0.5, "same_fact": s >= 0.7, "edge": "Related_To"})
    return json.dumps({"judgements": out})


def _memcore_merge(user: str) -> str:
    parts = [_field(user, "Note A:", "Note B:"), _field(user, "Note B:", "Format:")]
    return json.dumps({"context": _first_words(" ".join(parts), 80)})


def _memcore_link(user: str) -> str:
    parts = [_field(user, "Existing note:", "New related note:"), _field(user, "New related note:", "Format:")]
    return json.dumps({"context": _first_words(" ".join(parts), 80)})


def _question(user: str) -> str:
    return _field(user, "Question:", "\n")


def _memcore_decompose(user: str) -> str:
    q = _question(user)
    return json.dumps({"topic": q, "entities": _keywords(q, 4)})


def _sufficient(q: str) -> bool:
    return bool(zlib.crc32(q.encode()) % 3)  # two questions in three are judged sufficient


def _memcore_ier(user: str) -> str:
    q = _question(user)
    if _sufficient(q):
        return json.dumps({"sufficient": True, "answer_notes": [1], "missing": "", "sub_queries": []})
    ents = _keywords(q, 2)
    subs = [{"query": e, "entities": [e]} for e in ents]
    return json.dumps({"sufficient": False, "answer_notes": [], "missing": q, "sub_queries": subs})


def _memcore_ier_answer_first(user: str) -> str:
    q = _question(user)
    if _sufficient(q):
        return json.dumps({"answer": _first_words(q, 4), "sufficient": True, "missing": "", "sub_queries": []})
    ents = _keywords(q, 2)
    subs = [{"query": e, "entities": [e]} for e in ents]
    return json.dumps({"answer": "", "sufficient": False, "missing": q, "sub_queries": subs})


def _memcore_batch_ingest(user: str) -> str:
    turns = _BATCH_TURN_RE.findall(_field(user, "Turns to record", "For EVERY turn"))
    notes = [
        {"id": tid, "context": _first_words(text, 40) or "no fact", "keywords": _keywords(text)} for tid, text in turns
    ]
    return json.dumps({"notes": notes})


def _memcore_batch_gate(user: str) -> str:
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


# ------------------------------------------------------------------------------------------- answers
def short_answer(text: str) -> str:
    """The last six words of the context line sharing most words with the question (deterministic, non-trivial
    F1 on some items)."""
    found = _QUESTION_RE.findall(text)
    question = found[-1] if found else ""
    q_words = {w.lower() for w in _words(question) if len(w) > 3}
    best, best_score = "", 0
    for line in text.splitlines():
        if "Question:" in line:
            continue
        score = len(q_words & {w.lower() for w in _words(line)})
        if score > best_score:
            best, best_score = line, score
    return " ".join(best.split()[-6:]) or _first_words(question, 4) or "unknown"


# ------------------------------------------------------------------------------------------- A-MEM
def _amem_analysis(user: str) -> str:
    content = user.split("Content for analysis:\n", 1)[-1]
    return json.dumps(
        {"keywords": _keywords(content, 4), "context": _first_words(content, 20), "tags": ["conversation", "memory"]}
    )


def _amem_evolution(user: str) -> str:
    n = int(_field(user, "The number of neighbors is", ".") or 0)
    if n == 0 or zlib.crc32(user.encode()) % 2:
        return json.dumps({"should_evolve": False, "actions": []})
    return json.dumps(
        {
            "should_evolve": True,
            "actions": ["strengthen"],
            "suggested_connections": [0],
            "tags_to_update": _keywords(_field(user, "keywords:", "\n"), 3) or ["memory"],
            "new_context_neighborhood": [],
            "new_tags_neighborhood": [],
        }
    )


def _amem_query(user: str) -> str:
    return json.dumps({"keywords": ", ".join(_keywords(_question(user), 4)) or "conversation"})


# ------------------------------------------------------------------------------------------- mem0
def _mem0_section(prompt: str, name: str) -> str:
    return prompt.split(f"## {name}\n", 1)[-1].split("\n\n#", 1)[0] if f"## {name}\n" in prompt else ""


def _mem0_extract(user: str) -> str:
    lines = [ln.strip() for ln in _mem0_section(user, "New Messages").splitlines() if ln.strip()]
    return json.dumps({"memory": [{"id": str(i), "text": _first_words(ln, 40)} for i, ln in enumerate(lines[:4])]})


def _mem0_facts(user: str) -> str:
    lines = [ln.split(": ", 1)[-1] for ln in user.splitlines() if ln.startswith(("user: ", "assistant: "))]
    return json.dumps({"facts": [_first_words(ln, 30) for ln in lines[:4] if ln.strip()]})


def _mem0_update(prompt: str) -> str:
    blocks = re.findall(r"```\n\s*(\[.*?\])\n\s*```", prompt, re.S)
    try:
        facts = [str(f) for f in ast.literal_eval(blocks[-1])] if blocks else []
    except (ValueError, SyntaxError):
        facts = []
    return json.dumps({"memory": [{"id": str(i), "text": f, "event": "ADD"} for i, f in enumerate(facts)]})


# ------------------------------------------------------------------------------------------- MemGPT
def _memgpt_step(messages: Sequence[Message]) -> str:
    state = _content(messages[-1])
    if "QUESTION:" in state:
        q = _field(state, "QUESTION:", "\n")
        return json.dumps(
            {"thought": "search", "function": "archival_memory_search", "arguments": {"query": q, "page": 0}}
        )
    if MEMGPT_PROMPT.INGEST_NEW_MESSAGE in state:
        for m in reversed(messages[:-1]):
            found = _MEMGPT_TURN_RE.match(_content(m)) if m.get("role") == "user" else None
            if found:
                fact = f"On {found.group(1)} {_first_words(found.group(2), 30)}"
                return json.dumps(
                    {"thought": "store", "function": "archival_memory_insert", "arguments": {"content": fact}}
                )
    return json.dumps({"thought": "nothing more", "function": "done", "arguments": {}})


# ------------------------------------------------------------------------------------------- LightMem
def _lightmem_extract(user: str) -> str:
    found = _LIGHT_MSG_RE.findall(user)
    data = [{"source_id": int(i), "fact": f"{sp} said: {_first_words(text, 30)}"} for i, sp, text in found]
    return json.dumps({"data": data})


def _lightmem_update(user: str) -> str:
    if zlib.crc32(user.encode()) % 4:
        return json.dumps({"action": "ignore"})
    target = _field(user, "Target memory:", "\n")
    return json.dumps({"action": "update", "new_memory": target or "updated memory"})


# ------------------------------------------------------------------------------------------- FluxMem
def _fluxmem(kind: str, user: str) -> str:
    if kind == "fluxmem_facts":
        m = _FLUX_TURN_RE.search(user)
        return json.dumps({"facts": [f"{m.group(1)} says: {_first_words(m.group(2), 30)}"] if m else []})
    if kind == "fluxmem_verify_graded":  # upstream's plain-text score: word overlap of claim and evidence
        claim = _field(user, "Claim:", "\n\nEvidence:")
        evidence = _field(user, "Evidence:", "\n\nRelevance score")
        return f"{_overlap(claim, evidence):.2f}"
    if kind == "fluxmem_verify":
        ids = sorted({int(i) for i in _NUMBERED_RE.findall(_field(user, "Candidate facts:", "Which candidates"))})
        return json.dumps({"relevant": ids[:2]})
    if kind == "fluxmem_check":
        if zlib.crc32(user.encode()) % 2:
            return json.dumps({"supported": True, "failure": "none", "missing": "", "distracting": [], "reshape": []})
        q = _field(user, "Question:", "\n")
        return json.dumps(
            {"supported": False, "failure": "under_connection", "missing": q, "distracting": [], "reshape": []}
        )
    if kind == "fluxmem_reshape":
        return json.dumps({"mode": "expand", "text": _field(user, "Memory fact:", "\n") or "fact"})
    if kind in ("fluxmem_skill_extract", "fluxmem_skill_refine"):
        return json.dumps({"skill": "Find the dated facts about the person asked about and answer with them."})
    return json.dumps({"answer": _first_words(_field(user, "Question:", "\n"), 4), "success": True})


# ------------------------------------------------------------------------------------------- judges
def _verdict(text: str) -> str:
    """CORRECT iff the generated answer shares a word with the gold."""
    gold = _field(text, "Gold answer:", "\n")
    answer = _field(text, "Generated answer:", "\n")
    return "CORRECT" if _overlap(gold, answer) > 0 else "WRONG"


def reply(messages: Sequence[Message]) -> tuple[str, str]:
    """``(kind, reply text)`` for ``messages``: a schema-valid reply for a known prompt kind, a short plain answer
    for an unknown one."""
    kind = classify(messages)
    msgs = _original(messages)
    user = _content(msgs[-1]) if msgs else ""
    handlers: dict[str, Callable[[], str]] = {
        "memcore_ingest": lambda: _memcore_ingest(user),
        "memcore_gate": lambda: _memcore_gate(user),
        "memcore_gate_binary": lambda: _memcore_gate_binary(user),
        "memcore_merge": lambda: _memcore_merge(user),
        "memcore_link": lambda: _memcore_link(user),
        "memcore_decompose": lambda: _memcore_decompose(user),
        "memcore_ier": lambda: _memcore_ier(user),
        "memcore_ier_answer_first": lambda: _memcore_ier_answer_first(user),
        "memcore_batch_ingest": lambda: _memcore_batch_ingest(user),
        "memcore_batch_gate": lambda: _memcore_batch_gate(user),
        "answer_amem": lambda: json.dumps({"answer": short_answer(user)}),
        "answer_locomo": lambda: short_answer(user),
        "amem_analysis": lambda: _amem_analysis(user),
        "amem_evolution": lambda: _amem_evolution(user),
        "amem_query": lambda: _amem_query(user),
        "mem0_extract": lambda: _mem0_extract(user),
        "mem0_facts": lambda: _mem0_facts(user),
        "mem0_update": lambda: _mem0_update(_content(msgs[0])),
        "memgpt_step": lambda: _memgpt_step(msgs),
        "memgpt_summary": lambda: _first_words(user.split("\n", 1)[-1], 60) or "nothing yet",
        "lightmem_extract": lambda: _lightmem_extract(user),
        "lightmem_update": lambda: _lightmem_update(user),
        "judge": lambda: json.dumps({"reason": "simulated", "label": _verdict(user)}),
        "judge_mem0": lambda: json.dumps({"label": _verdict(_content(msgs[0]))}),
    }
    if kind in handlers:
        return kind, handlers[kind]()
    if kind.startswith("fluxmem_"):
        return kind, _fluxmem(kind, user)
    return kind, " ".join(user.split()[-5:]) or "ok"


def structured_responder(messages: Sequence[Message]) -> str:
    """:func:`reply`'s text: a :class:`~memcore.llm.scripted.Responder` for the scripted backbone."""
    return reply(messages)[1]

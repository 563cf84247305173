"""Shared builders for the MemCoRe tests: tiny hand-made conversations, a scripted LLM that recognises each
MemCoRe prompt, and MemCoRe factories over ScriptedBackbone + HashingEmbedder."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memcore.interfaces import LazyResource, MethodContext
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.memory.system import SPEC, SPEC_CHEAP, MemCoRe
from memcore.types import Conversation, Session, Turn

SPEAKERS = ("Alice", "Bob")

# Tag-structured turns: same tag + "dup" → redundant (0.9); same tag → complementary (0.6); else unrelated (0.1).
TAGGED_TURNS = [
    "tagA: I adopted a dog named Rex from the shelter",
    "tagA dup: I adopted a dog named Rex from the shelter last week",
    "tagA: Rex loves running in the park every morning",
    "tagB: I started painting landscapes with watercolors",
    "tagB: my painting class meets on Monday evenings",
]


def make_conversation(texts: Sequence[str], conv_id: str = "conv-test", per_session: int = 50) -> Conversation:
    """Turns alternate between two speakers; a new session (one day later) every ``per_session`` turns."""
    sessions = []
    for s, start in enumerate(range(0, len(texts), per_session), start=1):
        when = datetime(2023, 5, s, 13, 0)
        raw = f"1:00 pm on {s} May, 2023"
        turns = tuple(
            Turn(f"D{s}:{i + 1}", SPEAKERS[(start + i) % 2], text, s, when, raw)
            for i, text in enumerate(texts[start : start + per_session])
        )
        sessions.append(Session(s, when, raw, turns))
    return Conversation(conv_id, SPEAKERS[0], SPEAKERS[1], tuple(sessions), ())


def tag_strength(new: str, cand: str) -> float:
    tag_new = re.search(r"tag(\w)", new)
    tag_cand = re.search(r"tag(\w)", cand)
    if not tag_new or not tag_cand or tag_new.group(1) != tag_cand.group(1):
        return 0.1
    return 0.9 if "dup" in new else 0.6


def _section(text: str, start: str, end: str | None = None) -> str:
    s = text.split(start, 1)[1]
    return s.split(end, 1)[0] if end else s


def _undated(note: str) -> str:
    """A note as the prompts show it, without its leading ``(session date)``: what a model writes back."""
    return re.sub(r"^\([^)]*\d{4}\) ", "", note)


class ScriptedLLM:
    """A responder for every MemCoRe prompt. Set ``garbage`` to a prompt kind (or "all") to make that reply
    unparseable; ``strength`` maps (new note, candidate note) → s; ``ier_plan`` scripts the IER judge."""

    def __init__(
        self,
        strength: Callable[[str, str], float] = tag_strength,
        edge: str = "Supports",
        garbage: Sequence[str] = (),
        ier_plan: Sequence[dict[str, Any]] | None = None,
    ) -> None:
        self.strength = strength
        self.edge = edge
        self.garbage = set(garbage)
        self.ier_plan = list(ier_plan or [{"sufficient": True, "sub_queries": []}])
        self.ier_calls = 0
        self.kinds: list[str] = []

    def kind(self, user: str) -> str:
        if "Turn to record" in user:
            return "ingest"
        if "Existing notes:" in user:
            return "gate"
        if "Two memory notes" in user:
            return "merge"
        if "New related note" in user:
            return "link_update"
        if "Retrieved notes" in user:
            return "ier"
        if user.startswith("Question:"):
            return "decompose"
        raise AssertionError(f"unknown prompt: {user[:80]}")

    def __call__(self, messages: Sequence[dict[str, str]]) -> str:
        user = messages[1]["content"]
        kind = self.kind(user)
        self.kinds.append(kind)
        if kind in self.garbage or "all" in self.garbage:
            return "sorry, I cannot do that"
        if kind == "ingest":
            line = _section(user, "Turn to record", "\n\nWrite").split("\n", 1)[1]
            speaker, text = line.split(": ", 1)
            words = [w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 4]
            return json.dumps({"context": f"{speaker} said that {text}", "keywords": words[:4]})
        if kind == "gate":
            new = _section(user, "New note:\n", "\n\nExisting notes:")
            cands = re.findall(r"^\[(\d+)\] (.*)$", _section(user, "Existing notes:\n", "\n\nFor every"), flags=re.M)
            judgements = [
                {"id": int(i), "relation": "x", "strength": self.strength(new, c), "edge": self.edge} for i, c in cands
            ]
            return json.dumps({"judgements": judgements})
        if kind == "merge":
            a = _undated(_section(user, "Note A:\n", "\n\nNote B:"))
            b = _undated(_section(user, "Note B:\n", "\n\nFormat"))
            return json.dumps({"context": f"MERGED {a} + {b}"})
        if kind == "link_update":
            old = _undated(_section(user, "Existing note:\n", "\n\nNew related note:"))
            return json.dumps({"context": f"{old} (followed up later)"})
        if kind == "decompose":
            q = _section(user, "Question: ", "\n")
            ents = [w for w in re.findall(r"[a-z]+", q.lower()) if len(w) > 3]
            return json.dumps({"topic": q, "entities": ents[:4]})
        reply = self.ier_plan[min(self.ier_calls, len(self.ier_plan) - 1)]
        self.ier_calls += 1
        return json.dumps(reply)


def method_config(cheap: bool = False, **over: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"name": "memcore-cheap" if cheap else "memcore", "judge": "embedding" if cheap else "llm"}
    cfg.update(over)
    return cfg


def ablation(name: str = "none") -> dict[str, Any]:
    sw = {k: True for k in ("update", "merge", "link", "denoise", "topic", "keyword", "neighbor", "ier")}
    if name != "none":
        sw[name.removeprefix("wo_")] = False
    return {"name": name, **sw}


def make_memory(
    conv: Conversation,
    tmp: Path,
    *,
    llm: ScriptedLLM | None = None,
    abl: str = "none",
    cheap: bool = False,
    dim: int = 512,
    **cfg: Any,
) -> tuple[MemCoRe, ScriptedBackbone | None, MethodContext]:
    """A MemCoRe through its registered spec's factory (cheap mode: a backbone that fails if touched)."""
    backbone = None if cheap else ScriptedBackbone(llm or ScriptedLLM())

    def no_backbone() -> Any:
        raise AssertionError("cheap mode touched the chat backbone")

    ctx = MethodContext(
        config=method_config(cheap, **cfg),
        ablation=ablation(abl),
        conversation=conv,
        seed=7,
        workdir=tmp,
        _backbone=LazyResource(no_backbone if cheap else (lambda: backbone)),
        _embedder=LazyResource(lambda: HashingEmbedder(dim)),
    )
    system = (SPEC_CHEAP if cheap else SPEC).factory(ctx)
    assert isinstance(system, MemCoRe)
    return system, backbone, ctx


def build(conv: Conversation, tmp: Path, **kw: Any) -> tuple[MemCoRe, ScriptedBackbone | None, MethodContext]:
    system, backbone, ctx = make_memory(conv, tmp, **kw)
    for turn in conv.turns:
        system.ingest(turn)
    system.finalize()
    return system, backbone, ctx


def test_make_conversation_alternates_speakers_and_sessions() -> None:
    conv = make_conversation(["a", "b", "c"], per_session=2)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [t.speaker for t in conv.turns] == ["Alice", "Bob", "Alice"]
    assert conv.sessions[1].time_raw == "1:00 pm on 2 May, 2023"


def test_tag_strength_rule() -> None:
    assert tag_strength("tagA dup: x", "tagA: y") == 0.9
    assert tag_strength("tagA: x", "tagA: y") == 0.6
    assert tag_strength("tagA: x", "tagB: y") == 0.1

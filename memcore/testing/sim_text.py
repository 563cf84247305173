"""What every simulator responder is made of: :class:`SimReplies` (the replies to one method's prompts, or the
harness's) and the deterministic text helpers their replies are built with.

A responder recognises its prompts by a stable marker of its own prompt module (a system message or a fixed
phrase) and answers them with a content-free but schema-valid reply: a pure function of the messages, so
timing and plumbing are exercised, never a result.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memcore.interfaces import Message

_WORD_RE = re.compile(r"[A-Za-z][A-Za-z'\-]+")
_STOP = frozenset(
    ["the", "and", "that", "this", "with", "have", "from", "they", "them", "what", "when", "where", "which", "would"]
)


@dataclass(frozen=True)
class SimReplies:
    """The simulator's replies to one family of prompts.

    ``kinds``: every prompt kind ``classify`` can return. ``classify(messages)``: the kind of a request, or None
    when it is not one of these prompts. ``reply(kind, messages)``: the reply text to a request of that kind.
    ``messages`` never carry a trailing JSON-format retry note (the simulator strips it first)."""

    kinds: tuple[str, ...]
    classify: Callable[[Sequence[Message]], str | None]
    reply: Callable[[str, Sequence[Message]], str]


def content(m: Message) -> str:
    return str(m.get("content") or "")


def system_text(msgs: Sequence[Message]) -> str:
    """The system message's text ("" without one)."""
    return content(msgs[0]) if msgs and msgs[0].get("role") == "system" else ""


def user_text(msgs: Sequence[Message]) -> str:
    """The last message's text, unless the request is a system message alone ("" then): what a classifier reads."""
    if not msgs:
        return ""
    return content(msgs[-1]) if len(msgs) > 1 or not system_text(msgs) else ""


def last_text(msgs: Sequence[Message]) -> str:
    """The last message's text, whatever its role (what a reply reads)."""
    return content(msgs[-1]) if msgs else ""


def first_text(msgs: Sequence[Message]) -> str:
    """The first message's text, whatever its role."""
    return content(msgs[0]) if msgs else ""


def words(text: str) -> list[str]:
    return [w for w in _WORD_RE.findall(text) if w.lower() not in _STOP]


def keywords(text: str, limit: int = 5) -> list[str]:
    """Capitalised words first, then the longest words: deterministic stand-ins for entities."""
    found = words(text)
    caps = [w for w in found if w[0].isupper()]
    longest = sorted({w.lower() for w in found}, key=lambda w: (-len(w), w))
    out: list[str] = []
    for w in [*caps, *longest]:
        if w.lower() not in {o.lower() for o in out}:
            out.append(w)
        if len(out) >= limit:
            break
    return out


def overlap(a: str, b: str) -> float:
    wa, wb = {w.lower() for w in words(a)}, {w.lower() for w in words(b)}
    return len(wa & wb) / len(wa | wb) if wa and wb else 0.0


def between(text: str, start: str, end: str) -> str:
    """The text after ``start`` up to ``end`` (or the end), stripped; "" when ``start`` is absent."""
    i = text.find(start)
    if i < 0:
        return ""
    i += len(start)
    j = text.find(end, i)
    return text[i : j if j >= 0 else len(text)].strip()


def first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def question(user: str) -> str:
    """The ``Question:`` line of a prompt."""
    return between(user, "Question:", "\n")

"""MemGPT's context-window management without LLM calls: the FIFO of recent messages, the main context the
agent sees, which oldest messages an eviction moves out (to be folded into the recursive summary), and the
summarisation prompt for them."""

from __future__ import annotations

from dataclasses import dataclass

from baselines.memgpt import prompts as P
from memcore.interfaces import Message
from memcore.text import count_tokens


@dataclass
class FifoMessage:
    """One message of the main context's FIFO queue."""

    role: str  # user | assistant
    kind: str  # turn | action | result | alert
    content: str
    dia_id: str | None = None
    timestamp: str | None = None
    tokens: int = 0

    def __post_init__(self) -> None:
        if not self.tokens:
            self.tokens = count_tokens(self.content)


def main_context(system_prompt: str, summary: str, n_hidden: int, fifo: list[FifoMessage]) -> list[Message]:
    """The messages always in context: system instructions, the recursive summary (if any), the FIFO."""
    msgs: list[Message] = [{"role": "system", "content": system_prompt}]
    if summary:
        msgs.append({"role": "user", "content": P.SUMMARY_NOTE.format(hidden=n_hidden, summary=summary)})
    msgs.extend({"role": m.role, "content": m.content} for m in fifo)
    return msgs


def eviction_cut(fifo: list[FifoMessage], *, keep_last: int, fraction: float) -> int | None:
    """How many of the oldest FIFO messages to evict: at least ``fraction`` of the FIFO's tokens, moved on
    to the next conversation turn when possible, never touching the last ``keep_last``; None when the FIFO
    holds no more than ``keep_last`` messages."""
    limit = len(fifo) - keep_last
    if limit <= 0:
        return None
    target = fraction * sum(m.tokens for m in fifo)
    cut, acc = 0, 0
    while cut < limit and acc < target:
        acc += fifo[cut].tokens
        cut += 1
    while cut < limit and fifo[cut].kind != "turn":
        cut += 1
    return cut


def summary_messages(summary: str, evicted: list[FifoMessage], speakers: tuple[str, str], words: int) -> list[Message]:
    """The summarisation request for ``evicted`` messages, folding in the current ``summary`` (recursive)."""
    lines = [f"(summary of earlier messages) {summary}"] if summary else []
    for m in evicted:
        if m.kind == "turn":
            lines.append(m.content)
        elif m.kind == "action":
            lines.append(f"(agent) {m.content}")
        elif m.kind == "result":
            lines.append(f"(agent function result) {m.content}")
    return [
        {
            "role": "system",
            "content": P.SUMMARY_SYSTEM.format(speaker_a=speakers[0], speaker_b=speakers[1], words=words),
        },
        {"role": "user", "content": P.SUMMARY_USER.format(messages="\n".join(lines))},
    ]

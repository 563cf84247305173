"""MemGPT's context-window management without LLM calls: the FIFO of recent messages, the main context the
agent sees, which oldest messages an eviction moves out (to be folded into the recursive summary), and the
summarisation request for them."""

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


@dataclass(frozen=True)
class SummaryCounts:
    """What MemGPT's summary message states (``package_summarize_message``): messages hidden, all messages so
    far, and how many messages the summary covers (the previous summary message included)."""

    hidden: int = 0
    total: int = 0
    summarized: int = 0


def summary_note(summary: str, counts: SummaryCounts) -> str:
    """The message standing for the evicted messages."""
    return P.SUMMARY_NOTE.format(
        hidden=counts.hidden, total=counts.total, summarized=counts.summarized, summary=summary
    )


def main_context(system_prompt: str, summary: str, counts: SummaryCounts, fifo: list[FifoMessage]) -> list[Message]:
    """The messages always in context: system instructions, the recursive summary (if any), the FIFO."""
    msgs: list[Message] = [{"role": "system", "content": system_prompt}]
    if summary:
        msgs.append({"role": "user", "content": summary_note(summary, counts)})
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


def summary_messages(summary: str, counts: SummaryCounts, evicted: list[FifoMessage], words: int) -> list[Message]:
    """The summarisation request for ``evicted`` messages as MemGPT 0.2.6 makes it (``summarize_messages``):
    ``gpt_summarize.SYSTEM``, then the messages as the Python ``str`` of their role/content dicts, the current
    summary message first (so summaries are recursive). Function results carry the ``function`` role."""
    seq: list[dict[str, str]] = [{"role": "user", "content": summary_note(summary, counts)}] if summary else []
    for m in evicted:
        role = "function" if m.kind == "result" else m.role
        seq.append({"role": role, "content": m.content})
    return [
        {"role": "system", "content": P.summary_system(words)},
        {"role": "user", "content": str(seq)},
    ]

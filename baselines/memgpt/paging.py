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


def upstream_role(m: FifoMessage) -> str:
    """The role MemGPT 0.2.6 gives this message: a function result is a ``function`` message there (the
    harness sends it as a user message, having no native function calling)."""
    return "function" if m.kind == "result" else m.role


def eviction_cut(
    fifo: list[FifoMessage], *, keep_last: int, fraction: float, summary_tokens: int | None = None
) -> int | None:
    """How many of the oldest FIFO messages to evict, by MemGPT 0.2.6's rule (``summarize_messages_inplace``).

    The messages after the system message are the previous summary message (when there is one:
    ``summary_tokens`` is its size) and the FIFO; the target is ``int(fraction × their tokens)``. Walking from
    the oldest, never into the last ``keep_last``, the cut stops at the message whose tokens take the running
    sum past the target, which is **kept**; when that message is a user message (a turn or an alert) the cut
    moves past it, once. The previous summary is always among what is summarised. None when the cut
    evicts no FIFO message."""
    seq_tokens = ([] if summary_tokens is None else [summary_tokens]) + [m.tokens for m in fifo]
    roles = (["user"] if summary_tokens is not None else []) + [upstream_role(m) for m in fifo]
    candidates = len(seq_tokens) - keep_last
    if candidates <= 0:
        return None
    target = int(sum(seq_tokens) * fraction)
    cut, acc = 0, 0
    for i in range(candidates):
        cut = i
        acc += seq_tokens[i]
        if acc > target:
            break
    if cut < len(roles) and roles[cut] == "user":
        cut += 1
    evicted_fifo = cut - (0 if summary_tokens is None else 1)
    return evicted_fifo if evicted_fifo > 0 else None


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

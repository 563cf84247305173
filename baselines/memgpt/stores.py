"""MemGPT's memory tiers outside the FIFO: core memory (editable blocks, always in context),
archival storage (agent-written, embedding search) and recall storage (every conversation message,
text search). Every stored item keeps the dia_ids it came from."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from baselines.lightmem.compress import STOP_WORDS
from memcore.text import count_tokens


class FunctionError(ValueError):
    """A function call the agent made with bad arguments; the message is returned to the agent."""


@dataclass
class CoreLine:
    text: str
    dia_ids: tuple[str, ...] = ()


@dataclass
class CoreMemory:
    """Named blocks of lines, each block at most ``char_limit`` characters (lines joined by newlines)."""

    char_limit: int
    blocks: dict[str, list[CoreLine]] = field(default_factory=dict)

    def block_name(self, name: str) -> str:
        for known in self.blocks:
            if known.lower() == str(name).strip().lower():
                return known
        raise FunctionError(f"unknown core memory block {name!r}; use one of: {', '.join(self.blocks)}")

    def chars(self, name: str) -> int:
        return len("\n".join(line.text for line in self.blocks[name]))

    def append(self, name: str, content: str, dia_ids: tuple[str, ...]) -> str:
        name = self.block_name(name)
        content = content.strip()
        if not content:
            raise FunctionError("content is empty")
        lines = self.blocks[name]
        new_len = self.chars(name) + len(content) + (1 if lines else 0)
        if new_len > self.char_limit:
            raise FunctionError(
                f"block {name} would hold {new_len} > {self.char_limit} characters; shorten it with core_memory_replace "
                "or store the detail with archival_memory_insert"
            )
        lines.append(CoreLine(content, dia_ids))
        return f"appended to {name} ({new_len}/{self.char_limit} characters)"

    def replace(self, name: str, old: str, new: str, dia_ids: tuple[str, ...]) -> str:
        name = self.block_name(name)
        if not old:
            raise FunctionError("old_content is empty; it must be text that appears exactly in the block")
        lines = self.blocks[name]
        for i, line in enumerate(lines):
            if old in line.text:
                text = line.text.replace(old, new.strip(), 1).strip()
                if not text:
                    del lines[i]
                else:
                    lines[i] = CoreLine(text, tuple(dict.fromkeys((*line.dia_ids, *dia_ids))))
                    if self.chars(name) > self.char_limit:
                        lines[i] = line
                        raise FunctionError(f"block {name} would exceed {self.char_limit} characters")
                return f"replaced in {name} ({self.chars(name)}/{self.char_limit} characters)"
        raise FunctionError(f"old_content not found in block {name}; it must match existing text exactly")

    def render(self) -> str:
        parts = ["[core memory]"]
        for name, lines in self.blocks.items():
            body = "\n".join(line.text for line in lines) or "(empty)"
            parts.append(f"<{name}>\n{body}\n</{name}>")
        return "\n".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "char_limit": self.char_limit,
            "blocks": {
                n: [{"text": ln.text, "dia_ids": list(ln.dia_ids)} for ln in lines] for n, lines in self.blocks.items()
            },
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> CoreMemory:
        blocks = {n: [CoreLine(x["text"], tuple(x["dia_ids"])) for x in lines] for n, lines in d["blocks"].items()}
        return cls(int(d["char_limit"]), blocks)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_passages(text: str, chunk_tokens: int, overlap_tokens: int) -> list[str]:
    """``archival_memory_insert``'s passages (MemGPT 0.2.6 splits the content with llama_index's sentence splitter
    at ``embedding_chunk_size`` tokens): the whole text when it fits ``chunk_tokens`` (or ``chunk_tokens`` is 0),
    else sentences packed into passages of at most ``chunk_tokens`` approximate tokens, each after the first
    starting with the previous one's last sentences up to ``overlap_tokens``; a sentence longer than a passage is
    split between words."""
    if chunk_tokens <= 0 or count_tokens(text) <= chunk_tokens:
        return [text]
    pieces: list[str] = []
    for sentence in _SENTENCE_END.split(text.strip()):
        if count_tokens(sentence) <= chunk_tokens:
            pieces.append(sentence)
            continue
        words: list[str] = []
        for word in sentence.split():
            if words and count_tokens(" ".join([*words, word])) > chunk_tokens:
                pieces.append(" ".join(words))
                words = []
            words.append(word)
        if words:
            pieces.append(" ".join(words))
    passages: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and count_tokens(" ".join([*current, piece])) > chunk_tokens:
            passages.append(" ".join(current))
            carried: list[str] = []
            for prev in reversed(current):
                if count_tokens(" ".join([prev, *carried, piece])) > chunk_tokens:
                    break
                if count_tokens(" ".join([prev, *carried])) > overlap_tokens:
                    break
                carried.insert(0, prev)
            current = carried
        current.append(piece)
    if current:
        passages.append(" ".join(current))
    return passages


@dataclass
class ArchivalEntry:
    entry_id: str
    content: str
    dia_ids: tuple[str, ...]
    timestamp: str


class ArchivalMemory:
    """Agent-written passages with embedding search (cosine, best first), paged."""

    def __init__(self) -> None:
        self.entries: list[ArchivalEntry] = []
        self.vectors: np.ndarray | None = None

    def insert(self, content: str, dia_ids: tuple[str, ...], timestamp: str, vector: np.ndarray) -> ArchivalEntry:
        entry = ArchivalEntry(f"arch{len(self.entries)}", content, dia_ids, timestamp)
        row = np.asarray(vector, dtype=np.float32).reshape(1, -1)
        self.vectors = row if self.vectors is None else np.vstack([self.vectors, row])
        self.entries.append(entry)
        return entry

    def search(
        self, query_vector: np.ndarray, page: int, page_size: int
    ) -> tuple[list[tuple[ArchivalEntry, float]], int]:
        """One page of hits and the total number of entries ranked."""
        if not self.entries or self.vectors is None:
            return [], 0
        scores = self.vectors @ np.asarray(query_vector, dtype=np.float32)
        order = sorted(range(len(self.entries)), key=lambda i: (-float(scores[i]), i))
        chosen = order[page * page_size : (page + 1) * page_size]
        return [(self.entries[i], float(scores[i])) for i in chosen], len(order)

    def to_json(self) -> list[dict[str, Any]]:
        """The entries (their vectors are saved apart, as one matrix)."""
        return [asdict(e) for e in self.entries]

    @classmethod
    def from_json(cls, rows: list[dict[str, Any]], vectors: np.ndarray) -> ArchivalMemory:
        """The archival memory of saved ``rows`` and their ``vectors`` (ignored when there are no rows)."""
        memory = cls()
        memory.entries = [ArchivalEntry(e["entry_id"], e["content"], tuple(e["dia_ids"]), e["timestamp"]) for e in rows]
        memory.vectors = vectors if len(memory.entries) else None
        return memory


@dataclass
class RecallMessage:
    """One message of the conversation log. A conversation turn has its speaker and dia_id; the agent's own
    messages (its inner monologue, ``speaker`` ``assistant``) and the user-role events (alerts, heartbeats) have
    a ``message_id`` of their own and the dia_id of the turn being processed (empty for an event)."""

    dia_id: str
    speaker: str
    text: str
    timestamp: str
    message_id: str = ""

    @property
    def note_id(self) -> str:
        return f"recall:{self.message_id or self.dia_id}"

    def render(self) -> str:
        return f"[{self.timestamp}] {self.speaker}: {self.text}"


_TOKEN_RE = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> list[str]:
    out = []
    for tok in _TOKEN_RE.findall(text.lower()):
        if tok in STOP_WORDS:
            continue
        out.append(tok[:-1] if len(tok) > 3 and tok.endswith("s") else tok)
    return out


class RecallMemory:
    """Every message MemGPT logs besides system and function messages: the conversation's turns, the agent's
    inner monologue and the user-role events (MemGPT 0.2.6 ``DummyRecallMemory.text_search``). ``substring`` search is MemGPT's case-insensitive string match
    (chronological); ``keyword`` ranks messages by the number of distinct query terms they contain
    (stop-words dropped, plural -s folded), ties in conversation order."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.messages: list[RecallMessage] = []
        self._terms: list[set[str]] = []

    def add(self, message: RecallMessage) -> None:
        self.messages.append(message)
        self._terms.append(set(_terms(f"{message.speaker} {message.text}")))

    def search(self, query: str, page: int, page_size: int) -> tuple[list[tuple[RecallMessage, float]], int]:
        if self.mode == "substring":
            q = query.strip().lower()
            hits = [(m, 1.0) for m in self.messages if q and q in f"{m.speaker}: {m.text}".lower()]
        else:
            terms = set(_terms(query))
            scored = [(len(terms & t), i) for i, t in enumerate(self._terms)]
            hits = [(self.messages[i], float(s)) for s, i in sorted(scored, key=lambda x: (-x[0], x[1])) if s > 0]
        return hits[page * page_size : (page + 1) * page_size], len(hits)

    def to_json(self) -> list[dict[str, Any]]:
        """The messages in conversation order (the search terms are rebuilt on load)."""
        return [asdict(m) for m in self.messages]

    @classmethod
    def from_json(cls, mode: str, rows: list[dict[str, Any]]) -> RecallMemory:
        """The recall memory of saved ``rows``, searched in ``mode``."""
        memory = cls(mode)
        for m in rows:
            memory.add(RecallMessage(**m))
        return memory

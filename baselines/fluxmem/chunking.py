"""FluxMem's semantic units as upstream builds them: ``FluxMemAgent.add_knowledge`` (zjunlp/LightMem
``src/fluxmem/agent.py`` at 8fc9a91) splits a text into chunks of at most 512 characters with no overlap and no
LLM call. A cut is a hard cut at the limit unless a boundary occurs in the last 30 % of the window: the first of
``SEPARATORS`` (in that order of preference) found there, at its last occurrence, ends the chunk just after it.
Chunks are stripped and empty ones dropped; a text that fits is one chunk, as is.

Here the text is one LoCoMo session, one ``Speaker: text`` line per turn (upstream publishes no LoCoMo driver,
so what text a conversation gives is ours); each chunk keeps the dia_ids of the turns it overlaps.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcore.types import Turn

#: Upstream's preference order: paragraph, line, then sentence ends (CJK and ASCII), then semicolons.
SEPARATORS: tuple[str, ...] = ("\n\n", "\n", "。", ".", "！", "!", "？", "?", "；", ";")
#: Boundaries are looked for from this share of the window on.
SEARCH_FROM = 0.7


def split_spans(text: str, size: int) -> list[tuple[int, int]]:
    """``(start, end)`` of every chunk of ``text`` (``text[start:end]`` is the chunk, already stripped)."""
    if not text:
        return []
    if len(text) <= size:
        return [(0, len(text))]
    spans: list[tuple[int, int]] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            lo = start + int(size * SEARCH_FROM)
            for sep in SEPARATORS:
                pos = text.rfind(sep, lo, end)
                if pos != -1:
                    end = pos + len(sep)
                    break
        a, b = start, end
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            spans.append((a, b))
        start = end
    return spans


def split_text(text: str, size: int) -> list[str]:
    """The chunks of ``text`` (upstream's ``_split_text``)."""
    return [text[a:b] for a, b in split_spans(text, size)]


def session_chunks(turns: Sequence[Turn], size: int) -> list[tuple[str, tuple[str, ...]]]:
    """``(chunk, dia_ids of the turns it overlaps)`` for one session's turns, in order."""
    lines = [t.render() for t in turns]
    text = "\n".join(lines)
    bounds: list[tuple[int, int]] = []
    pos = 0
    for line in lines:
        bounds.append((pos, pos + len(line)))
        pos += len(line) + 1
    out: list[tuple[str, tuple[str, ...]]] = []
    for a, b in split_spans(text, size):
        ids = tuple(t.dia_id for t, (s, e) in zip(turns, bounds) if s < b and a < e)
        out.append((text[a:b], ids))
    return out

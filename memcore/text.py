"""Text helpers shared by methods and metrics-independent bookkeeping."""

from __future__ import annotations

import re
from functools import lru_cache

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)


@lru_cache(maxsize=8192)
def count_tokens(text: str) -> int:
    """Approximate LLM token count: words and punctuation marks (tiktoken's files cannot be fetched
    offline). Used only for relative context sizes (budgets, stats), never for billing: billing uses
    the server's reported usage. Memoised: a turn's text is costed by every question that ranks it, and a
    packed context by the packer and again by the scorer."""
    return len(_TOKEN_RE.findall(text))


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """Keep the first ``max_tokens`` approximate tokens of ``text`` (cuts at a token boundary)."""
    if max_tokens <= 0:
        return ""
    for i, m in enumerate(_TOKEN_RE.finditer(text)):
        if i == max_tokens:
            return text[: m.start()].rstrip()
    return text

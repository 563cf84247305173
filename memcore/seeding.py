"""Per-purpose seeds derived from the run seed, so changing one purpose never shifts another."""

from __future__ import annotations

import hashlib


def derive_seed(base: int, *purpose: object) -> int:
    """A stable 31-bit seed for ``purpose`` (e.g. ("answer", item_id)) under run seed ``base``."""
    blob = "\x1f".join([str(base), *map(str, purpose)]).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "big") & 0x7FFFFFFF

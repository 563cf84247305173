"""Keep secrets out of everything written to disk."""

from __future__ import annotations

import re
from typing import Any

_SECRET_KEY_RE = re.compile(r"(api[_-]?key|token|secret|password)$", re.IGNORECASE)
_SECRET_VALUE_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,})")


def redact_config(obj: Any) -> Any:
    """Copy of a plain config tree with secret-looking values replaced by ``***``.

    Keys ending in api_key/token/secret/password are masked (``api_key_env`` names a variable and
    is kept); any ``sk-…`` string is masked wherever it appears."""
    if isinstance(obj, dict):
        return {k: ("***" if _SECRET_KEY_RE.search(str(k)) and v else redact_config(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_config(v) for v in obj]
    if isinstance(obj, str):
        return _SECRET_VALUE_RE.sub("***", obj)
    return obj

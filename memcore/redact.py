"""Keep secrets out of everything written to disk."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

#: A key-like name: ``api_key``, ``*_key``, ``token``, ``password``, ``secret`` (and ``*_token`` …), any case.
#: ``api_key_env`` names an environment variable and is not one.
_SECRET_KEY_RE = re.compile(r"(?:^|_)(?:api_?key|key|token|secret|password)$", re.IGNORECASE)
_SECRET_VALUE_RE = re.compile(r"\b(sk-[A-Za-z0-9_\-]{8,})")
#: An override on the command line: optional ``+``/``++``/``~`` prefix, a dotted key, ``=``, the value.
_OVERRIDE_RE = re.compile(r"^[+~]*(?P<key>[A-Za-z0-9_.\-/@]+)=(?P<value>.*)$", re.DOTALL)
_PLAIN_NUMBER_RE = re.compile(r"[+-]?\d+(?:\.\d*)?")


def is_secret(name: str, value: Any) -> bool:
    """Whether ``value`` under the key ``name`` (its last dotted part is checked) is a secret: a key-like name whose
    value is set and not a number or boolean (``method.k_key: 10`` counts keywords)."""
    if not _SECRET_KEY_RE.search(str(name).rsplit(".", 1)[-1]):
        return False
    if value is None or isinstance(value, bool | int | float):
        return False
    return not (
        isinstance(value, str) and (value in ("", "null", "true", "false") or _PLAIN_NUMBER_RE.fullmatch(value))
    )


def secret_overrides(argv: Sequence[str]) -> list[str]:
    """The keys of the command-line overrides in ``argv`` whose value :func:`is_secret` or holds an ``sk-…`` string
    (flags are skipped)."""
    found = []
    for arg in argv:
        m = _OVERRIDE_RE.match(arg) if not arg.startswith("-") else None
        if m and (is_secret(m["key"], m["value"]) or _SECRET_VALUE_RE.search(m["value"])):
            found.append(m["key"])
    return found


def redact_config(obj: Any) -> Any:
    """Copy of a plain config tree with secret values (:func:`is_secret`) replaced by ``***``; any ``sk-…``
    string is masked wherever it appears."""
    if isinstance(obj, dict):
        return {k: ("***" if is_secret(str(k), v) and v else redact_config(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [redact_config(v) for v in obj]
    if isinstance(obj, str):
        return _SECRET_VALUE_RE.sub("***", obj)
    return obj

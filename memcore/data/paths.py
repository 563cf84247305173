"""Where the LoCoMo file and the audit overlay live on this machine.

Order for the data file: explicit config value → ``$MEMCORE_DATA`` → ``../shared/data/locomo/locomo10.json``
next to the repository (found from this package's location, then from the working directory) →
the default download location of ``scripts/get_locomo.py`` → :class:`DataError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from memcore.data.download import LOCOMO_URL, default_locomo_destination
from memcore.data.errors import DataError

LOCOMO_FILENAME = "locomo10.json"
AUDIT_FILENAME = "errors.json"
AUDIT_URL = "https://github.com/dial481/locomo-audit (file errors.json)"


def repo_root() -> Path:
    """The repository holding this package (parent of ``memcore/``)."""
    return Path(__file__).resolve().parents[2]


def _shared_candidates(rel: Sequence[str], bases: Sequence[Path] | None) -> list[Path]:
    """``<base>/../shared/data/<rel>`` for the repo root and the working directory (or ``bases``)."""
    if bases is None:
        bases = [repo_root(), Path.cwd()]
    out: list[Path] = []
    for base in bases:
        p = base.resolve().parent.joinpath("shared", "data", *rel)
        if p not in out:
            out.append(p)
    return out


def _file_or_dir(value: str, names: Sequence[Sequence[str]]) -> Path | None:
    """``value`` itself when it is a file; else the first ``value/<name>`` that is a file."""
    p = Path(value).expanduser()
    if p.is_file():
        return p
    if p.is_dir():
        for parts in names:
            q = p.joinpath(*parts)
            if q.is_file():
                return q
    return None


def resolve_locomo_path(
    explicit: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    bases: Sequence[Path] | None = None,
) -> Path:
    """Path of locomo10.json, or :class:`DataError` saying where it looked and how to get the file.

    ``explicit`` (``dataset.path``) and ``$MEMCORE_DATA`` may name the file or a directory holding
    ``locomo10.json`` or ``locomo/locomo10.json``; when set but wrong they fail rather than fall through.
    ``env`` and ``bases`` (directories whose ``../shared`` is searched) default to the real environment,
    the repository root and the working directory.
    """
    env = os.environ if env is None else env
    names = [(LOCOMO_FILENAME,), ("locomo", LOCOMO_FILENAME)]
    get_hint = f"Run `python scripts/get_locomo.py` (downloads {LOCOMO_URL}) and export the MEMCORE_DATA it prints."
    if explicit:
        found = _file_or_dir(str(explicit), names)
        if found is None:
            raise DataError(
                f"dataset.path {str(explicit)!r} is neither {LOCOMO_FILENAME} nor a folder holding it", hint=get_hint
            )
        return found
    from_env = env.get("MEMCORE_DATA")
    if from_env:
        found = _file_or_dir(from_env, names)
        if found is None:
            raise DataError(
                f"MEMCORE_DATA={from_env!r} is neither {LOCOMO_FILENAME} nor a folder holding it", hint=get_hint
            )
        return found
    candidates = [*_shared_candidates(("locomo", LOCOMO_FILENAME), bases), default_locomo_destination(env)]
    for p in candidates:
        if p.is_file():
            return p
    raise DataError(
        f"{LOCOMO_FILENAME} not found; looked in dataset.path (unset), $MEMCORE_DATA (unset), "
        + ", ".join(str(p) for p in candidates),
        hint=get_hint,
    )


def resolve_audit_path(
    explicit: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    bases: Sequence[Path] | None = None,
) -> Path:
    """Path of the locomo-audit ``errors.json``: explicit → ``$MEMCORE_AUDIT`` → ``../shared/data/locomo-audit/``."""
    env = os.environ if env is None else env
    names = [(AUDIT_FILENAME,), ("locomo-audit", AUDIT_FILENAME)]
    hint = f"Get {AUDIT_URL} and set MEMCORE_AUDIT to the file (or pass it explicitly)."
    if explicit:
        found = _file_or_dir(str(explicit), names)
        if found is None:
            raise DataError(
                f"audit path {str(explicit)!r} is neither {AUDIT_FILENAME} nor a folder holding it", hint=hint
            )
        return found
    from_env = env.get("MEMCORE_AUDIT")
    if from_env:
        found = _file_or_dir(from_env, names)
        if found is None:
            raise DataError(
                f"MEMCORE_AUDIT={from_env!r} is neither {AUDIT_FILENAME} nor a folder holding it", hint=hint
            )
        return found
    candidates = _shared_candidates(("locomo-audit", AUDIT_FILENAME), bases)
    for p in candidates:
        if p.is_file():
            return p
    raise DataError(
        f"{AUDIT_FILENAME} not found; looked in the explicit path (unset), $MEMCORE_AUDIT (unset), "
        + ", ".join(str(p) for p in candidates),
        hint=hint,
    )

"""Where the published answer files live on this machine: ``$MEMCORE_PUBLISHED``, else
``../shared/data/published/`` next to the repository (or the working directory). They are never committed."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.paths import shared_candidates

ENV_VAR = "MEMCORE_PUBLISHED"
HINT = "Fetch them with `python scripts/get_published.py all --dest DIR` and set MEMCORE_PUBLISHED=DIR."


def published_dir(
    explicit: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    bases: Sequence[Path] | None = None,
) -> Path:
    """The published data dir: ``explicit`` → ``$MEMCORE_PUBLISHED`` → ``../shared/data/published``; a named dir
    that does not exist, or none found, is a :class:`DataError` saying where it looked."""
    env = os.environ if env is None else env
    named = explicit or env.get(ENV_VAR)
    if named:
        p = Path(named).expanduser()
        if not p.is_dir():
            which = "the given directory" if explicit else f"{ENV_VAR}"
            raise DataError(f"{which} {str(named)!r} is not a directory", hint=HINT)
        return p
    candidates = shared_candidates(("published",), bases)
    for p in candidates:
        if p.is_dir():
            return p
    raise DataError(
        f"published answer files not found; looked in ${ENV_VAR} (unset), " + ", ".join(map(str, candidates)),
        hint=HINT,
    )

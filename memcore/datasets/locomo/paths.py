"""Where the LoCoMo file and the audit overlay live on this machine.

Order for the data file: explicit config value (``dataset.path``) → ``$MEMCORE_DATA`` →
``../shared/data/locomo/locomo10.json`` next to the repository (found from the package's location, then from the
working directory) → the default download location of ``scripts/get_locomo.py`` → :class:`DataError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from memcore.datasets.locomo.download import LOCOMO_URL, default_locomo_destination
from memcore.datasets.paths import find_data_file

LOCOMO_FILENAME = "locomo10.json"
AUDIT_FILENAME = "errors.json"
AUDIT_URL = "https://github.com/dial481/locomo-audit (file errors.json)"


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
    return find_data_file(
        explicit,
        filename=LOCOMO_FILENAME,
        names=[(LOCOMO_FILENAME,), ("locomo", LOCOMO_FILENAME)],
        env_var="MEMCORE_DATA",
        shared=("locomo", LOCOMO_FILENAME),
        explicit_key="dataset.path",
        hint=f"Run `python scripts/get_locomo.py` (downloads {LOCOMO_URL}) and export the MEMCORE_DATA it prints.",
        env=env,
        bases=bases,
        defaults=[default_locomo_destination(env)],
    )


def resolve_audit_path(
    explicit: str | os.PathLike[str] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    bases: Sequence[Path] | None = None,
) -> Path:
    """Path of the locomo-audit ``errors.json``: explicit → ``$MEMCORE_AUDIT`` → ``../shared/data/locomo-audit/``."""
    return find_data_file(
        explicit,
        filename=AUDIT_FILENAME,
        names=[(AUDIT_FILENAME,), ("locomo-audit", AUDIT_FILENAME)],
        env_var="MEMCORE_AUDIT",
        shared=("locomo-audit", AUDIT_FILENAME),
        explicit_key="audit path",
        hint=f"Get {AUDIT_URL} and set MEMCORE_AUDIT to the file (or pass it explicitly).",
        env=env,
        bases=bases,
    )

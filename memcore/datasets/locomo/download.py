"""Fetch the official locomo10.json, verify its sha256, write it atomically."""

from __future__ import annotations

import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.paths import memcore_home, sha256_file

LOCOMO_URL = "https://raw.githubusercontent.com/snap-research/locomo/main/data/locomo10.json"
LOCOMO_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
LOCOMO_SIZE = 2_805_274

_CHUNK = 1 << 20


def default_locomo_destination(env: Mapping[str, str] | None = None) -> Path:
    """Where ``scripts/get_locomo.py`` puts the file by default: ``$MEMCORE_HOME/data/locomo10.json``."""
    return memcore_home(env) / "data" / "locomo10.json"


def verify_locomo(path: Path, expected_sha256: str = LOCOMO_SHA256) -> str:
    """Return the file's sha256; raise :class:`DataError` when it is missing or differs from ``expected_sha256``."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise DataError("file not found", path=path, hint="Download it with `python scripts/get_locomo.py`.")
    digest = sha256_file(path)
    if digest != expected_sha256:
        raise DataError(
            f"sha256 is {digest}, expected {expected_sha256} (the official locomo10.json)",
            path=path,
            hint="Re-download it with `python scripts/get_locomo.py --force`.",
        )
    return digest


def download_locomo(
    dest: Path | None = None,
    *,
    url: str = LOCOMO_URL,
    expected_sha256: str = LOCOMO_SHA256,
    force: bool = False,
    timeout: float = 60.0,
) -> Path:
    """Download ``url`` to ``dest`` (default :func:`default_locomo_destination`) and verify it.

    An existing file with the right sha256 is kept unless ``force``. The download goes to a temporary
    file next to ``dest`` and replaces ``dest`` only after the sha256 matches; on a mismatch or a network
    error the temporary file is deleted and :class:`DataError` is raised, leaving ``dest`` as it was.
    """
    dest = Path(dest).expanduser() if dest is not None else default_locomo_destination()
    if not force and dest.is_file() and sha256_file(dest) == expected_sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as resp:
                    while chunk := resp.read(_CHUNK):
                        h.update(chunk)
                        out.write(chunk)
            except (urllib.error.URLError, OSError) as exc:
                raise DataError(
                    f"download of {url} failed: {exc}",
                    path=dest,
                    hint=f"Check the network, or download {url} by hand and set MEMCORE_DATA to the file.",
                ) from exc
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != expected_sha256:
            raise DataError(
                f"downloaded file from {url} has sha256 {digest}, expected {expected_sha256}; it was deleted",
                path=dest,
                hint="Retry later; if it persists the upstream file changed — report it.",
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return dest

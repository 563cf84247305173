"""Fetch a LongMemEval release file from its Hugging Face dataset, check its sha256 against the one the hub
publishes for it (its LFS object id) where the network allows, and write it atomically."""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.paths import sha256_file

REPO_URL = "https://huggingface.co/datasets/xiaowu0162/longmemeval-cleaned/resolve/main/"
#: The release's files (``--file`` of ``scripts/get_longmemeval.py``).
FILES: tuple[str, ...] = ("longmemeval_s_cleaned.json", "longmemeval_m_cleaned.json", "longmemeval_oracle.json")
DEFAULT_FILE = FILES[0]
_CHUNK = 1 << 20
_TIMEOUT = 60


def published_sha256(url: str) -> str | None:
    """The sha256 the hub publishes for ``url`` (``X-Linked-ETag`` of an LFS file); None when it gives none."""
    req = urllib.request.Request(url, method="HEAD")
    try:
        with urllib.request.urlopen(req, timeout=_TIMEOUT) as resp:
            etag = resp.headers.get("X-Linked-ETag") or ""
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(f"cannot reach {url}: {exc}", hint="Check the network, or download the file by hand.") from None
    etag = etag.strip().strip('"')
    return etag if len(etag) == 64 and all(c in "0123456789abcdef" for c in etag) else None


def download(
    name: str, dest: Path, *, expected_sha256: str | None = None, base_url: str = REPO_URL
) -> tuple[Path, str]:
    """Download release file ``name`` to ``dest``; returns the path and how its sha256 was checked. The expected
    sha256 is ``expected_sha256`` or the hub's; a mismatch removes the download and raises :class:`DataError`."""
    if name not in FILES:
        raise DataError(f"unknown release file {name!r}; use one of {', '.join(FILES)}", hint=None)
    url = base_url + name
    expected = expected_sha256 or published_sha256(url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{name}.")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=_TIMEOUT) as resp:
            while chunk := resp.read(_CHUNK):
                out.write(chunk)
        got = sha256_file(Path(tmp))
        if expected is not None and got != expected:
            raise DataError(f"sha256 {got} of the download is not the published {expected}", path=url, hint=None)
        os.replace(tmp, dest)
    except (urllib.error.URLError, OSError) as exc:
        raise DataError(
            f"cannot download {url}: {exc}", hint="Check the network, or download the file by hand."
        ) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    checked = f"sha256 {got} verified" if expected is not None else f"sha256 {got} (the hub published none to check)"
    return dest, checked

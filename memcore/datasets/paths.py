"""Where a dataset's files live on this machine: the search order every dataset's ``locate`` shares.

Order: an explicit value (a config key) → an environment variable → ``../shared/data/<rel>`` next to the
repository (found from this package's location, then from the working directory) → further defaults (e.g. a
download location) → :class:`DataError` saying where it looked and how to get the file.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from memcore.datasets.errors import DataError

_READ_CHUNK = 1 << 20


def memcore_home(env: Mapping[str, str] | None = None) -> Path:
    """``$MEMCORE_HOME`` or ``~/.cache/memcore``: where downloads go by default."""
    env = os.environ if env is None else env
    home = env.get("MEMCORE_HOME")
    return Path(home).expanduser() if home else Path.home() / ".cache" / "memcore"


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_READ_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def report_fetched(
    fetched: Iterable[tuple[Path, str]], variable: str, *, exported: Path | None = None, error_code: int
) -> int:
    """The tail every download script shares: each file ``fetched`` yields, with how it was checked, is said on
    stderr as it comes (``ok: FILE HOW``); a :class:`DataError` while fetching is one ``error:`` line and
    ``error_code``; then the line that points the harness at the data, ``export VARIABLE=…`` on stdout (for
    ``exported``, default the last file). Returns the exit code."""
    last: Path | None = None
    try:
        for last, how in fetched:
            print(f"ok: {last} {how}", file=sys.stderr)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return error_code
    target = exported if exported is not None else last
    if target is None:
        raise ValueError("report_fetched: nothing was fetched and nothing is exported")
    print(f"export {variable}={shlex.quote(str(target))}")
    return 0


def repo_root() -> Path:
    """The repository holding this package (parent of ``memcore/``)."""
    return Path(__file__).resolve().parents[2]


def shared_candidates(rel: Sequence[str], bases: Sequence[Path] | None = None) -> list[Path]:
    """``<base>/../shared/data/<rel>`` for the repo root and the working directory (or ``bases``)."""
    if bases is None:
        bases = [repo_root(), Path.cwd()]
    out: list[Path] = []
    for base in bases:
        p = base.resolve().parent.joinpath("shared", "data", *rel)
        if p not in out:
            out.append(p)
    return out


def file_or_dir(value: str, names: Sequence[Sequence[str]]) -> Path | None:
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


def find_data_file(
    explicit: str | os.PathLike[str] | None,
    *,
    filename: str,
    names: Sequence[Sequence[str]],
    env_var: str,
    shared: Sequence[str],
    explicit_key: str,
    hint: str,
    env: Mapping[str, str] | None = None,
    bases: Sequence[Path] | None = None,
    defaults: Sequence[Path] = (),
) -> Path:
    """The file ``filename``: ``explicit`` (config key ``explicit_key``) → ``$env_var`` → ``../shared/data/<shared>``
    → ``defaults`` → :class:`DataError` listing where it looked, with ``hint``.

    ``explicit`` and ``$env_var`` may name the file or a directory holding one of ``names``; when set but wrong
    they fail rather than fall through. ``env`` and ``bases`` (directories whose ``../shared`` is searched)
    default to the real environment, the repository root and the working directory.
    """
    env = os.environ if env is None else env
    if explicit:
        found = file_or_dir(str(explicit), names)
        if found is None:
            raise DataError(
                f"{explicit_key} {str(explicit)!r} is neither {filename} nor a folder holding it", hint=hint
            )
        return found
    from_env = env.get(env_var)
    if from_env:
        found = file_or_dir(from_env, names)
        if found is None:
            raise DataError(f"{env_var}={from_env!r} is neither {filename} nor a folder holding it", hint=hint)
        return found
    candidates = [*shared_candidates(shared, bases), *defaults]
    for p in candidates:
        if p.is_file():
            return p
    raise DataError(
        f"{filename} not found; looked in {explicit_key} (unset), ${env_var} (unset), "
        + ", ".join(str(p) for p in candidates),
        hint=hint,
    )

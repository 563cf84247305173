"""Build llama-cpp-python's wheel from its pinned PyPI sdist, compiling only the libraries the package loads.

``python scripts/build_llama_wheel.py --out DIR`` downloads the sdist with pip (``--no-binary`` for it alone), checks
its sha256 against the pin below, unpacks it, makes the one build-time edit described next, and builds the
wheel into ``DIR`` with ``pip wheel`` (``CMAKE_ARGS`` from the environment is passed on unchanged, as when pip
builds the package by name). ``--sdist FILE`` uses an sdist already downloaded (its sha256 is still checked).

The edit. llama-cpp-python's ``CMakeLists.txt`` forces ``LLAMA_BUILD_COMMON ON`` (a CMake ``FORCE``, so
``CMAKE_ARGS`` cannot turn it off). llama.cpp's ``common`` library (argument parsing, chat templates, JSON
schemas; with cpp-httplib, 53 of the 127 objects of an AVX-512 build, among its slowest to compile) is then
built and installed beside the package, but the Python package never loads it: it loads ``libllama`` (which
links ``libggml``) and, for image chat formats only, ``libmtmd``, which the Makefile does not build. The edit
turns that one line to ``OFF``, the value the same file already sets for its WebAssembly build. With ``common``
off, llama.cpp also skips its tools, examples, tests, server and cpp-httplib (all of them need ``common``); the
kernels (``ggml-cpu``) and ``libllama`` are compiled from the same sources with the same flags. The edit is
checked: a sdist whose file does not contain the forced line exactly once is refused, so a new version needs
this script read again.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path, PurePosixPath

PACKAGE = "llama-cpp-python"
#: version -> sha256 of its sdist on PyPI (llama_cpp_python-<version>.tar.gz)
SDIST_SHA256 = {"0.3.36": "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"}
FORCED_COMMON = 'set(LLAMA_BUILD_COMMON ON CACHE BOOL "Build llama.cpp common library" FORCE)'
UNFORCED_COMMON = 'set(LLAMA_BUILD_COMMON OFF CACHE BOOL "Build llama.cpp common library" FORCE)'


class BuildError(RuntimeError):
    """A step failed; the message says which and what to do."""


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file (stdlib only: this runs before the project's own package is installed)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def check_sdist(path: Path, expected: str) -> None:
    """Raise BuildError unless ``path`` has the pinned sha256 ``expected``."""
    got = sha256_of(path)
    if got != expected:
        raise BuildError(f"{path.name} has sha256 {got}, expected {expected}; delete it and download it again")


def without_common(cmakelists: str) -> str:
    """llama-cpp-python's top-level ``CMakeLists.txt`` text with its forced ``LLAMA_BUILD_COMMON ON`` set to OFF.

    Pure. Raises BuildError unless the forced line occurs exactly once (another version of the file)."""
    found = cmakelists.count(FORCED_COMMON)
    if found != 1:
        raise BuildError(
            f"{PACKAGE}'s CMakeLists.txt forces LLAMA_BUILD_COMMON ON {found} times, expected once: "
            "this sdist is not the one scripts/build_llama_wheel.py was written for; check the edit by hand"
        )
    return cmakelists.replace(FORCED_COMMON, UNFORCED_COMMON)


def download_sdist(pip: list[str], version: str, dest: Path) -> Path:
    """Download the sdist of ``version`` into ``dest`` with pip and return its path."""
    cmd = [*pip, "download", f"{PACKAGE}=={version}", "--no-binary", PACKAGE, "--no-deps", "--no-cache-dir"]
    subprocess.run([*cmd, "--quiet", "--dest", str(dest)], check=True)
    found = sorted(dest.glob(f"llama_cpp_python-{version}.tar.gz"))
    if not found:
        raise BuildError(f"pip download left no llama_cpp_python-{version}.tar.gz in {dest}")
    return found[0]


def unsafe_members(members: list[tarfile.TarInfo]) -> list[str]:
    """Names of archive members that are not plain files or directories inside the archive's own tree (absolute
    paths, ``..`` parts, links, devices). Pure; an sdist has none."""
    bad = []
    for m in members:
        parts = PurePosixPath(m.name).parts
        if PurePosixPath(m.name).is_absolute() or ".." in parts or not (m.isfile() or m.isdir()):
            bad.append(m.name)
    return bad


def unpack(sdist: Path, dest: Path) -> Path:
    """Unpack ``sdist`` into the new directory ``dest`` and return the source directory, the archive's single
    top-level directory. Archives with :func:`unsafe_members` are refused before anything is written."""
    dest.mkdir()
    with tarfile.open(sdist) as tar:
        bad = unsafe_members(tar.getmembers())
        if bad:
            raise BuildError(f"{sdist.name} has {len(bad)} members outside a plain source tree, e.g. {bad[0]!r}")
        # Python >= 3.11.4 filters too (the project allows 3.11.0, whose extractall has no filter argument)
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    tops = list(dest.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise BuildError(f"{sdist.name} unpacked into {len(tops)} top-level entries, expected one source directory")
    return tops[0]


def build_wheel(pip: list[str], source: Path, out: Path) -> Path:
    """``pip wheel`` the edited source into ``out`` (environment, hence ``CMAKE_ARGS``, passed on); the wheel."""
    before = set(out.glob("*.whl")) if out.is_dir() else set()
    cmd = [*pip, "wheel", "--no-deps", "--no-cache-dir", "--wheel-dir", str(out), str(source)]
    subprocess.run(cmd, check=True)
    new = sorted(set(out.glob("llama_cpp_python-*.whl")) - before)
    if len(new) != 1:
        raise BuildError(f"pip wheel left {len(new)} new llama_cpp_python wheels in {out}, expected one")
    return new[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="directory the wheel is written to")
    ap.add_argument("--version", default="0.3.36", help=f"{PACKAGE} version (pinned: {', '.join(SDIST_SHA256)})")
    ap.add_argument("--sdist", type=Path, default=None, help="an sdist already downloaded (default: pip download)")
    ap.add_argument("--work", type=Path, default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args(argv)
    expected = SDIST_SHA256.get(args.version)
    if expected is None:
        print(
            f"error: no pinned sha256 for {PACKAGE} {args.version} (pinned: {', '.join(SDIST_SHA256)}); "
            "add it to SDIST_SHA256 in scripts/build_llama_wheel.py after checking the edit against its sdist",
            file=sys.stderr,
        )
        return 2
    if args.sdist is not None and not args.sdist.is_file():
        print(f"error: --sdist {args.sdist} is not a file; pass a downloaded sdist or leave it out", file=sys.stderr)
        return 2
    pip = [sys.executable, "-m", "pip"]
    try:
        with tempfile.TemporaryDirectory(prefix="llama-wheel-", dir=args.work) as tmp:
            work = Path(tmp)
            sdist = args.sdist or download_sdist(pip, args.version, work)
            check_sdist(sdist, expected)
            source = unpack(sdist, work / "src")
            cmakelists = source / "CMakeLists.txt"
            cmakelists.write_text(without_common(cmakelists.read_text()))
            print(f"{PACKAGE} {args.version}: sdist sha256 checked; building without llama.cpp's common library")
            wheel = build_wheel(pip, source, args.out)
    except BuildError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(
            f"error: {' '.join(map(str, exc.cmd[:4]))} … exited with {exc.returncode} (its output is above)",
            file=sys.stderr,
        )
        return 1
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())

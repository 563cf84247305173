"""A temporary copy of the repository for the extension tests: a new method, metric or dataset is added to the
copy as its folder and yaml only, and ``memcore-run`` / ``memcore-report`` run from the copy, so a test proves that
nothing else had to be edited."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support import CHILD_OF_TEST, REPO

#: What the copy holds: the code and configs the harness runs from (no results, caches or virtualenv).
COPIED = ("memcore", "baselines", "configs", "experiments", "scripts", "pyproject.toml")


def copy_tree(dest: Path) -> Path:
    """A copy of the repository's tracked code and configs under ``dest`` (returned)."""
    tracked = subprocess.run(
        ["git", "ls-files", "-z", *COPIED], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for rel in filter(None, tracked):
        src = REPO / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)
    return dest


def write(tree: Path, rel: str, text: str) -> Path:
    """Add one file to the copy (its folders created)."""
    path = tree / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def edited_files(tree: Path, added: Sequence[str]) -> list[str]:
    """Files of the copy that differ from the repository, other than ``added``: what an extension had to edit."""
    changed = []
    for path in sorted(p for p in tree.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(tree).as_posix()
        if rel in added or rel.startswith("results/"):
            continue
        original = REPO / rel
        if not original.is_file() or original.read_bytes() != path.read_bytes():
            changed.append(rel)
    return changed


def run_module(tree: Path, module: str, args: Sequence[str], timeout: float = 600) -> subprocess.CompletedProcess:
    """``python -m module args`` with the copy first on ``sys.path`` and as the working directory."""
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMCORE_RESULTS": str(tree / "results")}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        **CHILD_OF_TEST,
    )

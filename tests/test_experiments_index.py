"""``experiments/README.md`` names every script under ``experiments/`` (and only those), and every committed result it
says a script made is in the tree."""

from __future__ import annotations

import itertools
import re

from tests.support import REPO

EXPERIMENTS = REPO / "experiments"
INDEX = EXPERIMENTS / "README.md"
#: Package markers and entry shims: not scripts of their own.
NOT_SCRIPTS = ("__init__.py", "__main__.py")


def _scripts() -> set[str]:
    """Every script under experiments/, by its path relative to the folder."""
    found = itertools.chain(EXPERIMENTS.rglob("*.py"), EXPERIMENTS.rglob("*.sh"))
    return {p.relative_to(EXPERIMENTS).as_posix() for p in found if p.name not in NOT_SCRIPTS}


def _named(text: str) -> set[str]:
    """The scripts the index names: each table row's first cell (its section says the folder), plus the modules
    the rehearsal row lists."""
    named: set[str] = set()
    folder = ""
    for line in text.splitlines():
        heading = re.match(r"## `(\w+)/`", line)
        if heading:
            folder = heading.group(1) + "/"
        elif line.startswith("## "):
            folder = ""
        cell = re.match(r"\| `([\w/]+\.(?:py|sh))`", line)
        if cell:
            named.add(folder + cell.group(1))
        if line.startswith("| `rehearsal/`"):
            named |= {f"rehearsal/{m}" for m in re.findall(r"`(\w+\.py)`", line.split("|")[1])}
    return named


def _expand(path: str) -> list[str]:
    """``a/{x,y}.json`` → ``a/x.json``, ``a/y.json`` (one brace group at a time)."""
    m = re.search(r"\{([^{}]+)\}", path)
    if m is None:
        return [path]
    return [q for alt in m.group(1).split(",") for q in _expand(path[: m.start()] + alt + path[m.end() :])]


def test_the_index_names_every_script_and_only_those() -> None:
    named = _named(INDEX.read_text(encoding="utf-8"))
    assert sorted(_scripts() - named) == [], "experiments/README.md must name every script (one line each)"
    assert sorted(named - _scripts()) == [], "experiments/README.md names scripts that are not in the tree"


def test_every_committed_result_the_index_names_is_in_the_tree() -> None:
    paths = re.findall(r"(?:results|tests/data)/[\w./{},*<>-]+", INDEX.read_text(encoding="utf-8"))
    concrete = [q.rstrip(".,") for p in paths if "*" not in p and "<" not in p for q in _expand(p)]
    missing = sorted({p for p in concrete if not (REPO / p).exists() and not p.endswith("README.md")})
    allowed = {"results/measured/llm_ablation_k5/runs", "results/measured/local_compare/runs"}  # a rerun writes them
    assert sorted(set(missing) - allowed) == []
    assert concrete, "the index names no committed result"

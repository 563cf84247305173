"""The project's own modules are imported at the top of a module; one imported inside a function is there because
import time demands it (an optional extra, a heavy dependency, a cycle to break) and a comment on the import, or on
the line above it, says which."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from tests.support import REPO

#: Where the rule holds: the library, the baselines, the experiment scripts and the tests.
CHECKED = ("memcore", "baselines", "experiments", "tests")
#: Top-level packages that are this project's own.
OWN = frozenset({"memcore", "baselines", "experiments", "tests"})


def _is_own(node: ast.Import | ast.ImportFrom) -> bool:
    if isinstance(node, ast.ImportFrom):
        return node.level > 0 or (node.module or "").split(".")[0] in OWN
    return any(alias.name.split(".")[0] in OWN for alias in node.names)


def unexplained_imports(source: str) -> Iterator[int]:
    """Line numbers of the function-level imports of the project's own modules in ``source`` with no comment on
    their first line and no comment line right above."""
    lines = source.splitlines()
    for fn in ast.walk(ast.parse(source)):
        if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Import | ast.ImportFrom) and _is_own(node):
                here, above = lines[node.lineno - 1], lines[node.lineno - 2] if node.lineno > 1 else ""
                if "#" not in here and not above.strip().startswith("#"):
                    yield node.lineno


def _offenders() -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for top in CHECKED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            lines = sorted(set(unexplained_imports(path.read_text())))
            if lines:
                found[rel] = lines
    return found


def test_the_check_tells_an_explained_import_from_a_bare_one() -> None:
    source = (
        "import json\n\n"
        "def f():\n"
        "    from memcore.types import Turn\n"
        "    import numpy\n"
        "    # mem0ai is an optional extra\n"
        "    from baselines.mem0 import bridge\n"
        "    from memcore.llm import stack  # breaks the backbone <-> stack cycle\n"
        "    from . import sibling\n"
    )
    assert list(unexplained_imports(source)) == [4, 9]


def test_every_function_level_import_of_our_modules_says_why() -> None:
    offenders = _offenders()
    assert not offenders, "import at the top, or say why not in a comment:\n" + "\n".join(
        f"{f}:{','.join(map(str, lines))}" for f, lines in sorted(offenders.items())
    )

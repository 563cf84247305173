"""The import graph of the ``memcore`` package has no cycle, function-level imports included, and the core value
types load without the evaluation package.

The graph is read from the source (every ``import`` / ``from ... import`` of a ``memcore`` module, at any depth
of a module's code), so a cycle closed only inside a function, which Python tolerates at run time, fails here
too. An edge goes to the module that is imported (``from memcore.eval import scoring`` names the submodule
``memcore.eval.scoring``); a package's own ``__init__`` is not counted as imported by its submodules."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from tests.support import REPO

PACKAGE = "memcore"


def module_names(root: Path) -> dict[str, Path]:
    """Dotted module name -> source file for every module of :data:`PACKAGE` under ``root``."""
    out: dict[str, Path] = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported_modules(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules ``path`` (module ``name``) imports anywhere in its code."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import memcore.eval.scoring as s`` names the module itself
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph(root: Path) -> dict[str, set[str]]:
    modules = module_names(root)
    known = set(modules)
    return {name: imported_modules(path, name, known) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_checker_finds_a_cycle_closed_inside_a_function(tmp_path: Path) -> None:
    pkg = tmp_path / PACKAGE
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from memcore.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from memcore import a\n    return a\n")
    (pkg / "c.py").write_text("from . import a\n")
    graph = import_graph(tmp_path)
    assert graph["memcore.b"] == {"memcore.a"} and graph["memcore.c"] == {"memcore.a"}
    assert cycles(graph) == [["memcore.a", "memcore.b"]]


def test_memcore_has_no_import_cycle() -> None:
    found = cycles(import_graph(REPO))
    assert found == [], "import cycles among memcore modules: " + "; ".join(" <-> ".join(c) for c in found)


def test_the_value_types_load_without_the_evaluation_package() -> None:
    code = "import sys, memcore.types; print(sorted(m for m in sys.modules if m.startswith('memcore.eval')))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_shared_packing_imports_no_methods_memory() -> None:
    """``memcore.packing`` (the fill rule, the turn cues and frames) is shared by every method: a method's own packer
    sits with its memory and imports it, never the other way round."""
    graph = import_graph(REPO)
    up = {
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m.startswith("memcore.packing")
        for t in targets
        if t.startswith(("memcore.memory", "memcore.pipeline", "memcore.runner"))
    }
    assert up == set()


def test_the_harness_core_imports_no_dataset_folder() -> None:
    """A benchmark is one folder: the core (eval, metrics, packing, pipeline, report, view) reaches a dataset, its
    protocols and its judges through the registries, never by importing the dataset's package."""
    graph = import_graph(REPO)
    core = ("memcore.eval", "memcore.metrics", "memcore.packing", "memcore.pipeline", "memcore.report", "memcore.view")
    folders = tuple(f"memcore.datasets.{p.parent.name}" for p in (REPO / "memcore" / "datasets").glob("*/__init__.py"))
    assert {"memcore.datasets.locomo", "memcore.datasets.longmemeval"} <= set(folders)
    down = {f"{m} -> {t}" for m, ts in graph.items() if m.startswith(core) for t in ts if t.startswith(folders)}
    assert down == set()


def test_the_commands_stand_above_the_harness() -> None:
    """``memcore.commands`` holds the console commands: they import the harness, and nothing of the harness imports
    them (a helper two commands share goes into ``commands/shared.py`` or down into the harness)."""
    graph = import_graph(REPO)
    up = {
        f"{m} -> {t}"
        for m, targets in graph.items()
        if not m.startswith("memcore.commands")
        for t in targets
        if t.startswith("memcore.commands")
    }
    assert up == set()

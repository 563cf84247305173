"""Name → plugin registries with "did you mean" errors.

One :class:`Registry` class serves every plugin kind; each registry lives beside what it registers:

- methods: :data:`memcore.methods.METHODS` (entries declared by each method package, imported on first use);
- backbone and embedder kinds: :data:`memcore.llm.factory.BACKBONE_KINDS` / ``EMBEDDER_KINDS``;
- datasets: :data:`memcore.datasets.registry.DATASETS`;
- protocols: :data:`memcore.eval.protocols.PROTOCOLS`;
- metrics: :data:`memcore.metrics.METRICS` (one module per metric under ``memcore/metrics/``, found by scanning);
- judge presets: :data:`memcore.eval.judge.JUDGE_PRESETS`.

Datasets, protocols, metrics and judge presets are declared by the dataset packages under ``memcore/datasets/``
in literals of their ``__init__.py`` (``DATASETS``, ``PROTOCOLS``, ``METRICS``, ``JUDGES``), and by installed
packages under an entry-point group; :func:`discover_declared` is the one loader that reads both.

An entry is either the object itself or a lazy ``"module:attribute"`` reference, imported the first time the
name is looked up (so an optional extra such as mem0ai loads only when its method runs).
"""

from __future__ import annotations

import ast
import difflib
import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name no registry entry has; the message lists the known names."""

    def __str__(self) -> str:  # KeyError quotes its argument; we want plain text
        return str(self.args[0])


class _Lazy:
    """A ``module:attribute`` reference, resolved on first lookup."""

    def __init__(self, target: str) -> None:
        if ":" not in target:
            raise ValueError(f"lazy registry entry {target!r} is not of the form 'module:attribute'")
        self.target = target

    def resolve(self) -> Any:
        module, attr = self.target.split(":", 1)
        return getattr(importlib.import_module(module), attr)


class Registry(Generic[T]):
    """A small name → object map; ``get`` fails with the known names and close matches.

    ``check`` (optional) validates an object when it is first resolved (e.g. that a lazy entry is a MethodSpec);
    ``loader`` (optional) fills the registry on first use (e.g. discovery of method packages)."""

    def __init__(
        self,
        kind: str,
        *,
        check: Callable[[str, Any], None] | None = None,
        loader: Callable[[Registry[T]], None] | None = None,
    ) -> None:
        self.kind = kind
        self._items: dict[str, T | _Lazy] = {}
        self._check = check
        self._loader = loader
        self._loading = False
        self._load_lock = threading.RLock()

    def _load(self) -> None:
        """Run the loader once. Threads that look a name up while another fills the registry wait for it: a
        registry seen half-filled would call a known name unknown. The loader's own lookups (same thread) pass."""
        if self._loader is None:
            return
        with self._load_lock:
            loader = self._loader
            if loader is None or self._loading:
                return
            self._loading = True
            try:
                loader(self)
            finally:
                self._loading = False
            self._loader = None

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator: ``@registry.register("rag_dense")``."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def add(self, name: str, obj: T) -> None:
        if name in self._items and self._items[name] is not obj:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = obj

    def add_lazy(self, name: str, target: str) -> None:
        """Register ``"module:attribute"`` under ``name``; it is imported when ``name`` is first looked up."""
        current = self._items.get(name)
        if current is not None and not (isinstance(current, _Lazy) and current.target == target):
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._items[name] = _Lazy(target)

    def get(self, name: str) -> T:
        self._load()
        try:
            obj = self._items[name]
        except KeyError:
            raise UnknownNameError(self.unknown(name)) from None
        if isinstance(obj, _Lazy):
            resolved = obj.resolve()
            if self._check is not None:
                self._check(obj.target, resolved)
            self._items[name] = obj = resolved
        return obj  # type: ignore[return-value]

    def unknown(self, name: str) -> str:
        """The one-line "unknown <kind>" message for ``name`` (close matches first, then every known name)."""
        return unknown_name_message(self.kind, str(name), self.names())

    def names(self) -> list[str]:
        self._load()
        return sorted(self._items)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


def unknown_name_message(kind: str, name: str, known: list[str]) -> str:
    """One-line error text for an unknown name, with close matches first."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = f" Did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown {kind} {name!r}.{hint} Known: {', '.join(known) or '(none)'}."


def declared_literal(path: Path, literal: str) -> dict[str, str]:
    """The module-level dict literal ``literal`` (name → ``"module:OBJECT"``) of the Python file at ``path``, read
    from its source without importing it ({} when it declares none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id == literal:
            declared = ast.literal_eval(value)
            if not isinstance(declared, dict):
                raise TypeError(f"{path}: {literal} must be a dict literal of name -> 'module:OBJECT'")
            return {str(k): str(v) for k, v in declared.items()}
    return {}


def declared_in_folder(folder: Path, literal: str) -> dict[str, str]:
    """Every ``literal`` declaration of the packages directly under ``folder`` (their ``__init__.py``), merged in
    folder order: how a dataset package registers its datasets, protocols and metrics."""
    out: dict[str, str] = {}
    for init in sorted(folder.glob("*/__init__.py")):
        out.update(declared_literal(init, literal))
    return out


def instance_check(cls: type, name: str) -> Callable[[str, Any], None]:
    """A registry ``check`` refusing an entry that is not a ``cls`` (``"<module:OBJECT> is not <name>"``, ``name``
    with its article)."""

    def check(target: str, obj: Any) -> None:
        if not isinstance(obj, cls):
            raise TypeError(f"{target} is not {name}")

    return check


#: The folder whose packages declare datasets, protocols, metrics and judge presets in their ``__init__.py``.
DATASET_PACKAGES = Path(__file__).resolve().parent / "datasets"


def discover_declared(literal: str, group: str, *, folder: Path = DATASET_PACKAGES) -> Callable[[Registry[Any]], None]:
    """A registry loader that adds, as lazy entries, every ``literal`` declaration of the packages directly under
    ``folder`` (their ``__init__.py``, in folder order), then every entry point of the group ``group`` (how a package outside
    the repository adds one). A name declared twice with different targets raises ValueError when it runs."""

    def load(registry: Registry[Any]) -> None:
        for init in sorted(folder.glob("*/__init__.py")):  # package by package: two declaring one name is an error
            for name, target in declared_literal(init, literal).items():
                registry.add_lazy(name, target)
        for ep in importlib.metadata.entry_points(group=group):
            registry.add_lazy(ep.name, ep.value)

    return load

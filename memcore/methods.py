"""Method registry: name → MethodSpec, declared by each method package and imported lazily.

A method package (``memcore/memory/`` for MemCoRe, ``baselines/<name>/`` or ``baselines/<name>.py`` for the
others) declares its methods in a module-level literal ``METHODS = {"<name>": "<module>:<SPEC>", ...}``. The
declarations are read from the source (no import), so listing the methods is cheap and optional extras
(mem0ai, …) load only when their method runs. An installed package declares methods outside the repository as
entry points of the group :data:`ENTRY_POINT_GROUP` (``name = "pkg.module:SPEC"``). Adding a method touches its
package and its ``configs/method/<name>.yaml``, nothing here: everything the harness needs to know about a
method is on its :class:`~memcore.interfaces.MethodSpec`.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import importlib.util
from collections.abc import Iterator
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from memcore.interfaces import MethodSpec, RunSummary
from memcore.registry import Registry

#: Where method packages live (package → file patterns inside it): MemCoRe's own package and every module or
#: package under ``baselines/``.
METHOD_SOURCES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("memcore.memory", ("__init__.py",)),
    ("baselines", ("*.py", "*/__init__.py")),
)


def declared_methods(path: Path) -> dict[str, str]:
    """The ``METHODS`` literal of the module at ``path`` ({} when it declares none)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(node, ast.AnnAssign):
            target = node.target
        if isinstance(target, ast.Name) and target.id == "METHODS" and node.value is not None:  # type: ignore[union-attr]
            value = ast.literal_eval(node.value)  # type: ignore[union-attr,arg-type]
            if not isinstance(value, dict):
                raise TypeError(f"{path}: METHODS must be a dict literal of name -> 'module:SPEC'")
            return {str(k): str(v) for k, v in value.items()}
    return {}


def _package_dirs(package: str) -> list[Path]:
    """The directories of ``package`` without importing it."""
    spec = importlib.util.find_spec(package)
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec is not None else []


#: The entry-point group under which installed packages declare methods (``name = "pkg.module:SPEC"``).
ENTRY_POINT_GROUP = "memcore.methods"


def entry_point_methods() -> dict[str, str]:
    """name → ``"module:SPEC"`` of every method an installed distribution declares under :data:`ENTRY_POINT_GROUP`."""
    return {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _discover(registry: Registry[MethodSpec]) -> None:
    for package, patterns in METHOD_SOURCES:
        for directory in _package_dirs(package):
            for path in sorted(p for pattern in patterns for p in directory.glob(pattern)):
                for name, target in declared_methods(path).items():
                    registry.add_lazy(name, target)
    for name, target in entry_point_methods().items():
        registry.add_lazy(name, target)  # a name the repository already declares elsewhere is an error


def _check_spec(target: str, obj: object) -> None:
    if not isinstance(obj, MethodSpec):
        raise TypeError(f"{target} is not a MethodSpec")


METHODS: Registry[MethodSpec] = Registry("method", check=_check_spec, loader=_discover)


def method_names() -> list[str]:
    return METHODS.names()


def get_method(name: str) -> MethodSpec:
    """The spec registered under ``name``; unknown names get a did-you-mean error."""
    return METHODS.get(name)


def find_method(name: str) -> MethodSpec | None:
    """The spec registered under ``name``, or None when no method is (a recorded run's method since removed,
    or a label that names no method): for readers of recorded runs, which must not fail on such a run."""
    return METHODS.get(name) if name in METHODS else None


def method_run_summary(name: str) -> RunSummary | None:
    """The :class:`~memcore.interfaces.RunSummary` method ``name`` names (None: it names none, or the method is no
    longer registered), imported on first use."""
    spec = find_method(name)
    if spec is None or not spec.run_summary:
        return None
    module, _, attr = spec.run_summary.partition(":")
    return getattr(importlib.import_module(module), attr)


def method_specs() -> Iterator[MethodSpec]:
    """Every registered spec, by name (each is imported)."""
    return (METHODS.get(name) for name in METHODS.names())


def run_uses_llm(cfg: DictConfig) -> bool:
    """True when a run of ``cfg`` calls the chat backbone: it answers or judges, or its method's build or
    retrieval uses the LLM (``MethodSpec.ingest_uses_llm`` / ``retrieve_uses_llm`` for its config and ablation).
    A run that calls none is retrieval-only on a backbone it never uses: it is filed and titled without one."""
    ev = cfg.get("eval") or {}
    if bool(ev.get("answer", True)) or bool(ev.get("judge", False)):
        return True
    spec = get_method(str(cfg.method.name))
    method_cfg = OmegaConf.to_container(cfg.method, resolve=True)
    ablation = OmegaConf.to_container(cfg.ablation, resolve=True) if cfg.get("ablation") is not None else {}
    assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
    return bool(spec.ingest_uses_llm(method_cfg, ablation) or spec.retrieve_uses_llm(method_cfg, ablation))


#: The run-dir (and table-title) name of the backbone of a run that calls no LLM.
NO_BACKBONE = "none"


def backbone_label(cfg: DictConfig) -> str:
    """``backbone.name``, or :data:`NO_BACKBONE` when the run calls no LLM (:func:`run_uses_llm`)."""
    return str(cfg.backbone.name) if run_uses_llm(cfg) else NO_BACKBONE

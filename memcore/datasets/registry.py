"""Dataset registry: ``dataset.kind`` → :class:`~memcore.datasets.spec.DatasetSpec`, found without a central list.

A dataset package ``memcore/datasets/<kind>/`` declares its datasets in its ``__init__.py`` as a module-level
literal ``DATASETS = {"<kind>": "<module>:<SPEC>"}`` (and its protocols as ``PROTOCOLS``, which
:mod:`memcore.eval.protocols` reads the same way); the literal is read from the source (no import), so a
dataset's loader is imported only when a run uses it. A package outside the repository registers the same
``"<module>:<SPEC>"`` under the ``memcore.datasets`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memcore.datasets.spec import DatasetSpec
from memcore.registry import Registry, declared_literal, discover_declared, instance_check

#: ``dataset.kind`` when a config names none (runs made before the key existed are LoCoMo runs).
DEFAULT_DATASET_KIND = "locomo"
#: The entry-point group through which an installed package adds datasets.
ENTRY_POINT_GROUP = "memcore.datasets"


def declared_datasets(path: Path, literal: str = "DATASETS") -> dict[str, str]:
    """The ``DATASETS`` (or another ``literal``'s) dict of the module at ``path`` ({} when it declares none)."""
    return declared_literal(path, literal)


DATASETS: Registry[DatasetSpec] = Registry(
    "dataset kind",
    check=instance_check(DatasetSpec, "a DatasetSpec"),
    loader=discover_declared("DATASETS", ENTRY_POINT_GROUP),
)


def get_dataset(kind: str) -> DatasetSpec:
    """The spec registered under ``kind``; an unknown kind raises ``UnknownNameError`` (did you mean …)."""
    spec = DATASETS.get(kind)
    if spec.kind != kind:
        raise ValueError(f"dataset kind {kind!r} is registered with a spec of kind {spec.kind!r}")
    return spec


def dataset_kind(dataset: Mapping[str, Any] | Any) -> str:
    """``dataset.kind`` of a dataset config (a mapping or an attribute object), :data:`DEFAULT_DATASET_KIND`
    when unset (a run made before the key existed)."""
    kind = dataset.get("kind") if hasattr(dataset, "get") else getattr(dataset, "kind", None)
    return str(kind) if kind else DEFAULT_DATASET_KIND


def dataset_of(dataset: Mapping[str, Any] | Any) -> DatasetSpec:
    """The spec of a dataset config's kind (see :func:`dataset_kind`)."""
    return get_dataset(dataset_kind(dataset))

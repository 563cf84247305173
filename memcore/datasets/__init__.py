"""Datasets: one package per dataset under ``memcore/datasets/<kind>/``, selected by ``dataset.kind``.

:mod:`memcore.datasets.spec` says what a dataset declares; :mod:`memcore.datasets.registry` finds them.
"""

from memcore.datasets.registry import DATASETS, DEFAULT_DATASET_KIND, dataset_kind, dataset_of, get_dataset
from memcore.datasets.spec import AuditOverlay, CategoryInfo, DatasetCategories, DatasetFile, DatasetSpec

__all__ = [
    "DATASETS",
    "DEFAULT_DATASET_KIND",
    "AuditOverlay",
    "CategoryInfo",
    "DatasetCategories",
    "DatasetFile",
    "DatasetSpec",
    "dataset_kind",
    "dataset_of",
    "get_dataset",
]

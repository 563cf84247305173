"""The harness's generic data layer: the slice a run evaluates (``slice.load_slice``, through the dataset
registry of :mod:`memcore.datasets`), the generic cuts (``slices.select``), file-location helpers and the one
data error. Each dataset's own loader lives in its package under ``memcore/datasets/``."""

from memcore.data.errors import DataError
from memcore.data.slices import select

__all__ = ["DataError", "select"]

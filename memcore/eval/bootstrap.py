"""Cluster-bootstrap confidence intervals over conversations.

QA items of one conversation share a memory and are not independent, so we resample whole
conversations (with replacement) and recompute the item-weighted overall of a metric. Items are lines of a run's
item log, read through their typed accessors (:class:`~memcore.itemlog.LoggedItem`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memcore.itemlog import LoggedItem
from memcore.metrics import get_metric
from memcore.registry import UnknownNameError


def metric_value(item: LoggedItem, metric: str) -> float | None:
    """The item's value of the registered metric ``metric`` (its name, or its aggregate's key: ``hit_rate`` is
    ``hit``), read as the metric declares (:meth:`memcore.metrics.Metric.value`); an unknown name raises
    ValueError with close matches."""
    try:
        return get_metric(metric).value(item)
    except UnknownNameError as exc:
        raise ValueError(f"{exc} (bootstrap)") from None


def bootstrap_ci(
    items: Sequence[LoggedItem],
    metric: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    categories: Sequence[int] | None = None,
) -> tuple[float, float]:
    """Percentile ``(low, high)`` interval of the item-weighted mean of ``metric`` over ``categories`` (None:
    every item).

    Items without a value for ``metric`` (e.g. recall of items without evidence) are skipped; each
    resample draws as many clusters (conversations, ``item.conv_id``) as there are, with replacement.
    Deterministic for a given ``seed``.
    """
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}.")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
    wanted = None if categories is None else {int(c) for c in categories}
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for it in items:
        if wanted is not None and it.category not in wanted:
            continue
        key = it.conv_id
        if not key:
            raise ValueError(f"item {it.get('item_id', '?')} has no conv_id to cluster on.")
        value = metric_value(it, metric)
        sums.setdefault(key, 0.0)
        counts.setdefault(key, 0)
        if value is not None:
            sums[key] += value
            counts[key] += 1
    if not counts or sum(counts.values()) == 0:
        raise ValueError(f"no item carries a value for {metric!r}; cannot bootstrap.")
    keys = sorted(counts)
    s = np.array([sums[k] for k in keys], dtype=float)
    c = np.array([counts[k] for k in keys], dtype=float)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(keys), size=(n_boot, len(keys)))
    num = s[draws].sum(axis=1)
    den = c[draws].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = num / den
    stats = stats[np.isfinite(stats)]
    low, high = np.percentile(stats, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(low), float(high)


def paired_delta_ci(
    items: Sequence[LoggedItem],
    reference: Sequence[LoggedItem],
    metric: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    alpha: float = 0.05,
    categories: Sequence[int] | None = None,
) -> tuple[float, float, float, int] | None:
    """``(delta, low, high, n)``: the mean per-item difference of ``metric`` (``items`` minus ``reference``, paired
    by ``item_id``) over the ``n`` items of ``categories`` (None: every item) with a value in both, and its percentile interval from
    resampling those items with replacement; None when no item pairs.

    Items, not conversations, are resampled: an ablation is usually measured on a slice of one or two
    conversations, where a conversation-level interval collapses to a point. Pairing removes what the two runs
    share per item, but items of one conversation are not independent, so the interval is narrower than a
    conversation-level one would be on many conversations. Deterministic for a given ``seed``, whatever the order
    of ``items``."""
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}.")
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}.")
    wanted = None if categories is None else {int(c) for c in categories}
    ref = {r.item_id: metric_value(r, metric) for r in reference if wanted is None or r.category in wanted}
    diffs: dict[str, float] = {}
    for it in items:
        if wanted is not None and it.category not in wanted:
            continue
        a, b = metric_value(it, metric), ref.get(it.item_id)
        if a is not None and b is not None:
            diffs[it.item_id] = a - b
    if not diffs:
        return None
    d = np.asarray([diffs[k] for k in sorted(diffs)], dtype=float)  # item order, so file order does not matter
    draws = np.random.default_rng(seed).integers(0, len(d), size=(n_boot, len(d)))
    low, high = np.percentile(d[draws].mean(axis=1), [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return float(d.mean()), float(low), float(high), len(d)

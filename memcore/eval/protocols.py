"""The protocol registry: ``protocol.name`` → :class:`~memcore.datasets.protocol.EvalProtocol`, found without a
central list.

A dataset package declares its protocols in its ``__init__.py`` as a module-level literal
``PROTOCOLS = {"<name>": "<module>:<OBJECT>"}`` (read from the source, imported on first lookup, as
:mod:`memcore.datasets.registry` reads ``DATASETS``); a package outside the repository registers the same
``"<module>:<OBJECT>"`` under the ``memcore.protocols`` entry-point group. The runner resolves the run's
protocol once (:func:`get_protocol`) and hands the object to the answerer, the scorer, the judge and
aggregation; none of them looks it up again or branches on a protocol's name.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from memcore.datasets.protocol import EvalProtocol, strip_answer_label
from memcore.metrics import STANDARD_METRICS, Metric, resolve_metrics
from memcore.registry import Registry, discover_declared, instance_check

#: The entry-point group through which an installed package adds protocols.
ENTRY_POINT_GROUP = "memcore.protocols"


PROTOCOLS: Registry[EvalProtocol] = Registry(
    "protocol",
    check=instance_check(EvalProtocol, "an EvalProtocol"),
    loader=discover_declared("PROTOCOLS", ENTRY_POINT_GROUP),
)


def get_protocol(name: str) -> EvalProtocol:
    """The protocol named ``name``: resolved once per run (or per stored run a report reads); unknown names raise
    ValueError naming the known ones."""
    if name not in PROTOCOLS:
        raise ValueError(PROTOCOLS.unknown(str(name)))
    return PROTOCOLS.get(name)


def recorded_protocol(name: str) -> EvalProtocol | None:
    """The protocol a stored run recorded as ``name`` (None for a name no longer registered, e.g. an old run's)."""
    return PROTOCOLS.get(name) if name in PROTOCOLS else None


def protocol_notes(name: str, categories: Collection[str] = ()) -> tuple[str, ...]:
    """The table notes of the protocol a stored run recorded as ``name`` (none for an unknown name);
    ``categories``: the category ids the table shows (see :meth:`EvalProtocol.table_notes`)."""
    protocol = recorded_protocol(name)
    return () if protocol is None else protocol.table_notes(categories)


def run_metrics_of(protocol: EvalProtocol | None, extra: Sequence[str] = ()) -> tuple[Metric, ...]:
    """The metrics a run scores: its protocol's (the standard ones for an unknown protocol) and then the
    registered metrics named in ``eval.metrics`` (``extra``), without repeats."""
    names = protocol.metrics if protocol is not None else STANDARD_METRICS
    return resolve_metrics([*names, *extra])


__all__ = [
    "PROTOCOLS",
    "EvalProtocol",
    "get_protocol",
    "protocol_notes",
    "recorded_protocol",
    "run_metrics_of",
    "strip_answer_label",
]

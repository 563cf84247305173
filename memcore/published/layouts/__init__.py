"""The registry of published-file layouts: one module per layout, each defining ``LAYOUT`` (a
:class:`~memcore.published.records.Layout`), imported on first lookup. An unknown name fails with the known ones
and close matches. What each layout holds and how its records map to items: ``docs/published.md``."""

from __future__ import annotations

from memcore.published.records import Layout
from memcore.registry import Registry


def _check(target: str, obj: object) -> None:
    if not isinstance(obj, Layout):
        raise TypeError(f"{target} is not a memcore.published.records.Layout")


def _load(registry: Registry[Layout]) -> None:
    for name, module in (
        ("zep", "zep"),
        ("dial481", "dial481"),
        ("memobase", "memobase"),
        ("mem0-pr", "mem0_pr"),
        ("backboard", "backboard"),
        ("jsonl", "jsonl"),
    ):
        registry.add_lazy(name, f"{__name__}.{module}:LAYOUT")


LAYOUTS: Registry[Layout] = Registry("layout", check=_check, loader=_load)


def get_layout(name: str) -> Layout:
    """The layout registered as ``name``; :class:`memcore.registry.UnknownNameError` (did you mean …) otherwise."""
    return LAYOUTS.get(name)

"""Saving report figures: matplotlib on the Agg backend (no display), each figure as PNG and PDF."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

DPI = 150


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend. Imported on first use: matplotlib is slow to import and only the
    figure-drawing paths of a report need it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, out_dir: Path, stem: str, extra_artists: Sequence[Any] = ()) -> list[Path]:
    """Write ``fig`` as ``<stem>.png`` and ``<stem>.pdf`` under ``out_dir`` (created) and close it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{stem}.png", out_dir / f"{stem}.pdf"]
    # bbox_extra_artists replaces matplotlib's default list (suptitle, figure legends): pass both.
    artists = [*fig.get_default_bbox_extra_artists(), *extra_artists]
    for path in paths:
        fig.savefig(path, dpi=DPI, bbox_inches="tight", bbox_extra_artists=artists)
    pyplot().close(fig)
    return paths

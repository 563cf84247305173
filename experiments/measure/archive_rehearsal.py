"""Commit a finished rehearsal as a rehearsal work dir under ``results/measured/<name>/``.

    python -m experiments.measure.archive_rehearsal <results>/<scale> rehearsal_full [--slim]

``<results>/<scale>`` is the dir ``python -m experiments.rehearsal --results <results>`` wrote (``summary.json``,
``summary.md``, ``root/runs``). Its summary is copied with the results path replaced by ``<results>`` (and paths
inside this repository made relative to it), its runs
are packed by ``memcore-archive`` (``--root``: their paths become ``<root>``) and verified (every metric recomputed
from the archived items), so ``tests/test_committed_results.py`` can recompute the rehearsal's checks from the
archive alone. Exit 1 when a run does not re-derive, 2 when the work dir is not a finished rehearsal.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from memcore.commands.archive import main as memcore_archive

REPO = Path(__file__).resolve().parents[2]
MEASURED = REPO / "results" / "measured"


def archive(work: Path, name: str, *, slim: bool = False, measured: Path = MEASURED) -> int:
    """Pack ``work`` (a rehearsal's ``<results>/<scale>``) into ``<measured>/<name>`` (replacing what is there);
    the exit status of the verification."""
    summary = work / "summary.json"
    if not summary.is_file() or not (work / "root" / "runs").is_dir():
        print(f"error: {work} is not a finished rehearsal (no summary.json or root/runs)", file=sys.stderr)
        return 2
    out = measured / name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    results = str(work.resolve().parent)
    for f in ("summary.json", "summary.md"):
        if (work / f).is_file():
            text = (work / f).read_text().replace(results, "<results>")
            (out / f).write_text(text.replace(f"{REPO}/", ""))  # --estimate-from etc. inside the repository

    runs = out / "root" / "runs"
    packed = memcore_archive(
        [str(work / "root" / "runs"), "--root", str(work / "root"), "--out", str(runs), *(["--slim"] if slim else [])]
    )
    return packed or memcore_archive(["--verify", str(runs)])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("work", type=Path, help="the rehearsal's <results>/<scale> dir")
    p.add_argument("name", help="the folder under results/measured/ (e.g. rehearsal_full)")
    p.add_argument("--slim", action="store_true", help="leave out item fields no metric or table reads")
    args = p.parse_args(argv)
    return archive(args.work, args.name, slim=args.slim)


if __name__ == "__main__":
    raise SystemExit(main())

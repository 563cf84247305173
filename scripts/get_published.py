#!/usr/bin/env python3
"""Fetch published per-question LoCoMo answer files from their public repositories at the pinned commits, check each
file's sha256 and print the MEMCORE_PUBLISHED line. The files are never committed to this repository.

python scripts/get_published.py zep                     # → $MEMCORE_PUBLISHED or ../shared/data/published/zep/…
python scripts/get_published.py all --dest DIR          # every known file
python scripts/get_published.py backboard --from DIR    # copy from a local copy instead (checked the same way)
python scripts/get_published.py --list                  # names, repositories, commits, files
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

try:
    from memcore.datasets.paths import report_fetched
    from memcore.published.sources import SOURCES, fetch_source
except ModuleNotFoundError:  # run from a checkout before `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from memcore.datasets.paths import report_fetched
    from memcore.published.sources import SOURCES, fetch_source

#: Where the files go by default: $MEMCORE_PUBLISHED when set, else ../shared/data/published next to the repository.
DEFAULT_DEST = Path(
    os.environ.get("MEMCORE_PUBLISHED") or Path(__file__).resolve().parents[1].parent / "shared" / "data" / "published"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="*", help="published file names (see --list), or 'all'")
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="the published data dir to fill")
    ap.add_argument("--from", dest="from_dir", type=Path, default=None, help="a local copy to read instead of GitHub")
    ap.add_argument("--force", action="store_true", help="fetch even when a verified copy exists")
    ap.add_argument("--list", action="store_true", help="list the known files and exit")
    args = ap.parse_args(argv)
    if args.list:
        for name in SOURCES.names():
            src = SOURCES.get(name)
            print(f"{name}: {src.system}, layout {src.layout}, {src.source} ({src.licence})")
            for f in src.files:
                print(f"  {f.local} <- {f.repo_path} sha256 {f.sha256}")
        return 0
    if not args.names:
        print("error: name a published file (see --list) or 'all'", file=sys.stderr)
        return 2
    names = SOURCES.names() if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        print(f"error: {SOURCES.unknown(unknown[0])}", file=sys.stderr)
        return 2
    fetched = (
        (path, "(sha256 verified)")
        for name in names
        for path in fetch_source(SOURCES.get(name), args.dest, from_dir=args.from_dir, force=args.force)
    )
    return report_fetched(fetched, "MEMCORE_PUBLISHED", exported=args.dest.resolve(), error_code=1)


if __name__ == "__main__":
    sys.exit(main())

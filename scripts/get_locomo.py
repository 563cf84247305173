#!/usr/bin/env python3
"""Download the official LoCoMo file (locomo10.json), verify its sha256 and print the MEMCORE_DATA line.

python scripts/get_locomo.py                      # → $MEMCORE_HOME/data/locomo10.json (~/.cache/memcore/…)
python scripts/get_locomo.py --dest data/locomo10.json
python scripts/get_locomo.py --check FILE         # verify only, no download
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

try:
    from memcore.datasets.locomo.download import LOCOMO_SHA256, LOCOMO_URL, download_locomo, verify_locomo
    from memcore.datasets.paths import report_fetched
except ModuleNotFoundError:  # run from a checkout before `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from memcore.datasets.locomo.download import LOCOMO_SHA256, LOCOMO_URL, download_locomo, verify_locomo
    from memcore.datasets.paths import report_fetched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=Path, default=None, help="target file (default $MEMCORE_HOME/data/locomo10.json)")
    ap.add_argument("--check", type=Path, metavar="FILE", default=None, help="only verify FILE's sha256")
    ap.add_argument("--force", action="store_true", help="download even if a verified copy exists")
    ap.add_argument("--url", default=LOCOMO_URL, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    def fetched() -> Iterator[tuple[Path, str]]:
        if args.check is not None:
            verify_locomo(args.check)
            yield args.check.expanduser().resolve(), f"has the official sha256 {LOCOMO_SHA256}"
        else:
            yield download_locomo(args.dest, url=args.url, force=args.force).resolve(), "(sha256 verified)"

    return report_fetched(fetched(), "MEMCORE_DATA", error_code=1)


if __name__ == "__main__":
    sys.exit(main())

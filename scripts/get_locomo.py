#!/usr/bin/env python3
"""Download the official LoCoMo file (locomo10.json), verify its sha256 and print the MEMCORE_DATA line.

python scripts/get_locomo.py                      # → $MEMCORE_HOME/data/locomo10.json (~/.cache/memcore/…)
python scripts/get_locomo.py --dest data/locomo10.json
python scripts/get_locomo.py --check FILE         # verify only, no download
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

try:
    from memcore.datasets.errors import DataError
    from memcore.datasets.locomo.download import LOCOMO_SHA256, LOCOMO_URL, download_locomo, verify_locomo
except ModuleNotFoundError:  # run from a checkout before `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from memcore.datasets.errors import DataError
    from memcore.datasets.locomo.download import LOCOMO_SHA256, LOCOMO_URL, download_locomo, verify_locomo


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dest", type=Path, default=None, help="target file (default $MEMCORE_HOME/data/locomo10.json)")
    ap.add_argument("--check", type=Path, metavar="FILE", default=None, help="only verify FILE's sha256")
    ap.add_argument("--force", action="store_true", help="download even if a verified copy exists")
    ap.add_argument("--url", default=LOCOMO_URL, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    try:
        if args.check is not None:
            verify_locomo(args.check)
            path = args.check.expanduser().resolve()
            print(f"ok: {path} has the official sha256 {LOCOMO_SHA256}", file=sys.stderr)
        else:
            path = download_locomo(args.dest, url=args.url, force=args.force).resolve()
            print(f"ok: {path} (sha256 verified)", file=sys.stderr)
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"export MEMCORE_DATA={shlex.quote(str(path))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

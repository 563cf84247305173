#!/usr/bin/env python3
"""Download a LongMemEval release file, check its sha256 against the one the Hugging Face hub publishes for it
(or --sha256), and print the MEMCORE_LONGMEMEVAL line.

python scripts/get_longmemeval.py                                # longmemeval_s_cleaned.json → $MEMCORE_HOME/data/
python scripts/get_longmemeval.py --file longmemeval_oracle.json --dest data/longmemeval_oracle.json
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

try:
    from memcore.datasets.longmemeval.download import DEFAULT_FILE, FILES, download
    from memcore.datasets.paths import memcore_home, report_fetched
except ModuleNotFoundError:  # run from a checkout before `pip install -e .`
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from memcore.datasets.longmemeval.download import DEFAULT_FILE, FILES, download
    from memcore.datasets.paths import memcore_home, report_fetched


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--file", choices=FILES, default=DEFAULT_FILE, help="the release file (default %(default)s)")
    ap.add_argument("--dest", type=Path, default=None, help="target file (default $MEMCORE_HOME/data/<file>)")
    ap.add_argument("--sha256", default=None, help="the expected sha256 (default: the one the hub publishes)")
    args = ap.parse_args(argv)
    dest = args.dest if args.dest is not None else memcore_home() / "data" / args.file

    def fetched() -> Iterator[tuple[Path, str]]:
        path, checked = download(args.file, dest.expanduser(), expected_sha256=args.sha256)
        yield path.resolve(), f"({checked})"

    return report_fetched(fetched(), "MEMCORE_LONGMEMEVAL", error_code=2)


if __name__ == "__main__":
    sys.exit(main())

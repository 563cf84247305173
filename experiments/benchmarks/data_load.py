"""Time to load, validate and clean the LoCoMo file (``memcore.datasets.locomo.loader.load_locomo``), every run's first step.
Target: under 1.5 s on 2 cores (it was a timed unit test, which flaked on a busy machine).

    python -m experiments.benchmarks.data_load [--repeats 5]

Writes ``results/benchmarks/data_load.json``: each repeat's seconds, the median and the machine's load.
"""

from __future__ import annotations

import argparse
import statistics
import time

from experiments.benchmarks.common import write_result
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path

TARGET_S = 1.5


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    path = resolve_locomo_path(None)
    seconds = []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        load_locomo(path)
        seconds.append(round(time.perf_counter() - t0, 4))
    median = statistics.median(seconds)
    out = write_result(
        "data_load", {"seconds": seconds, "median_s": median, "target_s": TARGET_S, "met": median < TARGET_S}
    )
    print(f"load_locomo: median {median:.3f} s over {args.repeats} (target < {TARGET_S} s) -> {out}")


if __name__ == "__main__":
    main()

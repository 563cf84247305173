"""The paired tables of ``experiments/measure/baselines_local.sh``: which archived runs each table compares, under
which labels, written with ``experiments.measure.paired_runs``.

    python -m experiments.measure.baselines_local_pairs --runs <archive dir> --out <dir> [--pairs memgpt fluxmem]

``--runs`` is the archive the script writes (``results/measured/baselines_local/runs``); each run is found at
``<runs>/<experiment>/locomo-mini/local/amem/<method>/none``. A table whose two runs are not both archived is
reported and skipped; the exit code is 2 when any table could not be written.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from experiments.measure.paired_runs import main as paired_main

#: Where the script's runs sit below an experiment: the slice, the backbone and the QA protocol.
RUN_PREFIX = "locomo-mini/local/amem"


@dataclass(frozen=True)
class Pair:
    """One paired table: run ``a`` is the reference, the differences are ``b - a``. Runs are ``experiment/method``."""

    group: str
    table: str
    label_a: str
    run_a: str
    label_b: str
    run_b: str

    def run_dirs(self, runs: Path) -> tuple[Path, Path]:
        """The two run directories inside the archive ``runs``."""
        return runs / _run_path(self.run_a), runs / _run_path(self.run_b)

    def argv(self, runs: Path, out_dir: Path) -> list[str]:
        """The ``paired_runs`` arguments that write this table into ``out_dir``."""
        a, b = self.run_dirs(runs)
        labels = ["--label-a", self.label_a, "--label-b", self.label_b]
        return ["--a", str(a), "--b", str(b), *labels, "--out", str(out_dir / self.table)]


def _run_path(run: str) -> str:
    experiment, method = run.split("/")
    return f"{experiment}/{RUN_PREFIX}/{method}/none"


PAIRS: tuple[Pair, ...] = (
    Pair("memgpt", "memgpt.md", "full-window", "i38_local/memgpt-full-window", "paging", "i38_local/memgpt"),
    Pair(
        "memgpt",
        "memgpt_4096.md",
        "full-window",
        "i38_local/memgpt-full-window",
        "paging-4096",
        "i38_local_w4096/memgpt",
    ),
    Pair("lightmem", "lightmem.md", "before", "i38_lightmem_before/lightmem", "after", "i38_local/lightmem"),
    Pair("fluxmem", "fluxmem.md", "facts", "i38_local/fluxmem-facts", "chunks", "i38_local/fluxmem"),
)
GROUPS: tuple[str, ...] = tuple(dict.fromkeys(p.group for p in PAIRS))


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="baselines_local_pairs", description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=Path, required=True, help="the archive of the script's runs")
    p.add_argument("--out", type=Path, required=True, help="directory the tables are written to (created)")
    p.add_argument("--pairs", nargs="*", default=list(GROUPS), help=f"groups to write (default: {' '.join(GROUPS)})")
    args = p.parse_args(argv)
    unknown = sorted(set(args.pairs) - set(GROUPS))
    if unknown:
        print(f"error: unknown pair group {', '.join(unknown)}; known: {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot create the tables directory {args.out}: {exc.strerror}", file=sys.stderr)
        return 2
    status = 0
    for pair in (q for q in PAIRS if q.group in args.pairs):
        missing = [str(d) for d in pair.run_dirs(args.runs) if not (d / "metrics.json").is_file()]
        if missing:
            print(f"no table {pair.table}: a run of the pair is not archived ({', '.join(missing)})", file=sys.stderr)
            status = 2
            continue
        status = max(status, paired_main(pair.argv(args.runs, args.out)))
    return status


if __name__ == "__main__":
    raise SystemExit(main())

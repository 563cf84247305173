"""The packer's cues and frame simulated on a committed ranking: re-order a method's 2,000-token context and refill a
smaller budget, per split of conversations (no retrieval is run).

    python -m experiments.measure.cue_simulation [--run <run dir at 2,000 tokens>] [--tokens 500] [--grid]

The default run is the committed packed memcore-cheap at 2,000 tokens of results/measured/equal_tokens. Each
item's ``retrieved_dia_ids`` (rank order) are re-ranked by :func:`memcore.packing.turns.rerank` and filled by
:func:`memcore.packing.turns.fill_framed` at ``--tokens``; recall is reported on the dev conversations (the first five
of the file: conv-26/30/41/42/43) and on the other five. ``--grid`` searches the cue weights on dev only and
prints the best ten settings (the defaults of configs/method/memcore-cheap.yaml were taken from it).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Sequence
from pathlib import Path

from experiments.measure.splits import DEV
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.datasets.paths import repo_root
from memcore.itemlog import read_run_items
from memcore.packing.turns import Cues, TurnMeta, fill_framed, rerank

DEFAULT_RUN = Path("results/measured/equal_tokens/runs/eqtok_2000/locomo/local/amem/memcore-cheap/none")


def simulate(items: list[dict], data: dict, cues: Cues, frame: str, tokens: int) -> dict[str, float]:
    """Recall % per split ("dev", "test") after re-ranking and refilling every item."""
    out: dict[str, list[float]] = {"dev": [], "test": []}
    for it in items:
        meta, speakers, question = data[it["conv_id"]]
        order = rerank(it["retrieved_dia_ids"], question[it["qa_index"]], meta.get, speakers, cues)
        got = set(fill_framed(order, meta, tokens, frame).dia_ids)
        gold = set(it["evidence"])
        out["dev" if it["conv_id"] in DEV else "test"].append(len(gold & got) / len(gold))
    return {k: round(100 * sum(v) / len(v), 2) for k, v in out.items() if v}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="cue_simulation", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, default=DEFAULT_RUN)
    p.add_argument("--tokens", type=int, default=500)
    p.add_argument("--grid", action="store_true")
    p.add_argument("--data", default=None)
    args = p.parse_args(argv)
    if not args.run.is_absolute() and not args.run.exists():
        args.run = repo_root() / args.run
    try:
        dataset = load_locomo(resolve_locomo_path(args.data))
    except (DataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not (args.run / "metrics.json").is_file():
        print(f"error: {args.run} is not a finished run dir", file=sys.stderr)
        return 2
    data = {
        c.conv_id: (
            {t.dia_id: TurnMeta(t.dia_id, t.speaker, t.text, t.session_time_raw) for t in c.turns},
            [c.speaker_a, c.speaker_b],
            {q.index: q.question for q in c.qa},
        )
        for c in dataset.conversations
    }
    items = [it for it in read_run_items(args.run) if int(it["category"]) in (1, 2, 3, 4) and it.get("evidence")]
    rows = [
        ("line frame, no cue", Cues(), "line"),
        ("session frame", Cues(), "session"),
        ("session + speaker 1.0", Cues(speaker=1.0), "session"),
        ("session + date 1.0", Cues(date=1.0), "session"),
        ("session + filler 2", Cues(filler=2), "session"),
        ("session + neighbors 1", Cues(neighbors=1), "session"),
        ("session + date 1, filler 2, neighbors 1", Cues(date=1.0, filler=2, neighbors=1), "session"),
    ]
    for name, cues, frame in rows:
        print(f"{name}: {simulate(items, data, cues, frame, args.tokens)}")
    if args.grid:
        dev = [it for it in items if it["conv_id"] in DEV]
        found = []
        for s, d, f, n in itertools.product((0, 0.1, 0.3, 0.5, 1), (0, 0.3, 1), (0, 2), (0, 1, 2)):
            cues = Cues(speaker=s, date=d, filler=f, neighbors=n)
            found.append((simulate(dev, data, cues, "session", args.tokens)["dev"], s, d, f, n))
        for r, s, d, f, n in sorted(found, reverse=True)[:10]:
            print(f"dev {r:.2f}: speaker {s} date {d} filler {f} neighbors {n}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Why gold turns are still missed at a budget, counted on every item: each missed gold turn (categories 1-4) of
memcore-cheap's default, at each budget, in exactly one class.

    python -m experiments.measure.miss_classes --results <root> [--data locomo10.json] [--budgets 500 2000]
        [--out results/measured/equal_tokens_ablation/miss_classes.json]

The classes, tested in this order, are the taxonomy the ten items read by hand in evidence_frame.md fell into,
made mechanical (content words are :func:`memcore.packing.turns.content_words`' words: not stop words or small
talk; a turn's window is the turns of its session within two turns of it):

- ``relative date``: the question states a date and the turn says it relatively ("yesterday", "last week"); the
  stated day is not the session's, so neither the date cue nor the words reach it;
- ``budget``: the turn is in the packer's order within what twice the budget would hold: ranked, but cut;
- ``ranking``: the turn shares a content word with the question but ranks lower than that (other turns on the
  same words take the budget);
- ``coreference``: it shares no content word with the question, but a turn of its window does ("it's like
  therapy" after "working on cars");
- ``vocabulary``: neither it nor its window shares a content word (paraphrase, inference).

Items with three or more gold turns (lists, counts, aggregation) are also counted apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import machine_state
from experiments.measure.pack_lists_simulation import Simulation
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.memory.relative_dates import find_relative_dates
from memcore.packing.turns import content_word_set, fill_framed, session_windows, stated_dates

CLASSES = ("relative date", "budget", "ranking", "coreference", "vocabulary")
WINDOW = 2


def classify(
    gold: str,
    question: str,
    twice: set[str],
    text_of: dict[str, str],
    window_of: dict[str, list[str]],
    relative: set[str],
) -> str:
    """The class of one missed gold turn (see the module doc)."""
    if stated_dates(question) and gold in relative:
        return "relative date"
    if gold in twice:
        return "budget"
    q = content_word_set(question)
    if content_word_set(text_of.get(gold, "")) & q:
        return "ranking"
    if any(content_word_set(text_of.get(d, "")) & q for d in window_of.get(gold, [])):
        return "coreference"
    return "vocabulary"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="miss_classes", description=__doc__.split("\n\n")[0])
    p.add_argument("--results", type=Path, required=True, help="results root with the memcore-cheap snapshots")
    p.add_argument("--data", default=None)
    p.add_argument("--budgets", type=int, nargs="+", default=[500, 2000])
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        sim = Simulation(args.results, args.data)
        dataset = load_locomo(resolve_locomo_path(args.data))
    except (DataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text_of: dict[str, dict[str, str]] = {}
    window_of: dict[str, dict[str, list[str]]] = {}
    relative: dict[str, set[str]] = {}
    for conv in dataset.conversations:
        ids = [t.dia_id for t in conv.turns]
        text_of[conv.conv_id] = {t.dia_id: t.text for t in conv.turns}
        window_of[conv.conv_id] = {
            ids[i]: [ids[j] for j, dist in w if dist > 0] for i, w in enumerate(session_windows(ids, WINDOW))
        }
        relative[conv.conv_id] = {t.dia_id for t in conv.turns if find_relative_dates(t.text, t.session_time)}
    counts: dict[int, Counter[str]] = {b: Counter() for b in args.budgets}
    aggregation: dict[int, int] = dict.fromkeys(args.budgets, 0)
    examples: dict[int, dict[str, list[str]]] = {b: {c: [] for c in CLASSES} for b in args.budgets}
    for conv, _split, gold, query, item in sim.questions:
        packer = sim.memories[conv]._packer
        assert packer is not None
        question = query.queries[0]
        order = packer.turn_order(question, packer.rank(query))
        meta = packer.ix.meta
        for b in args.budgets:
            got = {d for n in packer.pack(query, b).notes for d in n.dia_ids}
            twice = set(fill_framed(order, meta, 2 * b, packer.s.frame).dia_ids)
            for g in sorted(gold - got):
                c = classify(g, question, twice, text_of[conv], window_of[conv], relative[conv])
                counts[b][c] += 1
                if len(gold) >= 3:
                    aggregation[b] += 1
                if len(examples[b][c]) < 5:
                    examples[b][c].append(f"{item} {g}")
    result: dict[str, Any] = {
        "command": "python -m experiments.measure.miss_classes "
        + " ".join(argv or sys.argv[1:]).replace(str(args.results), "<results>"),
        "machine": machine_state(),
        "gold_turns": sum(len(q[2]) for q in sim.questions),
        "missed": {str(b): {c: counts[b][c] for c in CLASSES} for b in args.budgets},
        "missed_total": {str(b): sum(counts[b].values()) for b in args.budgets},
        "in_items_with_3_or_more_gold_turns": {str(b): aggregation[b] for b in args.budgets},
        "examples": {str(b): examples[b] for b in args.budgets},
    }
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

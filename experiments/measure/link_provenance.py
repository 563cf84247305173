"""What link-update provenance does to evidence recall, on one LLM-mode build.

A link update rewrites a neighbour note's context with a new turn's facts. The neighbour is credited with
``linked_sources`` (its recall counts them). Three rules are scored over the same retrieved notes of a run:

- ``none``: a note is credited with its own turns only;
- ``causing turn`` (the harness's rule): plus the one turn that caused each update;
- ``holder's turns`` (the earlier rule, as an upper bound): plus every turn of the note that holds the causing turn
  at the end of the build. The old rule credited the turns that note held at update time, a subset of these, so
  this bounds the old recall from above.

    python -m experiments.measure.link_provenance --run <run dir> (--snapshot <dir> | --notes <notes.jsonl[.gz]>) [--out FILE.json]

The run's items name their notes (``notes[].note_id``); the snapshot's ``notes.jsonl`` gives each note's turns
and ``linked_sources``. Categories 1-4, items with gold evidence.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from memcore.itemlog import read_run_items
from memcore.metrics.scorers.evidence import evidence_scores

RULES = ("none", "causing turn", "holder's turns")


def note_credits(notes: list[dict]) -> dict[str, dict[str, list[str]]]:
    """``note id`` (``n<nid>``) → rule → the dia_ids the note is credited with under that rule."""
    holder = {r["dia_id"]: n["nid"] for n in notes for r in n.get("raws") or []}
    own = {n["nid"]: [r["dia_id"] for r in n.get("raws") or []] for n in notes}
    out: dict[str, dict[str, list[str]]] = {}
    for n in notes:
        linked = list(n.get("linked_sources") or [])
        held = [d for dia in linked for d in own.get(holder.get(dia, -1), [dia])]
        out[f"n{n['nid']}"] = {
            "none": own[n["nid"]],
            "causing turn": own[n["nid"]] + linked,
            "holder's turns": own[n["nid"]] + linked + held,
        }
    return out


def credited(entry: dict, credits: dict[str, dict[str, list[str]]], rule: str) -> list[str]:
    """The dia_ids one retrieved entry is credited with: a whole note's under ``rule``; a packed entry
    (``n<nid>.<k>``, one raw turn of a note) its own turns under every rule (packing shows raw turns only, so a
    link update's context credits nothing there)."""
    note_id = str(entry.get("note_id"))
    if note_id in credits:
        return credits[note_id][rule]
    return list(entry.get("dia_ids") or [])


def score(items: Sequence[dict], credits: dict[str, dict[str, list[str]]]) -> dict[str, dict[str, float]]:
    """Mean recall and hit (%) per rule over the items of categories 1-4 with gold evidence."""
    scored = [r for r in items if int(r.get("category", 0)) in (1, 2, 3, 4) and r.get("evidence")]
    out = {}
    for rule in RULES:
        rows = []
        for r in scored:
            ids = [d for n in r.get("notes") or [] for d in credited(n, credits, rule)]
            rows.append(evidence_scores(r["evidence"], ids))
        out[rule] = {
            "recall": round(100 * sum(x["recall"] for x in rows) / len(rows), 2),
            "hit": round(100 * sum(x["hit"] for x in rows) / len(rows), 2),
            "n": len(rows),
        }
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="link_provenance", description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, required=True)
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--snapshot", type=Path, help="the build's snapshot dir (holds notes.jsonl)")
    src.add_argument("--notes", type=Path, help="a snapshot's notes.jsonl, or a committed copy (.jsonl.gz)")
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    notes_file = args.notes or args.snapshot / "notes.jsonl"
    if not notes_file.is_file():
        print(f"link_provenance: {notes_file} not found; give the run's snapshot dir (stats.json 'snapshot')")
        return 2
    opener = gzip.open if notes_file.suffix == ".gz" else open
    with opener(notes_file, "rt", encoding="utf-8") as fh:
        notes = [json.loads(line) for line in fh if line.strip()]
    credits = note_credits(notes)
    result = {
        "notes": len(notes),
        "updates": sum(int(n.get("updates") or 0) for n in notes),
        "linked_turns": sum(len(n.get("linked_sources") or []) for n in notes),
        "holder_turns_credited": sum(len(c["holder's turns"]) - len(c["none"]) for c in credits.values()),
        "rules": score(read_run_items(args.run), credits),
    }
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

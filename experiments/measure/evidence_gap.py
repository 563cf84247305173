"""The vocabulary gap: which of the memory's own layers bring a never-ranked gold turn into reach, without an LLM.

    python -m experiments.measure.evidence_gap --deep <run dir at 2,000 tokens> --short <run dir at 500 tokens>
        --snapshots <results>/snapshots/memcore-cheap [--data locomo10.json] [--out FILE.json]

A gold turn is *never ranked* when it is not in the method's 2,000-token context (``--deep``: its ranking as deep
as that budget reaches). For each such turn (categories 1-4) each bridge proposes a candidate set from what the
500-token context (``--short``) already holds, and the turn counts as recovered when it is in that set:

- ``neighbors``: the turns just before and after each of the first 5 packed turns (at most 10 turns);
- ``note keywords``: the turns of the 10 notes sharing the most keywords (idf-weighted) with the notes of the
  first 3 packed turns;
- ``topic``: every turn of the notes in the first packed turn's topic (large: its size is reported);
- ``prf``: BM25 over the conversation's turns for the question plus the 10 most frequent content words of the first
  3 packed turns (pseudo-relevance feedback), top 20 turns.

Reads the runs' items (slim items suffice), the build's snapshots (``notes.jsonl``, ``topics.json``) and the data.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.itemlog import read_run_items
from memcore.packing.turns import _STOP, _WORD

CATS = (1, 2, 3, 4)
BRIDGES = ("neighbors", "note keywords", "topic", "prf")


def _snapshot_of(root: Path, first_turn: dict[str, str]) -> dict[str, Path]:
    """conv_id → snapshot dir: the one whose notes hold that conversation's first turn (``D1:1``) verbatim."""
    by_text = {text: conv for conv, text in first_turn.items()}
    out: dict[str, Path] = {}
    for notes in root.glob("*/notes.jsonl"):
        for line in notes.read_text().splitlines():
            raw = next((r for r in json.loads(line)["raws"] if r["dia_id"] == "D1:1"), None)
            if raw is not None:
                if raw["text"] in by_text:
                    out[by_text[raw["text"]]] = notes.parent
                break
    return out


class _Memory:
    """One conversation's notes: turn → note, note → keywords, note → topic, and BM25 over its turns."""

    def __init__(self, snap: Path, turns: dict[str, str]) -> None:
        import bm25s

        notes = [json.loads(line) for line in (snap / "notes.jsonl").read_text().splitlines() if line.strip()]
        self.note_of = {r["dia_id"]: n["nid"] for n in notes for r in n["raws"]}
        self.turns_of = {n["nid"]: [r["dia_id"] for r in n["raws"]] for n in notes}
        self.keywords = {n["nid"]: set(n.get("keywords") or []) for n in notes}
        df = Counter(k for ks in self.keywords.values() for k in ks)
        self.idf = {k: math.log(1 + len(notes) / c) for k, c in df.items()}
        topics = json.loads((snap / "topics.json").read_text())
        self.topic_of = {nid: t for t, members in enumerate(topics.get("notes") or []) for nid in members}
        self.topic_notes = topics.get("notes") or []
        self.ids = list(turns)
        self.text = turns
        self._bm25 = bm25s.BM25()
        self._bm25s = bm25s
        self._bm25.index(
            bm25s.tokenize([turns[d] for d in self.ids], stopwords="en", show_progress=False), show_progress=False
        )

    def bm25(self, query: str, k: int) -> list[str]:
        tokens = self._bm25s.tokenize([query], stopwords="en", show_progress=False)
        if not tokens.vocab:
            return []
        docs, scores = self._bm25.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False)
        return [self.ids[int(d)] for d, s in zip(docs[0], scores[0], strict=True) if s > 0]


def bridges(question: str, packed: Sequence[str], mem: _Memory) -> dict[str, set[str]]:
    """Each bridge's candidate turns for one question, from the first packed turns."""
    out: dict[str, set[str]] = {b: set() for b in BRIDGES}
    for d in packed[:5]:
        s, t = d.split(":")
        out["neighbors"] |= {f"{s}:{int(t) + k}" for k in (-1, 1)} & set(mem.text)
    top_notes = [mem.note_of[d] for d in packed[:3] if d in mem.note_of]
    wanted = set().union(*(mem.keywords[n] for n in top_notes)) if top_notes else set()
    scored = sorted(
        ((sum(mem.idf[k] for k in mem.keywords[n] & wanted), n) for n in mem.keywords if n not in top_notes),
        reverse=True,
    )
    out["note keywords"] = {d for score, n in scored[:10] if score > 0 for d in mem.turns_of[n]}
    if top_notes and top_notes[0] in mem.topic_of:
        out["topic"] = {d for n in mem.topic_notes[mem.topic_of[top_notes[0]]] for d in mem.turns_of.get(n, [])}
    words = Counter(w for d in packed[:3] for w in _WORD.findall(mem.text.get(d, "").lower()) if w not in _STOP)
    out["prf"] = set(mem.bm25(question + " " + " ".join(w for w, _ in words.most_common(10)), 20))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="evidence_gap", description=__doc__.split("\n\n")[0])
    p.add_argument("--deep", type=Path, required=True, help="run dir at 2,000 tokens (its ranking's reach)")
    p.add_argument("--short", type=Path, required=True, help="run dir at 500 tokens (what the bridges start from)")
    p.add_argument(
        "--snapshots", type=Path, required=True, help="the build's snapshots dir (<results>/snapshots/<method>)"
    )
    p.add_argument("--data", default=None)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args(argv)
    try:
        dataset = load_locomo(resolve_locomo_path(args.data))
    except (DataError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    first = {c.conv_id: next(t.text for t in c.turns if t.dia_id == "D1:1") for c in dataset.conversations}
    snaps = _snapshot_of(args.snapshots, first)
    if not snaps:
        print(f"error: no snapshots under {args.snapshots}; pass <results>/snapshots/memcore-cheap", file=sys.stderr)
        return 2
    question = {(c.conv_id, q.index): q.question for c in dataset.conversations for q in c.qa}
    turns = {c.conv_id: {t.dia_id: t.render() for t in c.turns} for c in dataset.conversations}
    deep = {it["item_id"]: it for it in read_run_items(args.deep)}
    mems: dict[str, _Memory] = {}
    never = 0
    recovered: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    questions = 0
    for it in read_run_items(args.short):
        if int(it["category"]) not in CATS or not it.get("evidence") or it["item_id"] not in deep:
            continue
        reach = set(deep[it["item_id"]]["retrieved_dia_ids"])
        missing = set(it["evidence"]) - reach
        if not missing:
            continue
        conv = it["conv_id"]
        if conv not in mems:
            mems[conv] = _Memory(snaps[conv], turns[conv])
        cands = bridges(question[(conv, it["qa_index"])], it["retrieved_dia_ids"], mems[conv])
        never += len(missing)
        questions += 1
        for b, got in cands.items():
            recovered[b] += len(missing & got)
            sizes[b] += len(got)
        recovered["any"] += len(missing & set().union(*cands.values()))
    out = {
        "never_ranked_gold_turns": never,
        "questions": questions,
        "recovered": {b: recovered[b] for b in (*BRIDGES, "any")},
        "mean_candidates": {b: round(sizes[b] / max(questions, 1), 1) for b in BRIDGES},
    }
    text = json.dumps(out, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

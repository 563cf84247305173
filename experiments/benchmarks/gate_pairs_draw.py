"""Draw candidate pairs for the gate's labelled set from the gate's real pre-screen.

For each turn of the chosen sessions (in conversation order) the turn's cleaned raw context
(``clean_text(turn.render())``, the note context of the wo_denoise / memcore-cheap path, where c = r) is
embedded with MiniLM (the harness's embedder) and its ``k`` nearest *earlier* turns are taken by cosine with
the same exact search ``Constructor.candidates`` runs (``NoteStore.vectors.search``); every earlier turn is
one note (as if the gate had appended everything). The pool is then sampled stratified by cosine band and
same/different session, seeded, and printed with speaker, session date and text for labelling.

Only references (sample_id, dia_ids), ranks and cosines are written; turn text is read from the data file at
run time and never stored. Labels and rationales are added by hand to ``tests/data/gate_pairs.jsonl``.

    python -m experiments.benchmarks.gate_pairs_draw --out <tmp>/gate_pool.jsonl --sample 120 --show   # what was run
"""

from __future__ import annotations

import argparse
import json
import random
from collections import defaultdict
from pathlib import Path

from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.embedders import MiniLMEmbedder
from memcore.memory.ingestion import clean_text
from memcore.memory.notes import NoteStore, RawTurn
from memcore.types import Turn

#: Conversations and sessions drawn from: the first sessions of three conversations, plus later sessions so
#: that repeated events on different days (and recaps of earlier sessions) enter the candidate lists.
SESSIONS: dict[str, tuple[int, ...]] = {
    "conv-26": (1, 2, 3, 4, 5, 10, 15),
    "conv-30": (1, 2, 3, 4, 5, 10, 15),
    "conv-41": (1, 2, 3, 4, 5, 12, 20),
}
BANDS = (("high", 0.67, 1.01), ("middle", 0.58, 0.67), ("low", -1.0, 0.58))  # ~tertiles of the pool


def band(cos: float) -> str:
    return next(name for name, lo, hi in BANDS if lo <= cos < hi)


def turns_of(conv_id: str, sessions: tuple[int, ...], path: Path | None = None) -> list[Turn]:
    ds = load_locomo(resolve_locomo_path(path))
    conv = ds.conversation(conv_id)
    return [t for s in conv.sessions if s.index in sessions for t in s.turns]


def prescreen(turns: list[Turn], k: int, embedder: object) -> list[dict[str, object]]:
    """Top-``k`` earlier turns per turn by cosine, with the store's own exact search."""
    vecs = embedder.encode([clean_text(t.render()) for t in turns])  # type: ignore[attr-defined]
    store = NoteStore(dim=vecs.shape[1])
    out: list[dict[str, object]] = []
    for i, (t, v) in enumerate(zip(turns, vecs, strict=True)):
        if len(store):
            scores, rows = store.vectors.search(v[None, :], k)
            for rank, (r, s) in enumerate(zip(rows[0], scores[0], strict=True), start=1):
                c = turns[int(r)]
                out.append(
                    {
                        "new": t.dia_id,
                        "candidate": c.dia_id,
                        "rank": rank,
                        "cosine": round(float(s), 4),
                        "same_session": c.session_index == t.session_index,
                    }
                )
        store.add(
            [RawTurn(t.dia_id, t.speaker, t.text, t.session_time_raw)], clean_text(t.render()), [], v, denoised=False
        )
        assert i + 1 == len(store)
    return out


def stratified(pool: list[dict[str, object]], n: int, seed: int) -> list[dict[str, object]]:
    """``n`` pairs spread evenly over (cosine band × same/different session) cells, seeded."""
    cells: dict[tuple[str, bool], list[dict[str, object]]] = defaultdict(list)
    for p in pool:
        cells[(band(float(p["cosine"])), bool(p["same_session"]))].append(p)  # type: ignore[arg-type]
    rng = random.Random(seed)
    for v in cells.values():
        rng.shuffle(v)
    picked: list[dict[str, object]] = []
    keys = sorted(cells)
    while len(picked) < n and any(cells[c] for c in keys):
        for c in keys:
            if cells[c] and len(picked) < n:
                picked.append(cells[c].pop())
    return picked


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True, help="pool/sample JSONL (references only, no text)")
    ap.add_argument("--k", type=int, default=5, help="candidates per turn (MemCoReConfig.candidates)")
    ap.add_argument("--sample", type=int, default=120)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--show", action="store_true", help="print the sampled pairs with text (for labelling)")
    args = ap.parse_args(argv)

    emb = MiniLMEmbedder()
    rows: list[dict[str, object]] = []
    by_id: dict[tuple[str, str], Turn] = {}
    for conv_id, sessions in SESSIONS.items():
        turns = turns_of(conv_id, sessions)
        by_id.update({(conv_id, t.dia_id): t for t in turns})
        rows += [{"sample_id": conv_id, **p} for p in prescreen(turns, args.k, emb)]
    sample = stratified(rows, args.sample, args.seed)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as fh:
        for p in sample:
            fh.write(json.dumps(p) + "\n")
    cells: dict[tuple[str, bool], int] = defaultdict(int)
    for p in rows:
        cells[(band(float(p["cosine"])), bool(p["same_session"]))] += 1  # type: ignore[arg-type]
    print(f"pool: {len(rows)} pairs; cells (band, same_session): {dict(sorted(cells.items()))}")
    print(f"sample: {len(sample)} -> {args.out}")
    if args.show:
        for i, p in enumerate(sample, start=1):
            n, c = by_id[(p["sample_id"], p["new"])], by_id[(p["sample_id"], p["candidate"])]  # type: ignore[index]
            print(f"\n#{i} {p['sample_id']} new={n.dia_id} cand={c.dia_id} cos={p['cosine']} rank={p['rank']}")
            print(f"  C [{c.session_time_raw}] {clean_text(c.render())}")
            print(f"  N [{n.session_time_raw}] {clean_text(n.render())}")


if __name__ == "__main__":
    main()

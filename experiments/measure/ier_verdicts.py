"""IER's judge against the gold: pair an IER-on run with the same retrieval without IER (``wo_ier`` or
``ablation.ier=false``: same memory, same decompositions) and say, per question of categories 1-4 with gold
evidence, what the judge saw at round 1 (the IER-off pool), what it said, and what refinement added.

    python -m experiments.measure.ier_verdicts --on <IER-on run dir> --off <IER-off run dir> [--out FILE.md]

A "sufficient" verdict is right when the round-1 pool holds all the question's gold turns, "insufficient" when it
misses one; the table gives the judge's confusion against that and the recall before and after refinement.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from memcore.itemlog import read_items


def _read(run: Path) -> dict[str, dict[str, Any]]:
    path = Path(run) / "items.jsonl"
    if not path.is_file():
        raise SystemExit(f"error: {path} not found: pass a run directory holding items.jsonl")
    return {r["item_id"]: r for r in read_items(path)}


def round1_verdict(item: Mapping[str, Any]) -> bool | None:
    """The judge's round-1 verdict from an IER-on item's ``extra.rounds_log`` (None: no LLM judge ran, or its reply
    did not parse, ``judge: "unparsed"``: the coverage rule then stood in, which is no verdict of the judge)."""
    log = (item.get("extra") or {}).get("rounds_log") or []
    if not log or "sufficient" not in log[0] or log[0].get("judge") == "unparsed":
        return None
    return log[0]["sufficient"]


def ier_verdicts(on: Mapping[str, Mapping[str, Any]], off: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and recalls over the items in both runs with a recall (categories 1-4 with gold evidence) and a
    round-1 verdict: ``confusion[verdict][pool]`` with verdict sufficient/insufficient and pool complete (all gold
    in the round-1 pool) / incomplete; mean recall and hit at round 1 (the IER-off run) and after IER (the IER-on
    run), overall and over the questions judged insufficient; rounds per question."""
    confusion = {"sufficient": {"complete": 0, "incomplete": 0}, "insufficient": {"complete": 0, "incomplete": 0}}
    rec1: list[float] = []
    rec_final: list[float] = []
    refined: list[tuple[float, float]] = []
    rounds: list[int] = []
    for item_id, a in on.items():
        b = off.get(item_id)
        verdict = round1_verdict(a)
        if b is None or verdict is None or a.get("recall") is None or b.get("recall") is None or a["category"] == 5:
            continue
        r1, rf = float(b["recall"]), float(a["recall"])
        confusion["sufficient" if verdict else "insufficient"]["complete" if r1 >= 1.0 else "incomplete"] += 1
        rec1.append(r1)
        rec_final.append(rf)
        rounds.append(int(a.get("rounds") or 1))
        if not verdict:
            refined.append((r1, rf))

    def mean(xs: Sequence[float]) -> float | None:
        return round(100.0 * sum(xs) / len(xs), 2) if xs else None

    n = len(rec1)
    suff, insuff = confusion["sufficient"], confusion["insufficient"]
    right = suff["complete"] + insuff["incomplete"]
    return {
        "n": n,
        "confusion": confusion,
        "judge_accuracy": mean([1.0] * right + [0.0] * (n - right)),
        "recall_round1": mean(rec1),
        "recall_after_ier": mean(rec_final),
        "n_insufficient": len(refined),
        "recall_round1_insufficient": mean([r for r, _ in refined]),
        "recall_after_ier_insufficient": mean([f for _, f in refined]),
        "mean_rounds": round(sum(rounds) / n, 2) if n else None,
    }


def to_markdown(res: Mapping[str, Any], on: str, off: str) -> str:
    c = res["confusion"]

    def cell(v: float | None) -> str:
        return "–" if v is None else f"{v:.1f}"

    return "\n".join(
        [
            f"IER on: `{on}`; IER off (round-1 pools): `{off}`; n = {res['n']} questions of categories 1-4 with gold",
            "",
            "| judge at round 1 | all gold in the pool | gold missing from the pool |",
            "|---|---:|---:|",
            f"| sufficient | {c['sufficient']['complete']} | {c['sufficient']['incomplete']} |",
            f"| insufficient | {c['insufficient']['complete']} | {c['insufficient']['incomplete']} |",
            "",
            f"Judge right on {cell(res['judge_accuracy'])} % of questions. Recall at K: {cell(res['recall_round1'])} "
            f"at round 1, {cell(res['recall_after_ier'])} after IER; on the {res['n_insufficient']} questions judged "
            f"insufficient {cell(res['recall_round1_insufficient'])} → {cell(res['recall_after_ier_insufficient'])}. "
            f"Rounds per question: {res['mean_rounds']}.",
        ]
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--on", type=Path, required=True, help="the IER-on run directory")
    p.add_argument("--off", type=Path, required=True, help="the same retrieval with IER off")
    p.add_argument("--out", type=Path, help="also write the Markdown here")
    args = p.parse_args(argv)
    res = ier_verdicts(_read(args.on), _read(args.off))
    text = to_markdown(res, str(args.on), str(args.off))
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

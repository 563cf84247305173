"""LongMemEval's retrieval metrics, as the official retrieval evaluation computes them
(``src/retrieval/eval_utils.py`` of xiaowu0162/LongMemEval @ 9e0b455): ``recall_all@k`` at turn level (all gold
turns among the first k retrieved turns) and at session level (all gold sessions among the first k distinct
sessions of the retrieved turns: ``evaluate_retrieval_turn2session`` widens k until it holds k distinct sessions).

Gold turns are an item's ``evidence`` (user turns marked ``has_answer``); gold sessions are their sessions, as
``turn2session`` derives them. Items without gold (abstention questions, questions whose evidence is on the
assistant's side only) score None and are skipped, as the official evaluation skips them. One deviation: the
official corpus holds user turns only, the harness's methods index every turn, so a retrieved assistant turn
takes one of the k places.
"""

from __future__ import annotations

from collections.abc import Sequence

from memcore.metrics import EvidenceScorer, Metric
from memcore.turn_ids import session_key


def recall_all_at(gold: Sequence[str], retrieved: Sequence[str], k: int) -> float | None:
    """1 when every gold id is among the first ``k`` distinct retrieved ids, else 0; None without gold."""
    if not gold:
        return None
    first = list(dict.fromkeys(retrieved))[:k]
    return 1.0 if set(gold) <= set(first) else 0.0


def turn_recall_all(k: int) -> EvidenceScorer:
    """The turn-level ``recall_all@k`` scorer."""

    def score(gold_ids: Sequence[str], retrieved_ids: Sequence[str]) -> float | None:
        return recall_all_at(gold_ids, retrieved_ids, k)

    return score


def session_recall_all(k: int) -> EvidenceScorer:
    """The session-level ``recall_all@k`` scorer (the first ``k`` distinct sessions of the retrieved turns)."""

    def score(gold_ids: Sequence[str], retrieved_ids: Sequence[str]) -> float | None:
        return recall_all_at([session_key(d) for d in gold_ids], [session_key(d) for d in retrieved_ids], k)

    return score


def _metric(level: str, k: int) -> Metric:
    scorer = session_recall_all(k) if level == "session" else turn_recall_all(k)
    return Metric(
        name=f"{level}_recall_all_{k}",
        label=f"{level.capitalize()} R_all@{k}",
        target="evidence",
        score=scorer,
        description=f"every gold {level} among the first {k} retrieved {level}s (LongMemEval recall_all@{k})",
    )


SESSION_RECALL_ALL_5 = _metric("session", 5)
SESSION_RECALL_ALL_10 = _metric("session", 10)
TURN_RECALL_ALL_5 = _metric("turn", 5)
TURN_RECALL_ALL_10 = _metric("turn", 10)

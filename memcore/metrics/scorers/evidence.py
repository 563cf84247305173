"""Evidence scoring functions: the retrieved dia_ids against the gold evidence ids. Pure functions over id
sequences; the ``recall``, ``hit`` and ``session_hit`` metrics (:mod:`memcore.metrics`) and the equal-budget
tables call them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memcore.turn_ids import session_key


def evidence_scores(gold_ids: Iterable[str], retrieved_ids: Iterable[str]) -> dict[str, float | None]:
    """Evidence recall |E∩R|/|E| and hit 1[E∩R≠∅] over id *sets*.

    With empty gold evidence both values are ``None`` (such items are excluded from the averages
    and counted separately). The official LoCoMo code (``eval_question_answering`` in
    ``task_eval/evaluation.py``) counts such items as recall 1 instead.
    """
    gold = set(gold_ids)
    if not gold:
        return {"recall": None, "hit": None}
    found = len(gold & set(retrieved_ids))
    return {"recall": found / len(gold), "hit": 1.0 if found else 0.0}


#: How many distinct retrieved sessions :func:`session_hit` looks at (the session-level claims of public systems).
SESSION_HIT_N = 5


def session_hit(gold_ids: Iterable[str], retrieved_ids: Iterable[str], n: int = SESSION_HIT_N) -> float | None:
    """Session-level hit: 1 when a gold turn's session is among the first ``n`` distinct sessions of the retrieved
    dia_ids (in retrieval order), else 0; ``None`` without gold evidence. Coarser than :func:`evidence_scores`'
    hit: the gold turn itself need not be retrieved, only a turn of its session."""
    gold = {session_key(d) for d in gold_ids}
    if not gold:
        return None
    first: list[str] = []
    for d in retrieved_ids:
        s = session_key(d)
        if s not in first:
            first.append(s)
            if len(first) == n:
                break
    return 1.0 if gold & set(first) else 0.0


def recall_at_budget(
    gold_ids: Iterable[str], notes: Sequence[tuple[Sequence[str], int]], budget_tokens: int
) -> dict[str, float | int | None]:
    """Evidence scores using only the leading retrieved notes whose cumulative size fits the budget.

    ``notes`` are ``(dia_ids, tokens)`` in retrieval order; notes are taken while the running token
    total stays ``<= budget_tokens`` and the first note that does not fit ends the prefix. Returns
    :func:`evidence_scores` plus ``notes_used`` and ``tokens_used``.
    """
    if budget_tokens < 0:
        raise ValueError(f"budget_tokens must be >= 0, got {budget_tokens}.")
    used_ids: list[str] = []
    total = 0
    n = 0
    for dia_ids, tokens in notes:
        if total + int(tokens) > budget_tokens:
            break
        total += int(tokens)
        used_ids.extend(dia_ids)
        n += 1
    return {**evidence_scores(gold_ids, used_ids), "notes_used": n, "tokens_used": total}

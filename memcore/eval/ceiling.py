"""Gold-error ceiling: the best score a perfect system can reach against a dataset's original gold, given its
audit overlay of corrected gold (LoCoMo's is the one shipped).

With the audit overlay (``eval.audited=true``), an item whose gold answer the audit found wrong (any
``error_type`` but ``WRONG_CITATION``, which fixes evidence only) is one a perfect system answers
correctly and still loses: its J ceiling is 0, its F1 ceiling the F1 of the corrected answer against the
original gold. On all of LoCoMo 99 of the 1,540 category 1-4 answers are wrong: at most 93.57 %
(multi-hop 90.07, temporal 91.90, open-domain 90.62, single-hop 95.72). The dataset's headline categories only
(LoCoMo's audit covers no category-5 item).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcore.datasets.spec import DatasetCategories
from memcore.eval.protocols import EvalProtocol
from memcore.eval.scoring import score_answer
from memcore.types import Conversation, QAItem

CITATION_ONLY = "WRONG_CITATION"


def is_gold_error(error_type: str | None) -> bool:
    """True when the audit says the gold *answer* is wrong (not just its cited evidence)."""
    return error_type is not None and error_type != CITATION_ONLY


def _block(rows: Sequence[tuple[bool, float]]) -> dict[str, Any]:
    n = len(rows)
    errors = sum(1 for wrong, _ in rows if wrong)
    return {
        "n": n,
        "n_gold_errors": errors,
        "judge": None if not n else (n - errors) / n,
        "f1": None if not n else sum(f1 for _, f1 in rows) / n,
    }


def gold_ceiling(
    convs: Sequence[Conversation],
    changed: Mapping[str, str],
    audited: Mapping[str, QAItem],
    protocol: EvalProtocol,
    categories: DatasetCategories,
) -> dict[str, Any]:
    """``{"by_category": {"1": {n, n_gold_errors, judge, f1}, ...}, "overall_no_adv": {...}}`` (fractions):
    a perfect system answers the audited gold; J counts it correct iff the original gold is right, F1 scores
    its answer against the original gold under ``protocol``. ``changed`` maps item_id -> the audit's
    error_type, ``audited`` item_id -> the audited item; ``categories``: the dataset's, whose headline ones count."""
    rows: dict[int, list[tuple[bool, float]]] = {c: [] for c in categories.headline_ids}
    for conv in convs:
        for item in conv.qa:
            cat = int(item.category)
            if cat not in rows:
                continue
            wrong = is_gold_error(changed.get(item.item_id))
            fixed = audited.get(item.item_id)
            perfect = (fixed.answer if wrong and fixed is not None else item.answer) or ""
            rows[cat].append((wrong, score_answer(perfect, protocol.gold(item), cat, protocol)["f1"]))
    by_category = {str(c): _block(r) for c, r in rows.items() if r}
    return {
        "by_category": by_category,
        "overall_no_adv": _block([row for r in rows.values() for row in r]),
        "definition": "perfect system (audited gold) scored against the original gold; categories "
        + categories.span(categories.headline_ids),
    }

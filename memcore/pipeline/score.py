"""Stage 4 of the pipeline: score a prediction against each gold variant (the original gold and, with the audit
overlay, the corrected one) and the LLM judge, into the item's :class:`ItemRecord`.

:func:`score_gold` is pure; :func:`score_variants` adds the judge's verdicts (LLM calls, cached per run index);
:func:`score_item` builds the record. Rescoring (:mod:`memcore.rescore`) reuses :func:`score_variants`.
"""

from __future__ import annotations

import json
from typing import Any

from memcore.eval.judge import verdict_record, verdict_scores
from memcore.eval.metrics import evidence_scores, score_answer
from memcore.interfaces import LazyResource
from memcore.pipeline.predict import Prediction
from memcore.pipeline.record import GoldScores, ItemRecord
from memcore.text import count_tokens
from memcore.types import QAItem


def score_gold(answer: str | None, gold_item: QAItem, retrieved_ids: list[str], protocol: str) -> GoldScores:
    """Answer scores (none for a retrieval-only run) and evidence recall / hit against ``gold_item``'s gold."""
    gold = gold_item.gold(protocol)
    scores = score_answer(answer, gold, gold_item.category, protocol) if answer is not None else {}
    ev = evidence_scores(gold_item.evidence, retrieved_ids)
    return GoldScores(
        gold=gold,
        evidence=list(gold_item.evidence),
        scores=scores,
        recall=None if ev is None else ev["recall"],
        hit=None if ev is None else ev["hit"],
    )


def score_variants(
    item: QAItem,
    answer: str | None,
    retrieved_ids: list[str],
    protocol: str,
    *,
    audited: QAItem | None = None,
    judge: LazyResource | None = None,
) -> tuple[GoldScores, GoldScores | None, dict[str, Any] | None]:
    """Scores of ``answer`` against ``item``'s gold and, when given, the audit's ``audited`` gold; with a
    ``judge`` (built on first use) and an answer, the judge's verdicts against each gold (the audited gold is
    judged again only when it differs). Returns ``(original, audited or None, judge record or None)``."""
    original = score_gold(answer, item, retrieved_ids, protocol)
    verdicts = None
    if judge is not None and answer is not None:
        verdicts = judge.get().judge_runs(item, answer, protocol)
        if verdicts is not None:
            original.scores.update(verdict_scores(verdicts))
    audited_scores = None
    if audited is not None:
        audited_scores = score_gold(answer, audited, retrieved_ids, protocol)
        if verdicts is not None and judge is not None:
            same = audited.answer == item.answer and audited_scores.gold == original.gold
            a_verdicts = verdicts if same else judge.get().judge_runs(item, answer, protocol, gold_item=audited)
            if a_verdicts is not None:
                audited_scores.scores.update(verdict_scores(a_verdicts))
    record = None if verdicts is None or judge is None else verdict_record(judge.get().protocol.name, verdicts)
    return original, audited_scores, record


def score_item(
    item: QAItem,
    prediction: Prediction,
    protocol: str,
    *,
    category_name: str,
    audited: QAItem | None = None,
    judge: LazyResource | None = None,
) -> ItemRecord:
    """The record of ``item``'s prediction, scored by :func:`score_variants`; ``category_name`` is the name the
    run's dataset declares for the item's category."""
    evidence = prediction.evidence
    original, audited_scores, judge_record = score_variants(
        item, prediction.answer, evidence.dia_ids, protocol, audited=audited, judge=judge
    )
    return ItemRecord(
        item_id=item.item_id,
        conv_id=item.conv_id,
        qa_index=item.index,
        category=int(item.category),
        category_name=category_name,
        question=item.question,
        original=original,
        answer=prediction.answer,
        retrieved_dia_ids=evidence.dia_ids,
        notes=[dict(n.to_json(), tokens=count_tokens(n.text)) for n in evidence.notes],
        context_tokens=count_tokens(evidence.render()),
        rounds=evidence.rounds,
        prompt_version=prediction.prompt_version,
        cached={"answer": prediction.cached},
        latency_s={"retrieve": round(prediction.retrieve_s, 4), "answer": round(prediction.answer_s, 4)},
        extra=_jsonable(evidence.extra),
        audited=audited_scores,
        judge=judge_record,
        answer_raw=prediction.raw,
        prompt_hash=prediction.prompt_hash,
    )


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))

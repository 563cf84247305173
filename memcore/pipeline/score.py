"""Stage 4 of the pipeline: score a prediction against each gold variant (the original gold and, with the audit
overlay, the corrected one) and the LLM judge, into the item's :class:`ItemRecord`.

:func:`score_gold` is pure; :func:`score_variants` adds the judge's verdicts (LLM calls, cached per run index);
:func:`score_item` builds the record. Rescoring (:mod:`memcore.rescore`) reuses :func:`score_variants`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from omegaconf import DictConfig

from memcore.config import ConfigError
from memcore.eval.judge import verdict_record, verdict_scores
from memcore.eval.protocols import EvalProtocol
from memcore.eval.scoring import score_answer, score_evidence
from memcore.interfaces import LazyResource
from memcore.metrics import Metric, resolve_metrics
from memcore.pipeline.predict import Prediction
from memcore.pipeline.record import GoldScores, ItemRecord
from memcore.registry import UnknownNameError
from memcore.text import count_tokens
from memcore.types import QAItem


def run_extra_metrics(cfg: DictConfig) -> tuple[Metric, ...]:
    """The registered metrics ``eval.metrics`` adds to the protocol's; an unknown name, or one scored by an LLM
    (the judge has its own switch, ``eval.judge``), is a ConfigError."""
    names = [str(n) for n in (cfg.eval.get("metrics") or ())]
    try:
        metrics = resolve_metrics(names)
    except UnknownNameError as exc:
        raise ConfigError(f"eval.metrics: {exc}") from None
    llm = [m.name for m in metrics if m.needs_llm]
    if llm:
        raise ConfigError(f"eval.metrics: {', '.join(llm)} needs an LLM; turn it on with its own switch (eval.judge)")
    return metrics


def score_gold(
    answer: str | None,
    gold_item: QAItem,
    retrieved_ids: list[str],
    protocol: EvalProtocol,
    metrics: Sequence[Metric] = (),
) -> GoldScores:
    """Answer scores (none for a retrieval-only run) and evidence scores against ``gold_item``'s gold under
    ``protocol``. ``metrics``: the run's metrics beyond the protocol's (``eval.metrics``; the protocol's own are
    always scored). Evidence recall and hit are the record's own keys; any other metric's value goes into
    ``scores`` after the answer scores."""
    gold = protocol.gold(gold_item)
    scores = score_answer(answer, gold, gold_item.category, protocol, metrics) if answer is not None else {}
    evidence = score_evidence(gold_item.evidence, retrieved_ids, (*protocol.declared_metrics(), *metrics))
    recall, hit = evidence.pop("recall", None), evidence.pop("hit", None)
    scores.update(evidence)
    return GoldScores(gold=gold, evidence=list(gold_item.evidence), scores=scores, recall=recall, hit=hit)


def score_variants(
    item: QAItem,
    answer: str | None,
    retrieved_ids: list[str],
    protocol: EvalProtocol,
    *,
    metrics: Sequence[Metric] = (),
    audited: QAItem | None = None,
    judge: LazyResource | None = None,
) -> tuple[GoldScores, GoldScores | None, dict[str, Any] | None]:
    """Scores of ``answer`` against ``item``'s gold and, when given, the audit's ``audited`` gold; with a
    ``judge`` (built on first use) and an answer, the judge's verdicts against each gold (the audited gold is
    judged again only when it differs). ``metrics``: the run's extra metrics (:func:`score_gold`). Returns
    ``(original, audited or None, judge record or None)``."""
    original = score_gold(answer, item, retrieved_ids, protocol, metrics)
    verdicts = None
    if judge is not None and answer is not None:
        verdicts = judge.get().judge_runs(item, answer, protocol)
        if verdicts is not None:
            original.scores.update(verdict_scores(verdicts))
    audited_scores = None
    if audited is not None:
        audited_scores = score_gold(answer, audited, retrieved_ids, protocol, metrics)
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
    protocol: EvalProtocol,
    *,
    category_name: str,
    metrics: Sequence[Metric] = (),
    audited: QAItem | None = None,
    judge: LazyResource | None = None,
) -> ItemRecord:
    """The record of ``item``'s prediction, scored by :func:`score_variants`; ``category_name`` is the name the
    run's dataset declares for the item's category."""
    evidence = prediction.evidence
    original, audited_scores, judge_record = score_variants(
        item, prediction.answer, evidence.dia_ids, protocol, metrics=metrics, audited=audited, judge=judge
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
        tokens_used=count_tokens(evidence.render()),
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

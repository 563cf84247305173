"""The item record: one line of ``items.jsonl``, shared by the runner, aggregation, the report and rescoring.

Every reader reads the log through :mod:`memcore.itemlog` (:class:`~memcore.itemlog.LoggedItem`: typed accessors and
read-only access to every key, extra optional ones included); code that builds or rewrites records goes through
:class:`ItemRecord` (``ItemRecord.from_json(logged_item)``), so every writer emits the same keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memcore.config_aliases import OLD_TOKENS_USED_KEY, TOKENS_USED_KEY

#: Version of the record layout below; bump it with every change of keys or of their meaning.
#: 1: ``record_version``, ``answer_raw`` and ``prompt_hash`` added (records without them are version 0).
#: 2: ``usage`` added: the item's LLM calls and tokens per stage (:func:`memcore.llm.usage.item_usage`).
RECORD_VERSION = 2


@dataclass
class GoldScores:
    """Scores against one gold variant (the original gold, or the audit's): the gold string used, answer
    scores (``f1``, ``bleu1``, …, plus the judge's ``judge*`` keys when judged) and evidence recall / hit
    (``None`` for an item without gold evidence)."""

    gold: str
    evidence: list[str]
    scores: dict[str, Any]
    recall: float | None
    hit: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "gold": self.gold,
            "evidence": list(self.evidence),
            "scores": self.scores,
            "recall": self.recall,
            "hit": self.hit,
        }


def _tokens_used(rec: Mapping[str, Any]) -> int:
    """``tokens_used`` of an ``items.jsonl`` line, or its old name ``context_tokens``; KeyError when neither is set."""
    key = OLD_TOKENS_USED_KEY if TOKENS_USED_KEY not in rec and OLD_TOKENS_USED_KEY in rec else TOKENS_USED_KEY
    return int(rec[key])


@dataclass
class ItemRecord:
    """One answered (or retrieval-only) QA item. ``answer`` is ``None`` when ``eval.answer=false``;
    ``answer_raw`` is the backbone's reply before post-processing and ``prompt_hash`` the digest of the answer
    request (both ``None`` when the harness did not ask); ``audited`` holds the scores against the audit's gold
    when the overlay is on; ``judge`` the judge's per-run labels; ``usage`` the LLM calls and tokens spent on the
    item, per stage (``None`` in records written before version 2)."""

    item_id: str
    conv_id: str
    qa_index: int
    category: int
    category_name: str
    question: str
    original: GoldScores
    answer: str | None
    retrieved_dia_ids: list[str]
    notes: list[dict[str, Any]]
    tokens_used: int  # tokens of the context handed to the answerer (memcore.text.count_tokens)
    rounds: int
    prompt_version: str
    cached: dict[str, bool]
    latency_s: dict[str, float]
    extra: dict[str, Any] = field(default_factory=dict)
    audited: GoldScores | None = None
    judge: dict[str, Any] | None = None
    answer_raw: str | None = None
    prompt_hash: str | None = None
    usage: dict[str, dict[str, int]] | None = None
    record_version: int = RECORD_VERSION

    def to_json(self) -> dict[str, Any]:
        """The ``items.jsonl`` line (key order is the file's)."""
        out: dict[str, Any] = {
            "record_version": self.record_version,
            "item_id": self.item_id,
            "conv_id": self.conv_id,
            "qa_index": self.qa_index,
            "category": self.category,
            "category_name": self.category_name,
            "question": self.question,
            "gold": self.original.gold,
            "answer": self.answer,
            "answer_raw": self.answer_raw,
            "prompt_hash": self.prompt_hash,
            "evidence": list(self.original.evidence),
            "retrieved_dia_ids": self.retrieved_dia_ids,
            "notes": self.notes,
            "tokens_used": self.tokens_used,
            "rounds": self.rounds,
            "scores": self.original.scores,
            "recall": self.original.recall,
            "hit": self.original.hit,
            "prompt_version": self.prompt_version,
            "cached": self.cached,
            "latency_s": self.latency_s,
            "extra": self.extra,
        }
        if self.audited is not None:
            out["audited"] = self.audited.to_json()
        if self.judge is not None:
            out["judge"] = self.judge
        if self.usage is not None:
            out["usage"] = self.usage
        return out

    @classmethod
    def from_json(cls, rec: Mapping[str, Any]) -> ItemRecord:
        """Inverse of :meth:`to_json` (a line written before ``tokens_used`` was named so has ``context_tokens``);
        raises ``KeyError`` naming the first missing key."""
        audited = rec.get("audited")
        return cls(
            item_id=rec["item_id"],
            conv_id=rec["conv_id"],
            qa_index=int(rec["qa_index"]),
            category=int(rec["category"]),
            category_name=rec["category_name"],
            question=rec["question"],
            original=GoldScores(rec["gold"], list(rec["evidence"]), dict(rec["scores"]), rec["recall"], rec["hit"]),
            answer=rec["answer"],
            retrieved_dia_ids=list(rec["retrieved_dia_ids"]),
            notes=list(rec["notes"]),
            tokens_used=_tokens_used(rec),
            rounds=int(rec["rounds"]),
            prompt_version=rec["prompt_version"],
            cached=dict(rec["cached"]),
            latency_s=dict(rec["latency_s"]),
            extra=dict(rec.get("extra") or {}),
            audited=None
            if audited is None
            else GoldScores(
                audited["gold"], list(audited["evidence"]), dict(audited["scores"]), audited["recall"], audited["hit"]
            ),
            judge=rec.get("judge"),
            answer_raw=rec.get("answer_raw"),
            prompt_hash=rec.get("prompt_hash"),
            usage=rec.get("usage"),
            record_version=int(rec.get("record_version", 0)),
        )

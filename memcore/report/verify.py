"""Re-derive a run from what its items carry: each item's scores are recomputed (answer scores from the prediction
and the gold through the run's protocol, evidence recall and hit from ``retrieved_dia_ids`` and the gold
evidence, the judge's scores from its stored labels), the item's gold, evidence and category are checked against
the data, and the aggregates of ``metrics.json`` are recomputed both from the stored and from the recomputed
items. Used by ``memcore-archive --verify``.

A slim archive may lack fields; what an item does not carry is not recomputed, and the verification says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import with_new_key_names
from memcore.eval.judge import Verdict, verdict_scores
from memcore.eval.protocols import EvalProtocol, get_protocol
from memcore.eval.scoring import score_answer, score_evidence
from memcore.itemlog import DuplicateItemsError, IncompleteItemLogError, LoggedItem, duplicate_ids, read_run_log
from memcore.metrics import Metric
from memcore.pipeline.load import load_slice
from memcore.pipeline.report import run_metrics
from memcore.pipeline.score import run_extra_metrics
from memcore.report.collect import finished_items

#: The metrics keys whose values must follow from the items (the rest describe the machine or the run's timing).
DERIVED_KEYS = (
    "overall",
    "overall_no_adv",
    "by_category",
    "n_items",
    "recall_at_budget",
    "recall_at_k",
    "ier_refinement",
    "audited",
    "published",
)
#: Score keys the LLM judge adds to an item (recomputed from its stored labels, not from the metric protocol).
JUDGE_KEYS = ("judge", "judge_runs", "judge_majority")


@dataclass
class Verification:
    """What a verification found: ``differences`` (items first, as ``item <id>: <field> …``, then the
    ``metrics.json`` keys that differ), and ``not_recomputed`` (what the items did not carry, with counts)."""

    differences: list[str] = field(default_factory=list)
    not_recomputed: list[str] = field(default_factory=list)
    items_checked: int = 0


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def _show(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def judge_scores(record: dict[str, Any]) -> dict[str, Any]:
    """The judge's score keys of an item from its stored ``judge`` record (each run's label)."""
    verdicts = [
        Verdict(str(r.get("label")), str(r.get("reason", "")), bool(r.get("parsed", True))) for r in record["runs"]
    ]
    return verdict_scores(verdicts)


def recompute_variant(
    item: dict[str, Any],
    variant: dict[str, Any],
    protocol: EvalProtocol,
    *,
    judge: dict[str, Any] | None,
    metrics: Sequence[Metric] = (),
) -> tuple[dict[str, Any], list[str]]:
    """The fields of one gold variant (``variant`` holds ``gold``, ``evidence``, ``scores``, ``recall``, ``hit``)
    recomputed under ``protocol`` and the run's extra ``metrics`` from ``item``'s answer and retrieved ids; and
    the names of fields that could not be."""
    out: dict[str, Any] = {}
    missing: list[str] = []
    evidence: dict[str, float | None] = {}
    has_evidence = "retrieved_dia_ids" in item and "evidence" in variant
    if has_evidence:
        scored = (*protocol.declared_metrics(), *metrics)
        evidence = score_evidence(variant["evidence"], item["retrieved_dia_ids"], scored)
        out["recall"], out["hit"] = evidence.pop("recall", None), evidence.pop("hit", None)
    if "answer" in item and "gold" in variant and "category" in item:
        answer = item["answer"]
        category = int(item["category"])
        scores = score_answer(answer, variant["gold"], category, protocol, metrics) if answer is not None else {}
        scores.update(evidence)
        if judge is not None:
            scores.update(judge_scores(judge))
        elif any(k in (variant.get("scores") or {}) for k in JUDGE_KEYS):
            missing.append("judge scores (no judge labels stored)")
            scores.update({k: v for k, v in variant["scores"].items() if k in JUDGE_KEYS})
        out["scores"] = scores
    else:
        missing.append("scores (no answer, gold or category)")
    if not has_evidence:
        missing.append("recall and hit (no retrieved_dia_ids or evidence)")
    return {k: out[k] for k in ("scores", "recall", "hit") if k in out}, missing


def recompute_item(
    item: LoggedItem,
    protocol: EvalProtocol,
    gold_item: Any | None,
    audited_item: Any | None,
    metrics: Sequence[Metric] = (),
) -> tuple[LoggedItem, list[str], list[str]]:
    """``item`` with every score recomputed; the differences (``<field>: stored X, recomputed Y``, and the gold
    fields that disagree with the data) and the fields that could not be recomputed."""
    diffs: list[str] = []
    missing: list[str] = []
    if gold_item is not None:
        expect = {
            "gold": protocol.gold(gold_item),
            "evidence": list(gold_item.evidence),
            "category": int(gold_item.category),
        }
        for key, want in expect.items():
            if key in item and not _same(item[key], want):
                diffs.append(f"{key}: stored {_show(item[key])}, the data has {_show(want)}")
    again = LoggedItem(item)
    fields, miss = recompute_variant(item, item, protocol, judge=item.judge, metrics=metrics)
    again.update(fields)
    missing += miss
    audited = item.get("audited")
    if isinstance(audited, dict):
        same_gold = audited.get("gold") == item.get("gold")
        judge = item.get("judge") if same_gold else None
        if audited_item is not None:
            want_gold = protocol.gold(audited_item)
            if audited.get("gold") != want_gold:
                diffs.append(f"audited.gold: stored {_show(audited.get('gold'))}, the audit has {_show(want_gold)}")
        a_fields, a_miss = recompute_variant(item, audited, protocol, judge=judge, metrics=metrics)
        if not same_gold and any(k in (audited.get("scores") or {}) for k in JUDGE_KEYS):
            a_miss = [m for m in a_miss if not m.startswith("judge")] + [
                "audited judge scores (labels stored for the original gold only)"
            ]
        again["audited"] = {**audited, **a_fields}
        missing += [m if m.startswith("audited") else f"audited {m}" for m in a_miss]
    for key in ("scores", "recall", "hit"):
        if key in item and not _same(item[key], again.get(key)):
            diffs.append(f"{key}: stored {_show(item[key])}, recomputed {_show(again.get(key))}")
    if isinstance(audited, dict):
        for key in ("scores", "recall", "hit"):
            if key in audited and not _same(audited[key], again["audited"].get(key)):
                diffs.append(
                    f"audited.{key}: stored {_show(audited[key])}, recomputed {_show(again['audited'].get(key))}"
                )
    return again, diffs, missing


def verify_run(run_dir: Path, *, max_items: int = 5) -> Verification:
    """Recompute every item of an (archived or live) run and its ``metrics.json`` (see the module doc). At most
    ``max_items`` differing items are named; the count of the others follows."""
    out = Verification()
    metrics = json.loads((run_dir / "metrics.json").read_text())
    cfg = with_new_key_names(OmegaConf.load(run_dir / "config.yaml"), warn=False)
    assert isinstance(cfg, DictConfig)
    protocol = get_protocol(str(cfg.protocol.name))
    extra_metrics = run_extra_metrics(cfg)
    data = load_slice(cfg.dataset, audited=bool(cfg.eval.audited), audit_path=cfg.eval.audit_path)
    try:
        items: list[LoggedItem] = finished_items(run_dir, metrics)
    except DuplicateItemsError:
        items = read_run_log(run_dir).items  # the repeats are named below, with whatever else differs
    except IncompleteItemLogError as exc:
        out.differences.append(str(exc))
        return out
    dup = duplicate_ids(items)
    if dup:
        first = next(iter(dup))
        out.differences.append(f"items repeat {len(dup)} item ids (first: {first}); every score counts them twice")
    by_id = {r.item_id: r for r in items}
    gold = {q.item_id: q for c in data.conversations for q in c.qa}
    order = [i for i in gold if i in by_id]
    extra = [i for i in by_id if i not in gold]
    if extra:
        out.differences.append(f"{len(extra)} items are not in the run's slice (first: {extra[0]})")
    recomputed: list[LoggedItem] = []
    bad_items: list[str] = []
    missing_counts: dict[str, int] = {}
    for item_id in order:
        again, diffs, missing = recompute_item(
            by_id[item_id], protocol, gold[item_id], data.audited.get(item_id), extra_metrics
        )
        recomputed.append(again)
        for m in missing:
            missing_counts[m] = missing_counts.get(m, 0) + 1
        if diffs:
            bad_items.append(item_id)
            if len(bad_items) <= max_items:
                out.differences.append(f"item {item_id}: " + "; ".join(diffs))
    if len(bad_items) > max_items:
        out.differences.append(f"... and {len(bad_items) - max_items} more items differ ({len(bad_items)} in all)")
    out.items_checked = len(order)
    out.not_recomputed = [f"{what}: {n} items" for what, n in sorted(missing_counts.items())]
    method = str(metrics["run"]["method"])
    stored_agg = run_metrics(cfg, method, data, [by_id[i] for i in order], protocol, extra_metrics)
    again_agg = run_metrics(cfg, method, data, recomputed, protocol, extra_metrics)
    for key in DERIVED_KEYS:
        if not _same(_canon(metrics.get(key)), _canon(stored_agg.get(key))):
            out.differences.append(key)
        elif not _same(_canon(metrics.get(key)), _canon(again_agg.get(key))):
            out.differences.append(f"{key} (recomputed from the recomputed items)")
    return out


def _canon(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))

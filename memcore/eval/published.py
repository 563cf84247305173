"""What an imported run's ``metrics.json`` says beyond any run's: where its answers come from, how long they are
(mean and median words), and "J as published": the vendor's own judge's verdicts, aggregated per category with a
bootstrap interval over conversations, kept apart from any J the harness computes (``scores.judge``).

Each item record of an imported run carries the vendor's verdict in ``extra.published.grade`` (a fraction in
[0, 1], None when the file has none); :func:`apply_published` is called by the pipeline's ``run_metrics`` for a
config with a ``published`` node, so the importer, ``memcore-rescore`` and ``memcore-archive --verify`` derive
the same blocks from the same items."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.datasets.spec import DatasetCategories
from memcore.eval.bootstrap import bootstrap_ci
from memcore.itemlog import LoggedItem

#: Where an item record keeps what the published file said about it.
EXTRA_KEY = "published"
N_BOOT, BOOT_SEED, ALPHA = 1000, 0, 0.05


def item_grade(item: LoggedItem) -> float | None:
    """The vendor judge's verdict on ``item`` (None: not graded, or not an imported item)."""
    grade = (item.extra.get(EXTRA_KEY) or {}).get("grade")
    return None if grade is None else float(grade)


def words(answer: str | None) -> int:
    """The answer's length in white-space words (as the answer disclosure counts them)."""
    return len(str(answer or "").split())


def length_stats(items: Sequence[LoggedItem]) -> dict[str, float | None]:
    """Mean and median answer length in words over ``items``."""
    lengths = [words(r.answer) for r in items if r.answer is not None]
    return {
        "mean_words": statistics.fmean(lengths) if lengths else None,
        "median_words": float(statistics.median(lengths)) if lengths else None,
    }


def published_answers(published: Mapping[str, Any], items: Sequence[LoggedItem]) -> dict[str, Any]:
    """``run.answer`` of an imported run, in the keys of the harness's answer disclosure: the vendor's answer
    prompt (sampling unknown), answer length over every item and over categories 1-4."""
    headline = [r for r in items if r.category != 5]
    lengths, no_adv = length_stats(items), length_stats(headline)
    return {
        "prompt": f"{published.get('answer_prompt') or 'the vendor’s'} [published]",
        "prompt_name": f"published by {published.get('system')}",
        "temperature": "unknown",
        "temperature_adversarial": "unknown",
        "max_tokens": "unknown",
        "mean_words": lengths["mean_words"],
        "median_words": lengths["median_words"],
        "mean_words_no_adv": no_adv["mean_words"],
        "median_words_no_adv": no_adv["median_words"],
        "n_answers": sum(1 for r in items if r.answer is not None),
        "published": True,
    }


def _as_judged(items: Sequence[LoggedItem]) -> list[LoggedItem]:
    """The graded items as items judged by the vendor's verdict alone (``scores.judge``: the grade)."""
    return [
        LoggedItem(item_id=r.item_id, conv_id=r.conv_id, category=r.category, scores={"judge": g})
        for r in items
        if (g := item_grade(r)) is not None
    ]


def _block(graded: Sequence[LoggedItem]) -> dict[str, Any]:
    values = [float(r.scores["judge"]) for r in graded]
    return {"judge": statistics.fmean(values) if values else None, "n_graded": len(values)}


def published_judge(
    items: Sequence[LoggedItem], categories: DatasetCategories, judge: str | None
) -> dict[str, Any] | None:
    """ "J as published" over ``items``: per category, over every item and over the headline categories, each the
    mean of the vendor's verdicts (fractions), the headline with a 95 % bootstrap interval over conversations
    (``ci``); None when no item carries a verdict."""
    graded = _as_judged(items)
    if not graded:
        return None
    headline = set(categories.headline_ids)
    by_category = {
        str(cat.id): {"name": cat.title, **_block(group)}
        for cat in categories
        if (group := [r for r in graded if r.category == cat.id])
    }
    no_adv = [r for r in graded if r.category in headline]
    out: dict[str, Any] = {
        "judge_name": judge,
        "by_category": by_category,
        "overall": _block(graded),
        "overall_no_adv": _block(no_adv),
        "n_items": len(items),
    }
    if no_adv:
        low, high = bootstrap_ci(no_adv, "judge", n_boot=N_BOOT, seed=BOOT_SEED, alpha=ALPHA)
        out["overall_no_adv"]["ci"] = [low, high]
    return out


def _without_evidence_scores(metrics: dict[str, Any]) -> None:
    """Recall and hit rate shown as not measured: a published file names no retrieved turns, so the zeros its
    items record (nothing retrieved) say nothing about the system's retrieval."""
    blocks = [metrics.get(k) for k in ("overall", "overall_no_adv")]
    blocks += list((metrics.get("by_category") or {}).values())
    audited = metrics.get("audited") or {}
    blocks += [audited.get(k) for k in ("overall", "overall_no_adv")] + list(
        (audited.get("by_category") or {}).values()
    )
    for block in blocks:
        if isinstance(block, dict):
            block.update(recall=None, hit_rate=None, n_with_evidence=0)
    for key in ("recall_at_k", "recall_at_budget", "ier_refinement"):
        metrics.pop(key, None)
    metrics["run"]["evidence"] = {}  # no evidence known: the table says so in its own line


def apply_published(
    metrics: dict[str, Any],
    published: Mapping[str, Any],
    items: Sequence[LoggedItem],
    categories: DatasetCategories,
) -> None:
    """Add an imported run's blocks to its ``metrics`` (in place): ``run.published`` (the config's provenance
    node), ``run.answer`` (:func:`published_answers`) and ``published`` (:func:`published_judge`), plus
    ``run.missing_categories``: the dataset's categories the file leaves out (LoCoMo's 5, usually; the
    ``categories`` of the ``published`` node, None when it answers every one)."""
    run = metrics.setdefault("run", {})
    plain = OmegaConf.to_container(published, resolve=True) if isinstance(published, DictConfig) else published
    published = dict(plain) if isinstance(plain, Mapping) else {}
    run["published"] = published
    _without_evidence_scores(metrics)
    run["answer"] = published_answers(published, items)
    kept = published.get("categories")
    run["missing_categories"] = [] if kept is None else [c.id for c in categories if c.id not in kept]
    block = published_judge(items, categories, published.get("judge"))
    if block is not None:
        metrics["published"] = block


def published_lines(metrics: Mapping[str, Any]) -> list[str]:
    """The lines an imported run's ``table.md`` adds: provenance, J as published, missing categories, answer
    length and the question texts that differ from the dataset's."""
    run = metrics.get("run") or {}
    pub = run.get("published") or {}
    if not pub:
        return []
    files = "; ".join(f"{f['name']} sha256 {f['sha256']}" for f in pub.get("files") or [])
    lines = [
        f"Imported answers: system {pub.get('system')}, answer model {pub.get('answer_model')}, "
        f"answer prompt {pub.get('answer_prompt')}, source {pub.get('source')} ({pub.get('licence')}); layout "
        f"{pub.get('layout')}; {files}." + (f" Note: {pub['note']}." if pub.get("note") else ""),
        "Recall and hit rate: not measured (a published file names no retrieved turns).",
    ]
    block = metrics.get("published")
    if block:
        ci = block["overall_no_adv"].get("ci")
        ci_text = f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]" if ci else ""
        per_cat = ", ".join(
            f"{k} {100 * v['judge']:.2f}" for k, v in sorted(block["by_category"].items()) if v["judge"] is not None
        )
        lines.append(
            f"J as published (the vendor's judge, {block.get('judge_name')}; never the harness's J), categories 1-4: "
            f"{100 * block['overall_no_adv']['judge']:.2f}{ci_text} (n={block['overall_no_adv']['n_graded']}); "
            f"per category {per_cat}."
        )
    else:
        lines.append("J as published: the file carries no grades.")
    missing = run.get("missing_categories") or []
    if missing:
        lines.append(
            f"Category {', '.join(map(str, missing))} is not in the published file: the overall rows cover the "
            "categories it answers only."
        )
    answer = run.get("answer") or {}
    if answer.get("median_words") is not None:
        lines.append(
            f"Answer length: mean {answer['mean_words']:.1f} words, median {answer['median_words']:.0f} words."
        )
    n_diff = int(pub.get("question_mismatches") or 0)
    listed = pub.get("question_mismatch_items") or []
    lines.append(
        f"Question texts that differ from the dataset's (mapped by index, never by text): {n_diff}"
        + (f" ({', '.join(listed[:20])}{' …' if len(listed) > 20 else ''})." if listed else ".")
    )
    return lines


def published_cell(metrics: Mapping[str, Any]) -> str:
    """``75.78 [73.1, 78.2] (gpt-4o-mini)``: J as published over categories 1-4 with its interval and the vendor's
    judge, ``–`` for a run that was not imported or whose file has no grades."""
    block = metrics.get("published")
    if not block or block["overall_no_adv"].get("judge") is None:
        return "–"
    ci = block["overall_no_adv"].get("ci")
    text = f"{100 * block['overall_no_adv']['judge']:.2f}"
    if ci:
        text += f" [{100 * ci[0]:.2f}, {100 * ci[1]:.2f}]"
    return f"{text} ({block.get('judge_name')})"


def published_disclosure(metrics: Mapping[str, Any]) -> dict[str, str]:
    """The viewer's disclosure entries of an imported run (none for a harness run): source and J as published."""
    pub = (metrics.get("run") or {}).get("published")
    if not pub:
        return {}
    return {
        "published answers": f"{pub.get('system')}: {pub.get('answer_model')}, {pub.get('source')}",
        "J as published": published_cell(metrics),
    }


def published_record(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The report's CSV fields of an imported run (none for a harness run): J as published with its interval and
    judge, the source, the answer model and each file's sha256."""
    pub = (metrics.get("run") or {}).get("published")
    if not pub:
        return {}
    block = (metrics.get("published") or {}).get("overall_no_adv") or {}
    ci = block.get("ci") or [None, None]
    return {
        "j_published_no_adv": None if block.get("judge") is None else 100 * float(block["judge"]),
        "j_published_ci_low": None if ci[0] is None else 100 * float(ci[0]),
        "j_published_ci_high": None if ci[1] is None else 100 * float(ci[1]),
        "j_published_judge": pub.get("judge"),
        "published_source": pub.get("source"),
        "published_answer_model": pub.get("answer_model"),
        "published_sha256": " ".join(f["sha256"] for f in pub.get("files") or []),
    }

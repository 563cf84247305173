"""Per-category and weighted aggregation of per-item scores into the ``metrics.json`` body.

An item is a dict with ``category`` (int 1-5), ``scores`` (``{"f1", "bleu1"}`` and optionally
``"judge"``; ``None`` or absent for retrieval-only runs), and ``recall`` / ``hit`` (``None`` when
the item has no gold evidence). All outputs are fractions in [0, 1] (``None`` when nothing was
measured). "Weighted" overall = the mean over items, i.e. categories weighted by item count, as
A-MEM and the paper report it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memcore.types import Category

ALL_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4, 5)
NO_ADV_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)


def category_name(category: int | Category) -> str:
    """``"multi-hop"``, ``"temporal"``, ... for the official category ints."""
    return Category(int(category)).title.split(" ", 1)[1]


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def _score(item: Mapping[str, Any], key: str) -> float | None:
    scores = item.get("scores") or {}
    value = scores.get(key)
    return None if value is None else float(value)


def _has_judge(items: Sequence[Mapping[str, Any]]) -> bool:
    return any(_score(it, "judge") is not None for it in items)


def summarize(items: Sequence[Mapping[str, Any]], *, judge: bool = False) -> dict[str, Any]:
    """Means over ``items``: ``n``, ``f1``, ``bleu1``, ``recall``, ``hit_rate``, ``n_with_evidence`` (+ ``judge``)."""
    with_ev = [it for it in items if it.get("recall") is not None]
    out: dict[str, Any] = {
        "n": len(items),
        "f1": _mean(_score(it, "f1") for it in items),
        "bleu1": _mean(_score(it, "bleu1") for it in items),
        "recall": _mean(it["recall"] for it in with_ev),
        "hit_rate": _mean(it.get("hit") for it in with_ev),
        "n_with_evidence": len(with_ev),
    }
    if judge:
        out["judge"] = _mean(_score(it, "judge") for it in items)
    return out


def aggregate(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``metrics.json`` body: ``by_category`` (keys ``"1"``..``"5"``, present categories only),
    ``overall`` (items of categories 1-5), ``overall_no_adv`` (1-4), ``n_items``, ``n_without_evidence``."""
    for it in items:
        cat = int(it["category"])
        if cat not in ALL_CATEGORIES:
            raise ValueError(f"item has category {it['category']!r}; LoCoMo categories are 1-5.")
    judge = _has_judge(items)
    by_category: dict[str, Any] = {}
    for cat in ALL_CATEGORIES:
        group = [it for it in items if int(it["category"]) == cat]
        if group:
            by_category[str(cat)] = {"name": category_name(cat), **summarize(group, judge=judge)}
    return {
        "by_category": by_category,
        "overall": summarize(items, judge=judge),
        "overall_no_adv": summarize([it for it in items if int(it["category"]) in NO_ADV_CATEGORIES], judge=judge),
        "n_items": len(items),
        "n_without_evidence": sum(1 for it in items if it.get("recall") is None),
    }


def budget_recall(
    items: Sequence[Mapping[str, Any]],
    budgets: Sequence[int],
    categories: Sequence[int] = NO_ADV_CATEGORIES,
) -> dict[str, Any]:
    """Evidence recall and hit rate at equal context-token budgets: for each budget, each item keeps the
    leading retrieved notes that fit (``notes[i]["tokens"]``, ``notes[i]["dia_ids"]``) and is scored on
    them. Items of ``categories`` with gold evidence only. Returns ``{"<budget>": {"recall", "hit_rate",
    "mean_tokens_used", "n"}}``; a method with longer notes fits fewer of them in the same budget."""
    from memcore.eval.metrics import recall_at_budget

    wanted = set(categories)
    scored = [it for it in items if int(it["category"]) in wanted and it.get("evidence")]
    out: dict[str, Any] = {}
    for budget in budgets:
        results = []
        for it in scored:
            notes = [(n.get("dia_ids") or [], int(n.get("tokens") or 0)) for n in it.get("notes") or []]
            res = recall_at_budget(it["evidence"], notes, int(budget))
            if res["recall"] is not None:
                results.append(res)
        out[str(int(budget))] = {
            "recall": _mean(r["recall"] for r in results),
            "hit_rate": _mean(r["hit"] for r in results),
            "mean_tokens_used": _mean(r["tokens_used"] for r in results),
            "n": len(results),
        }
    return out


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.2f}"


def format_table(metrics: Mapping[str, Any], title: str) -> str:
    """Markdown table of an :func:`aggregate` result: one row per category ("1 multi-hop (n=282)"),
    then Overall and Overall w/o adv; columns in percent."""
    rows: list[tuple[str, Mapping[str, Any]]] = [
        (f"{key} {block.get('name', category_name(int(key)))} (n={block['n']})", block)
        for key, block in sorted(metrics["by_category"].items(), key=lambda kv: int(kv[0]))
    ]
    rows.append((f"Overall (n={metrics['overall']['n']})", metrics["overall"]))
    rows.append((f"Overall w/o adv (n={metrics['overall_no_adv']['n']})", metrics["overall_no_adv"]))
    columns = [("F1 %", "f1"), ("BLEU-1 %", "bleu1"), ("Recall %", "recall"), ("Hit %", "hit_rate")]
    if any("judge" in block for _, block in rows):
        columns.append(("J %", "judge"))
    header = "| Category | " + " | ".join(name for name, _ in columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    lines = [f"### {title}", "", header, rule]
    for label, block in rows:
        lines.append(f"| {label} | " + " | ".join(_pct(block.get(key)) for _, key in columns) + " |")
    budgets = metrics.get("recall_at_budget") or {}
    if budgets:
        parts = [f"{int(b):,} tok {_pct(v['recall'])}" for b, v in budgets.items()]
        lines += ["", "Recall % at equal context-token budgets (categories 1-4): " + ", ".join(parts) + "."]
    n_missing = metrics.get("n_without_evidence")
    if n_missing:
        lines += ["", f"Recall and hit rate exclude {n_missing} item(s) without gold evidence."]
    return "\n".join(lines) + "\n"

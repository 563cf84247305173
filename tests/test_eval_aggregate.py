"""Aggregation (weights checked by hand), the Markdown table, and the cluster bootstrap."""

from __future__ import annotations

from typing import Any

import pytest

from memcore.eval.aggregate import (
    aggregate,
    budget_recall,
    category_name,
    format_table,
    k_recall,
    slice_line,
)
from memcore.eval.bootstrap import bootstrap_ci
from memcore.itemlog import LoggedItem
from memcore.memory.ier_summary import ier_line, ier_refinement


def item(
    conv: str, cat: int, f1: float, bleu1: float, recall: float | None, hit: float | None, **scores: float
) -> LoggedItem:
    return LoggedItem(conv_id=conv, category=cat, scores={"f1": f1, "bleu1": bleu1, **scores}, recall=recall, hit=hit)


ITEMS = [
    item("c1", 1, 1.0, 0.5, 1.0, 1.0),
    item("c1", 1, 0.0, 0.0, None, None),
    item("c2", 2, 0.5, 0.25, 0.5, 1.0),
    item("c2", 4, 0.2, 0.1, 0.0, 0.0),
    item("c3", 5, 1.0, 1.0, None, None),
]


def test_aggregate_by_hand() -> None:
    m = aggregate(ITEMS)
    assert sorted(m["by_category"]) == ["1", "2", "4", "5"]
    c1 = m["by_category"]["1"]
    assert c1 == {
        "name": "multi-hop",
        "n": 2,
        "f1": 0.5,
        "bleu1": 0.25,
        "recall": 1.0,
        "hit_rate": 1.0,
        "n_with_evidence": 1,
    }
    assert m["by_category"]["5"]["recall"] is None
    assert m["by_category"]["5"]["n_with_evidence"] == 0
    # overall over 1-5, weighted by items: f1 = (1 + 0 + 0.5 + 0.2 + 1) / 5
    assert m["overall"]["n"] == 5
    assert m["overall"]["f1"] == pytest.approx(2.7 / 5)
    assert m["overall"]["bleu1"] == pytest.approx(1.85 / 5)
    # recall / hit over the three items with evidence
    assert m["overall"]["recall"] == pytest.approx(1.5 / 3)
    assert m["overall"]["hit_rate"] == pytest.approx(2 / 3)
    assert m["overall"]["n_with_evidence"] == 3
    # without adversarial: (1 + 0 + 0.5 + 0.2) / 4 -- not the mean of category means (0.5, 0.5, 0.2)
    assert m["overall_no_adv"]["n"] == 4
    assert m["overall_no_adv"]["f1"] == pytest.approx(1.7 / 4)
    assert m["n_items"] == 5
    assert m["n_without_evidence"] == 2
    assert "judge" not in m["overall"]


def test_aggregate_judge_and_retrieval_only() -> None:
    with_judge = [item("c1", 1, 1.0, 1.0, 1.0, 1.0, judge=1.0), item("c1", 2, 0.0, 0.0, 0.0, 0.0, judge=0.0)]
    m = aggregate(with_judge)
    assert m["overall"]["judge"] == 0.5
    assert m["by_category"]["2"]["judge"] == 0.0
    retrieval_only = [LoggedItem(conv_id="c", category=3, scores={}, recall=0.25, hit=1.0)]
    r = aggregate(retrieval_only)
    assert r["overall"]["f1"] is None
    assert r["by_category"]["3"]["recall"] == 0.25


def test_aggregate_rejects_unknown_category() -> None:
    with pytest.raises(ValueError, match="the dataset's categories are 1 multi-hop"):
        aggregate([item("c", 7, 0.0, 0.0, None, None)])


def test_category_names() -> None:
    assert [category_name(c) for c in range(1, 6)] == [
        "multi-hop",
        "temporal",
        "open-domain",
        "single-hop",
        "adversarial",
    ]


def test_format_table() -> None:
    table = format_table(aggregate(ITEMS), "demo run")
    lines = table.splitlines()
    assert lines[0] == "### demo run"
    assert lines[2] == "| Category | F1 % | BLEU-1 % | Recall % | Hit % |"
    assert "| 1 multi-hop (n=2) | 50.00 | 25.00 | 100.00 | 100.00 |" in lines
    assert "| 5 adversarial (n=1) | 100.00 | 100.00 | – | – |" in lines
    assert "| Overall, cat. 1-5 (n=5) | 54.00 | 37.00 | 50.00 | 66.67 |" in lines
    assert "| Overall w/o adv, cat. 1-4 (n=4) | 42.50 | 21.25 | 50.00 | 66.67 |" in lines
    assert "Recall and hit rate exclude 2 item(s) without gold evidence." in table
    # headlines say what they are: category 5 under protocol=amem, the names Mem0's harness uses
    assert "category 5 is scored against adversarial_answer, the misleading answer" in table
    assert "call the same ints 1 single-hop, 2 temporal, 3 multi-hop, 4 open-domain" in table


def test_repeated_judge_runs_give_mean_std_majority_and_agreement() -> None:
    rows = [
        LoggedItem(category=1, scores={"judge": 2 / 3, "judge_runs": [1.0, 1.0, 0.0], "judge_majority": 1.0}),
        LoggedItem(category=4, scores={"judge": 1 / 3, "judge_runs": [0.0, 1.0, 0.0], "judge_majority": 0.0}),
        LoggedItem(category=4, scores={"judge": 1.0, "judge_runs": [1.0, 1.0, 1.0], "judge_majority": 1.0}),
        LoggedItem(category=5, scores={"f1": 1.0}),  # not judged (mem0-judge skips category 5)
    ]
    m = aggregate(rows)
    o = m["overall"]
    assert o["n"] == 4 and o["n_judged"] == 3 and o["judge_n_runs"] == 3
    assert o["judge_per_run"] == pytest.approx([2 / 3, 1.0, 1 / 3])
    assert o["judge"] == pytest.approx(2 / 3)
    assert o["judge_std"] == pytest.approx((2 / 27) ** 0.5)  # population std of the three runs' J
    assert o["judge_majority"] == pytest.approx(2 / 3) and o["judge_agreement"] == pytest.approx(1 / 3)
    table = format_table(m, "t")
    assert "| J % (mean ± std over runs) | J majority % |" in table
    assert "| Overall w/o adv, cat. 1-4 (n=3) | – | – | – | – | 66.67 ± 27.22 | 66.67 |" in table


def _many_items() -> list[dict[str, Any]]:
    out = []
    for c in range(8):
        for j in range(6):
            f1 = ((c * 7 + j * 3) % 10) / 10
            out.append(
                item(f"conv-{c}", 1 + (j % 5), f1, f1 / 2, (j % 3) / 2 if j % 4 else None, 1.0 if j % 2 else 0.0)
            )
    return out


def test_bootstrap_ci_contains_point_and_is_deterministic() -> None:
    items = _many_items()
    point = aggregate(items)["overall"]["f1"]
    low, high = bootstrap_ci(items, "f1", n_boot=500, seed=3)
    assert low <= point <= high
    assert low < high
    assert bootstrap_ci(items, "f1", n_boot=500, seed=3) == (low, high)
    assert bootstrap_ci(items, "f1", n_boot=500, seed=4) != (low, high)
    r_point = aggregate(items)["overall"]["recall"]
    r_low, r_high = bootstrap_ci(items, "recall", n_boot=500, seed=3)
    assert r_low <= r_point <= r_high


def test_bootstrap_single_cluster_has_zero_width() -> None:
    items = [item("only", 1, 0.2, 0.0, None, None), item("only", 2, 0.6, 0.0, None, None)]
    assert bootstrap_ci(items, "f1", n_boot=50) == pytest.approx((0.4, 0.4))


def test_bootstrap_errors() -> None:
    with pytest.raises(ValueError, match="known"):
        bootstrap_ci(ITEMS, "rouge")
    with pytest.raises(ValueError, match="no item"):
        bootstrap_ci(ITEMS, "judge")
    with pytest.raises(ValueError, match="conv"):
        bootstrap_ci([LoggedItem(category=1, scores={"f1": 1.0})], "f1")


def test_budget_recall_by_hand() -> None:
    """Two items of categories 1-4 with evidence (an adversarial one and one without evidence are left out).
    Item a: gold D1:1, D1:2; notes 100 tok [D1:1], 300 tok [D1:9], 200 tok [D1:2].
    Item b: gold D2:1; notes 400 tok [D2:1]."""
    a = LoggedItem(
        category=1,
        evidence=["D1:1", "D1:2"],
        notes=[
            {"dia_ids": ["D1:1"], "tokens": 100},
            {"dia_ids": ["D1:9"], "tokens": 300},
            {"dia_ids": ["D1:2"], "tokens": 200},
        ],
    )
    b = LoggedItem(category=2, evidence=["D2:1"], notes=[{"dia_ids": ["D2:1"], "tokens": 400}])
    adversarial = LoggedItem(category=5, evidence=["D3:1"], notes=[{"dia_ids": ["D3:1"], "tokens": 1}])
    no_evidence = LoggedItem(category=3, evidence=[], notes=[{"dia_ids": ["D4:1"], "tokens": 1}])
    out = budget_recall([a, b, adversarial, no_evidence], [150, 400, 600])
    # 150: a keeps D1:1 (recall 0.5, hit 1, 100 tok); b keeps nothing (0, 0, 0 tok)
    assert out["150"] == {"recall": 0.25, "hit_rate": 0.5, "mean_tokens_used": 50.0, "n": 2}
    # 400: a keeps D1:1, D1:9 (0.5, 1, 400 tok); b keeps D2:1 (1, 1, 400 tok)
    assert out["400"] == {"recall": 0.75, "hit_rate": 1.0, "mean_tokens_used": 400.0, "n": 2}
    # 600: a keeps all three (1, 1, 600 tok); b (1, 1, 400 tok)
    assert out["600"] == {"recall": 1.0, "hit_rate": 1.0, "mean_tokens_used": 500.0, "n": 2}
    assert budget_recall([adversarial], [10]) == {
        "10": {"recall": None, "hit_rate": None, "mean_tokens_used": None, "n": 0}
    }


def test_k_recall_by_hand() -> None:
    """Recall over the first k notes (a memory of about K_final notes is all retrieved, so only a cut at k shows the ranking).
    Item a: gold D1:1, D1:2; notes in order [D1:9], [D1:1, D1:5], [D1:2]. Item b: gold D2:1; notes [D2:1].
    The adversarial item and the one without evidence are left out."""
    a = LoggedItem(
        category=1,
        evidence=["D1:1", "D1:2"],
        notes=[{"dia_ids": ["D1:9"]}, {"dia_ids": ["D1:1", "D1:5"]}, {"dia_ids": ["D1:2"]}],
    )
    b = LoggedItem(category=4, evidence=["D2:1"], notes=[{"dia_ids": ["D2:1"]}])
    adversarial = LoggedItem(category=5, evidence=["D3:1"], notes=[{"dia_ids": ["D3:1"]}])
    no_evidence = LoggedItem(category=3, evidence=[], notes=[{"dia_ids": ["D4:1"]}])
    out = k_recall([a, b, adversarial, no_evidence], [1, 2, 3])
    # k=1: a keeps D1:9 (recall 0, hit 0); b keeps D2:1 (1, 1); mean notes retrieved (3 + 1) / 2
    assert out["1"] == {"recall": 0.5, "hit_rate": 0.5, "mean_notes_retrieved": 2.0, "n": 2}
    # k=2: a keeps D1:9, D1:1, D1:5 (0.5, 1); b (1, 1)
    assert out["2"] == {"recall": 0.75, "hit_rate": 1.0, "mean_notes_retrieved": 2.0, "n": 2}
    assert out["3"]["recall"] == 1.0
    assert set(k_recall([a])) == {"5", "10"}  # the default depths


def test_format_table_prints_budget_recall() -> None:
    metrics = aggregate(ITEMS)
    metrics["recall_at_budget"] = {"500": {"recall": 0.25, "hit_rate": 0.5, "mean_tokens_used": 10.0, "n": 2}}
    assert "budgets (categories 1-4): 500 tok 25.00." in format_table(metrics, "t")


def test_slice_line_names_the_conversations_the_cut_and_the_filters() -> None:
    info = {"conversations": ["conv-26"], "max_sessions": 4, "n_items": 18, "categories": [1, 2], "item_ids": 18}
    assert slice_line("locomo-llm", info) == (
        "Slice: locomo-llm = conv-26 (first 4 sessions), 18 QA items; only categories 1, 2; "
        "only the 18 named in dataset.item_ids."
    )
    whole = {"conversations": [f"conv-{i}" for i in range(10)], "max_sessions": None, "n_items": 1986}
    assert slice_line("locomo", whole) == "Slice: locomo = conv-0, conv-1, conv-2, conv-3 and 6 more, 1,986 QA items."
    assert slice_line("locomo-quick", {"conversations": ["conv-26"], "max_sessions": 1, "n_items": 4}) == (
        "Slice: locomo-quick = conv-26 (session 1), 4 QA items."
    )


def test_ier_refinement_compares_round_one_with_the_final_pool_by_hand() -> None:
    def item(cat: int, gold: list[str], final: list[str], round1: list[str] | None, stop: str = "sufficient") -> Any:
        extra: dict[str, Any] = {"rounds_log": [{"round": 1}], "ier_stop": stop}
        if round1 is not None:
            extra["round1_dia_ids"] = round1
        return {"category": cat, "evidence": gold, "retrieved_dia_ids": final, "extra": extra}

    items = [
        item(1, ["D1:1", "D1:2"], ["D1:1", "D1:2"], ["D1:1"]),  # refined: recall 0.5 → 1, hit 1 → 1
        item(2, ["D2:1"], ["D2:1"], ["D3:3"]),  # refined: 0 → 1, hit 0 → 1
        item(4, ["D4:1"], ["D9:9"], None),  # stopped at round 1: counted in n only
        item(5, ["D5:1"], ["D5:1"], ["D0:0"]),  # category 5: left out
        item(1, [], ["D1:1"], ["D1:1"]),  # no gold evidence: left out
    ]
    res = ier_refinement(items)
    assert res == {
        "n": 3,
        "n_refined": 2,
        "recall_round1": 0.25,
        "recall_final": 1.0,
        "hit_round1": 0.5,
        "hit_final": 1.0,
    }
    assert ier_line(res) == (
        "IER: refined 2 of 3 questions (categories 1-4 with gold evidence); on them recall 25.00 at round 1 → "
        "100.00 after refinement, hit rate 50.00 → 100.00."
    )
    none_refined = ier_refinement([item(1, ["D1:1"], ["D1:1"], None)])
    assert ier_line(none_refined) == (  # type: ignore[arg-type]
        "IER: refined 0 of 1 questions (categories 1-4 with gold evidence); every question stopped after round 1."
    )
    off = [item(1, ["D1:1"], ["D1:1"], None, stop="off")]
    assert ier_refinement(off) is None and ier_refinement([{"category": 1, "evidence": ["D1:1"]}]) is None
    # a slim archive drops rounds_log and keeps ier_stop: the same numbers re-derive from it
    slim = [{**it, "extra": {k: v for k, v in it["extra"].items() if k != "rounds_log"}} for it in items]
    assert ier_refinement(slim) == res

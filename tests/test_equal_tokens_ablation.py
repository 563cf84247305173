"""experiments.measure.equal_tokens_ablation: the full run is the one at memcore-cheap's default packer knobs, every
other run at its budget a row with its paired recall change."""

from __future__ import annotations

from pathlib import Path

import pytest

from experiments.measure import equal_tokens_ablation as eta
from experiments.measure import split_recall
from memcore.itemlog import LoggedItem
from memcore.report.collect import RunData

DEFAULTS = {
    "pack_window_bm25": 2.0,
    "pack_window_dense": 1.0,
    "pack_keyword": 0.0,
    "pack_topic": 0.0,
    "pack_link": 0.6,
    "pack_link_text": 0.0,
    "pack_window_width": 4.0,
    "pack_keyword_graph": 0.0,
    "pack_link_anchors": 20.0,
}


def _run(name: str, recalls: list[float], *, ablation: str = "none", tokens: int = 500, **knobs: float) -> RunData:
    method = {"name": "memcore-cheap", **DEFAULTS, **knobs}
    items = [LoggedItem(item_id=f"q{i}", conv_id="c", category=1, recall=r, scores={}) for i, r in enumerate(recalls)]
    return RunData(
        Path(name),
        {"run": {"method": "memcore-cheap", "ablation": ablation}},
        config={"method": method, "eval": {"token_cap": tokens}},
        _items=items,
    )


def test_the_composed_defaults_are_memcore_cheaps_packer_knobs() -> None:
    knobs = eta.default_knobs()
    assert set(knobs) == set(DEFAULTS)
    assert all(v >= 0 for v in knobs.values())


def test_what_changed_says_off_on_or_changed() -> None:
    assert eta.what_changed(_run("a", [1.0], pack_link=0.0), DEFAULTS) == "packer lists off"
    assert eta.what_changed(_run("b", [1.0], pack_topic=0.2), DEFAULTS) == "packer lists on"
    assert eta.what_changed(_run("c", [1.0], pack_link=0.0, pack_topic=0.2), DEFAULTS) == "packer knobs changed"
    assert eta.is_default(_run("d", [1.0]), DEFAULTS)
    assert not eta.is_default(_run("e", [1.0], pack_window_width=2), DEFAULTS)


def test_rows_pair_each_run_with_the_full_one_at_its_budget() -> None:
    full = _run("full", [1.0, 1.0, 0.0, 1.0])
    links_off = _run("links", [1.0, 0.0, 0.0, 1.0], pack_link=0.0)
    switch = _run("wo_topic", [1.0, 1.0, 0.0, 1.0], ablation="wo_topic")
    budgets, table = eta.rows([links_off, full, switch], DEFAULTS)
    assert budgets == [500]
    names = [name for name, _, _ in table]
    assert names == ["full", "wo_topic", "pack_link=0.0"]
    assert table[0][2][500] == "**75.0**"
    # one item of four lost: Δ -25 points
    assert table[2][2][500].startswith("50.0 (-25.0 [")
    assert table[1][2][500].startswith("75.0 (+0.0 [+0.0, +0.0]")


def test_two_default_runs_at_one_budget_must_agree_item_by_item() -> None:
    _, table = eta.rows([_run("a", [1.0, 0.0]), _run("b", [1.0, 0.0])], DEFAULTS)
    assert [name for name, _, _ in table] == ["full"]
    with pytest.raises(ValueError, match="disagree item by item"):
        eta.rows([_run("a", [1.0]), _run("b", [0.0])], DEFAULTS)
    with pytest.raises(ValueError, match="no full-method run"):
        eta.rows([_run("a", [1.0], pack_link=0.0)], DEFAULTS)


def test_split_recall_gives_each_split_and_the_margin_over_the_reference() -> None:
    def run(name: str, method: str, recalls: dict[str, float]) -> RunData:
        items = [LoggedItem(item_id=f"{conv}-q", conv_id=conv, category=2, recall=r) for conv, r in recalls.items()]
        config = {"method": {"name": method}, "eval": {"token_cap": 500}}
        return RunData(Path(name), {"run": {"method": method}}, config=config, _items=items)

    ref = run("ref", "rag_hybrid", {"conv-26": 0.5, "conv-44": 0.0})
    mine = run("mine", "rag_bm25", {"conv-26": 1.0, "conv-44": 0.5})
    assert split_recall.recall(split_recall.in_split(mine.items, "dev")) == 100.0
    assert split_recall.recall(split_recall.in_split(mine.items, "test")) == 50.0
    table = split_recall.markdown([mine, ref], "rag_hybrid")
    lines = table.splitlines()
    assert lines[2].startswith("| 500 | rag_hybrid (reference) | 25.0 | 50.0 | 0.0 |")
    assert lines[3].startswith("| 500 | rag_bm25 | 75.0 (+50.0 [+50.0, +50.0]*) | 100.0 (+50.0")
    with pytest.raises(ValueError, match="no run is labelled 'nope'"):
        split_recall.markdown([mine, ref], "nope")

"""memcore-view in a real browser (headless Debian Chromium driven by selenium): the overview, the item list filtered
to category-1 misses, one item's highlighted gold turns, and the two-run view."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from memcore.view.browser import (
    browser_missing,
    chromium,
    filter_items,
    open_site,
    open_view,
    shown_gold_turns,
    wait_view,
)
from memcore.view.site import build

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "results/measured/first_run/runs/quickstart/locomo-quick/local-small/amem/memcore/none"
QUICK = REPO / "results/measured/rehearsal_quick/runs/paper_main/rehearsal-quick/gpt-4o-mini/amem"


def _items(run: Path) -> dict[str, dict[str, Any]]:
    with gzip.open(run / "items.jsonl.gz", "rt") as fh:
        return {r["item_id"]: r for r in map(json.loads, fh)}


@pytest.fixture(scope="module")
def driver() -> Any:
    why = browser_missing()
    if why and os.environ.get("CI"):
        pytest.fail(f"CI installs Chromium, its driver and selenium: {why}")
    if why:
        pytest.skip(why)
    with chromium() as d:
        yield d


def test_overview_filter_and_one_items_gold_turns(driver: Any, tmp_path: Path, locomo_path: Path) -> None:
    site = build([QUICKSTART], tmp_path / "site")
    items = _items(QUICKSTART)
    open_site(driver, site)
    overview = driver.find_element("id", "overview-run0").text
    assert "Per category" in overview and "Overall, cat. 1-5 (n=4)" in overview and "locomo-quick" in overview

    open_view(driver, "items")
    shown = filter_items(driver, "1", "f1zero")
    want = sorted(i for i, r in items.items() if r["category"] == 1 and r["scores"]["f1"] == 0)
    assert want and sorted(shown["ids"]) == want

    item_id = shown["ids"][0]
    driver.find_element("css selector", f"#items-table tbody tr[data-id='{item_id}']").click()
    wait_view(driver, "item")
    assert driver.find_element("id", "item-question").text == items[item_id]["question"]
    assert f"item 1 of {len(want)}" in driver.find_element("css selector", ".crumbs").text
    gold = shown_gold_turns(driver)
    evidence = set(items[item_id]["evidence"])
    # Every gold turn is shown (in the context or as missing), and nothing else is highlighted as gold.
    assert set(gold["present"]) | set(gold["missing"]) == evidence
    in_context = {d for n in items[item_id]["notes"] for d in n["dia_ids"]}
    assert set(gold["context"]) == evidence & in_context
    assert set(gold["missing"]) == evidence - in_context


def test_two_run_view(driver: Any, tmp_path: Path, locomo_path: Path) -> None:
    a, b = QUICK / "full_context/none", QUICK / "memcore/none"
    site = build([a, b], tmp_path / "site")
    ia, ib = _items(a), _items(b)
    open_site(driver, site, "diff")
    open_view(driver, "diff?metric=f1")
    rows = driver.execute_script(
        "return [...document.querySelectorAll('#diff-table tbody tr')].map(r => [r.dataset.id, r.lastElementChild.previousElementSibling.textContent])"
    )
    want = {i for i in ia if abs(ia[i]["scores"]["f1"] - ib[i]["scores"]["f1"]) > 1e-4}
    assert {r[0] for r in rows} == want
    deltas = [abs(float(d)) for _, d in rows]
    assert deltas == sorted(deltas, reverse=True)  # largest disagreement first
    assert "overall" in driver.find_element("id", "deltas").text

    driver.find_element("css selector", f"#diff-table tbody tr[data-id='{rows[0][0]}']").click()
    wait_view(driver, "item")
    answers = driver.execute_script(
        "return [0, 1].map(i => document.querySelector('#item-run' + i + ' .answer').textContent)"
    )
    assert answers == [ia[rows[0][0]]["answer"], ib[rows[0][0]]["answer"]]

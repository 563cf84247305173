"""The committed example of memcore-view: two sites under ``results/examples/view/`` and a screenshot of each view.

``quickstart/`` views the committed quickstart run (memcore on locomo-quick with the local 0.5B model, 4 questions);
``two_runs/`` compares full_context with memcore on the committed rehearsal-quick slice (25 questions, GPT-4o-mini).
Screenshots (headless Chromium, 1400 px wide): ``overview.png`` and ``items.png`` and ``item.png`` of the first site,
``diff.png`` of the second.

    python -m experiments.view_example
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from memcore.view.browser import browser_missing, chromium, filter_items, open_site, open_view, wait_view
from memcore.view.site import build

QUICKSTART = Path("results/measured/first_run/runs/quickstart/locomo-quick/local-small/amem/memcore/none")
QUICK = Path("results/measured/rehearsal_quick/runs/paper_main/rehearsal-quick/gpt-4o-mini/amem")
OUT = Path("results/examples/view")


def shoot(driver: Any, path: Path, height: int) -> None:
    """A screenshot of the page's top ``height`` px (less when the page is shorter)."""
    full = int(driver.execute_script("return document.documentElement.scrollHeight"))
    driver.set_window_size(1400, min(height, full + 140))  # the window's frame is part of its height
    driver.execute_script("window.scrollTo(0, 0)")
    driver.save_screenshot(str(path))
    print(f"written: {path}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=OUT)
    args = p.parse_args(argv)
    why = browser_missing()
    if why:
        raise SystemExit(f"error: {why}")
    one = build([QUICKSTART], args.out / "quickstart")
    two = build([QUICK / "full_context/none", QUICK / "memcore/none"], args.out / "two_runs")
    with chromium(1400, 1100) as driver:
        open_site(driver, one)
        shoot(driver, args.out / "overview.png", 1500)
        open_view(driver, "items")
        filter_items(driver, "", "")
        shoot(driver, args.out / "items.png", 520)
        open_view(driver, "items?cat=1&out=f1zero")
        item_id = driver.execute_script("return document.querySelector('#items-table tbody tr').dataset.id")
        driver.find_element("css selector", "#items-table tbody tr").click()
        wait_view(driver, "item")
        shoot(driver, args.out / "item.png", 1700)
        print(f"item shown: {item_id}")
        open_site(driver, two, "diff")
        shoot(driver, args.out / "diff.png", 1300)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Drive a built site in headless Chromium (selenium, the ``dev`` extra): the browser test, the scale measurement
and the committed screenshots share this.

Debian's ``chromium`` and ``chromium-driver`` are used from fixed paths (``/usr/bin/chromium``,
``/usr/bin/chromedriver``), so selenium never tries to download a browser or driver.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def browser_missing() -> str | None:
    """Why the browser cannot be driven here (None when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists():
            return f"{path} is missing (apt-get install -y chromium chromium-driver)"
    return None


@contextmanager
def chromium(width: int = 1400, height: int = 1000) -> Iterator[Any]:
    """A headless Chromium webdriver (closed on exit)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=opts)
    try:
        yield driver
    finally:
        driver.quit()


def site_url(site: Path, fragment: str = "overview") -> str:
    return Path(site).resolve().as_uri() + "/index.html#" + fragment


def wait_for(driver: Any, script: str, timeout: float = 20.0) -> Any:
    """Poll ``script`` (JS returning a value) until it is truthy; its value. TimeoutError after ``timeout`` s."""
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value:
            return value
        if time.monotonic() > end:
            raise TimeoutError(f"the page never satisfied: {script}")
        time.sleep(0.05)


def open_site(driver: Any, site: Path, fragment: str = "overview") -> float:
    """Load the site at ``fragment`` and wait until its data is in; ms from navigation start to ready."""
    driver.get(site_url(site, fragment))
    return float(wait_for(driver, "return window.__mvReady"))


def open_view(driver: Any, fragment: str) -> None:
    """Go to ``fragment`` in the loaded site and wait until the view is drawn (:func:`wait_view`)."""
    driver.execute_script("document.body.dataset.drawn = 'no'; location.hash = arguments[0]", fragment)
    wait_view(driver, fragment.split("/")[0].split("?")[0])


def wait_view(driver: Any, view: str) -> None:
    """Wait until ``view`` (overview, items, item, diff) is drawn; an item once its data is loaded and shown."""
    wait_for(driver, f"return document.body.dataset.view === {view!r} && document.body.dataset.drawn === 'yes'")


def filter_items(driver: Any, category: str, outcome: str, text: str = "") -> dict[str, Any]:
    """On the items view: choose ``category`` and ``outcome`` (option values) and type ``text`` the way a user
    does (change events), then report the items matched (``rows``), the ids of the rows drawn (the first page) and
    the ms the three filter steps and redraws took (layout forced)."""
    return driver.execute_script(
        """
        const [cat, out, text] = arguments;
        const t0 = performance.now();
        const fire = (id, v, ev) => { const e = document.getElementById(id); e.value = v; e.dispatchEvent(new Event(ev)); };
        fire('f-cat', cat, 'change');
        fire('f-out', out, 'change');
        fire('f-q', text, 'input');
        const rows = document.querySelectorAll('#items-table tbody tr');
        void document.body.offsetHeight;
        const matched = parseInt(document.getElementById('f-count').textContent, 10);
        return {ms: performance.now() - t0, rows: matched, ids: [...rows].map(r => r.dataset.id)};
        """,
        category,
        outcome,
        text,
    )


def shown_gold_turns(driver: Any, column: int = 0) -> dict[str, list[str]]:
    """The turn ids highlighted as gold in an open item's column: in the context, and shown as missing."""
    return driver.execute_script(
        """
        const col = document.getElementById('item-run' + arguments[0]);
        const ids = (sel) => [...col.querySelectorAll(sel)].map(e => e.dataset.dia);
        return {context: ids('.context .turn.gold'), missing: ids('.golds .turn.gold.missing'),
                present: ids('.golds .turn.gold.present')};
        """,
        column,
    )

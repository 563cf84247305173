"""How fast memcore-view's site opens and filters on full-LoCoMo runs (1,986 items), and how big it is.

For each case the site is built into a scratch folder and opened from disk (``file://``) in headless Chromium
(Debian's, driven by selenium). Timings come from the page's own clock (``performance.now()``, whose origin is the
navigation start): ``open`` is navigation start to the item index of every run loaded and the overview drawn;
``items``, ``filter``, ``text``, ``sort`` are one view change or filter each, layout forced before the clock stops;
``item`` opens the item whose context is longest (its detail chunk and conversation are loaded then, from disk);
``diff`` draws the two-run view. Each case is repeated ``--repeat`` times in a fresh browser; the JSON keeps every
repeat and the Markdown the median and the worst.

    python -m experiments.benchmarks.view_scale            # writes results/benchmarks/view_scale.{json,md}
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, machine_state, md_table, write_result
from memcore.view.browser import browser_missing, chromium, filter_items, open_site, wait_for
from memcore.view.data import load_view_run
from memcore.view.site import build

FULL = Path("results/measured/rehearsal_full/root/runs/paper_main/locomo/gpt-4o-mini/amem")
CASES: dict[str, list[Path]] = {
    "full_context": [FULL / "full_context/none"],
    "memgpt": [FULL / "memgpt/none"],
    "memgpt_vs_memcore": [FULL / "memgpt/none", FULL / "memcore/none"],
}
#: Two seconds: the bar for opening and filtering a full-LoCoMo run.
TARGET_MS = 2000.0
SIZE_LIMIT = 20 * 2**20


def site_bytes(site: Path) -> int:
    return sum(p.stat().st_size for p in site.rglob("*") if p.is_file())


def longest_item(run: Path) -> str:
    """The item with the most notes (the heaviest item page)."""
    items = load_view_run(run).items
    return max(items, key=lambda r: (len(r.get("notes") or []), r["item_id"]))["item_id"]


def timed(driver: Any, js_action: str) -> float:
    """Milliseconds from running ``js_action`` until the view it starts is drawn (page clock)."""
    t0 = driver.execute_script(
        "const t = performance.now(); document.body.dataset.drawn = 'no'; " + js_action + "; return t;"
    )
    wait_for(driver, "return document.body.dataset.drawn === 'yes'")
    return float(driver.execute_script("void document.body.offsetHeight; return performance.now();")) - float(t0)


def measure(site: Path, runs: list[Path]) -> dict[str, Any]:
    """One pass over the views in a fresh browser; milliseconds per step."""
    out: dict[str, Any] = {}
    with chromium() as driver:
        out["browser"] = f"{driver.capabilities.get('browserName')} {driver.capabilities.get('browserVersion')}"
        out["open"] = open_site(driver, site)
        out["items"] = timed(driver, "location.hash = 'items'")
        shown = filter_items(driver, "1", "f1zero")
        out["filter"], out["filter_rows"] = shown["ms"], shown["rows"]
        text = filter_items(driver, "", "", "Caroline")
        out["text"], out["text_rows"] = text["ms"], text["rows"]
        out["sort"] = timed(driver, "document.querySelector('#items-table th[data-sort=\"f1\"]').click()")
        heavy = longest_item(runs[0])
        out["item"] = timed(driver, f"location.hash = 'item/' + encodeURIComponent({heavy!r})")
        out["item_id"] = heavy
        if len(runs) == 2:
            out["diff"] = timed(driver, "location.hash = 'diff'")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--cases", default=",".join(CASES), help=f"comma list of {', '.join(CASES)}")
    p.add_argument("--name", default="view_scale")
    args = p.parse_args(argv)
    why = browser_missing()
    if why:
        raise SystemExit(f"error: {why}")
    results: dict[str, Any] = {}
    before = machine_state()
    with tempfile.TemporaryDirectory(prefix="view-scale-") as scratch:
        for name in args.cases.split(","):
            runs = CASES[name]
            t0 = time.perf_counter()
            site = build(runs, Path(scratch) / name)
            build_s = time.perf_counter() - t0
            n_items = len(load_view_run(runs[0]).items)
            passes = [measure(site, runs) for _ in range(args.repeat)]
            results[name] = {
                "runs": [str(r) for r in runs],
                "n_items": n_items,
                "build_s": round(build_s, 2),
                "site_bytes": site_bytes(site),
                "index_bytes": sum((site / "data" / f"run{i}.js").stat().st_size for i in range(len(runs))),
                "passes": passes,
            }
    steps = ["open", "items", "filter", "text", "sort", "item", "diff"]
    rows = []
    for name, r in results.items():
        cells = []
        for step in steps:
            vals = [p[step] for p in r["passes"] if step in p]
            cells.append(f"{statistics.median(vals):.0f} / {max(vals):.0f}" if vals else "–")
        rows.append([name, f"{r['n_items']:,}", f"{r['site_bytes'] / 2**20:.1f}", f"{r['build_s']:.1f}", *cells])
    worst = max(p[s] for r in results.values() for p in r["passes"] for s in ("open", "filter", "text") if s in p)
    biggest = max(r["site_bytes"] for r in results.values())
    table = md_table(["case", "items", "site MiB", "build s", *(f"{s} ms (median / max)" for s in steps)], rows)
    verdict = (
        f"Worst open or filter: {worst:.0f} ms (target < {TARGET_MS:.0f} ms: {'met' if worst < TARGET_MS else 'MISSED'});"
        f" largest site {biggest / 2**20:.1f} MiB (limit 20 MiB: {'met' if biggest < SIZE_LIMIT else 'MISSED'})."
    )
    path = write_result(args.name, {"machine_at_start": before, "repeat": args.repeat, "cases": results})
    after = machine_state()
    browser = next(iter(results.values()))["passes"][0]["browser"]
    md = (
        f"command: `python -m experiments.benchmarks.view_scale --repeat {args.repeat}`\n\n"
        f"Headless {browser} (Debian), sites opened from disk (file://); {args.repeat} passes per case, each in a fresh"
        f" browser; shared 2-core machine, load average {before['loadavg_1_5_15'][0]} at start and"
        f" {after['loadavg_1_5_15'][0]} at end. Steps (page clock, ms): open = navigation start to the index of every"
        " run loaded and the overview drawn; items = the item list drawn; filter = category 1 + F1 = 0; text = a text"
        " filter; sort = by F1; item = the item with the most notes opened (its chunk and conversation loaded then);"
        f" diff = the two-run view.\n\n{table}\n\n{verdict}\n"
    )
    (RESULTS_DIR / f"{args.name}.md").write_text(md)
    print(md)
    print(f"written: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

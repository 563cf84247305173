"""Committed runs: a finished run dir packed small enough for git, and the check that its numbers follow from its items.

``memcore-archive RUN… --out results/measured/NAME/runs`` copies each run's ``metrics.json``, ``cost.json``,
``stats.json`` and ``config.yaml`` and gzips its ``items.jsonl`` (byte-stable: no name or time in the gzip header).
Paths of the machine that made the run (the results root, the data file, the run dir) are replaced by placeholders,
so nothing committed names a machine. ``memcore-archive --verify DIR…`` recomputes every item of each archived run from
what it carries (scores from the prediction and the gold, recall and hit from the retrieved ids and the gold
evidence, the judge's scores from its labels; :mod:`memcore.report.verify`), then the metrics, with the run's own
config and the LoCoMo file, and fails on any difference, naming the first items and fields: a committed number is
one a reader can re-derive. ``memcore-report`` reads archived runs like live ones (``items.jsonl.gz``).

``--slim`` drops the item fields no metric or table is computed from (:data:`SLIM_DROP`: the question text, the raw
reply, hashes, latencies, cache flags, IER's round log), for sweeps of thousands of items per run; a slim archive
still re-derives (``--verify``) and renders the same tables.
"""

from __future__ import annotations

import gzip
import json
import logging
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memcore.itemlog import ITEMS_GZ, ItemLogError, require_unique_ids
from memcore.report.collect import ReportInputError, finished_items, read_json
from memcore.report.verify import verify_run

log = logging.getLogger(__name__)

COPIED = ("metrics.json", "cost.json", "stats.json")
#: Config keys that hold a machine's paths, and what the archive writes instead. ``dataset.path`` and
#: ``eval.audit_path`` become null: the harness then finds the data as on any machine (``$MEMCORE_DATA`` or the
#: default location), and the data's sha256 is checked by ``scripts/get_locomo.py``.
PATH_KEYS: dict[str, str | None] = {
    "paths.root": "<root>",
    "dataset.path": None,
    "eval.audit_path": None,
    "run_dir": "<run>",
}
#: Item fields a slim archive leaves out (top level, then inside ``extra``): read by no metric and no report table.
SLIM_DROP = ("question", "answer_raw", "prompt_hash", "latency_s", "cached")
SLIM_DROP_EXTRA = ("rounds_log",)


def slim_item(item: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` without :data:`SLIM_DROP` (and ``extra``'s :data:`SLIM_DROP_EXTRA`)."""
    out = {k: v for k, v in item.items() if k not in SLIM_DROP}
    if isinstance(out.get("extra"), dict):
        out["extra"] = {k: v for k, v in out["extra"].items() if k not in SLIM_DROP_EXTRA}
    return out


def _scrub_config(run_dir: Path) -> str:
    """``config.yaml`` with machine paths replaced (see :data:`PATH_KEYS`); Hydra's own block dropped."""
    cfg = OmegaConf.load(run_dir / "config.yaml")
    for key, value in PATH_KEYS.items():
        if OmegaConf.select(cfg, key, default="__absent__") != "__absent__":
            OmegaConf.update(cfg, key, value, merge=False, force_add=False)
    if "hydra" in cfg:
        del cfg["hydra"]
    return OmegaConf.to_yaml(cfg, resolve=False)


def _scrub_text(text: str, run_dir: Path, roots: Iterable[Path]) -> str:
    """Replace the run dir and the results roots (absolute paths) by placeholders in a JSON text."""
    for path, mark in ((run_dir.resolve(), "<run>"), *((r.resolve(), "<root>") for r in roots)):
        text = text.replace(str(path), mark)
    return text


def _results_root(run_dir: Path) -> list[Path]:
    """The results root the run's config names (``paths.root``), when it is an absolute path."""
    cfg_path = run_dir / "config.yaml"
    if not cfg_path.is_file():
        return []
    root = OmegaConf.select(OmegaConf.load(cfg_path), "paths.root", default=None)
    return [Path(root)] if isinstance(root, str) and root.startswith("/") else []


def archive_run(run_dir: Path, out_dir: Path, *, roots: Sequence[Path] = (), slim: bool = False) -> Path:
    """Pack one finished run dir into ``out_dir`` (created; an existing archive there is replaced). The run dir,
    its config's results root and ``roots`` are written as ``<run>`` / ``<root>``; with ``slim`` the items lose
    :data:`SLIM_DROP`."""
    run_dir = Path(run_dir)
    metrics = read_json(run_dir / "metrics.json")
    try:
        items = finished_items(run_dir, metrics)
        require_unique_ids(items, run_dir)
    except ItemLogError as exc:
        raise ReportInputError(str(exc)) from None
    if not metrics or not items:
        raise ReportInputError(f"{run_dir}: not a finished run (needs metrics.json and items); rerun it to finish.")
    roots = [*roots, *_results_root(run_dir)]
    tmp = out_dir.with_name(out_dir.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in COPIED:
        src = run_dir / name
        if src.is_file():
            (tmp / name).write_text(_scrub_text(src.read_text(), run_dir, roots))
    if (run_dir / "config.yaml").is_file():
        (tmp / "config.yaml").write_text(_scrub_text(_scrub_config(run_dir), run_dir, roots))
    if slim:
        items = [slim_item(r) for r in items]
    lines = "".join(json.dumps(dict(r), sort_keys=True, ensure_ascii=False) + "\n" for r in items)
    with open(tmp / ITEMS_GZ, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", filename="", mtime=0) as gz:
        gz.write(_scrub_text(lines, run_dir, roots).encode("utf-8"))
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
    return out_dir


def archive_name(run_dir: Path) -> Path:
    """Where a run goes inside the archive: its path below the results' ``runs`` dir (experiment / dataset /
    backbone / protocol / method / ablation, as the run config lays it out), else its own name."""
    parts = run_dir.resolve().parts
    if "runs" in parts:
        return Path(*parts[len(parts) - parts[::-1].index("runs") :])
    return Path(run_dir.name)


def rederive(run_dir: Path) -> list[str]:
    """Recompute an (archived or live) run's items and metrics from what its items carry and its config
    (:func:`memcore.report.verify.verify_run`); what differs: ``item <id>: <field> …`` for the first items, then
    the ``metrics.json`` keys (empty when every item and every derived number follows)."""
    return verify_run(run_dir).differences

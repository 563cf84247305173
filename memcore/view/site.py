"""A static site to read a run item by item, or two runs side by side (the command: ``memcore-view``,
:mod:`memcore.commands.view`).

The site is plain files (``index.html``, ``app.js``, ``style.css`` and ``data/*.js``) that open from disk with no
server: each data file is a script that hands its JSON to the page. Every item's scores are in ``data/run<i>.js``
(loaded at start); its notes, rounds and verdicts in ``data/run<i>/<conversation>.js`` and the conversation's turns in
``data/conv/<conversation>.js``, loaded when an item is opened. The site is built in a temporary folder beside
``--out`` and renamed into place, so a failed build leaves nothing behind and an earlier site stays until replaced.
"""

from __future__ import annotations

import functools
import http.server
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from memcore.view.data import SiteData, ViewInputError, build_site_data, load_view_run

#: The page's own files (package data under ``memcore/view/static``).
STATIC = ("index.html", "app.js", "style.css")
#: Written into every site; only a folder holding it is replaced by a new build.
MARKER = ".memcore-view"
#: How far above a run dir to look for the report's ``report/plots`` (archives keep it beside ``runs/``).
PLOT_SEARCH_DEPTH = 8


def _js(call: str, *args: Any) -> str:
    """A data file: one call of a loader the page defines, with JSON arguments (a NaN or infinite number, which
    JSON cannot hold, becomes null)."""
    body = ",".join(json.dumps(_finite(a), ensure_ascii=False, separators=(",", ":"), allow_nan=False) for a in args)
    return f"{call}({body});\n"


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def safe_name(text: str) -> str:
    """A file name for a conversation id (letters, digits, ``-`` and ``_`` kept)."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "_"


def find_plots(run_dir: Path) -> list[Path]:
    """The report's PNG figures for the run: ``report/plots/*.png`` in the run dir, or in the nearest folder above it
    whose ``report/runs.txt`` (written by ``memcore-report``) names the run (a sweep's or an archive's report)."""
    here = Path(run_dir).resolve()
    parts = here.parts
    tail = "/".join(parts[len(parts) - 1 - parts[::-1].index("runs") :] if "runs" in parts else parts[-2:])
    for d in [here, *here.parents][:PLOT_SEARCH_DEPTH]:
        pngs = sorted((d / "report" / "plots").glob("*.png"))
        if not pngs:
            continue
        listed = d / "report" / "runs.txt"
        if d == here or (listed.is_file() and any(ln.strip().endswith(tail) for ln in listed.read_text().splitlines())):
            return pngs
    return []


def write_site(data: SiteData, plots: Sequence[Sequence[Path]], out: Path) -> None:
    """Write the page and ``data`` into ``out`` (an empty, existing folder)."""
    static = resources.files("memcore.view") / "static"
    for name in STATIC:
        (out / name).write_bytes((static / name).read_bytes())
    d = out / "data"
    (d / "conv").mkdir(parents=True)
    (d / "plots").mkdir()
    plot_names: list[list[str]] = []
    for i, pngs in enumerate(plots):
        names = []
        for p in pngs:
            name = f"run{i}-{p.name}"
            shutil.copyfile(p, d / "plots" / name)
            names.append(name)
        plot_names.append(names)
    for i, run in enumerate(data.runs):
        chunks = {conv: f"data/run{i}/{safe_name(conv)}.js" for conv in data.details[i]}
        (d / f"run{i}.js").write_text(_js("MV.run", i, {**run, "plots": plot_names[i], "chunks": chunks}), "utf-8")
        (d / f"run{i}").mkdir()
        for conv, chunk in data.details[i].items():
            (d / f"run{i}" / f"{safe_name(conv)}.js").write_text(_js("MV.chunk", i, conv, chunk), "utf-8")
    conv_files = {}
    for conv_id, conv in data.convs.items():
        (d / "conv" / f"{safe_name(conv_id)}.js").write_text(_js("MV.conv", conv_id, conv), "utf-8")
        conv_files[conv_id] = f"data/conv/{safe_name(conv_id)}.js"
    meta = {"n_runs": len(data.runs), "convs": conv_files, "diff": data.diff}
    (d / "site.js").write_text(_js("MV.site", meta), "utf-8")
    (out / MARKER).write_text("a memcore-view site; memcore-view replaces this folder when rebuilding it\n")


def prepare_out(out: Path) -> Path:
    """Check ``out`` can receive a site and make the temporary folder the build goes into (beside ``out``).
    Raises :class:`ViewInputError` for an existing folder that is not a memcore-view site, a file in the way, or
    a place that cannot be written."""
    if out.exists() and not out.is_dir():
        raise ViewInputError(f"--out {out} is a file; pass a folder (it is created).")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise ViewInputError(f"--out {out} exists and is not a memcore-view site; pass a new or empty folder.")
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent))
    except OSError as exc:
        raise ViewInputError(
            f"--out {out} cannot be written ({exc.strerror or exc}); pass a writable folder."
        ) from None


def publish(tmp: Path, out: Path) -> None:
    """Move the finished build ``tmp`` to ``out``, replacing an earlier site there."""
    os.chmod(tmp, 0o755)
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        out.rename(old)
    tmp.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build(runs: Sequence[str | Path], out: Path) -> Path:
    """Build the site for one or two runs into ``out``; returns ``out``."""
    if not 1 <= len(runs) <= 2:
        raise ViewInputError(f"pass one run (or two to compare), got {len(runs)}.")
    tmp = prepare_out(out)
    try:
        loaded = [load_view_run(r) for r in runs]
        data = build_site_data(loaded)
        write_site(data, [find_plots(vr.run.path) for vr in loaded], tmp)
        publish(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def serve(out: Path) -> None:
    """Serve ``out`` on 127.0.0.1 (a free port) until interrupted."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(out))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        print(f"serving on http://127.0.0.1:{httpd.server_address[1]}/ (Ctrl-C stops)", flush=True)
        try:
            httpd.serve_forever()
        except KeyboardInterrupt:
            pass

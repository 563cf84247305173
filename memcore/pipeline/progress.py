"""Progress of a run, one bar per stage (ingest, build, qa) with rate and ETA, or periodic log lines."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

log = logging.getLogger(__name__)


class StageBars:
    """Progress per stage, thread-safe: ``ingest`` (turns a staged method such as MemCoRe has ingested, before
    its gate; only when ``staged``), ``build`` (turns in the memory) and ``qa`` (items answered), as tqdm bars
    with rate and ETA, drawn only when stderr is a terminal (``tty``; default: asked). With the bars off
    (``progress=false``, or stderr redirected to a log or a batch job's file) one INFO line reports the counts at
    most every ``log_every_s`` seconds instead."""

    def __init__(
        self,
        enabled: bool,
        turns: int,
        items: int,
        log_every_s: float = 60.0,
        staged: bool = False,
        tty: bool | None = None,
    ) -> None:
        self._lock = threading.Lock()
        stages = {**({"ingest": ("turn", turns)} if staged else {}), "build": ("turn", turns), "qa": ("item", items)}
        self._total = {k: total for k, (_, total) in stages.items()}
        self._done = dict.fromkeys(stages, 0)
        self._bars: dict[str, Any] = {}
        self._t0 = self._last_log = time.monotonic()
        self._log_every_s = log_every_s
        if tty is None:
            tty = stderr_is_tty()
        if enabled and tty:
            from tqdm import tqdm

            for pos, (name, (unit, total)) in enumerate(stages.items()):
                self._bars[name] = tqdm(total=total, desc=f"{name:<6}", unit=unit, position=pos, dynamic_ncols=True)

    def _update(self, kind: str, n: int) -> None:
        if kind not in self._done:
            return
        with self._lock:
            self._done[kind] += n
            bar = self._bars.get(kind)
            if bar is not None:
                bar.update(n)
                return
            now = time.monotonic()
            if now - self._last_log < self._log_every_s:
                return
            self._last_log = now
            done, total = dict(self._done), self._total
        counts = ", ".join(
            f"{k} {done[k]}/{total[k]} {'items' if k == 'qa' else 'turns'}"
            for k in ("ingest", "build", "qa")
            if k in done
        )
        log.info("progress: %s, %.0f s elapsed", counts, now - self._t0)

    def ingested(self, n: int) -> None:
        """``n`` more turns passed a staged method's ingestion (ignored unless ``staged``)."""
        self._update("ingest", n)

    def build(self, n: int, reused: bool = False) -> None:
        """``n`` more turns are in the memory (``reused``: a snapshot was loaded, so they were ingested too)."""
        if reused:
            self._update("ingest", n)
        self._update("build", n)

    def qa(self, n: int) -> None:
        self._update("qa", n)

    @property
    def drawn(self) -> bool:
        """True when bars are drawn (else progress goes to the log)."""
        return bool(self._bars)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def stderr_is_tty() -> bool:
    """True when stderr is an interactive terminal (a redirected log, a pipe or a batch job's file is not)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stream
        return False

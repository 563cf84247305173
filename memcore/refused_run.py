"""A run refused before any work leaves no run dir: Hydra makes the run dir and writes its own files into it before
the run is called, so a refusal removes them, and the dir, when they are all it holds."""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger(__name__)

#: What Hydra writes into a run dir before the run starts: its ``.hydra/`` record of the composed config and the
#: job's log (``<job name>.log``).
HYDRA_SUBDIR = ".hydra"
HYDRA_FILES = ("config.yaml", "hydra.yaml", "overrides.yaml")


def remove_refused_run_dir(run_dir: Path, root: Path) -> bool:
    """After a refusal before any work: remove ``run_dir`` when it holds nothing but what Hydra wrote for this
    invocation (:data:`HYDRA_FILES` under ``.hydra/`` and the job's log, whose handlers are closed first), then its
    parents below the results ``root`` that are left empty. A run dir holding anything else (an earlier run's
    items, state or lock) is left as it is. Returns whether the run dir was removed."""
    logs = {
        Path(h.baseFilename): h
        for h in logging.getLogger().handlers
        if isinstance(h, logging.FileHandler) and Path(h.baseFilename).parent == run_dir
    }
    hydra_dir = run_dir / HYDRA_SUBDIR
    entries = set(run_dir.iterdir()) if run_dir.is_dir() else set()
    if not entries <= {hydra_dir, *logs} or (
        hydra_dir.exists() and not {p.name for p in hydra_dir.iterdir()} <= set(HYDRA_FILES)
    ):
        return False
    for path, handler in logs.items():
        logging.getLogger().removeHandler(handler)
        handler.close()
        path.unlink(missing_ok=True)
    for name in HYDRA_FILES:
        (hydra_dir / name).unlink(missing_ok=True)
    try:
        if hydra_dir.exists():
            hydra_dir.rmdir()
        run_dir.rmdir()
        root = root.resolve()
        for parent in run_dir.resolve().parents:
            if parent == root or root not in parent.parents or any(parent.iterdir()):
                break
            parent.rmdir()
    except OSError as exc:  # another process wrote there meanwhile: keep what is left
        log.debug("kept %s: %s", run_dir, exc)
    return not run_dir.exists()

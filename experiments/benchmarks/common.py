"""Helpers shared by the benchmark scripts: config composition, runners with a scripted backbone, machine
load, CPU time, and result files that record the command that made them."""

from __future__ import annotations

import json
import os
import platform
import resource
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

from memcore.commands.run import CONFIG_PATH, LIBRARY_THREAD_VARS
from memcore.config import validate
from memcore.config_aliases import rename_overrides
from memcore.llm.scripted import Responder, ScriptedBackbone
from memcore.runner import Runner

RESULTS_DIR = Path("results/benchmarks")


def pin_threads_or_reexec() -> None:
    """Give an in-process benchmark the CLI's thread policy (``memcore.commands.run.pin_library_threads``): the library
    thread variables must be set before numpy loads, so re-execute this command once with them set."""
    if all(v in os.environ for v in LIBRARY_THREAD_VARS):
        return
    env = dict(os.environ)
    for var in LIBRARY_THREAD_VARS:
        env.setdefault(var, "1")
    os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def machine_state() -> dict[str, Any]:
    """Load average and core count now: every timing is reported next to it (the machine is shared)."""
    load1, load5, load15 = os.getloadavg()
    return {
        "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "loadavg_1_5_15": [round(load1, 2), round(load5, 2), round(load15, 2)],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def rss_mb() -> float:
    """Current resident set size of this process in MiB (Linux /proc)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def compose(overrides: Sequence[str], root: Path) -> DictConfig:
    """The run config ``memcore-run`` would compose from ``overrides``, with every result path under ``root``."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    renamed = rename_overrides([*overrides, "progress=false", "print_table=false"])[0]
    with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
        cfg = hydra_compose(config_name="run", overrides=renamed, return_hydra_config=False)
    with open_dict(cfg):
        cfg.paths.root = str(root)
        cfg.paths.runs = str(root / "runs")
        cfg.paths.cache = str(root / "cache")
        cfg.paths.snapshots = str(root / "snapshots")
        cfg.run_dir = str(root / "run")
    return cfg


def run_scripted(
    overrides: Sequence[str],
    root: Path,
    run_dir: Path,
    *,
    responder: Responder | None = None,
    latency_s: float = 0.0,
) -> tuple[Any, float]:
    """One run with a scripted backbone; returns (RunResult, wall seconds).

    Without ``responder`` the ``backbone=scripted`` preset is used as configured (echo replies). With one, a
    ``ScriptedBackbone(responder, latency_s)`` recording into the run's own usage tracker replaces it, so
    cost.json counts its calls exactly like a real backbone's."""
    cfg = validate(compose([*overrides, "backbone=scripted"], root))
    runner = Runner(cfg, run_dir)
    if responder is not None:
        runner.backbone_override = ScriptedBackbone(responder, latency_s=latency_s, usage=runner.usage)
    t0 = time.perf_counter()
    result = runner.run()
    return result, time.perf_counter() - t0


def command_line() -> str:
    """How this script was invoked, as a shell command to rerun it."""
    module = sys.modules["__main__"].__spec__
    head = f"python -m {module.name}" if module is not None else f"python {sys.argv[0]}"
    return " ".join([head, *map(shlex.quote, sys.argv[1:])])


def write_result(name: str, payload: dict[str, Any], out_dir: Path = RESULTS_DIR) -> Path:
    """Write ``<out_dir>/<name>.json`` with the command that made it and the machine state at the end."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    body = {"command": command_line(), "machine_at_end": machine_state(), **payload}
    path.write_text(json.dumps(body, indent=2, default=str) + "\n")
    return path


def md_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if i else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)

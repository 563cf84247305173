"""The processes of a rehearsal: the simulator on a free port, the two ``memcore-run -m`` sweeps against it one
after the other, and stopping them the way ``memcore-run`` stops (SIGTERM to the whole tree)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from experiments.rehearsal.plan import BACKBONE, EXPERIMENTS, FAULT_KINDS, REPO, Plan
from experiments.rehearsal.progress import Progress
from experiments.rehearsal.runs import read_json
from memcore.processes import stop_process

#: Dummy key for the sweep's processes only: the preset requires one and the simulator accepts any.
DUMMY_KEY = "sk-rehearsal-not-a-key"


def child_env() -> dict[str, str]:
    """The sweep's environment: this checkout first on the path, the dummy key, one thread per library pool."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["OPENAI_API_KEY"] = DUMMY_KEY
    env.pop("MEMCORE_RESULTS", None)  # paths.root is passed explicitly
    return env


def simulator_command(plan: Plan, port_file: Path, stats_file: Path) -> list[str]:
    """``memcore-simulate`` with the plan's latency model and fault rates, writing its port and final stats to these
    files."""
    s = plan.sim
    cmd = [sys.executable, "-m", "memcore.commands.simulate", "--port-file", str(port_file)]
    cmd += ["--stats-out", str(stats_file), "--time-scale", str(plan.time_scale)]
    cmd += ["--ttft-s", str(plan.ttft_s), "--tokens-per-s", str(plan.tokens_per_s)]
    cmd += ["--retry-after-s", str(plan.retry_after_s), "--hang-s", str(plan.timeout_s + 2.0)]
    for kind in FAULT_KINDS:
        cmd += [f"--rate-{kind}", str(s[kind])]
    return [*cmd, "--wrong-json", str(s["wrong_json"])]


def sweep_command(plan: Plan, experiment: str, base_url: str) -> list[str]:
    """``memcore-run -m experiment=<experiment>`` at the plan's scale against ``base_url``."""
    cmd = [sys.executable, "-m", "memcore.commands.run", "-m", f"experiment={experiment}", f"backbone={BACKBONE}"]
    cmd += [f"backbone.base_url={base_url}", f"backbone.timeout_s={plan.timeout_s}", "++backbone.backoff_cap_s=0.5"]
    cmd += ["eval.judge=true", "eval.judge_preset=mem0-judge", "eval.judge_runs=3"]
    cmd += [f"concurrency={plan.concurrency}", "progress=false", "print_table=false", f"paths.root={plan.root}"]
    cmd += ["hydra/launcher=submitit_local", f"hydra.sweeper.max_batch_size={plan.parallel_jobs}"]
    cmd += plan.scale.overrides()
    if experiment == "paper_main" and plan.scale.methods:
        cmd.append("method=" + ",".join(plan.scale.methods))
    if experiment == "paper_ablation" and plan.scale.ablations:
        cmd.append("ablation=" + ",".join(plan.scale.ablations))
    return [*cmd, *plan.extra]


class RehearsalError(RuntimeError):
    """The sweep cannot run or did not finish: one line saying what happened and what to do."""


def start_simulator(plan: Plan, work: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """Start the simulator; returns the process, its base URL and its stats file once it listens. Raises
    :class:`RehearsalError` when it exits or does not listen within 60 s."""
    port_file, stats_file = work / "simulator.port", work / "simulator_stats.json"
    port_file.unlink(missing_ok=True)
    log = open(work / "logs" / "simulator.log", "ab")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        simulator_command(plan, port_file, stats_file), cwd=REPO, env=child_env(), stdout=log, stderr=log
    )
    log.close()
    deadline = time.monotonic() + 60
    while not port_file.exists():
        if proc.poll() is not None:
            raise RehearsalError(f"memcore-simulate exited {proc.returncode}; see {work / 'logs' / 'simulator.log'}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RehearsalError("memcore-simulate did not start listening within 60 s")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}/v1", stats_file


def stop_simulator(proc: subprocess.Popen[bytes]) -> None:
    """Stop the simulator (SIGTERM, then SIGKILL after 30 s); it writes its final stats on the way out."""
    stop_process(proc, timeout_s=30)


def simulator_stats(base_url: str) -> dict[str, Any] | None:
    """The live ``/stats`` of the simulator, or None when it does not answer."""
    try:
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


def run_sweeps(plan: Plan, work: Path, out: Callable[[str], None], poll_s: float = 2.0) -> dict[str, Any]:
    """Start the simulator, run both sweeps one after the other, stop the simulator; returns wall times and the
    simulator's final stats. Raises :class:`RehearsalError` when a sweep exits non-zero."""
    (work / "logs").mkdir(parents=True, exist_ok=True)
    sim, base_url, stats_file = start_simulator(plan, work)
    progress = Progress(plan, out)
    walls: dict[str, float] = {}
    proc: subprocess.Popen[bytes] | None = None
    try:
        out(f"simulator at {base_url}: faults {plan.sim}, time scale {plan.time_scale}")
        for experiment in EXPERIMENTS:
            log_path = work / "logs" / f"{experiment}.log"
            t0 = time.monotonic()
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    sweep_command(plan, experiment, base_url), cwd=REPO, env=child_env(), stdout=log, stderr=log
                )
                while proc.poll() is None:
                    time.sleep(poll_s)
                    progress.poll(simulator_stats(base_url))
            walls[experiment] = time.monotonic() - t0
            progress.poll(simulator_stats(base_url), force=True)
            if proc.returncode != 0:
                raise RehearsalError(f"{experiment}: {sweep_failure(log_path, proc.returncode)}")
    except BaseException:
        if proc is not None and proc.poll() is None:  # Ctrl-C / SIGTERM: stop the jobs the way memcore-run stops
            terminate_tree(proc.pid)
            proc.wait()
        raise
    finally:
        stop_simulator(sim)
    stats = read_json(stats_file) or {}
    return {"wall_s": walls, "simulator": stats, "resumed": progress.start_items > 0}


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (Linux ``/proc``), children first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we read
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def terminate_tree(pid: int) -> None:
    """SIGTERM ``pid`` and its descendants (memcore-run stops after the calls in flight, keeping every item)."""
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            continue


def sweep_failure(log_path: Path, rc: int) -> str:
    """One line for a failed sweep: the first ``error:`` line a job printed, else the log's last line."""
    root = log_path.parent.parent
    lines: list[str] = []
    for f in [log_path, *sorted(root.glob("root/runs/*/.submitit/*/*_log.err"))]:
        lines += [ln.strip() for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
    said = next((ln for ln in lines if ln.startswith("error:")), None) or next(
        (ln for ln in reversed(lines) if "Error" in ln), lines[-1] if lines else "no output"
    )
    return f"the sweep exited {rc}: {said} (logs: {log_path})"

"""Sweeps through a real SLURM scheduler (a private single-node cluster: ``tests/slurm_cluster.py``).

``memcore-run -m method=rag_bm25,rag_dense dataset=locomo-tiny eval.answer=false hydra/launcher=submitit_slurm``
goes through ``sbatch`` as a two-task job array. One task is cancelled mid-run (``scancel``) and requeued; the
sweep finishes with the local launcher's items and metrics, the cache shards are named by the SLURM job ids and
``memcore-cache merge`` folds them, and nothing is left in ``squeue``. The cluster commands of docs/cluster.md
run against the same cluster. The fixture stops the daemons afterwards, also when a test failed.

When SLURM is absent and cannot be installed (not root), the tests are skipped with that reason (CI, which runs
as root, fails instead); when a daemon does not start, they fail with the daemon's own log lines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.itemlog import read_items
from tests.slurm_cluster import ClusterError, SlurmCluster, real_memory_mb, single_node_cluster, slurm_conf
from tests.support import CHILD_OF_TEST, REPO
from tests.test_readme_commands import cheap, readme_commands

pytestmark = pytest.mark.filterwarnings("ignore:(?s).*validated against ConfigStore schema with the same name")

#: The sweep of the issue, as a user types it; the SLURM run adds the launcher and its settings.
SWEEP = ["-m", "method=rag_bm25,rag_dense", "dataset=locomo-tiny", "eval.answer=false"]
#: The test node has 2 CPUs and maybe less memory than the launcher's default 16 GB: one CPU and 2 GB per task
#: (a task of this sweep peaks under 1 GB), so both tasks run at once.
ON_SLURM = [
    "hydra/launcher=submitit_slurm",
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.mem_gb=2",
    "cache_mode=sharded",
]
RUN = Path("runs/default/locomo-tiny/none/amem")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    manager = single_node_cluster(tmp_path_factory.mktemp("slurm"))
    try:
        cluster = manager.__enter__()
    except ClusterError as exc:
        if "not root" in str(exc) and not os.environ.get("CI"):
            pytest.skip(str(exc))
        pytest.fail(f"the single-node SLURM cluster did not start: {exc}", pytrace=False)
    try:
        yield cluster
    finally:
        manager.__exit__(None, None, None)
        alive = [name for name, proc in cluster.daemons.items() if proc.poll() is None]
        assert not alive, f"daemons still running after the cluster stopped: {alive}"


def memcore(args: list[str], root: Path, env: dict[str, str] | None = None, **kw: Any) -> subprocess.Popen[str]:
    """``memcore-run`` (or another console script's module, ``-m memcore.commands.cache``…) with ``root`` as
    MEMCORE_RESULTS, from ``root``'s parent, this checkout first on the path."""
    full = dict(env or os.environ, MEMCORE_RESULTS=str(root), PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, *args],
        env=full,
        cwd=root.parent,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        **CHILD_OF_TEST,
        **kw,
    )


def finished(proc: subprocess.Popen[str], timeout: float, cluster: SlurmCluster | None = None) -> str:
    """The output of ``proc`` once it exited 0. With ``cluster``, a job that can never start (more CPUs or memory
    than the node has: it stays pending with reason PartitionConfig, and the sweep would wait for ever) fails it."""
    deadline = time.monotonic() + timeout
    while cluster is not None and proc.poll() is None and time.monotonic() < deadline:
        stuck = [j for j in cluster.jobs() if j.endswith("PartitionConfig")]
        if stuck:
            proc.kill()
            cluster.run("scancel", *(j.split()[0] for j in stuck), check=False)
            pytest.fail(f"jobs the node cannot run (squeue: {stuck}); {proc.args}\n{proc.communicate()[0][-2000:]}")
        time.sleep(1)
    try:
        out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        jobs = cluster.jobs() if cluster is not None else []
        pytest.fail(
            f"{proc.args} still running after {timeout:.0f} s (squeue: {jobs}):\n{proc.communicate()[0][-3000:]}"
        )
    assert proc.returncode == 0, f"{proc.args} exited {proc.returncode}:\n{out[-4000:]}"
    return out


def results_of(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run's metrics.json and its items without their latencies (the only field that differs by machine)."""
    items = sorted(read_items(run / "items.jsonl"), key=lambda r: r["item_id"])
    for item in items:
        item.pop("latency_s", None)
    return json.loads((run / "metrics.json").read_text()), items


def wait_for(ready: Any, what: str, timeout: float, every: float = 0.5) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ready()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"waited {timeout:.0f} s for {what}")


@pytest.mark.e2e  # starts daemons and launches processes: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_a_sweep_through_sbatch_survives_a_cancelled_task_and_matches_the_local_launcher(
    cluster: SlurmCluster, tmp_path: Path
) -> None:
    local = tmp_path / "local" / "results"
    local.parent.mkdir()
    finished(memcore(["-m", "memcore.commands.run", *SWEEP, "progress=false", "print_table=false"], local), timeout=900)

    root = tmp_path / "slurm" / "results"
    root.parent.mkdir()
    sweep = memcore(
        ["-m", "memcore.commands.run", *SWEEP, *ON_SLURM, "progress=false", "print_table=false"], root, env=cluster.env
    )
    dense = root / RUN / "rag_dense" / "none"
    seen: set[str] = set()

    def dense_building() -> str | None:
        """The rag_dense task's id once its run has started building (its log names the run's items)."""
        seen.update(line.split()[0] for line in cluster.jobs())
        assert sweep.poll() is None, f"the sweep ended before its task could be cancelled:\n{sweep.stdout.read()}"  # type: ignore[union-attr]
        log = dense / "cli.log"
        if log.is_file() and "8 QA items (0 already done)" in log.read_text():
            return next((j for j in seen if j.endswith("_1")), None)
        return None

    task = wait_for(dense_building, "the rag_dense task to start building", timeout=600, every=0.2)
    array_job = task.split("_")[0]
    cluster.run("scancel", task)
    wait_for(lambda: not any(line.startswith(task + " ") for line in cluster.jobs()), f"{task} to end", timeout=120)
    assert not (dense / "metrics.json").exists(), "the cancelled task had already finished its run"
    # Requeued under the same id (so it reads its own cache shard again); a requeued job is held for the credential
    # lifetime (120 s by default) before it may start: release it now.
    cluster.run("scontrol", "requeue", task)
    cluster.run("scontrol", "update", f"JobId={task}", "StartTime=now")
    out = finished(sweep, timeout=900, cluster=cluster)
    assert "Submitit 'slurm' sweep output dir" in out
    wait_for(lambda: not cluster.jobs(), "squeue to be empty", timeout=120)

    for method in ("rag_bm25", "rag_dense"):
        assert results_of(root / RUN / method / "none") == results_of(local / RUN / method / "none"), method
    # The cancelled run started twice: cancelled mid-build, then again after the requeue, in the same run dir.
    starts = re.findall(r"8 QA items \((\d+) already done\)", (dense / "cli.log").read_text())
    assert len(starts) == 2, starts

    # Shards are named by the array job and task SLURM gave them; merge folds them into the shared caches.
    shards = sorted(p.stem for p in (root / "cache" / "shards").glob("*/*.sqlite"))
    assert shards and set(shards) <= {f"slurm-{job}" for job in seen}, (shards, seen)
    assert f"slurm-{array_job}_1" in shards
    merged = finished(memcore(["-m", "memcore.commands.cache", "merge"], root), timeout=120)
    assert re.search(rf"merged {len(shards)} of {len(shards)} shards into .*embeddings.sqlite: [1-9]\d* added", merged)
    assert not list((root / "cache" / "shards").glob("*/*.sqlite"))
    assert not cluster.jobs()


def cluster_commands() -> list[str]:
    """The commands of docs/cluster.md and the README that need a SLURM cluster, and the shard merge after them."""
    docs = [REPO / "docs" / "cluster.md", REPO / "README.md"]
    commands = [c for doc in docs for c in readme_commands(doc.read_text())]
    sweeps = [c for c in commands if "hydra/launcher=submitit_slurm" in c]
    return sweeps + [c for c in commands if c.startswith("memcore-cache merge")]  # merge after every sweep


def test_the_cluster_commands_are_found() -> None:
    commands = cluster_commands()
    assert sum("submitit_slurm" in c for c in commands) >= 2 and commands[-1].startswith("memcore-cache merge")


# The paper sweep's six LLM-built runs (on the scripted backbone, one at a time on the 2-CPU node) take minutes:
# make test-all runs this; make test runs the sweep above through the same scheduler.
@pytest.mark.slow
@pytest.mark.usefixtures("locomo_path")
def test_the_cluster_commands_of_the_docs_run_as_written(cluster: SlurmCluster, tmp_path: Path) -> None:
    """Each command as written, in order, in one results root, with the rule of tests/test_readme_commands.py for
    a run that calls an LLM (``backbone=scripted`` on locomo-quick): every job through sbatch, nothing left queued."""
    root = tmp_path / "results"
    for command in cluster_commands():
        words = command.split()
        argv = cheap(command)[1:] if words[0] == "memcore-run" else ["-m", "memcore.commands.cache", *words[1:]]
        out = finished(memcore(argv, root, env=cluster.env), timeout=1800, cluster=cluster)
        if words[0] == "memcore-run":
            assert "Submitit 'slurm' sweep output dir" in out, command
        wait_for(lambda: not cluster.jobs(), "squeue to be empty", timeout=120)
    runs = list((root / "runs").rglob("metrics.json"))
    assert len(runs) >= 6 + 2, runs  # the paper sweep's six methods and the README's two


def test_the_cluster_configuration_needs_no_cgroups_and_keeps_to_its_own_ports_and_directory() -> None:
    conf = slurm_conf(Path("/state"), host="node", ports=[7001, 7002], cpus=2, memory_mb=1000)
    lines = dict(line.split("=", 1) for line in conf.splitlines() if "=" in line and not line.startswith("NodeName"))
    assert "cgroup" not in conf
    assert (lines["ProctrackType"], lines["TaskPlugin"]) == ("proctrack/linuxproc", "task/none")
    assert (lines["SlurmctldPort"], lines["SlurmdPort"], lines["SlurmctldHost"]) == ("7001", "7002", "node")
    paths = [v.removeprefix("socket=") for k, v in lines.items() if k.endswith(("File", "Location", "Dir", "AuthInfo"))]
    assert len(paths) == 7 and all(p.startswith("/state/") for p in paths), paths
    assert "NodeName=node NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000" in conf
    assert real_memory_mb("MemTotal:       24683520 kB\nMemFree: 1 kB\n") == int(24683520 / 1024 * 0.9)


class _Exited:
    """A daemon process that has already exited with ``returncode``."""

    def __init__(self, returncode: int) -> None:
        self.returncode = returncode

    def poll(self) -> int:
        return self.returncode


def test_a_daemon_that_dies_at_start_is_reported_with_its_own_log_lines(tmp_path: Path) -> None:
    cluster = SlurmCluster(state=tmp_path, host="node", env={})
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "slurmd.log").write_text("[t] started\n[t] fatal: Unable to bind listen port (7002)\n")
    cluster.daemons["slurmd"] = _Exited(1)  # type: ignore[assignment]
    with pytest.raises(
        ClusterError, match=r"slurmd exited 1 at start; its log ends:\n.*\n.*Unable to bind listen port"
    ):
        cluster._check_alive()

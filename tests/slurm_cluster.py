"""A private single-node SLURM cluster for the tests: this host is the controller and the one compute node.

:func:`single_node_cluster` installs Debian's ``slurmctld``, ``slurmd``, ``slurm-client`` and ``munge`` when they
are absent (as root, with apt-get), then starts, in a fresh state directory, its own ``munged`` (own key and
socket), ``slurmctld`` and ``slurmd`` as root, on two free ports, and waits until ``sinfo`` shows the node idle.
Nothing is read from or written to ``/etc/slurm`` or ``/etc/munge``: the client commands find the cluster through
``SLURM_CONF`` (:attr:`SlurmCluster.env`). The configuration needs no cgroups (``proctrack/linuxproc``,
``task/none``), no accounting database and no GPUs. On exit every job is cancelled and the daemons are stopped
(``scontrol shutdown``, then the signal to any that is left, munged last), also when the test failed.

A daemon that does not come up raises :class:`ClusterError` with the daemon's own last log lines.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import die_with_test

#: The Debian packages the cluster needs (Debian 12 ships SLURM 22.05).
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
#: The programs those packages provide that the cluster runs.
PROGRAMS = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scancel", "scontrol", "srun")
#: The partition the node is in: the name docs/cluster.md's example uses (``hydra.launcher.partition=gpu``).
PARTITION = "gpu"


class ClusterError(RuntimeError):
    """The cluster could not be installed, started or stopped; the message says which step and quotes the log."""


def missing_programs() -> list[str]:
    return [p for p in PROGRAMS if shutil.which(p) is None]


def install_packages() -> None:
    """apt-get install the :data:`PACKAGES` (root only); raises ClusterError with apt's last lines on failure."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ClusterError(
            f"SLURM is not installed ({', '.join(missing_programs())} missing) and this is not root on a Debian "
            f"machine: apt-get install {' '.join(PACKAGES)} first"
        )
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *PACKAGES]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if proc.returncode != 0:
            raise ClusterError(f"{' '.join(cmd)} failed: {(proc.stdout + proc.stderr).strip()[-1500:]}")


def free_ports(n: int) -> list[int]:
    """``n`` TCP ports nothing listens on now (bound and released; the daemons bind them a moment later)."""
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def real_memory_mb(meminfo: str | None = None) -> int:
    """The node's RealMemory: 90% of MemTotal in MiB (slurmd drains a node that declares more than it has)."""
    text = meminfo if meminfo is not None else Path("/proc/meminfo").read_text()
    kib = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("MemTotal:"))
    return int(kib / 1024 * 0.9)


def slurm_conf(state: Path, *, host: str, ports: Sequence[int], cpus: int, memory_mb: int) -> str:
    """The cluster's slurm.conf: ``host`` as controller and compute node, everything under ``state``."""
    ctld_port, node_port = ports
    return "\n".join(
        [
            "ClusterName=memcoretest",
            f"SlurmctldHost={host}",
            f"SlurmctldPort={ctld_port}",
            f"SlurmdPort={node_port}",
            "SlurmUser=root",
            "SlurmdUser=root",
            "AuthType=auth/munge",
            "CredType=cred/munge",
            f"AuthInfo=socket={state / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={state / 'ctld'}",
            f"SlurmdSpoolDir={state / 'spool'}",
            f"SlurmctldPidFile={state / 'slurmctld.pid'}",
            f"SlurmdPidFile={state / 'slurmd.pid'}",
            f"SlurmctldLogFile={state / 'log' / 'slurmctld.log'}",
            f"SlurmdLogFile={state / 'log' / 'slurmd.log'}",
            # No cgroups (a sandbox may have none): processes are tracked through /proc, tasks are not bound.
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "AccountingStorageType=accounting_storage/none",
            "JobCompType=jobcomp/none",
            "MpiDefault=none",
            "SchedulerType=sched/backfill",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "ReturnToService=2",
            # A cancelled job's processes get SIGKILL this long after SIGTERM (default 30 s). submitit's job process
            # ignores SIGTERM, so a cancelled run goes on until then: keep it short, so a cancel stops a run.
            "KillWait=5",
            f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN",
            f"PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP",
            "",
        ]
    )


def _tail(path: Path, n: int = 6) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"(no log: {exc})"
    return "\n".join(lines[-n:]) or "(empty log)"


@dataclass
class SlurmCluster:
    """A running single-node cluster: its state directory, ``env`` for client commands (``SLURM_CONF``), the
    node's name and the daemons this process started."""

    state: Path
    host: str
    env: dict[str, str]
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def logs(self) -> Path:
        return self.state / "log"

    def run(self, *cmd: str, check: bool = True, timeout: float = 60) -> str:
        """A client command against this cluster; its stdout. ClusterError with its output when it fails."""
        proc = subprocess.run(cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            raise ClusterError(f"{' '.join(cmd)} exited {proc.returncode}: {(proc.stdout + proc.stderr).strip()}")
        return proc.stdout

    def jobs(self) -> list[str]:
        """``squeue``: one ``<job id> <state> <reason>`` line per job the controller still knows as pending or
        running."""
        return [line for line in self.run("squeue", "-h", "-o", "%i %T %r").splitlines() if line.strip()]

    def node_state(self) -> str:
        return self.run("sinfo", "-h", "-N", "-o", "%t", check=False).strip()

    def _start(self, name: str, cmd: list[str], log: Path) -> None:
        # In the foreground (-D / -F), so this process holds every daemon's pid; in a new session, so a ^C of the
        # test run reaches them only through stop(); a daemon gets SIGTERM when this process dies (die_with_test).
        out = open(log, "ab")  # noqa: SIM115 - the daemon writes it for its whole life
        self.daemons[name] = subprocess.Popen(
            cmd, env=self.env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_test
        )
        out.close()

    def _check_alive(self) -> None:
        for name, proc in self.daemons.items():
            if proc.poll() is not None:
                log = self.logs / f"{name}.log"
                raise ClusterError(f"{name} exited {proc.returncode} at start; its log ends:\n{_tail(log)}")

    def start(self, *, cpus: int, ports: Sequence[int], timeout: float = 60) -> None:
        for sub in ("munge", "ctld", "spool", "log"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        key = self.state / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o600)
        conf = self.state / "slurm.conf"
        conf.write_text(slurm_conf(self.state, host=self.host, ports=ports, cpus=cpus, memory_mb=real_memory_mb()))
        munge = self.state / "munge"
        self._start(
            "munged",
            [
                "munged",
                "--foreground",
                "--force",  # as root: munged refuses root without it
                f"--socket={munge / 'munge.socket'}",
                f"--key-file={key}",
                f"--pid-file={munge / 'munged.pid'}",
                f"--seed-file={munge / 'munged.seed'}",
                f"--log-file={self.logs / 'munged.log'}",
            ],
            self.logs / "munged.out",
        )
        self._wait(lambda: (munge / "munge.socket").exists(), "munged's socket", timeout, "munged")
        self._start("slurmctld", ["slurmctld", "-D", "-i", "-f", str(conf)], self.logs / "slurmctld.out")
        self._wait(lambda: self.run("scontrol", "ping", check=False).count("UP") > 0, "slurmctld", timeout, "slurmctld")
        self._start("slurmd", ["slurmd", "-D", "-f", str(conf), "-N", self.host], self.logs / "slurmd.out")
        self._wait(lambda: self.node_state() == "idle", "the node to be idle in sinfo", timeout, "slurmd")

    def _wait(self, ready: object, what: str, timeout: float, daemon: str) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            if ready():  # type: ignore[operator]
                return
            time.sleep(0.5)
        raise ClusterError(
            f"waited {timeout:.0f} s for {what} (sinfo: {self.node_state() or 'no answer'}); {daemon}'s log ends:\n"
            + _tail(self.logs / f"{daemon}.log")
        )

    def stop(self, timeout: float = 60) -> list[str]:
        """Cancel every job, shut the daemons down and wait for them; returns what had to be killed (empty when
        everything stopped by itself)."""
        killed: list[str] = []
        if self.daemons.get("slurmctld") and self.daemons["slurmctld"].poll() is None:
            with contextlib.suppress(ClusterError, subprocess.TimeoutExpired):
                self.run("scancel", "--full", "--partition", PARTITION, check=False)
                deadline = time.monotonic() + timeout
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(1)
                self.run("scontrol", "shutdown", check=False)
        for name in ("slurmd", "slurmctld", "munged"):
            proc = self.daemons.get(name)
            if proc is None:
                continue
            if name == "munged" and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=timeout / 3)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
                killed.append(name)
        return killed


@contextlib.contextmanager
def single_node_cluster(state: Path, *, cpus: int = 2) -> Iterator[SlurmCluster]:
    """Install (if absent), start, yield and always stop a cluster whose state lives under ``state``."""
    if missing_programs():
        install_packages()
    host = socket.gethostname().split(".")[0]
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env["SLURM_CONF"] = str(state / "slurm.conf")
    cluster = SlurmCluster(state=state, host=host, env=env)
    try:
        cluster.start(cpus=cpus, ports=free_ports(2))
        yield cluster
    finally:
        cluster.stop()

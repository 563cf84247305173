"""One writer per run dir: an exclusive POSIX record lock (``fcntl``) on a file inside the run dir.

``fcntl`` locks are the kind NFS (through its lock manager) and Lustre (mounted with ``flock`` or ``localflock``)
honour across machines; the kernel (or the NFS server, once the client's lease lapses) drops the lock of a
process that dies, so a killed run never blocks its rerun. The lock file holds who took it (host, pid, process
start, time), so a second run names the holder; a holder that ended without releasing (a crash) is taken over
with a log line, as is a lock still held for a process of this host that no longer runs.

POSIX locks belong to a process, not to a file descriptor: closing *any* descriptor of the lock file releases it,
and a second lock taken by the same process always succeeds. The lock file is therefore opened once per hold and
never read through another descriptor in the holding process, and the run dirs this process holds are kept in
:data:`_HELD`, so two runs of one process on one dir are refused as well.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

LOCK_FILE = ".memcore-run.lock"
#: How long a lock held under the name of a process that is gone is watched before it is taken over.
STALE_RECHECK_S = 1.0
#: What a run does when another process holds its run dir (``on_locked_run``): ``skip`` (a sweep goes on with its
#: next job; a single run, which has no next job, is refused as with ``error``), ``wait`` (until the holder ends,
#: then resume, which finds the holder's items done) or ``error`` (refused, exit 2).
ON_LOCKED_RUN = ("skip", "wait", "error")
#: How often a waiting run tries the lock again.
WAIT_POLL_S = 2.0

# Run dirs this process holds (resolved path → the lock): POSIX locks cannot refuse a second taker in the same
# process, so the process refuses it itself.
_HELD: dict[str, RunDirLock] = {}
_HELD_GUARD = threading.Lock()


class RunDirBusyError(RuntimeError):
    """Another process (or another run of this one) writes the run dir; the message names it, ``holder`` describes
    the other process (empty for a run of this process)."""

    def __init__(self, message: str, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class RunDirError(RuntimeError):
    """The run dir cannot be created or written (a path under a read-only tree, an existing file, no permission)."""


def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (Linux ``/proc``), which tells a live holder from a
    later process that reuses its pid; None where ``/proc`` is absent."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]  # field 22 of stat(5); fields before it follow the command name


def _alive(pid: int, ticks: str | None) -> bool:
    """Whether process ``pid`` of this host still runs (and is the same process when ``ticks`` is known)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    now = _start_ticks(pid)
    return ticks is None or now is None or now == ticks


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a run dir's lock."""

    host: str
    pid: int
    started: str
    ticks: str | None = None

    @classmethod
    def me(cls) -> Holder:
        return cls(socket.gethostname(), os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S %Z"), _start_ticks(os.getpid()))

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            d: dict[str, Any] = json.loads(text)
            return cls(str(d["host"]), int(d["pid"]), str(d["started"]), d.get("ticks"))
        except (ValueError, KeyError, TypeError):
            return None

    def to_text(self) -> str:
        return json.dumps({"host": self.host, "pid": self.pid, "started": self.started, "ticks": self.ticks}) + "\n"

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}, started {self.started}"

    def gone(self) -> bool:
        """True when the holder ran on this host and no longer runs (a process elsewhere is never judged)."""
        return self.host == socket.gethostname() and not _alive(self.pid, self.ticks)


def _read_holder(path: Path) -> Holder | None:
    """The holder recorded in ``path`` (read by a process that does not hold the lock)."""
    try:
        return Holder.parse(path.read_text())
    except OSError:
        return None


class RunDirLock:
    """The exclusive lock of one run dir. :meth:`acquire` creates the dir, takes the lock or raises
    :class:`RunDirBusyError` naming the holder (:class:`RunDirError` when the dir cannot be written);
    :meth:`release` (or leaving the ``with`` block) gives it back."""

    def __init__(self, run_dir: Path, *, wait: bool = False, poll_s: float = WAIT_POLL_S) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.wait = wait
        self.poll_s = poll_s
        self._fd = -1
        self._key = ""

    def acquire(self) -> RunDirLock:
        """Take the lock; with ``wait``, a lock another process holds is tried again every ``poll_s`` seconds
        until it is free (one log line when the wait starts). A run of this process is never waited for."""
        announced = False
        while True:
            try:
                return self._acquire_now()
            except RunDirBusyError as exc:
                if not self.wait or not exc.holder:
                    raise
                if not announced:
                    log.warning(
                        "run dir %s is in use by %s: waiting for it (on_locked_run=wait)", self.run_dir, exc.holder
                    )
                    announced = True
                time.sleep(self.poll_s)

    def _acquire_now(self) -> RunDirLock:
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise RunDirError(_unwritable(self.run_dir, exc)) from None
        if not self.run_dir.is_dir():
            raise RunDirError(f"run dir {self.run_dir} is not a directory; pick another hydra.run.dir")
        key = self._key = str(self.run_dir.resolve())
        with _HELD_GUARD:
            if key in _HELD:
                raise RunDirBusyError(
                    f"{self.run_dir} is in use by another run of this process ({Holder.me().describe()}); "
                    "one run dir takes one run at a time: pick another hydra.run.dir"
                )
            for _ in range(5):  # a takeover by another process may replace the file between open and lock
                if self._try_once():
                    _HELD[key] = self
                    return self
        raise RunDirBusyError(
            f"{self.run_dir}: could not take the run-dir lock {self.path}; retry, or pick another hydra.run.dir",
            holder="processes taking over a stale lock",
        )

    def _try_once(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RunDirError(_unwritable(self.run_dir, exc)) from None
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)  # this process holds no lock on the file, so closing releases nothing
            if exc.errno not in (errno.EACCES, errno.EAGAIN):
                raise RunDirError(
                    f"cannot lock {self.path} ({exc.strerror}); the file system may not support POSIX locks "
                    "(Lustre needs the flock or localflock mount option): pick a run dir on another file system"
                ) from None
            holder = _read_holder(self.path)
            if holder is not None and holder.gone():
                time.sleep(STALE_RECHECK_S)  # a new holder writes its name right after locking: give it the time
                holder = _read_holder(self.path)
            if holder is not None and holder.gone():
                log.warning(
                    "run dir %s: taking over the lock still held for %s, which no longer runs",
                    self.run_dir,
                    holder.describe(),
                )
                self._replace_file()
                return False
            who = holder.describe() if holder is not None else "a process that has not written its name yet"
            raise RunDirBusyError(
                f"{self.run_dir} is in use by another memcore-run ({who}); wait for it to finish or stop it "
                "(on_locked_run=wait waits), or pick another hydra.run.dir",
                holder=who,
            ) from None
        try:
            same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if not same:  # the file was replaced while we opened it: lock the one now in place
            os.close(fd)
            return False
        previous = Holder.parse(os.pread(fd, 4096, 0).decode("utf-8", "replace"))
        if previous is not None:
            log.warning(
                "run dir %s: taking over the lock left by %s, which ended without releasing it",
                self.run_dir,
                previous.describe(),
            )
        text = Holder.me().to_text().encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, text, 0)
        os.fsync(fd)
        self._fd = fd
        return True

    def _replace_file(self) -> None:
        """Put a fresh lock file in place of one whose lock outlives its holder (a stale NFS lock)."""
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        tmp.write_text("")
        os.replace(tmp, self.path)

    def release(self) -> None:
        """Clear the holder and unlock (closing the descriptor drops the lock)."""
        if self._fd < 0:
            return
        with _HELD_GUARD:
            _HELD.pop(self._key, None)
            try:
                os.ftruncate(self._fd, 0)  # an empty file: the next taker sees a clean release, not a crash
            except OSError:
                pass
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> RunDirLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _unwritable(run_dir: Path, exc: OSError) -> str:
    """One line for a run dir that cannot be created or written."""
    return unwritable_line(exc, run_dir)


def unwritable_line(
    exc: OSError, path: Path | str, what: str = "the run dir", fix: str = "hydra.run.dir (or paths.root)"
) -> str:
    """``cannot create or write <what> <path> (<where>: <reason>); pick a writable <fix>``, without ``error:``."""
    where = exc.filename or path
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileExistsError | NotADirectoryError):
        reason = "a file is in the way"
    elif isinstance(exc, FileNotFoundError):
        reason = "a directory cannot be made there"
    return f"cannot create or write {what} {path} ({where}: {reason}); pick a writable {fix}"

"""Start and stop a local llama.cpp OpenAI-compatible server (``python -m llama_cpp.server``)."""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from filelock import FileLock, Timeout

from memcore.processes import stop_process
from memcore.stopflag import StopCheck, StopRequested

log = logging.getLogger(__name__)


class LocalServerError(RuntimeError):
    pass


def describe_exit(returncode: int) -> str:
    """How a server exited, from its guard's exit status: "killed by SIGSEGV" or "exited with code 3". The guard
    reports a child that died of signal N as 128 + N, the shell's convention; a negative code is a signal on the
    guard itself."""
    signum = -returncode if returncode < 0 else (returncode - 128 if 128 < returncode < 128 + 65 else 0)
    if signum:
        try:
            return f"killed by {signal.Signals(signum).name}"
        except ValueError:
            return f"killed by signal {signum}"
    return f"exited with code {returncode}"


def log_tail(path: Path | None, lines: int = 5) -> str:
    """The last ``lines`` non-empty lines of ``path`` joined by " | ", or "" when unreadable."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            text = fh.read().decode(errors="replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return " | ".join(kept[-lines:])


class ServerWaitCancelled(StopRequested):
    """The run was stopped while it queued for the machine-wide llama.cpp lock (a :class:`StopRequested`, so the
    runner treats it as the stop it is: the item is left for the rerun, never reported as the run's failure)."""


def _owner_file(lock_path: Path) -> Path:
    return lock_path.with_name(lock_path.name + ".owner")


def owner_pid(lock_path: Path) -> int | None:
    """The pid the last holder of the llama.cpp lock wrote beside it, or None."""
    try:
        return int(_owner_file(lock_path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def lock_holder(lock_path: Path) -> str:
    """Who holds the machine-wide llama.cpp lock, for a waiting message: "pid N (state, command)" from the owner
    file written beside the lock, or "an unknown process" when the file is missing or stale."""
    pid = owner_pid(lock_path)
    if pid is None:
        return "an unknown process"
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except (OSError, ValueError, IndexError):
        return "an unknown process"
    state = stat.rsplit(")", 1)[1].split()[0]  # the field after "(comm)"; T = stopped (SIGSTOP, Ctrl-Z)
    label = {"T": "STOPPED: it holds the lock until resumed (kill -CONT) or ended", "t": "stopped by a debugger"}
    return f"pid {pid} ({label.get(state, 'state ' + state)}; {' '.join(cmdline.split())[:120]})"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LlamaCppServer:
    """A llama.cpp server on 127.0.0.1 and a free port, with all cores for prompt and generation
    (its default is one thread). ``start`` waits until ``/v1/models`` answers; ``stop`` terminates it.
    The server's output goes to ``log_path`` so a failed start can be diagnosed."""

    def __init__(
        self,
        model_path: Path,
        *,
        n_ctx: int = 8192,
        threads: int | None = None,
        alias: str = "local",
        log_path: Path | None = None,
        startup_timeout_s: float = 180.0,
        port: int | None = None,
        exclusive_lock: Path | None = None,
        prompt_cache_mb: int = 0,
        stop_requested: StopCheck | None = None,
        lock_poll_s: float = 1.0,
    ) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.threads = threads or os.cpu_count() or 1
        self.alias = alias
        self.log_path = log_path
        self.startup_timeout_s = startup_timeout_s
        self.port = port or free_port()
        if prompt_cache_mb < 0:
            raise ValueError(f"prompt_cache_mb must be >= 0, got {prompt_cache_mb}.")
        self.prompt_cache_mb = prompt_cache_mb
        self.proc: subprocess.Popen[bytes] | None = None
        self._log_fh = None
        self._lock_path = exclusive_lock
        self._exclusive = FileLock(str(exclusive_lock), thread_local=False) if exclusive_lock is not None else None
        self._stop_requested = stop_requested
        self._lock_poll_s = lock_poll_s

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "memcore.llm.llama_server_main",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads),
            # The server's default (true) computes and copies vocabulary-sized logits for every prompt
            # token; nothing here reads them, and prompt-cache states would carry them too.
            "--logits_all", "false",
        ]  # fmt: skip
        if self.prompt_cache_mb:
            # Without it llama.cpp reuses only the previous request's prefix; with it, the KV state of past
            # prompts is kept in RAM and the longest matching prefix is restored (Mem0 alternates two
            # prompts whose 7.9k-token system prefix would otherwise be re-read on every add()).
            cmd += ["--cache", "true", "--cache_type", "ram", "--cache_size", str(self.prompt_cache_mb << 20)]
        return cmd

    def start(self) -> LlamaCppServer:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise LocalServerError(
                "backbone=local needs llama-cpp-python[server]; install the 'local' extra (make install), "
                "or choose another backbone (backbone=gpt-4o-mini, backbone=qwen3-8b)."
            ) from None
        if self._exclusive is not None:
            self._acquire_exclusive()
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_fh = open(self.log_path, "ab")  # noqa: SIM115 — lives as long as the server
        out = self._log_fh if self._log_fh is not None else subprocess.DEVNULL
        log.info(
            "starting llama.cpp server on %s (%s, %d threads, n_ctx %d)",
            self.base_url,
            self.model_path.name,
            self.threads,
            self.n_ctx,
        )
        guarded = [sys.executable, "-m", "memcore.llm.server_guard", "--", *self.command()]
        self.proc = subprocess.Popen(guarded, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stop()
                raise LocalServerError(f"the llama.cpp server {self._death_note()} while starting")
            if self.healthy():
                log.info("llama.cpp server ready in %.1fs", self.startup_timeout_s - (deadline - time.monotonic()))
                return self
            time.sleep(0.5)
        self.stop()
        raise LocalServerError(
            f"the llama.cpp server did not answer on {self.base_url} within {self.startup_timeout_s:.0f}s"
        )

    def _acquire_exclusive(self) -> None:
        """Queue for the machine-wide lock, polling so that a stop request (Ctrl-C, SIGTERM seen by the run's
        stop flag, even in a worker thread) ends the wait; say who holds it, again every ten minutes."""
        assert self._exclusive is not None and self._lock_path is not None
        t0 = next_note = time.monotonic()
        first = True
        while True:
            try:
                self._exclusive.acquire(timeout=0 if first else self._lock_poll_s)
                break
            except Timeout:
                if first and owner_pid(self._lock_path) == os.getpid():
                    # This run's other server (a judge on a second local model): queueing would wait forever.
                    log.warning("this run already holds the llama.cpp lock; its second server shares the cores")
                    self._exclusive = None
                    return
                first = False
            if self._stop_requested is not None and self._stop_requested():
                raise ServerWaitCancelled(
                    f"stopped while waiting for the llama.cpp lock held by {lock_holder(self._lock_path)}"
                )
            if time.monotonic() >= next_note:
                log.warning(
                    "another local llama.cpp server holds %s: %s; waiting %.0f min so far (two would share the "
                    "same cores; set backbone.exclusive=false to allow it)",
                    self._lock_path,
                    lock_holder(self._lock_path),
                    (time.monotonic() - t0) / 60,
                )
                next_note = time.monotonic() + 600
        _owner_file(self._lock_path).write_text(f"{os.getpid()}\n")

    def exit_reason(self, wait_s: float = 1.0) -> str | None:
        """None while the server process runs; once it has exited, one line saying how (signal or code), where
        its log is and the log's last lines. Waits up to ``wait_s`` for an exit in progress: the guard notices its
        child's death within half a second, and a refused connection usually comes first."""
        if self.proc is None:
            return None
        deadline = time.monotonic() + wait_s
        while self.proc.poll() is None:
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)
        return f"the local llama.cpp server {self._death_note()}"

    def _death_note(self) -> str:
        assert self.proc is not None and self.proc.returncode is not None
        where = f"; its log is {self.log_path}" if self.log_path is not None else ""
        tail = log_tail(self.log_path)
        return describe_exit(self.proc.returncode) + where + (f" (last lines: {tail})" if tail else "")

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=2) as resp:
                return resp.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc, timeout_s=15)
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None
        if self._exclusive is not None and self._exclusive.is_locked:
            self._exclusive.release()

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

"""The run's stop request, seen by every worker thread as soon as Ctrl-C or SIGTERM reaches the process.

Why not a plain ``threading.Event`` set in the ``except KeyboardInterrupt`` of the main thread: Python runs
signal handlers only in the main thread, and only once that thread holds the GIL again. While a build thread
works (an instant backbone, CPU-bound ingestion) the main thread waits up to the 5 ms switch interval for the
GIL, then unwinds the ``KeyboardInterrupt`` and logs a warning (which releases the GIL again) before it could
set the event: the build thread meanwhile ran on for several turns (18 calls where a turn is 2).

``StopFlag`` closes that gap: while :meth:`StopFlag.watch_signals` is active (main thread only), the
interpreter's C-level signal handler writes the signal number into a pipe the moment the kernel delivers the
signal (``signal.set_wakeup_fd``; no GIL needed), and :meth:`StopFlag.is_set` reads that pipe. A worker checking
between turns therefore sees the signal at its next check, whatever the main thread is doing.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, wait

#: Signals that stop a run (SIGTERM only once memcore-run's handler turns it into KeyboardInterrupt).
STOP_SIGNALS = frozenset({int(signal.SIGINT), int(signal.SIGTERM)})


#: "Has the run been asked to stop?" (a :class:`StopFlag`'s ``is_set``), as the layers that start work take it.
StopCheck = Callable[[], bool]


class StopRequested(BaseException):
    """A backbone call refused because the run is stopping. A ``BaseException``, like ``KeyboardInterrupt``, so
    that no method's error handling turns it into a fallback (a build would go on with fallback verdicts and
    could be saved as a finished snapshot)."""


class StopFlag:
    """A thread-safe stop flag (``set`` / ``is_set``, like ``threading.Event``) that also reports SIGINT /
    SIGTERM delivered while :meth:`watch_signals` is active."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._rfd: int | None = None

    def set(self) -> None:
        self._event.set()

    def is_set(self) -> bool:
        """True once ``set()`` was called or a stop signal was delivered during ``watch_signals``."""
        if self._event.is_set():
            return True
        with self._lock:
            if self._rfd is None:
                return False
            try:
                data = os.read(self._rfd, 512)
            except BlockingIOError:
                return False
        if any(b in STOP_SIGNALS for b in data):
            self._event.set()
        return self._event.is_set()

    @contextlib.contextmanager
    def watch_signals(self) -> Iterator[None]:
        """Route SIGINT/SIGTERM deliveries to this flag for the duration of the block. A no-op outside the
        main thread (only it may set the wakeup fd) or when someone else (e.g. asyncio) owns the wakeup fd;
        the flag then falls back to ``set()`` from the main thread's ``KeyboardInterrupt`` handler."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        rfd, wfd = os.pipe()
        os.set_blocking(rfd, False)
        os.set_blocking(wfd, False)
        try:
            previous = signal.set_wakeup_fd(wfd, warn_on_full_buffer=False)
        except ValueError:  # not the main interpreter's main thread
            os.close(rfd)
            os.close(wfd)
            yield
            return
        if previous != -1:  # the wakeup fd belongs to someone else: give it back, do not steal their bytes
            signal.set_wakeup_fd(previous)
            os.close(rfd)
            os.close(wfd)
            yield
            return
        with self._lock:
            self._rfd = rfd
        try:
            yield
        finally:
            signal.set_wakeup_fd(-1)
            with self._lock:
                self._rfd = None
            # A signal delivered just before the wakeup fd was reset still counts.
            with contextlib.suppress(BlockingIOError):
                if any(b in STOP_SIGNALS for b in os.read(rfd, 512)):
                    self._event.set()
            os.close(rfd)
            os.close(wfd)


def wait_interruptibly(futures: list[Future[None]], poll_s: float = 0.5) -> None:
    """Wait in the main thread until every future is done; on the first failure cancel those not started
    (running ones see the stop flag). The wait wakes every ``poll_s``: a signal the kernel delivered to a worker
    thread runs its Python handler (KeyboardInterrupt) only when the main thread runs bytecode."""
    pending: set[Future[None]] = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll_s, return_when=FIRST_EXCEPTION)
        if any(not f.cancelled() and f.exception() is not None for f in done):
            for other in futures:
                other.cancel()  # conversations not started yet; running ones see the stop flag

"""The llama.cpp server command line and its machine-wide lock (no server is started here)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcore.llm.llama_server_main import bounded_ram_cache_class, lean_states, state_bytes
from memcore.llm.local_model import ModelNotFoundError, resolve_gguf
from memcore.llm.local_server import LlamaCppServer, ServerWaitCancelled, lock_holder, owner_pid


def _flags(cmd: list[str]) -> dict[str, str]:
    flags = cmd[cmd.index("memcore.llm.llama_server_main") + 1 :]
    return dict(zip(flags[::2], flags[1::2]))


def test_command_uses_all_given_threads_and_no_prompt_cache_by_default() -> None:
    server = LlamaCppServer(Path("/m/model.gguf"), n_ctx=4096, threads=2, alias="qwen", port=5555)
    flags = _flags(server.command())
    assert flags == {
        "--model": "/m/model.gguf",
        "--model_alias": "qwen",
        "--host": "127.0.0.1",
        "--port": "5555",
        "--n_ctx": "4096",
        "--n_threads": "2",
        "--n_threads_batch": "2",
        "--logits_all": "false",
    }
    assert server.base_url == "http://127.0.0.1:5555/v1"


def test_prompt_cache_adds_a_bounded_ram_cache() -> None:
    flags = _flags(LlamaCppServer(Path("/m.gguf"), threads=1, port=1, prompt_cache_mb=1024).command())
    assert (flags["--cache"], flags["--cache_type"], flags["--cache_size"]) == ("true", "ram", str(1024 * 2**20))
    with pytest.raises(ValueError, match="prompt_cache_mb"):
        LlamaCppServer(Path("/m.gguf"), port=1, prompt_cache_mb=-1)


def test_bounded_cache_counts_logits_and_token_ids() -> None:
    np = pytest.importorskip("numpy")
    pytest.importorskip("llama_cpp")
    from types import SimpleNamespace

    # llama_server_main imports llama_cpp (the optional local-server extra), skipped above when it is missing
    from memcore.llm.llama_server_main import bounded_ram_cache_class, state_bytes

    def state(kv: int) -> SimpleNamespace:
        return SimpleNamespace(
            llama_state_size=kv, scores=np.zeros((4, 1000), dtype=np.float32), input_ids=np.zeros(10, dtype=np.intc)
        )

    assert state_bytes(state(100)) == 100 + 16_000 + 40
    cache = bounded_ram_cache_class()(capacity_bytes=40_000)
    cache[(1, 2, 3)] = state(100)
    cache[(1, 2, 4)] = state(100)
    cache[(7,)] = state(100)  # 3 × 16,140 > 40,000: the least recently used entry goes
    assert list(cache.cache_state) == [(1, 2, 4), (7,)]
    assert cache[(1, 2, 4, 9)] is cache.cache_state[(1, 2, 4)]  # longest-prefix lookup still works


def _hold_lock(lock: Path) -> subprocess.Popen[str]:
    """Another process holding the machine-wide lock, as a second memcore run would (owner file included)."""
    code = (
        "import os, sys, time; from filelock import FileLock; "
        f"l = FileLock({str(lock)!r}, thread_local=False); l.acquire(); "
        f"open({str(lock) + '.owner'!r}, 'w').write(str(os.getpid())); print('held', flush=True); time.sleep(120)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_stop_request_ends_the_wait_for_the_lock_and_names_its_holder(tmp_path: Path) -> None:
    """A run stopped (Ctrl-C, SIGTERM) while it queues behind another local server must not wait forever: the
    wait polls the run's stop flag, even in a worker thread where no KeyboardInterrupt is raised."""
    lock = tmp_path / "llama-server.lock"
    holder = _hold_lock(lock)
    asked = 0

    def stop_requested() -> bool:
        nonlocal asked
        asked += 1
        return asked >= 3

    try:
        server = LlamaCppServer(
            Path("/m.gguf"), port=1, exclusive_lock=lock, stop_requested=stop_requested, lock_poll_s=0.01
        )
        with pytest.raises(ServerWaitCancelled, match=rf"held by pid {holder.pid} \(state S"):
            server._acquire_exclusive()
        assert asked == 3
    finally:
        holder.kill()
        holder.wait()


def test_a_stopped_holder_is_named_as_stopped(tmp_path: Path) -> None:
    lock = tmp_path / "llama-server.lock"
    holder = _hold_lock(lock)
    try:
        os.kill(holder.pid, signal.SIGSTOP)
        time.sleep(0.2)
        assert lock_holder(lock).startswith(f"pid {holder.pid} (STOPPED")
    finally:
        holder.kill()
        holder.wait()


def test_the_lock_is_taken_and_released_and_the_same_process_does_not_queue_behind_itself(tmp_path: Path) -> None:
    lock = tmp_path / "llama-server.lock"
    first = LlamaCppServer(Path("/m.gguf"), port=1, exclusive_lock=lock)
    first._acquire_exclusive()
    assert owner_pid(lock) == os.getpid()
    # A judge on a second local model in the same run: the lock is this process's, so no wait (it would be forever).
    second = LlamaCppServer(Path("/m.gguf"), port=2, exclusive_lock=lock, stop_requested=lambda: True)
    second._acquire_exclusive()
    first.stop()
    second.stop()
    third = LlamaCppServer(Path("/m.gguf"), port=3, exclusive_lock=lock, stop_requested=lambda: True)
    third._acquire_exclusive()  # free again: taken at the first try, the stop request never consulted
    third.stop()


@pytest.mark.slow
def test_lean_cache_states_give_the_same_replies(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``logits_all`` off a prompt-cache state without the logits rows restores to the same replies, and the
    cache's bound counts the bytes the library's state would hold."""
    llama_cpp = pytest.importorskip("llama_cpp")

    try:
        gguf = resolve_gguf("qwen2.5-coder-0.5b-instruct-q4_k_m")
    except ModelNotFoundError:
        pytest.skip("run python scripts/get_local_model.py --model qwen2.5-coder-0.5b-instruct-q4_k_m")
    llm = llama_cpp.Llama(str(gguf), n_ctx=1024, n_threads=1, n_threads_batch=1, logits_all=False, verbose=False)
    shared = "Caroline went to the support group on Tuesday and started a painting of the lake. " * 6
    prompts = [shared + "What did she paint?", "Count to five.", shared + "When did she go to the group?"]

    def replies() -> tuple[list[str], list[int]]:
        cache = bounded_ram_cache_class()(capacity_bytes=2**30)
        llm.set_cache(cache)
        llm.reset()
        out = [
            llm.create_chat_completion(messages=[{"role": "user", "content": p}], temperature=0.0, max_tokens=24)[
                "choices"
            ][0]["message"]["content"]
            for p in prompts
        ]
        return out, [state_bytes(s) for s in cache.cache_state.values()]

    loads = []
    library, library_bytes = replies()
    monkeypatch.setattr(llama_cpp.Llama, "save_state", llama_cpp.Llama.save_state)  # restored after the test
    monkeypatch.setattr(llama_cpp.Llama, "load_state", llama_cpp.Llama.load_state)
    lean_states()
    lean_load = llama_cpp.Llama.load_state
    monkeypatch.setattr(llama_cpp.Llama, "load_state", lambda self, s: loads.append(s) or lean_load(self, s))
    lean, lean_bytes = replies()
    assert lean == library
    assert lean_bytes == library_bytes  # the same bound, so the same states kept and evicted
    assert loads and all(s.scores.shape[0] == 0 and s.scores_bytes > 0 for s in loads)  # a cache hit restored one

"""The llama.cpp server command line (no server is started here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.llm.local_server import LlamaCppServer


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

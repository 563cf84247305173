"""Entry point of the local llama.cpp server: ``llama_cpp.server`` with an honest prompt-cache bound and greedy
JSON sampling that checks the picked token before the whole vocabulary (:mod:`memcore.llm.lazy_grammar`: the same
replies, about half the time per generated JSON token).

llama-cpp-python's RAM prompt cache bounds itself by the KV bytes of the states it keeps, but every state
also carries a copy of the logits buffer (``n_batch × n_vocab`` floats: 311 MB for Qwen2.5's 151,936-token
vocabulary) that the bound ignores, so a "1 GB" cache of short prompts grows to tens of GB. Here the bound
counts everything a state holds. Run as ``python -m memcore.llm.llama_server_main <llama_cpp.server args>``.
"""

from __future__ import annotations

import runpy
from typing import Any

from memcore.llm import lazy_grammar


def bounded_ram_cache_class() -> type:
    """``llama_cpp.LlamaRAMCache`` whose ``cache_size`` counts KV state, logits and token ids."""
    from llama_cpp.llama_cache import LlamaRAMCache

    class BoundedRAMCache(LlamaRAMCache):  # type: ignore[misc]
        @property
        def cache_size(self) -> int:
            return sum(state_bytes(s) for s in self.cache_state.values())

    return BoundedRAMCache


def state_bytes(state: Any) -> int:
    """Bytes a saved ``LlamaState`` keeps alive."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def main() -> None:
    import llama_cpp

    llama_cpp.LlamaRAMCache = bounded_ram_cache_class()  # the server builds its cache through this name
    lazy_grammar.install()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

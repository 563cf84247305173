"""Entry point of the local llama.cpp server: ``llama_cpp.server`` with an honest prompt-cache bound, prompt-cache
states without the logits rows nothing reads, and greedy JSON sampling that checks the picked token before the
whole vocabulary (:mod:`memcore.llm.lazy_grammar`: the same replies, about half the time per generated JSON token).

llama-cpp-python's RAM prompt cache bounds itself by the KV bytes of the states it keeps, but every state
also carries a copy of the logits buffer (``n_batch × n_vocab`` floats: 311 MB for Qwen2.5's 151,936-token
vocabulary) that the bound ignores, so a "1 GB" cache of short prompts grows to tens of GB. Here the bound
counts everything a state holds. With ``logits_all`` off (as the runs start the server) that buffer is never
written or read (sampling reads the context's own logits), yet every request copied it into the cache after its
reply and back on a cache hit: the states here keep no rows of it, and the bound still counts the bytes the
library's state would hold, so the cache keeps and evicts the same states as before.
Run as ``python -m memcore.llm.llama_server_main <llama_cpp.server args>``.
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
    """Bytes a saved ``LlamaState`` keeps alive, counting the logits rows of a lean state (:func:`lean_states`)
    as the library's state would hold them."""
    scores = getattr(state, "scores_bytes", None)
    scores = int(state.scores.nbytes) if scores is None else int(scores)
    return int(state.llama_state_size) + scores + int(state.input_ids.nbytes)


def lean_states() -> None:
    """``Llama.save_state`` / ``load_state`` without the logits rows when ``logits_all`` is off (the rows are
    never written then): the saved state keeps zero rows and notes the bytes it left out (``scores_bytes``), and
    loading one leaves the buffer alone. Other states go through the library's methods unchanged."""
    import numpy as np
    from llama_cpp import Llama

    save, load = Llama.save_state, Llama.load_state

    def save_state(self: Any) -> Any:
        if self._logits_all:
            return save(self)
        full, left_out = self.scores, self._scores.nbytes
        self.scores = np.empty((0, full.shape[1]), dtype=full.dtype)
        try:
            state = save(self)
        finally:
            self.scores = full
        state.scores_bytes = left_out
        return state

    def load_state(self: Any, state: Any) -> None:
        if self._logits_all or getattr(state, "scores_bytes", None) is None:
            return load(self, state)
        full = self.scores
        self.scores = np.empty((0, full.shape[1]), dtype=full.dtype)  # no rows to restore or clear
        try:
            load(self, state)
        finally:
            self.scores = full

    Llama.save_state = save_state
    Llama.load_state = load_state


def main() -> None:
    import llama_cpp

    llama_cpp.LlamaRAMCache = bounded_ram_cache_class()  # the server builds its cache through this name
    lean_states()
    lazy_grammar.install()
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()

"""Greedy sampling under a grammar that checks the token it picks first: the same tokens, without checking the
whole vocabulary at every step.

llama-cpp-python samples a request with a grammar (``response_format`` JSON) through the chain penalties →
grammar → greedy, and the grammar checks every candidate of the vocabulary (151,936 for Qwen2.5) at every
generated token: about as long as generating the token on two cores. llama.cpp's own sampler (``common/sampling``)
checks the token the other samplers picked first, and the whole vocabulary only when the grammar rejects it.

At temperature 0 that gives the same token: the grammar only masks candidates, so when the highest-scoring token
(the first of equals, as greedy picks) is allowed it is still the highest once the others are masked; when it is
not, the grammar masks the whole (penalised) vocabulary and greedy picks again, as the library's chain does. Only
greedy requests without logits processors or mirostat take this path; every other request keeps the library's
chain. :func:`install` patches ``llama_cpp.Llama`` in the server process (``memcore.llm.llama_server_main``).
"""

from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

#: llama.cpp's ``llama_token_data`` (id, logit, p) as a numpy record
TOKEN_DATA = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)


def takes_lazy_path(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether ``Llama._init_sampler(*args, **kwargs)`` builds a chain whose result the lazy check reproduces:
    a grammar, greedy (``temp`` 0), no logits processor, no mirostat, everything passed by keyword."""
    return (
        not args
        and kwargs.get("grammar") is not None
        and kwargs.get("temp") == 0.0
        and kwargs.get("logits_processor") is None
        and kwargs.get("mirostat_mode", 0) == 0
    )


class LazyGrammarSampler:
    """A drop-in for llama-cpp-python's ``LlamaSampler`` in ``Llama.sample``: ``chain`` (penalties → greedy,
    the library's chain without the grammar) picks, ``grammar`` (a llama.cpp grammar sampler, owned here)
    checks the pick and masks the vocabulary only when it rejects it. ``full_checks`` counts those."""

    def __init__(self, llama_cpp: Any, chain: Any, grammar: Any, n_vocab: int) -> None:
        self._lib = llama_cpp
        self._chain = chain  # the library's LlamaSampler: frees its own samplers
        self._grammar = grammar
        self._greedy = llama_cpp.llama_sampler_init_greedy()
        self._n_vocab = n_vocab
        self._cur = np.zeros(n_vocab, dtype=TOKEN_DATA)
        self._cur["id"] = np.arange(n_vocab, dtype=np.intc)
        self._one = np.zeros(1, dtype=TOKEN_DATA)
        self.samples = 0
        self.full_checks = 0

    def _array(self, records: np.ndarray) -> Any:
        lib = self._lib
        return lib.llama_token_data_array(
            data=records.ctypes.data_as(lib.llama_token_data_p), size=len(records), selected=-1, sorted=False
        )

    def sample(self, ctx: Any, idx: int) -> int:
        """The next token for the logits at ``idx`` of ``ctx`` (a llama-cpp-python ``LlamaContext``), accepted by
        the penalties and the grammar, as ``llama_sampler_sample`` does with the full chain."""
        lib = self._lib
        logits = np.ctypeslib.as_array(lib.llama_get_logits_ith(ctx.ctx, idx), shape=(self._n_vocab,))
        cur = self._cur
        cur["logit"] = logits
        cur["p"] = 0.0
        full = self._array(cur)
        lib.llama_sampler_apply(self._chain.sampler, ctypes.byref(full))  # penalties, then greedy's pick
        token = int(full.data[full.selected].id)
        one = self._one
        one["id"] = token
        one["logit"] = full.data[full.selected].logit
        single = self._array(one)
        lib.llama_sampler_apply(self._grammar, ctypes.byref(single))
        if not np.isfinite(one["logit"][0]):  # rejected: mask the penalised vocabulary and pick again
            self.full_checks += 1
            full = self._array(cur)
            lib.llama_sampler_apply(self._grammar, ctypes.byref(full))
            lib.llama_sampler_apply(self._greedy, ctypes.byref(full))
            token = int(full.data[full.selected].id)
        lib.llama_sampler_accept(self._chain.sampler, token)
        lib.llama_sampler_accept(self._grammar, token)
        self.samples += 1
        return token

    def close(self) -> None:
        """Free the grammar and greedy samplers (the chain frees itself)."""
        if self._grammar is not None:
            self._lib.llama_sampler_free(self._grammar)
            self._lib.llama_sampler_free(self._greedy)
            self._grammar = self._greedy = None

    def __del__(self) -> None:
        self.close()


def install() -> None:
    """Make ``llama_cpp.Llama`` sample greedy grammar requests lazily (idempotent)."""
    import llama_cpp

    original = llama_cpp.Llama._init_sampler
    if getattr(original, "lazy_grammar", False):
        return

    @functools.wraps(original)
    def init_sampler(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not takes_lazy_path(args, kwargs):
            return original(self, *args, **kwargs)
        grammar = kwargs["grammar"]
        chain = original(self, **{**kwargs, "grammar": None})
        sampler = llama_cpp.llama_sampler_init_grammar(
            self._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        return LazyGrammarSampler(llama_cpp, chain, sampler, self._n_vocab)

    init_sampler.lazy_grammar = True  # type: ignore[attr-defined]
    init_sampler.original = original  # type: ignore[attr-defined]
    llama_cpp.Llama._init_sampler = init_sampler


def uninstall() -> None:
    """Undo :func:`install` (tests)."""
    import llama_cpp

    current = llama_cpp.Llama._init_sampler
    if getattr(current, "lazy_grammar", False):
        llama_cpp.Llama._init_sampler = current.original

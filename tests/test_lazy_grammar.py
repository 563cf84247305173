"""Greedy JSON sampling that checks the picked token first (memcore.llm.lazy_grammar) gives the library's tokens."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memcore.llm.lazy_grammar import LazyGrammarSampler, install, takes_lazy_path, uninstall
from memcore.llm.local_model import ModelNotFoundError, resolve_gguf

SMALL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
GREEDY_JSON = {"grammar": object(), "temp": 0.0, "logits_processor": None, "mirostat_mode": 0}


def test_only_greedy_grammar_requests_take_the_lazy_path() -> None:
    assert takes_lazy_path((), dict(GREEDY_JSON))
    assert not takes_lazy_path((), {**GREEDY_JSON, "grammar": None})
    assert not takes_lazy_path((), {**GREEDY_JSON, "temp": 0.7})
    assert not takes_lazy_path((), {**GREEDY_JSON, "logits_processor": [print]})
    assert not takes_lazy_path((), {**GREEDY_JSON, "mirostat_mode": 2})
    assert not takes_lazy_path((40,), dict(GREEDY_JSON))  # positional arguments: not what generate passes


@pytest.fixture
def restored() -> Iterator[None]:
    yield
    uninstall()


def test_install_is_idempotent_and_undone(restored: None) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    original = llama_cpp.Llama._init_sampler
    install()
    patched = llama_cpp.Llama._init_sampler
    install()
    assert llama_cpp.Llama._init_sampler is patched is not original
    uninstall()
    assert llama_cpp.Llama._init_sampler is original


PROMPTS = [
    'Turn: "Caroline: I went to the LGBTQ support group yesterday." Return JSON {"keywords": [...], "topic": "..."}.',
    'Are these two notes about the same event? A: "Mel painted a sunset." B: "Melanie finished her lake painting."'
    ' Answer as JSON {"relation": "redundant" | "complementary" | "unrelated", "reason": "..."}.',
    "Say hello to Caroline in one short sentence of plain text.",  # the model's first pick is not JSON
]


@pytest.mark.slow
def test_lazy_json_sampling_gives_the_librarys_replies(restored: None) -> None:
    llama_cpp = pytest.importorskip("llama_cpp")
    try:
        gguf = resolve_gguf(SMALL)
    except ModelNotFoundError:
        pytest.skip(f"run python scripts/get_local_model.py --model {SMALL}")
    llm = llama_cpp.Llama(str(gguf), n_ctx=1024, n_threads=1, n_threads_batch=1, logits_all=False, verbose=False)

    def ask(prompt: str) -> dict[str, Any]:
        reply = llm.create_chat_completion(
            messages=[{"role": "user", "content": prompt}],
            response_format={"type": "json_object"},
            temperature=0.0,
            max_tokens=40,
        )
        return {"text": reply["choices"][0]["message"]["content"], "usage": reply["usage"]}

    library = [ask(p) for p in PROMPTS]
    install()
    lazy, full_checks = [], 0
    for prompt in PROMPTS:
        lazy.append(ask(prompt))
        assert isinstance(llm._sampler, LazyGrammarSampler)
        full_checks += llm._sampler.full_checks
    assert lazy == library
    assert full_checks >= 1  # the plain-text prompt made the grammar reject a pick: both paths ran

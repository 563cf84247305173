"""Every question's query text embedded in one batch per conversation, through the run's cached embedder, with
no change in what retrieval returns; the embedding cache keyed by the embedder's name and version."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from baselines.rag import RAG_DENSE, RAG_HYBRID
from memcore.interfaces import PrefetchesQueries
from memcore.llm.embedders import CachedEmbedder, HashingEmbedder, MiniLMEmbedder
from memcore.memory.system import SPEC_CHEAP
from tests.support import QUESTIONS, REPO, TOPIC_TURNS, conversation_of, method_config, method_context


def _system(spec: Any, config: dict[str, Any], tmp: Path, embedder: CachedEmbedder) -> Any:
    conv = conversation_of(TOPIC_TURNS)
    system = spec.factory(method_context(config, conv, tmp, embedder=lambda: embedder))
    for turn in conv.turns:
        system.ingest(turn)
    system.finalize()
    return system


@pytest.mark.parametrize(
    ("spec", "config"),
    [
        (RAG_DENSE, {"name": "rag_dense"}),
        (RAG_HYBRID, {"name": "rag_hybrid", "pack_window_dense": 1.0}),
        (SPEC_CHEAP, method_config(cheap=True)),
        (SPEC_CHEAP, method_config(cheap=True, pack=True)),
    ],
    ids=["rag_dense", "rag_hybrid_windows", "memcore_cheap", "memcore_cheap_packed"],
)
def test_after_the_prefetch_the_first_round_embeds_nothing_and_retrieval_is_unchanged(
    tmp_path: Path, spec: Any, config: dict[str, Any]
) -> None:
    plain = _system(spec, config, tmp_path / "plain", CachedEmbedder(HashingEmbedder(64)))
    fetched_embedder = CachedEmbedder(HashingEmbedder(64))
    fetched = _system(spec, config, tmp_path / "fetched", fetched_embedder)
    assert isinstance(fetched, PrefetchesQueries)
    fetched.prefetch_queries([*QUESTIONS, QUESTIONS[0]])
    after_prefetch = fetched_embedder.counts()["computed"]
    for q in QUESTIONS:
        a, b = plain.retrieve(q), fetched.retrieve(q)
        assert [n.dia_ids for n in a.notes] == [n.dia_ids for n in b.notes]
        assert a.render() == b.render()
    if spec is not SPEC_CHEAP:  # memcore's later IER rounds embed sub-queries that exist only after round 1
        assert fetched_embedder.counts()["computed"] == after_prefetch


def test_memcore_in_llm_mode_prefetches_nothing(tmp_path: Path) -> None:
    embedder = CachedEmbedder(HashingEmbedder(64))
    conv = conversation_of(TOPIC_TURNS)
    system = SPEC_CHEAP.factory(method_context(method_config(cheap=True), conv, tmp_path, embedder=lambda: embedder))
    for turn in conv.turns:
        system.ingest(turn)
    system.finalize()
    system.cfg = dataclasses.replace(system.cfg, judge="llm")
    before = embedder.counts()
    system.prefetch_queries(QUESTIONS)
    assert embedder.counts() == before


class _Versioned(HashingEmbedder):
    def __init__(self, version: str, sign: float) -> None:
        super().__init__(32)
        self.name, self.version, self._sign = "same-name", version, sign

    def encode(self, texts: Any) -> np.ndarray:
        return self._sign * super().encode(texts)


def test_a_cache_never_serves_the_vectors_of_another_version_of_the_same_embedder(tmp_path: Path) -> None:
    store = tmp_path / "embeddings.sqlite"
    first = CachedEmbedder(_Versioned("1.0", 1.0), store)
    v1 = first.encode(["a text"])
    second = CachedEmbedder(_Versioned("2.0", -1.0), store)
    v2 = second.encode(["a text"])
    assert second.counts() == {"computed": 1, "from_cache": 0}
    assert np.allclose(v2, -v1)
    again = CachedEmbedder(_Versioned("1.0", -1.0), store)  # same version: served from the store
    assert np.allclose(again.encode(["a text"]), v1) and again.counts()["from_cache"] == 1


def test_building_minilm_imports_neither_torch_nor_nltk_until_a_text_is_encoded() -> None:
    code = (
        "import sys; import memcore.runner; from memcore.llm.embedders import MiniLMEmbedder; e = MiniLMEmbedder();"
        " print(e.dim, e.version != '', 'torch' in sys.modules, 'nltk' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["384", "True", "False", "False"]


@pytest.mark.e2e  # loads the real MiniLM weights (seconds): make test, not make test-fast
def test_minilm_gives_a_text_the_same_vector_alone_and_in_a_batch() -> None:
    texts = [*QUESTIONS, *TOPIC_TURNS[::3]]
    embedder = MiniLMEmbedder()
    batch = embedder.encode(texts)
    alone = np.stack([embedder.encode([t])[0] for t in texts])
    cosine = (batch * alone).sum(axis=1)
    assert cosine.min() >= 0.9999 and np.abs(batch - alone).max() < 1e-4


@pytest.mark.e2e  # loads the real MiniLM weights (seconds): make test, not make test-fast
def test_the_cache_reports_the_model_load_inside_the_encoding_seconds(tmp_path: Path) -> None:
    cached = CachedEmbedder(MiniLMEmbedder(), tmp_path / "emb.sqlite")
    assert cached.load_seconds() == 0.0  # nothing loaded before the first text
    cached.encode(list(QUESTIONS))
    loaded, first = cached.load_seconds(), cached.seconds()
    assert 0.0 < loaded < first
    cached.encode(["a text not seen before"])
    assert cached.load_seconds() == loaded and cached.seconds() > first  # loaded once: the second encode only encodes

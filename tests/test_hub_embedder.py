"""The official LoCoMo retrievers as embedder presets (embedder=contriever / dragon, kind hub): where their weights
are neither in the local Hugging Face cache nor reachable, memcore-run stops with one line, exit 2, before any
work; a dual encoder embeds questions with its query side."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from baselines.rag import RAG, RAGConfig
from memcore.errors import ConfigError
from memcore.llm import hub_embedder
from memcore.llm.embedders import CachedEmbedder
from tests.support import story_conversation
from tests.test_config_errors import _run_cli


@pytest.fixture
def empty_hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    return tmp_path


@pytest.mark.parametrize(("embedder", "model"), [("contriever", "facebook/contriever"), ("dragon", "facebook/dragon")])
def test_unreachable_hub_model_is_one_line_exit_2_before_any_work(
    empty_hub_cache: Path, embedder: str, model: str, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tmp_path = empty_hub_cache
    code = _run_cli(tmp_path, ["method=rag_locomo", f"embedder={embedder}"], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: embedder {embedder}: model {model}"), err
    assert "not in the local Hugging Face cache and the hub is not reachable" in lines[0] and "Traceback" not in err
    assert not (tmp_path / "run" / "items.jsonl").exists()
    assert not (tmp_path / "results" / "cache").exists() and not (tmp_path / "results" / "snapshots").exists()


def test_the_hub_is_asked_when_online_and_a_failure_is_named(empty_hub_cache, monkeypatch) -> None:
    import huggingface_hub

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    asked: list[str] = []

    def unreachable(repo_id: str, timeout: float) -> None:
        asked.append(repo_id)
        raise ConnectionError("Name or service not known")

    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    with pytest.raises(ConfigError, match=r"facebook/contriever .*ConnectionError: Name or service not known"):
        hub_embedder.precheck("contriever", ["facebook/contriever"])
    assert asked == ["facebook/contriever"]
    monkeypatch.setattr(huggingface_hub, "model_info", lambda repo_id, timeout: None)
    hub_embedder.precheck("contriever", ["facebook/contriever"])  # reachable: no error


def test_a_cached_model_needs_no_hub(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub_embedder, "_cached", lambda repo_id: True)
    hub_embedder.precheck("dragon", ["facebook/dragon-plus-context-encoder", "facebook/dragon-plus-query-encoder"])


class _Encoder:
    def __init__(self, name: str, value: float) -> None:
        self.name, self.dim, self.value = name, 4, value

    def encode(self, texts):
        return np.full((len(texts), 4), self.value, dtype=np.float32)


class _Dual:
    """A dual encoder's shape (HubEmbedder): context side for documents, query side for questions."""

    def __init__(self) -> None:
        self.context_encoder, self.query_encoder = _Encoder("ctx", 1.0), _Encoder("query", 2.0)
        self.name, self.dim = "ctx+query", 4

    def encode(self, texts):
        return self.context_encoder.encode(texts)


def test_questions_go_through_the_query_encoder() -> None:
    cached = CachedEmbedder(_Dual())
    assert cached.encode(["q"])[0][0] == 1.0 and cached.encode_queries(["q"])[0][0] == 2.0
    single = CachedEmbedder(_Encoder("one", 3.0))
    assert single.encode_queries(["q"])[0][0] == 3.0
    seen: list[str] = []

    class Spy(CachedEmbedder):
        def encode_queries(self, texts):
            seen.extend(texts)
            return super().encode_queries(texts)

    rag = RAG(RAGConfig(retriever="dense", top_k=2, context_format="locomo"), lambda e=Spy(_Dual()): e)
    for t in story_conversation().turns:
        rag.ingest(t)
    rag.finalize()
    rag.retrieve("What breed is Rex?")
    assert seen == ["What breed is Rex?"]

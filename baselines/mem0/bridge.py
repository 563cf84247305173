"""Glue between mem0ai and memcore: LLM transport, embedder and vector-store wrappers.

Importing this module imports mem0ai, so only ``baselines.mem0.system`` imports it, lazily, after
setting ``MEM0_TELEMETRY=False``. Every class here subclasses mem0's own base class, so mem0's
``Memory.add``/``search`` pipeline, prompts, faiss store and history DB run unchanged; only the
transport of its LLM calls (our backbone: cache, retries, usage accounting) and the session-date
grounding of its extraction prompt are ours.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from importlib.metadata import version
from typing import Any

from mem0.configs.llms.openai import OpenAIConfig
from mem0.embeddings.base import EmbeddingBase
from mem0.llms.base import LLMBase
from mem0.llms.openai import OpenAILLM
from mem0.memory import telemetry as _mem0_telemetry

from memcore.interfaces import ChatBackbone, Embedder
from memcore.llm.json_reply import complete_json

log = logging.getLogger(__name__)

MEM0_VERSION = version("mem0ai")
BRIDGE_VERSION = "mem0-bridge-v1"
PROMPT_VERSION = f"mem0ai-{MEM0_VERSION}/{BRIDGE_VERSION}"

if _mem0_telemetry.MEM0_TELEMETRY:
    raise RuntimeError(
        "mem0ai was imported with telemetry on (MEM0_TELEMETRY unset or true before its first import); "
        "import mem0 only through baselines.mem0, or set MEM0_TELEMETRY=False in the environment."
    )

# mem0's user prompt (generate_additive_extraction_prompt) ends with these two sections, each an ISO
# date; OSS Memory.add() never passes a timestamp, so both hold the wall clock. (The system prompt
# has headers of the same name followed by prose, which the date pattern does not match.)
_DATE_SECTIONS = re.compile(r"(## (?:Observation Date|Current Date)\n)\d{4}-\d{2}-\d{2}(?=\n|$)")


class DateGroundingError(RuntimeError):
    pass


class SessionClock:
    """The session date (ISO ``YYYY-MM-DD``) that mem0's prompt must see while a session is added."""

    def __init__(self) -> None:
        self.date: str | None = None


def ground_dates(messages: Sequence[dict[str, Any]], date: str | None) -> list[dict[str, Any]]:
    """Replace the Observation Date and Current Date sections of mem0's extraction prompt by the
    session date. A prompt without both sections would fall back to the wall clock: that is an
    error (a different mem0ai version changed the prompt), never silently accepted."""
    out = [dict(m) for m in messages]
    replaced = 0
    for m in out:
        content = m.get("content")
        if isinstance(content, str):
            m["content"], n = _DATE_SECTIONS.subn(lambda mt: mt.group(1) + (date or ""), content)
            replaced += n
    if replaced != 2:
        raise DateGroundingError(
            f"mem0ai {MEM0_VERSION} sent an LLM prompt with {replaced} dated Observation/Current Date sections "
            "(expected 2); its dates would be the wall clock. Update baselines/mem0/bridge.py for this version."
        )
    if date is None:
        raise DateGroundingError("mem0 asked for an extraction outside a session; no session date is set.")
    return out


def parse_extraction(obj: Any) -> dict[str, Any]:
    """mem0's additive extraction reply: ``{"memory": [{"id": ..., "text": ...}, ...]}``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("memory"), list):
        raise ValueError('reply needs a "memory" list')
    items = [m for m in obj["memory"] if isinstance(m, dict) and isinstance(m.get("text"), str) and m["text"].strip()]
    return {**obj, "memory": items}


class BackboneLLM(LLMBase):
    """mem0 LLM whose calls go through ``backbone.complete(stage="ingest")`` (our cache, retries and
    usage accounting); JSON replies through ``complete_json`` with a counted empty fallback."""

    def __init__(
        self,
        config: Any,
        backbone: Callable[[], ChatBackbone],
        clock: SessionClock | None,
        *,
        seed: int | None,
    ) -> None:
        super().__init__(config)
        self._backbone = backbone
        self._clock = clock
        self._seed = seed

    def generate_response(
        self,
        messages: list[dict[str, str]],
        response_format: Any = None,
        tools: list[dict] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> str:
        if tools:
            raise NotImplementedError("mem0 tool calls are not routed through the memcore backbone")
        msgs = ground_dates(messages, self._clock.date) if self._clock is not None else [dict(m) for m in messages]
        wants_json = isinstance(response_format, dict) and response_format.get("type") in ("json_object", "json_schema")
        temperature = float(self.config.temperature)
        max_tokens = int(self.config.max_tokens)
        top_p = getattr(self.config, "top_p", None)  # mem0's OpenAILLM sends config.top_p with every call
        top_p = None if top_p is None else float(top_p)
        if not wants_json:
            return (
                self._backbone()
                .complete(
                    msgs,
                    stage="ingest",
                    temperature=temperature,
                    max_tokens=max_tokens,
                    seed=self._seed,
                    prompt_version=PROMPT_VERSION,
                    top_p=top_p,
                )
                .text
            )
        res = complete_json(
            self._backbone(),
            msgs,
            stage="ingest",
            validate=parse_extraction,
            fallback={"memory": []},
            fallback_kind="mem0_extraction_empty",
            prompt_version=PROMPT_VERSION,
            temperature=temperature,
            max_tokens=max_tokens,
            seed=self._seed,
            top_p=top_p,
        )
        return json.dumps(res.value, ensure_ascii=False)


class DirectLLM(OpenAILLM):
    """mem0's own OpenAI client talking to the run's server (``llm_route=direct``): no memcore cache
    or retries, but the session date is grounded and calls/tokens/latency are recorded in the
    backbone's usage tracker (through mem0's ``response_callback``)."""

    def __init__(
        self, config: OpenAIConfig, usage: Any, clock: SessionClock, extra_body: dict[str, Any] | None
    ) -> None:
        config.response_callback = self._record
        super().__init__(config)
        self._usage = usage
        self._clock = clock
        self._extra_body = dict(extra_body or {})
        self._t0 = threading.local()

    def _record(self, _llm: Any, response: Any, _params: dict[str, Any]) -> None:
        usage = getattr(response, "usage", None)
        self._usage.record(
            "ingest",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=time.perf_counter() - getattr(self._t0, "value", time.perf_counter()),
            cached=False,
        )

    def generate_response(
        self,
        messages: list[dict[str, str]],
        response_format: Any = None,
        tools: list[dict] | None = None,
        tool_choice: str = "auto",
        **kwargs: Any,
    ) -> Any:
        msgs = ground_dates(messages, self._clock.date)
        if self._extra_body:
            kwargs.setdefault("extra_body", self._extra_body)
        self._t0.value = time.perf_counter()
        text = super().generate_response(
            msgs, response_format=response_format, tools=tools, tool_choice=tool_choice, **kwargs
        )
        if isinstance(response_format, dict) and isinstance(text, str):
            try:
                parse_extraction(json.loads(text))
            except (ValueError, TypeError):
                # mem0 then stores nothing for this add; count it like complete_json's fallback.
                self._usage.record_parse_failure("ingest", "mem0_extraction_empty")
        return text


class RunEmbedder(EmbeddingBase):
    """mem0 embedder backed by the run's embedder (shared cache); used for non-MiniLM embedders."""

    def __init__(self, embedder: Callable[[], Embedder]) -> None:
        super().__init__(None)
        self._embedder = embedder

    def embed(self, text: Any, memory_action: Any = None) -> list[float]:
        return self._embedder().encode([str(text)])[0].tolist()

    def embed_batch(self, texts: Sequence[str], memory_action: Any = "add") -> list[list[float]]:
        if not texts:
            return []
        return self._embedder().encode([str(t) for t in texts]).tolist()


class LockedStore:
    """Serialises every call into a mem0 vector store (faiss is not safe for concurrent add/search)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._lock = threading.RLock()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return locked


def huggingface_embedder(model_dir: str, dims: int) -> EmbeddingBase:
    """mem0's own HuggingFace (sentence-transformers) embedder on a local model directory."""
    from mem0.configs.embeddings.base import BaseEmbedderConfig
    from mem0.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(BaseEmbedderConfig(model=model_dir, embedding_dims=dims))


def build_memory(
    *,
    faiss_path: str,
    history_db_path: str,
    dims: int,
    distance_strategy: str,
    temperature: float,
    max_tokens: int,
    llm: LLMBase,
    top_p: float = 0.1,
    embedding_model: EmbeddingBase,
    custom_instructions: str | None = None,
) -> Any:
    """A real ``mem0.Memory`` (faiss + SQLite history under the given paths) whose ``llm`` and
    ``embedding_model`` are the given instances. It is built with inert OpenAI placeholders for
    both, which are replaced before any call, so construction neither loads a model twice nor
    needs a key. ``custom_instructions``: ``MemoryConfig.custom_instructions`` (appended to the extraction prompt
    as ``## Custom Instructions``; None: none)."""
    from mem0 import Memory

    memory = Memory.from_config(
        {
            "llm": {
                "provider": "openai",
                "config": {
                    "model": "replaced-by-memcore",
                    "api_key": "unused",
                    "openai_base_url": "http://127.0.0.1:9/v1",
                    "temperature": temperature,
                    "max_tokens": max_tokens,
                    "top_p": top_p,
                },
            },
            "embedder": {
                "provider": "openai",
                "config": {"model": "replaced-by-memcore", "api_key": "unused", "embedding_dims": dims},
            },
            "vector_store": {
                "provider": "faiss",
                "config": {
                    "collection_name": "mem0",
                    "path": faiss_path,
                    "embedding_model_dims": dims,
                    "distance_strategy": distance_strategy,
                },
            },
            "history_db_path": history_db_path,
            **({"custom_instructions": custom_instructions} if custom_instructions else {}),
        }
    )
    memory.llm = llm
    memory.embedding_model = embedding_model
    memory.vector_store = LockedStore(memory.vector_store)
    return memory


def openai_llm_config(
    *, model: str, base_url: str, api_key: str, temperature: float, max_tokens: int, top_p: float
) -> OpenAIConfig:
    return OpenAIConfig(
        model=model,
        api_key=api_key,
        openai_base_url=base_url,
        temperature=temperature,
        max_tokens=max_tokens,
        top_p=top_p,
    )

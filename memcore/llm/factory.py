"""Build the chat backbone stack and the embedder a run's config asks for."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memcore.config import BackboneConfig, ConfigError, EmbedderConfig
from memcore.interfaces import ChatBackbone, Completion, Embedder, Message
from memcore.llm.backbone import MissingKeyError, OpenAITransport
from memcore.llm.cache import EMBEDDINGS_FILE, EMBEDDINGS_TABLE, ResponseCache
from memcore.llm.cache_shards import CacheLayout
from memcore.llm.embedders import CachedEmbedder, HashingEmbedder, MiniLMEmbedder, OpenAIEmbedder
from memcore.llm.hub_embedder import HubEmbedder, precheck
from memcore.llm.local_model import models_dir, resolve_gguf
from memcore.llm.local_server import LlamaCppServer
from memcore.llm.scripted import ScriptedBackbone, echo_responder
from memcore.llm.stack import Metered, build_stack
from memcore.llm.usage import UsageTracker
from memcore.registry import Registry
from memcore.stopflag import StopCheck

log = logging.getLogger(__name__)


def read_api_key(env_name: str | None, *, required: bool, what: str) -> str:
    """The key from the named environment variable; a missing required key is one clear error."""
    if not env_name:
        return "sk-no-key-required"
    value = os.environ.get(env_name, "")
    if not value:
        if required:
            raise MissingKeyError(
                f"{what} needs an API key in ${env_name}; export it (it is never written to disk) or pick another backbone."
            )
        return "sk-no-key-required"
    return value


def extra_body_of(cfg: BackboneConfig) -> dict:
    body = dict(cfg.extra_body or {})
    if cfg.thinking is not None:  # Qwen3 chat template switch, honoured by vLLM
        kwargs = dict(body.get("chat_template_kwargs") or {})
        kwargs["enable_thinking"] = bool(cfg.thinking)
        body["chat_template_kwargs"] = kwargs
    return body


@dataclass(frozen=True)
class Endpoint:
    """Where the transport sends requests. ``exit_reason`` (for a server the harness owns) returns None while the
    server runs and one line saying how it died once it has exited, so a dead server fails the next call at once."""

    base_url: str | None
    api_key: str
    exit_reason: Callable[[], str | None] | None = None


def _llamacpp(
    cfg: BackboneConfig, resources: contextlib.ExitStack, log_dir: Path, stop_requested: StopCheck | None
) -> Endpoint:
    """Start a local llama.cpp server (registered on ``resources``); its URL, the placeholder key and its exit
    check. A stop request ends a wait for the machine-wide server lock."""
    server = LlamaCppServer(
        resolve_gguf(cfg.model, cfg.gguf),
        n_ctx=cfg.n_ctx,
        threads=cfg.server_threads,
        alias=cfg.model,
        log_path=log_dir / "llama_server.log",
        exclusive_lock=(models_dir() / "llama-server.lock") if cfg.exclusive else None,
        prompt_cache_mb=cfg.prompt_cache_mb,
        stop_requested=stop_requested,
    )
    resources.enter_context(server)
    return Endpoint(server.base_url, "sk-no-key-required", server.exit_reason)


def _openai_compatible(
    cfg: BackboneConfig, resources: contextlib.ExitStack, log_dir: Path, stop_requested: StopCheck | None
) -> Endpoint:
    """A remote OpenAI-compatible endpoint: the configured URL and the key from its environment variable."""
    return Endpoint(
        cfg.base_url, read_api_key(cfg.api_key_env, required=cfg.api_key_required, what=f"backbone {cfg.name}")
    )


def _scripted(cfg: BackboneConfig, usage: UsageTracker) -> ChatBackbone:
    return ScriptedBackbone(
        echo_responder,
        latency_s=cfg.scripted_latency_s,
        usage=usage,
        model="scripted",
        max_concurrency=cfg.max_concurrency,
    )


@dataclass(frozen=True)
class BackboneKind:
    """How a ``backbone.kind`` is served: ``endpoint`` starts what it needs and returns its :class:`Endpoint` for
    the OpenAI transport; ``build`` (instead) returns a ready backbone that needs no server (``scripted``).
    ``deferred``: the endpoint starts on the first request the response cache cannot serve (or the first
    caller that asks for the connection), not when the stack is built, so a fully cached run starts nothing;
    ``precheck`` runs at build time instead, for the errors that should come before any work.
    ``serves_at_once``: the most requests the kind's server answers at once when the kind fixes it, and why
    (``backbone.max_concurrency`` is capped there); None: the server's own limit, which the preset states."""

    endpoint: Callable[[BackboneConfig, contextlib.ExitStack, Path, StopCheck | None], Endpoint] | None = None
    build: Callable[[BackboneConfig, UsageTracker], ChatBackbone] | None = None
    deferred: bool = False
    precheck: Callable[[BackboneConfig], object] | None = None
    serves_at_once: tuple[int, str] | None = None


class DeferredTransport:
    """A transport made on first use by ``start()``: ``complete`` and any attribute beyond the ones the response
    cache needs (``model``, ``name``, ``json_mode``, ``extra_body``, known from the config) start it, once, under
    a lock. ``started`` says whether that happened."""

    def __init__(self, cfg: BackboneConfig, start: Callable[[], OpenAITransport]) -> None:
        self.model = cfg.model
        self.name = cfg.name or cfg.model  # as OpenAITransport names itself
        self.json_mode = cfg.json_mode
        self.extra_body = extra_body_of(cfg)
        self._start = start
        self._transport: OpenAITransport | None = None
        self._lock = threading.Lock()

    @property
    def started(self) -> bool:
        return self._transport is not None

    def _get(self) -> OpenAITransport:
        with self._lock:
            if self._transport is None:
                log.info("backbone %s: first request the cache cannot serve; starting it", self.name)
                self._transport = self._start()
            return self._transport

    def complete(self, messages: Sequence[Message], **request: Any) -> Completion:
        return self._get().complete(messages, **request)

    def __getattr__(self, item: str) -> Any:
        if item.startswith("_"):  # not set yet (during __init__, copy, pickle)
            raise AttributeError(item)
        return getattr(self._get(), item)


BACKBONE_KINDS: Registry[BackboneKind] = Registry("backbone kind")
BACKBONE_KINDS.add(
    "llamacpp",
    BackboneKind(
        endpoint=_llamacpp,
        deferred=True,
        precheck=lambda cfg: resolve_gguf(cfg.model, cfg.gguf),
        serves_at_once=(1, "the llama.cpp server a run starts answers one request at a time"),
    ),
)
BACKBONE_KINDS.add("openai_compatible", BackboneKind(endpoint=_openai_compatible))
BACKBONE_KINDS.add("scripted", BackboneKind(build=_scripted))


def backbone_limit(cfg: BackboneConfig) -> tuple[int, str]:
    """The most requests ``cfg``'s backbone is sent at once, and why: ``max_concurrency`` (the preset's documented
    limit), capped at what its kind's server answers at once when the kind fixes it
    (:attr:`BackboneKind.serves_at_once`, whose reason is then given)."""
    fixed = BACKBONE_KINDS.get(cfg.kind).serves_at_once if cfg.kind in BACKBONE_KINDS else None
    if fixed is not None:
        return min(int(cfg.max_concurrency), fixed[0]), fixed[1]
    return int(cfg.max_concurrency), f"backbone {cfg.name}'s max_concurrency"


def build_backbone(
    cfg: BackboneConfig,
    *,
    cache: ResponseCache | None,
    usage: UsageTracker,
    resources: contextlib.ExitStack,
    log_dir: Path,
    stop_requested: StopCheck | None = None,
) -> Metered:
    """Start what the backbone needs (a llama.cpp server for ``llamacpp``: on its first request the cache cannot
    serve, see :class:`BackboneKind`), check it answers, return its stack: transport → response cache (``cache``;
    never for ``scripted``) → usage metering into ``usage``. The server is registered on ``resources`` and stops
    when the run ends. The caller adds the run's request limiter on top."""
    if cfg.kind not in BACKBONE_KINDS:
        raise ConfigError(BACKBONE_KINDS.unknown(cfg.kind))
    kind = BACKBONE_KINDS.get(cfg.kind)
    if kind.build is not None:
        return kind.build(cfg, usage)  # type: ignore[return-value]
    endpoint = kind.endpoint
    assert endpoint is not None

    def start() -> OpenAITransport:
        where = endpoint(cfg, resources, log_dir, stop_requested)
        transport = OpenAITransport(
            model=cfg.model,
            base_url=where.base_url,
            api_key=where.api_key,
            exit_reason=where.exit_reason,
            name=cfg.name,
            extra_body=extra_body_of(cfg),
            json_mode=cfg.json_mode,
            max_concurrency=backbone_limit(cfg)[0],
            timeout_s=cfg.timeout_s,
            max_attempts=cfg.max_attempts,
            backoff_cap_s=cfg.backoff_cap_s,
            usage=usage,
        )
        transport.check_reachable()
        return transport

    if kind.precheck is not None:
        kind.precheck(cfg)
    if kind.deferred and cache is not None:
        return build_stack(DeferredTransport(cfg, start), tracker=usage, cache=cache)
    return build_stack(start(), tracker=usage, cache=cache)


def _minilm(cfg: EmbedderConfig) -> Embedder:
    return MiniLMEmbedder(batch_size=cfg.batch_size, threads=cfg.threads or os.cpu_count() or 1)


def _openai_embedder(cfg: EmbedderConfig) -> Embedder:
    key = read_api_key(cfg.api_key_env, required=True, what=f"embedder {cfg.name}")
    return OpenAIEmbedder(cfg.model, cfg.base_url, key, cfg.dim)


def _hashing(cfg: EmbedderConfig) -> Embedder:
    return HashingEmbedder(cfg.dim)


def _hub(cfg: EmbedderConfig) -> Embedder:
    return HubEmbedder(cfg.model, cfg.query_model, cfg.pooling, cfg.batch_size)


def precheck_embedder(cfg: EmbedderConfig) -> None:
    """Before any work: a hub embedder's weights must be in the local cache or the hub reachable (ConfigError)."""
    if cfg.kind == "hub":
        precheck(cfg.name, [m for m in (cfg.model, cfg.query_model) if m])


#: ``embedder.kind`` → the function that builds the (uncached) embedder from its config.
EMBEDDER_KINDS: Registry[Callable[[EmbedderConfig], Embedder]] = Registry("embedder kind")
EMBEDDER_KINDS.add("minilm", _minilm)
EMBEDDER_KINDS.add("openai", _openai_embedder)
EMBEDDER_KINDS.add("hashing", _hashing)
EMBEDDER_KINDS.add("hub", _hub)


def build_embedder(cfg: EmbedderConfig, *, cache: CacheLayout | None) -> CachedEmbedder:
    """The configured embedder behind its cache: the run's ``embeddings.sqlite`` as ``cache`` lays it out (a
    shared file or this job's shard), or memory only when ``cache`` is None."""
    if cfg.kind not in EMBEDDER_KINDS:
        raise ConfigError(EMBEDDER_KINDS.unknown(cfg.kind))
    store = cache.open(EMBEDDINGS_FILE, EMBEDDINGS_TABLE) if cache is not None else None
    return CachedEmbedder(EMBEDDER_KINDS.get(cfg.kind)(cfg), store)

"""Build the chat backbone stack and the embedder a run's config asks for."""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

from memcore.config import BackboneConfig, ConfigError, EmbedderConfig
from memcore.llm.backbone import MissingKeyError, OpenAITransport
from memcore.llm.cache import ResponseCache
from memcore.llm.embedders import CachedEmbedder, HashingEmbedder, MiniLMEmbedder, OpenAIEmbedder
from memcore.llm.local_model import models_dir, resolve_gguf
from memcore.llm.local_server import LlamaCppServer
from memcore.llm.stack import Metered, build_stack
from memcore.llm.usage import UsageTracker
from memcore.registry import unknown_name_message

log = logging.getLogger(__name__)

BACKBONE_KINDS = ("llamacpp", "openai_compatible", "scripted")
EMBEDDER_KINDS = ("minilm", "openai", "hashing")


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


def build_backbone(
    cfg: BackboneConfig,
    *,
    cache: ResponseCache | None,
    usage: UsageTracker,
    resources: contextlib.ExitStack,
    log_dir: Path,
) -> Metered:
    """Start what the backbone needs (a llama.cpp server for ``llamacpp``), check it answers, return its stack:
    transport → response cache (``cache``; never for ``scripted``) → usage metering into ``usage``. The server is
    registered on ``resources`` and stops when the run ends. The caller adds the run's request limiter on top."""
    if cfg.kind == "llamacpp":
        gguf = resolve_gguf(cfg.model, cfg.gguf)
        server = LlamaCppServer(
            gguf,
            n_ctx=cfg.n_ctx,
            threads=cfg.server_threads,
            alias=cfg.model,
            log_path=log_dir / "llama_server.log",
            exclusive_lock=(models_dir() / "llama-server.lock") if cfg.exclusive else None,
            prompt_cache_mb=cfg.prompt_cache_mb,
        )
        resources.enter_context(server)
        base_url, api_key = server.base_url, "sk-no-key-required"
    elif cfg.kind == "openai_compatible":
        base_url = cfg.base_url
        api_key = read_api_key(cfg.api_key_env, required=cfg.api_key_required, what=f"backbone {cfg.name}")
    elif cfg.kind == "scripted":
        from memcore.llm.scripted import ScriptedBackbone, echo_responder

        return ScriptedBackbone(echo_responder, latency_s=cfg.scripted_latency_s, usage=usage, model="scripted")
    else:
        raise ConfigError(unknown_name_message("backbone kind", cfg.kind, list(BACKBONE_KINDS)))
    transport = OpenAITransport(
        model=cfg.model,
        base_url=base_url,
        api_key=api_key,
        name=cfg.name,
        extra_body=extra_body_of(cfg),
        json_mode=cfg.json_mode,
        max_concurrency=cfg.max_concurrency,
        timeout_s=cfg.timeout_s,
        max_attempts=cfg.max_attempts,
        backoff_cap_s=cfg.backoff_cap_s,
        usage=usage,
    )
    transport.check_reachable()
    return build_stack(transport, tracker=usage, cache=cache)


def build_embedder(cfg: EmbedderConfig, *, cache_path: Path | None) -> CachedEmbedder:
    if cfg.kind == "minilm":
        inner: object = MiniLMEmbedder(batch_size=cfg.batch_size)
    elif cfg.kind == "openai":
        key = read_api_key(cfg.api_key_env, required=True, what=f"embedder {cfg.name}")
        inner = OpenAIEmbedder(cfg.model, cfg.base_url, key, cfg.dim)
    elif cfg.kind == "hashing":
        inner = HashingEmbedder(cfg.dim)
    else:
        raise ConfigError(unknown_name_message("embedder kind", cfg.kind, list(EMBEDDER_KINDS)))
    return CachedEmbedder(inner, cache_path)

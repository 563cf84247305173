"""The run's shared resources, each started on first use: the chat backbone (response cache, usage tracking,
one bound on requests in flight), the embedder, the answerer and the LLM judge. A run that needs no LLM never
starts a server."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from memcore.config import BackboneConfig, EmbedderConfig, typed_section
from memcore.interfaces import LazyResource
from memcore.llm.cache import RESPONSE_CACHE_FILE, RESPONSE_TABLE, ResponseCache
from memcore.llm.cache_shards import CacheLayout, resolve_layout
from memcore.llm.factory import build_backbone, build_embedder
from memcore.llm.limiter import RequestLimiter
from memcore.llm.usage import UsageTracker
from memcore.methods import get_method
from memcore.stopflag import StopCheck

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunResources:
    """Lazily built resources of one run; ``.get()`` builds, ``.built`` says whether it was."""

    backbone: LazyResource
    embedder: LazyResource
    answerer: LazyResource
    judge: LazyResource


def cache_layout(cfg: DictConfig) -> CacheLayout:
    """How ``cfg``'s run lays out ``paths.cache`` (``cache_mode``, :func:`memcore.llm.cache_shards.resolve_layout`);
    logs which layout and why. Raises ConfigError for ``cache_mode=shared`` on a network file system."""
    layout = resolve_layout(Path(cfg.paths.cache), str(cfg.get("cache_mode", "auto")))
    log.info("%s", layout.describe())
    return layout


def open_resources(
    cfg: DictConfig,
    run_dir: Path,
    usage: UsageTracker,
    stack: contextlib.ExitStack,
    *,
    backbone_override: Any = None,
    embedder_override: Any = None,
    stop_requested: StopCheck | None = None,
    layout: CacheLayout | None = None,
    requests: int | None = None,
) -> RunResources:
    """The resources of ``cfg``'s run; servers and clients they start are closed with ``stack``. Overrides
    replace the configured backbone (still behind the request limiter) or embedder (tests, benchmarks).
    ``stop_requested`` (the run's stop flag) ends a server start that queues for the machine-wide lock.
    ``layout``: the run's cache layout when the caller resolved it already (else :func:`cache_layout`).
    ``requests``: the bound on backbone requests in flight (the run's plan, :mod:`memcore.pipeline.concurrency`);
    None: ``concurrency``."""
    layout = layout if layout is not None else cache_layout(cfg)
    cache = ResponseCache(layout.open(RESPONSE_CACHE_FILE, RESPONSE_TABLE)) if cfg.cache_llm else None
    limit = int(cfg.concurrency) if requests is None else requests
    backbone = LazyResource(
        lambda: _backbone(cfg, run_dir, usage, cache, stack, backbone_override, stop_requested, limit)
    )
    embedder = LazyResource(lambda: embedder_override if embedder_override is not None else _embedder(cfg, layout))
    answerer = LazyResource(lambda: _answerer(cfg, backbone.get()))
    judge = LazyResource(lambda: _judge(cfg, run_dir, usage, backbone, cache, stack, stop_requested))
    return RunResources(backbone, embedder, answerer, judge)


def _backbone(
    cfg: DictConfig,
    run_dir: Path,
    usage: UsageTracker,
    cache: ResponseCache | None,
    stack: contextlib.ExitStack,
    override: Any,
    stop_requested: StopCheck | None,
    limit: int,
) -> Any:
    """The run's backbone behind one bound: at most ``limit`` requests in flight, none started once the run is
    stopping."""
    if override is not None:
        return RequestLimiter(override, limit, stop_requested)
    bcfg = typed_section(cfg.backbone, BackboneConfig)  # plain when the config was read back (memcore-rescore)
    client = build_backbone(
        bcfg, cache=cache, usage=usage, resources=stack, log_dir=run_dir, stop_requested=stop_requested
    )
    return RequestLimiter(client, limit, stop_requested)


def _embedder(cfg: DictConfig, layout: CacheLayout) -> Any:
    ecfg = typed_section(cfg.embedder, EmbedderConfig)
    return build_embedder(ecfg, cache=layout)


def _judge(
    cfg: DictConfig,
    run_dir: Path,
    usage: UsageTracker,
    backbone: LazyResource,
    cache: ResponseCache | None,
    stack: contextlib.ExitStack,
    stop_requested: StopCheck | None,
) -> Any:
    from memcore.eval.judge import build_judge  # heavy (the evaluation package): loaded when a run is judged

    return build_judge(
        cfg, backbone, cache=cache, usage=usage, resources=stack, log_dir=run_dir, stop_requested=stop_requested
    )


def _answerer(cfg: DictConfig, backbone: Any) -> Any:
    """The run's answerer: the protocol's prompt and sampling (``protocol.*``), or under
    ``eval.answer_prompt=upstream`` the method's upstream answer prompt with upstream's sampling."""
    from memcore.eval.answerer import Answerer  # heavy (the evaluation package): loaded when a run answers

    upstream = run_upstream_answer(cfg)
    if upstream is not None:
        return Answerer(backbone, upstream.spec, seed=int(cfg.seed))
    from memcore.eval.protocols import get_protocol  # the evaluation package, as above: when a run answers

    p = cfg.protocol
    protocol = get_protocol(str(p.name))
    # the protocol's own sampling keys (LoCoMo's temperature_adversarial) from protocol.<key>
    own = {k: float(p[k]) for k in protocol.sampling_defaults if k not in ("temperature_default", "max_tokens")}
    return Answerer(
        backbone,
        protocol,
        seed=int(cfg.seed),
        temperature_default=float(p.temperature),
        max_tokens=None if p.max_tokens is None else int(p.max_tokens),
        **own,
    )


def run_upstream_answer(cfg: DictConfig) -> Any:
    """The :class:`~memcore.eval.upstream.UpstreamAnswer` the run answers with (None: the harness's prompt, i.e.
    ``eval.answer_prompt=harness`` or a method without an upstream prompt)."""
    from memcore.eval.upstream import upstream_answer  # heavy (the evaluation package): at the first call only

    if str(cfg.eval.get("answer_prompt", "harness")) != "upstream":
        return None
    return upstream_answer(get_method(str(cfg.method.name)).upstream_answer)

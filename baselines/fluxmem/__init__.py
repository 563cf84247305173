"""FluxMem (memory as continuously evolving connectivity) adapted to LoCoMo; see README.md here.

``SPEC`` is the full method (upstream's chunk units); ``SPEC_FACTS`` the variant whose units are LLM-extracted
atomic facts (configs/method/fluxmem-facts.yaml); ``SPEC_NO_REFINE`` / ``SPEC_NO_CONSOLIDATE`` are the variants
without Stage 2 / Stage 3 (configs/method/fluxmem-no-*.yaml). A variant's switch is enforced: setting it back
on is a configuration error rather than a mislabelled run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from baselines.fluxmem.config import FluxMemConfig
from baselines.fluxmem.system import FluxMem
from memcore.config import ConfigError
from memcore.interfaces import MethodContext, MethodSpec
from memcore.schema import bad_value, method_validator

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {
    "fluxmem": "baselines.fluxmem:SPEC",
    "fluxmem-facts": "baselines.fluxmem:SPEC_FACTS",
    "fluxmem-no-refine": "baselines.fluxmem:SPEC_NO_REFINE",
    "fluxmem-no-consolidate": "baselines.fluxmem:SPEC_NO_CONSOLIDATE",
}


def _factory(name: str, forced: dict[str, Any]) -> Callable[[MethodContext], FluxMem]:
    def factory(ctx: MethodContext) -> FluxMem:
        raw = dict(ctx.config)
        for key, value in forced.items():
            if key in raw and raw[key] != value:
                raise ConfigError(f"method {name} runs with {key}={value}; use method=fluxmem to set {key}={raw[key]}.")
            raw[key] = value
        cfg = FluxMemConfig.from_dict(raw)
        return FluxMem(cfg, backbone=lambda: ctx.backbone, embedder=lambda: ctx.embedder, seed=ctx.seed)

    return factory


def _pinned(forced: dict[str, Any]) -> Callable[[str, dict[str, Any], dict[str, Any]], None]:
    """A variant's pinned switches may not be set back (that run would be mislabelled)."""

    def check(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
        for key, value in forced.items():
            if key in cfg and cfg[key] != value:
                allowed = f"{str(value).lower()} (use method=fluxmem to change it)"
                raise bad_value(f"method.{key}", cfg[key], allowed, f"method {name}")

    return check


def _spec(name: str, forced: dict[str, Any], description: str) -> MethodSpec:
    return MethodSpec(
        name=name,
        factory=_factory(name, forced),
        ingest_uses_llm=lambda c, a: (forced.get("unit") or c.get("unit", "chunk")) == "fact",
        config_schema=(FluxMemConfig,),
        validate_config=method_validator(
            FluxMemConfig,
            before=_pinned(forced),
            build=lambda name, cfg: FluxMemConfig.from_dict({**cfg, **forced}),
        ),
        retrieve_uses_llm=lambda c, a: True,
        sequential_qa=True,
        description=description,
    )


SPEC = _spec(
    "fluxmem", {}, "FluxMem: three-layer evolving memory graph, hybrid relevance, refinement (T rounds), consolidation"
)
SPEC_FACTS = _spec(
    "fluxmem-facts",
    {"unit": "fact"},
    "FluxMem with atomic-fact units (one LLM call per turn) instead of upstream's chunks",
)
SPEC_NO_REFINE = _spec("fluxmem-no-refine", {"refine": False}, "FluxMem without Stage 2 (feedback-driven refinement)")
SPEC_NO_CONSOLIDATE = _spec(
    "fluxmem-no-consolidate", {"consolidate": False}, "FluxMem without Stage 3 (consolidation into skills)"
)

__all__ = ["SPEC", "SPEC_FACTS", "SPEC_NO_CONSOLIDATE", "SPEC_NO_REFINE", "FluxMem", "FluxMemConfig"]

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
from memcore.interfaces import BadConfig, MethodContext, MethodSpec
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


#: Printed under a table with a FluxMem row: which of its numbers is the headline its paper reports.
TABLE_NOTE = (
    "FluxMem: its paper reports LoCoMo over categories 1-4 (adversarial left out); its headline here is the"
    " cat. 1-4 column (F1 cat. 1-4, and J cat. 1-4 when judged), not the paper's overall over categories 1-5."
)


def _spec(
    name: str,
    forced: dict[str, Any],
    description: str,
    bad_configs: tuple[BadConfig, ...],
    sim_run_kinds: tuple[str, ...] = (),
) -> MethodSpec:
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
        table_notes=(TABLE_NOTE,),
        sim_replies="baselines.fluxmem.sim:REPLIES",
        sim_run_kinds=sim_run_kinds,
        bad_configs=bad_configs,
    )


SPEC = _spec(
    "fluxmem",
    {},
    "FluxMem: three-layer evolving memory graph, hybrid relevance, refinement (T rounds), consolidation",
    (
        (("method.T=-1",), ("method.T=-1", ">= 0")),
        (("method.refine=maybe",), ("method.refine='maybe'", "true or false")),
        (("method.unit=sentence",), ("method.unit='sentence'", "chunk, fact, turn")),
        (("method.verify_mode=binary",), ("method.verify_mode='binary'", "graded, listed")),
    ),
    sim_run_kinds=("fluxmem_verify_graded", "fluxmem_check"),
)
SPEC_FACTS = _spec(
    "fluxmem-facts",
    {"unit": "fact"},
    "FluxMem with atomic-fact units (one LLM call per turn) instead of upstream's chunks",
    ((("method.unit=chunk",), ("method.unit='chunk'", "method=fluxmem")),),
    sim_run_kinds=("fluxmem_facts", "fluxmem_verify_graded", "fluxmem_check"),
)
SPEC_NO_REFINE = _spec(
    "fluxmem-no-refine",
    {"refine": False},
    "FluxMem without Stage 2 (feedback-driven refinement)",
    ((("method.refine=true",), ("method.refine=True", "method=fluxmem")),),
)
SPEC_NO_CONSOLIDATE = _spec(
    "fluxmem-no-consolidate",
    {"consolidate": False},
    "FluxMem without Stage 3 (consolidation into skills)",
    ((("method.consolidate=true",), ("method.consolidate=True", "method=fluxmem")),),
)

__all__ = ["SPEC", "SPEC_FACTS", "SPEC_NO_CONSOLIDATE", "SPEC_NO_REFINE", "FluxMem", "FluxMemConfig"]

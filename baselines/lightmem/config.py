"""LightMem's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

COMPRESSORS = ("idf", "none")
PROVENANCE = ("segment", "source")


@dataclass(frozen=True)
class LightMemConfig:
    """Defaults follow LightMem's LoCoMo script (experiments/locomo/add_locomo.py + search_locomo.py)
    where they apply; see baselines/lightmem/README.md for each source and every deviation."""

    format_version: int = 1
    # sensory memory: pre-compression stand-in for LLMLingua-2 (rate = share of words kept)
    compressor: str = "idf"
    compress_rate: float = 0.6
    sensory_buffer_tokens: int = 512
    # topic segmentation: adjacent-turn cosine below a threshold that rises until a boundary appears
    sim_threshold_start: float = 0.2
    sim_threshold_max: float = 0.5
    sim_threshold_step: float = 0.05
    boundary_tolerance: int = 3
    # short-term memory: segments are batched into one extraction call per this many tokens
    stm_buffer_tokens: int = 512
    extract_max_tokens: int = 2048
    # offline ("sleep-time") consolidation at finalize
    consolidate: bool = True
    queue_top_k: int = 20
    queue_keep: int = 10
    update_threshold: float = 0.9
    update_max_tokens: int = 384
    temperature: float = 0.0
    # retrieval (does not change the built memory)
    top_k: int = 60
    provenance: str = "segment"

    def __post_init__(self) -> None:
        if self.compressor not in COMPRESSORS:
            raise ValueError(f"lightmem: compressor must be one of {COMPRESSORS}, got {self.compressor!r}")
        if self.provenance not in PROVENANCE:
            raise ValueError(f"lightmem: provenance must be one of {PROVENANCE}, got {self.provenance!r}")
        if not 0.0 < self.compress_rate <= 1.0:
            raise ValueError(f"lightmem: compress_rate must be in (0, 1], got {self.compress_rate}")
        if self.sim_threshold_step <= 0 or self.sim_threshold_start > self.sim_threshold_max:
            raise ValueError("lightmem: need sim_threshold_step > 0 and sim_threshold_start <= sim_threshold_max")
        for key in (
            "sensory_buffer_tokens",
            "stm_buffer_tokens",
            "extract_max_tokens",
            "queue_top_k",
            "queue_keep",
            "top_k",
        ):
            if getattr(self, key) < 1:
                raise ValueError(f"lightmem: {key} must be >= 1, got {getattr(self, key)}")
        if self.boundary_tolerance < 0:
            raise ValueError(f"lightmem: boundary_tolerance must be >= 0, got {self.boundary_tolerance}")


#: Config keys that change the built memory (snapshot key); ``top_k`` and ``provenance`` only
#: change retrieval, so runs that differ in them reuse one snapshot.
CONSTRUCTION_KEYS: tuple[str, ...] = tuple(
    f.name for f in dataclasses.fields(LightMemConfig) if f.name not in ("top_k", "provenance")
)


def config_from_dict(raw: dict[str, Any]) -> LightMemConfig:
    """Validate the Hydra method dict (``name`` is ignored); unknown keys or wrong types are an error."""
    return build_config(LightMemConfig, raw, "lightmem")


def build_config(cls: type, raw: dict[str, Any], method: str) -> Any:
    """Build frozen dataclass ``cls`` from ``raw``: unknown keys and values of the wrong type are one
    clear ``ValueError`` naming the key."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = {k: v for k, v in raw.items() if k != "name"}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(
            f"{method}: unknown config key(s) {', '.join(unknown)}. Known: {', '.join(sorted(fields))} "
            f"(see configs/method/{method}.yaml)."
        )
    for key, value in values.items():
        default = fields[key].default
        ok = True
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, int):
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif isinstance(default, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        elif isinstance(default, str):
            ok = isinstance(value, str)
        if not ok:
            raise ValueError(f"{method}.{key} must be of type {type(default).__name__}, got {value!r}")
        values[key] = value
    return cls(**values)

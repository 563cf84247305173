"""LightMem's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from memcore.schema import POS, TEMPERATURE, Rule, build_keys, check_rules, knob

COMPRESSORS = ("idf", "none")
PROVENANCE = ("segment", "source")


@dataclass(frozen=True)
class LightMemConfig:
    """Defaults follow LightMem's LoCoMo script (experiments/locomo/add_locomo.py + search_locomo.py)
    where they apply; see baselines/lightmem/README.md for each source and every deviation."""

    format_version: int = knob(1, build=True, rule=POS)
    # sensory memory: pre-compression stand-in for LLMLingua-2 (rate = share of words kept)
    compressor: str = knob("idf", build=True, rule=Rule(choices=COMPRESSORS))
    compress_rate: float = knob(0.6, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    sensory_buffer_tokens: int = knob(512, build=True, rule=POS)
    # topic segmentation: adjacent-turn cosine below a threshold that rises until a boundary appears
    sim_threshold_start: float = knob(0.2, build=True, rule=Rule(lo=-1, hi=1))
    sim_threshold_max: float = knob(0.5, build=True, rule=Rule(lo=-1, hi=1))
    sim_threshold_step: float = knob(0.05, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    boundary_tolerance: int = knob(3, build=True)
    # short-term memory: segments are batched into one extraction call per this many tokens
    stm_buffer_tokens: int = knob(512, build=True, rule=POS)
    extract_max_tokens: int = knob(2048, build=True, rule=POS)
    # offline ("sleep-time") consolidation at finalize
    consolidate: bool = knob(True, build=True)
    queue_top_k: int = knob(20, build=True, rule=POS)
    queue_keep: int = knob(10, build=True, rule=POS)
    update_threshold: float = knob(0.9, build=True, rule=Rule(lo=-1, hi=1))
    update_max_tokens: int = knob(384, build=True, rule=POS)
    temperature: float = knob(0.0, build=True, rule=TEMPERATURE)
    # retrieval (does not change the built memory)
    top_k: int = knob(60, rule=POS)
    provenance: str = knob("source", rule=Rule(choices=PROVENANCE))

    def __post_init__(self) -> None:
        check_rules(self, "lightmem")
        if self.sim_threshold_start > self.sim_threshold_max:
            raise ValueError("lightmem: need sim_threshold_step > 0 and sim_threshold_start <= sim_threshold_max")


#: Config keys that change the built memory (marked ``build``; snapshot key); ``top_k`` and ``provenance`` only
#: change retrieval, so runs that differ in them reuse one snapshot.
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(LightMemConfig)


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

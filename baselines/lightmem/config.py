"""LightMem's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any

from memcore.schema import POS, TEMPERATURE, Rule, build_keys, check_rules, knob

COMPRESSORS = ("idf", "llmlingua2", "none")
PROVENANCE = ("segment", "source")

#: The published gpt-4o-mini settings LightMem(th, r) of ``experiments/locomo/readme.md`` (zjunlp/LightMem
#: 8fc9a91): th = the short-term memory buffer in tokens (``ShortMemBufferManager.max_tokens``: segments
#: collect until one more would pass it, then one extraction call), r = the LLMLingua-2 compression rate
#: (``compress_config.rate``: the share of tokens kept). ``add_locomo.py`` itself ships 512 and 0.6.
PRESETS: dict[str, tuple[int, float]] = {
    "512-0.7": (512, 0.7),
    "768-0.7": (768, 0.7),
    "768-0.8": (768, 0.8),
}


@dataclass(frozen=True)
class LightMemConfig:
    """Defaults follow LightMem's LoCoMo script (experiments/locomo/add_locomo.py + search_locomo.py)
    where they apply; see baselines/lightmem/README.md for each source and every deviation."""

    format_version: int = knob(4, build=True, rule=POS)  # 4: source ids and stamps per add_memory call
    # published setting (STM buffer tokens, compression rate); compress_rate / stm_buffer_tokens override it
    preset: str = knob("768-0.8", build=True, rule=Rule(choices=tuple(PRESETS)))
    # sensory memory: LLMLingua-2 (llmlingua2, needs the llmlingua extra and its model) or the offline idf
    # stand-in (idf: rate = share of words kept) or none
    compressor: str = knob("idf", build=True, rule=Rule(choices=COMPRESSORS))
    compress_rate: float | None = knob(None, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    llmlingua_model: str = knob("microsoft/llmlingua-2-bert-base-multilingual-cased-meetingbank", build=True)
    sensory_buffer_tokens: int = knob(512, build=True, rule=POS)
    # topic segmentation: adjacent-turn cosine below a threshold that rises until a boundary appears
    sim_threshold_start: float = knob(0.2, build=True, rule=Rule(lo=-1, hi=1))
    sim_threshold_max: float = knob(0.5, build=True, rule=Rule(lo=-1, hi=1))
    sim_threshold_step: float = knob(0.05, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    boundary_tolerance: int = knob(3, build=True)
    # short-term memory: segments are batched into one extraction call per this many tokens
    stm_buffer_tokens: int | None = knob(None, build=True, rule=POS)
    # reply budget of one extraction call (upstream 16,000), capped per call by backbone.prompt_token_cap
    extract_max_tokens: int = knob(16000, build=True, rule=POS)
    # offline ("sleep-time") consolidation at finalize
    consolidate: bool = knob(True, build=True)
    queue_top_k: int = knob(20, build=True, rule=POS)
    queue_keep: int = knob(10, build=True, rule=POS)
    update_threshold: float = knob(0.9, build=True, rule=Rule(lo=-1, hi=1))
    update_max_tokens: int = knob(384, build=True, rule=POS)
    # sampling of every LightMem call (upstream MemoryManagerConfig defaults); seeded when temperature > 0
    temperature: float = knob(0.1, build=True, rule=TEMPERATURE)
    top_p: float = knob(0.1, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    # retrieval (does not change the built memory)
    top_k: int = knob(60, rule=POS)
    provenance: str = knob("source", rule=Rule(choices=PROVENANCE))

    def __post_init__(self) -> None:
        check_rules(self, "lightmem")
        if self.sim_threshold_start > self.sim_threshold_max:
            raise ValueError("lightmem: need sim_threshold_step > 0 and sim_threshold_start <= sim_threshold_max")

    @property
    def rate(self) -> float:
        """The compression rate in effect: ``compress_rate`` when set, else the preset's."""
        return PRESETS[self.preset][1] if self.compress_rate is None else float(self.compress_rate)

    @property
    def stm_tokens(self) -> int:
        """The short-term buffer in effect: ``stm_buffer_tokens`` when set, else the preset's."""
        return PRESETS[self.preset][0] if self.stm_buffer_tokens is None else int(self.stm_buffer_tokens)

    def setting(self) -> str:
        """``LightMem(768, 0.8)``-style label of the setting in effect (``custom`` when an override leaves
        the preset) and the compressor that ran, e.g. ``768-0.8, idf``."""
        pair = (self.stm_tokens, self.rate)
        name = next((k for k, v in PRESETS.items() if v == pair), f"custom {pair[0]}-{pair[1]:g}")
        return f"{name}, {self.compressor}"


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
    hints = typing.get_type_hints(cls)
    values = {k: v for k, v in raw.items() if k != "name"}
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ValueError(
            f"{method}: unknown config key(s) {', '.join(unknown)}. Known: {', '.join(sorted(fields))} "
            f"(see configs/method/{method}.yaml)."
        )
    for key, value in values.items():
        default = fields[key].default
        if default is None and value is not None:  # an optional knob: check against its type, e.g. int | None
            kinds = [a for a in typing.get_args(hints[key]) if a in (bool, int, float, str)]
            default = kinds[0]() if kinds else None
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

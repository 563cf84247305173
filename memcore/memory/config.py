"""MemCoRe's knobs and ablation switches, validated from the plain dicts the runner hands over."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Literal

from memcore.config import ConfigError as ConfigError  # the run's one ConfigError, re-exported
from memcore.memory.notes import INDEX_KINDS

JUDGES = ("llm", "embedding")
EVIDENCE_TEXT = ("raw", "context", "both")
GATE_FORMS = ("scale", "binary")
SWITCHES = ("update", "merge", "link", "denoise", "topic", "keyword", "neighbor", "ier")
CONSTRUCTION_SWITCHES = ("update", "merge", "link", "denoise")


@dataclass(frozen=True)
class MemCoReConfig:
    """Every MemCoRe knob. Construction knobs (``CONSTRUCTION_KEYS``) change the built memory; the
    rest only change retrieval and therefore reuse a snapshot."""

    name: str = "memcore"
    judge: Literal["llm", "embedding"] = "llm"
    format_version: int = 2
    # gate
    tau_merge: float = 0.7
    tau_link: float = 0.5
    candidates: int = 5
    strong_link: float = 0.6
    merge_max_turns: int = 6
    merge_min_cosine: float = 0.0
    gate_form: Literal["scale", "binary"] = "scale"
    # ingestion
    context_turns: int = 2
    max_keywords: int = 6
    cheap_keyword_ngram: int = 3
    cheap_keyword_unigrams: int = 0
    # keyword graph and topics
    hub_max_fraction: float = 0.1
    topic_min: int = 20
    topic_max: int = 80
    leiden_resolution: float = 1.0
    # retrieval
    k_topic: int = 3
    k_key: int = 10
    k_final: int = 20
    rrf_k: int = 60
    channel_depth: int = 50
    keyword_min_sim: float = 0.5
    neighbor_weight: float = 1.0
    topic_weight: float = 1.0
    ier_max_rounds: int = 3
    ier_max_subqueries: int = 3
    ier_subquery_weight: float = 1.0
    ier_reserved: int = 2
    ier_judge_tokens: int = 3000
    evidence_text: Literal["raw", "context", "both"] = "both"
    ann_threshold: int = 200_000
    index: Literal["auto", "flat", "ivf", "hnsw"] = "auto"
    # LLM sampling (deterministic by default so the response cache applies)
    temperature: float = 0.0
    max_tokens: int = 384

    def __post_init__(self) -> None:
        if self.judge not in JUDGES:
            raise ConfigError(f"method.judge must be one of {JUDGES}, got {self.judge!r}")
        if self.index not in INDEX_KINDS:
            raise ConfigError(f"method.index must be one of {INDEX_KINDS}, got {self.index!r}")
        if self.gate_form not in GATE_FORMS:
            raise ConfigError(f"method.gate_form must be one of {GATE_FORMS}, got {self.gate_form!r}")
        if self.evidence_text not in EVIDENCE_TEXT:
            raise ConfigError(f"method.evidence_text must be one of {EVIDENCE_TEXT}, got {self.evidence_text!r}")
        if not 0.0 <= self.tau_link <= self.tau_merge <= 1.0:
            raise ConfigError(
                f"need 0 <= tau_link <= tau_merge <= 1, got tau_link={self.tau_link} tau_merge={self.tau_merge}"
            )
        for key in ("strong_link", "merge_min_cosine", "keyword_min_sim", "hub_max_fraction"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ConfigError(f"method.{key} must be in [0, 1], got {getattr(self, key)}")
        for key in ("neighbor_weight", "topic_weight", "ier_subquery_weight", "temperature"):
            if getattr(self, key) < 0.0:
                raise ConfigError(f"method.{key} must be >= 0, got {getattr(self, key)}")
        if not 1 <= self.topic_min <= self.topic_max:
            raise ConfigError(f"need 1 <= topic_min <= topic_max, got {self.topic_min}, {self.topic_max}")
        for key in (
            "candidates",
            "k_topic",
            "k_key",
            "k_final",
            "rrf_k",
            "channel_depth",
            "ier_max_rounds",
            "merge_max_turns",
            "ier_judge_tokens",
            "max_tokens",
        ):
            if getattr(self, key) < 1:
                raise ConfigError(f"method.{key} must be >= 1, got {getattr(self, key)}")
        for key in ("ier_max_subqueries", "ier_reserved", "context_turns", "cheap_keyword_unigrams"):
            if getattr(self, key) < 0:
                raise ConfigError(f"method.{key} must be >= 0, got {getattr(self, key)}")

    @property
    def uses_llm(self) -> bool:
        return self.judge == "llm"

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> MemCoReConfig:
        """Validate a method config dict; unknown keys and wrong types are one clear error."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(f"unknown MemCoRe config key(s) {unknown}; known keys: {sorted(known)}")
        values: dict[str, Any] = {}
        for key, value in raw.items():
            default = known[key].default
            if isinstance(default, bool) or default is None:
                values[key] = value
            elif isinstance(default, int) and not isinstance(default, bool):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigError(f"method.{key} must be an integer, got {value!r}")
                values[key] = value
            elif isinstance(default, float):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise ConfigError(f"method.{key} must be a number, got {value!r}")
                values[key] = float(value)
            else:
                if not isinstance(value, str):
                    raise ConfigError(f"method.{key} must be a string, got {value!r}")
                values[key] = value
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


#: Config keys that change the built memory (they form the snapshot key together with the
#: construction switches); everything else only affects retrieval.
CONSTRUCTION_KEYS: tuple[str, ...] = (
    "judge",
    "format_version",
    "tau_merge",
    "tau_link",
    "candidates",
    "strong_link",
    "merge_max_turns",
    "merge_min_cosine",
    "gate_form",
    "context_turns",
    "max_keywords",
    "cheap_keyword_ngram",
    "cheap_keyword_unigrams",
    "hub_max_fraction",
    "topic_min",
    "topic_max",
    "leiden_resolution",
    "temperature",
    "max_tokens",
)


@dataclass(frozen=True)
class Switches:
    """The eight ablation switches of DESIGN §4 (all true = the full model)."""

    name: str = "none"
    update: bool = True
    merge: bool = True
    link: bool = True
    denoise: bool = True
    topic: bool = True
    keyword: bool = True
    neighbor: bool = True
    ier: bool = True

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Switches:
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"name", *SWITCHES})
        if unknown:
            raise ConfigError(f"unknown ablation key(s) {unknown}; known: name, {', '.join(SWITCHES)}")
        for key in SWITCHES:
            if key in raw and not isinstance(raw[key], bool):
                raise ConfigError(f"ablation.{key} must be true or false, got {raw[key]!r}")
        if not raw.get("topic", True) and not raw.get("keyword", True):
            raise ConfigError(
                "ablation turns off both retrieval channels (topic and keyword); nothing could be retrieved"
            )
        return cls(**raw)

    def construction(self) -> dict[str, bool]:
        return {k: getattr(self, k) for k in CONSTRUCTION_SWITCHES}

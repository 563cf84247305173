"""MemCoRe's knobs (and, re-exported from :mod:`memcore.memory.ablations`, its ablation switches), validated from
the plain dicts the runner hands over."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from typing import Any, Literal

from memcore.errors import ConfigError as ConfigError  # the run's one ConfigError, re-exported
from memcore.memory.ablations import ABLATIONS as ABLATIONS  # re-exported: MemCoRe's switches live there
from memcore.memory.ablations import CONSTRUCTION_SWITCHES as CONSTRUCTION_SWITCHES
from memcore.memory.ablations import SWITCHES as SWITCHES
from memcore.memory.ablations import Switches as Switches
from memcore.memory.notes import INDEX_KINDS
from memcore.packing.knobs import TurnPackingKnobs
from memcore.schema import POS, TEMPERATURE, UNIT, Rule, build_keys, check_rules, knob

JUDGES = ("llm", "embedding")
EVIDENCE_TEXT = ("raw", "context", "both")
GATE_FORMS = ("scale", "binary")
IER_PROMPTS = ("v2", "answer_first")


@dataclass(frozen=True)
class MemCoReConfig(TurnPackingKnobs):
    """Every MemCoRe knob. Construction knobs (``build=True``: ``CONSTRUCTION_KEYS``) change the built memory;
    the rest only change retrieval and therefore reuse a snapshot. ``rule``: the range ``memcore-run`` checks."""

    name: str = "memcore"
    judge: Literal["llm", "embedding"] = knob("llm", build=True, rule=Rule(choices=JUDGES))
    format_version: int = knob(3, build=True, rule=POS)
    # gate
    tau_merge: float = knob(0.7, build=True, rule=UNIT)
    tau_link: float = knob(0.5, build=True, rule=UNIT)
    candidates: int = knob(5, build=True, rule=POS)
    strong_link: float = knob(0.6, build=True, rule=UNIT)
    merge_max_turns: int = knob(6, build=True, rule=POS)
    merge_min_cosine: float = knob(0.0, build=True, rule=UNIT)
    gate_form: Literal["scale", "binary"] = knob("scale", build=True, rule=Rule(choices=GATE_FORMS))
    # ingestion
    context_turns: int = knob(2, build=True)
    max_keywords: int = knob(6, build=True, rule=POS)
    cheap_keyword_ngram: int = knob(3, build=True, rule=POS)
    cheap_keyword_unigrams: int = knob(0, build=True)
    #: relative dates ("yesterday", "last week", …) resolved in code against the session date and shown beside the
    #: expression in every construction prompt and in the context (memcore.memory.relative_dates); false = as before
    resolve_dates: bool = knob(True, build=True)
    # keyword graph and topics
    hub_max_fraction: float = knob(0.1, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    topic_min: int = knob(20, build=True, rule=POS)
    topic_max: int = knob(80, build=True, rule=POS)
    leiden_resolution: float = knob(1.0, build=True, rule=Rule(lo=0, lo_open=True))
    # retrieval
    k_topic: int = knob(3, rule=POS)
    k_key: int = knob(10, rule=POS)
    k_final: int = knob(20, rule=POS)
    rrf_k: int = knob(60, rule=POS)
    channel_depth: int = knob(50, rule=POS)
    keyword_min_sim: float = knob(0.5, rule=UNIT)
    neighbor_weight: float = 1.0
    topic_weight: float = 1.0
    ier_max_rounds: int = knob(3, rule=POS)
    ier_max_subqueries: int = 3
    ier_subquery_weight: float = 1.0
    ier_reserved: int = 2
    ier_judge_tokens: int = knob(3000, rule=POS)
    ier_prompt: Literal["v2", "answer_first"] = knob("v2", rule=Rule(choices=IER_PROMPTS))
    evidence_text: Literal["raw", "context", "both"] = knob("both", rule=Rule(choices=EVIDENCE_TEXT))
    # evidence packing (memcore/memory/packing.py): the raw turns of the ranked notes, not whole notes, fill the budget
    pack: bool = False
    pack_notes: int = knob(50, rule=POS)  # the best notes whose raw turns are candidates
    pack_note_weight: float = knob(1.0, rule=Rule(lo=0))  # RRF weight of the note-rank prior
    pack_summary: bool = False  # a packed note's context line before its best turn (LLM mode; charged)
    token_cap: int | None = knob(None, rule=POS)  # packed without eval.token_cap; None: the top k_final whole notes'
    # what the hierarchy reaches, as more RRF lists of the packer (memcore/memory/packing.py; 0 = off)
    pack_keyword: float = knob(0.0, rule=Rule(lo=0))  # the keyword graph: notes of the question's matched keywords
    pack_keyword_graph: int = knob(0, rule=Rule(lo=0))  # + each matched keyword's N strongest graph neighbours
    pack_topic: float = knob(0.0, rule=Rule(lo=0))  # the turns of the question's topics
    pack_link: float = knob(0.0, rule=Rule(lo=0))  # the notes linked to the first pack_link_anchors fused notes
    pack_link_anchors: int = knob(10, rule=POS)
    pack_link_text: float = knob(0.0, rule=Rule(lo=0))  # BM25 over a turn with its linked notes' turns
    # the frame, cues and windows of the packed turns: TurnPackingKnobs (memcore/packing/knobs.py)
    ann_threshold: int = knob(200_000, rule=POS)
    index: Literal["auto", "flat", "ivf", "hnsw"] = knob("auto", rule=Rule(choices=INDEX_KINDS))
    # LLM sampling (deterministic by default so the response cache applies)
    temperature: float = knob(0.0, build=True, rule=TEMPERATURE)
    max_tokens: int = knob(384, build=True, rule=POS)

    def __post_init__(self) -> None:
        """The fields' rules (the ranges memcore-run checks), then what relates two fields."""
        check_rules(self, "method", error=ConfigError)
        if self.tau_link > self.tau_merge:
            raise ConfigError(
                f"need 0 <= tau_link <= tau_merge <= 1, got tau_link={self.tau_link} tau_merge={self.tau_merge}"
            )
        if self.topic_min > self.topic_max:
            raise ConfigError(f"need 1 <= topic_min <= topic_max, got {self.topic_min}, {self.topic_max}")
        cues = (self.pack_cue_speaker, self.pack_cue_date, self.pack_cue_filler, self.pack_cue_neighbors)
        if self.pack_summary and (self.pack_frame != "line" or any(cues)):
            raise ConfigError(
                "method.pack_summary writes note lines in the line frame without cues; set method.pack_frame=line"
                " and method.pack_cue_*=0, or method.pack_summary=false"
            )

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
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f"method.{key} must be true or false, got {value!r}")
                values[key] = value
            elif default is None:
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


#: Config keys that change the built memory (marked ``build`` on the fields; they form the snapshot key together
#: with the construction switches); everything else only affects retrieval.
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(MemCoReConfig)

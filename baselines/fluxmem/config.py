"""FluxMem knobs: one validated, frozen dataclass built from the method's Hydra section."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from memcore.config import ConfigError
from memcore.schema import POS, UNIT, Rule, build_keys, check_rules, knob

PEMS_FORMULAS = ("upstream", "linear")
#: Semantic units: chunk = upstream's ≤ chunk_chars-character chunks of each session's text (no LLM);
#: fact = atomic facts, one LLM call per turn (ours); turn = one node per turn (no LLM).
UNITS = ("chunk", "fact", "turn")
#: Stage 1 verification: graded = upstream's one 0–1 call per candidate; listed = one call naming the relevant ones.
VERIFY_MODES = ("graded", "listed")


@dataclass(frozen=True)
class FluxMemConfig:
    """Every knob with its default (configs/method/fluxmem.yaml mirrors these). Defaults follow FluxMemConfig
    and the stage code of zjunlp/LightMem ``src/fluxmem`` where a counterpart exists (baselines/fluxmem/README.md)."""

    name: str = "fluxmem"
    format_version: int = knob(2, build=True, rule=POS)  # bump when code changes what construction builds

    # construction: semantic layer + association edges
    unit: str = knob("chunk", build=True, rule=Rule(choices=UNITS))
    chunk_chars: int = knob(512, build=True, rule=POS)  # upstream add_knowledge chunk_size (characters)
    max_facts_per_turn: int = knob(5, build=True, rule=POS)
    assoc_k: int = knob(3, build=True)  # association edges per node to its most similar nodes …
    assoc_min_sim: float = knob(0.5, build=True, rule=Rule(lo=-1, hi=1))  # … whose cosine is at least this

    # Stage 1: connection forming
    connect: bool = True  # false: plain dense top-k over the semantic layer, no BM25 / LLM / episodes / skills
    k: int = knob(5, rule=POS)  # semantic nodes linked to the step anchor (upstream top_k_semantic)
    verify_pool: int = knob(15, rule=POS)  # candidates the LLM verifies (upstream: the 3·top_k dense candidates)
    llm_verify: bool = True
    verify_mode: str = knob("graded", rule=Rule(choices=VERIFY_MODES))
    # upstream: the pool is the 3·k dense candidates and each signal is min-max normalised over the pool;
    # hybrid/layer: pool by dense + BM25, dense min-max and BM25 / max over the whole semantic layer (earlier)
    pool_by: str = knob("dense", rule=Rule(choices=("dense", "hybrid")))
    normalize_over: str = knob("pool", rule=Rule(choices=("pool", "layer")))
    w_dense: float = knob(1.0, rule=UNIT)  # upstream dense_weight
    w_sparse: float = knob(0.5, rule=UNIT)  # upstream bm25_weight
    w_llm: float = knob(0.3, rule=UNIT)  # upstream llm_weight
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    k_episodes: int = 3  # most similar past episodes joining the step subgraph (upstream top_k_episodic)
    episode_min_sim: float = knob(0.5, rule=Rule(lo=-1, hi=1))
    episodes_supported_only: bool = True  # only episodes whose answer was self-judged supported

    # eval.note_cap (configs/method/fluxmem.yaml interpolates it): notes in all at Stage 1 (None: k semantic nodes
    # plus episodes and skills). FluxMem answers its own questions, so it reads the cap from its config.
    note_cap: int | None = knob(None, rule=POS)

    # Stage 2: feedback-driven refinement
    refine: bool = True
    T: int = 5  # at most T refinement rounds (answers ≤ T + 1; upstream max_refinement_rounds)
    expand_n: int = 3  # nodes added by one link expansion (upstream expand_top_k)
    expand_assoc_bonus: float = 0.2  # bonus per unit association weight to the active subgraph
    prune_n: int = 2  # nodes dropped by one pruning when the checker names none
    min_keep: int = 3  # pruning never leaves fewer semantic nodes than this
    reshape_n: int = 1  # nodes reshaped by one granularity edit when the checker names none

    # Stage 3: consolidation
    consolidate: bool = True
    consolidate_every: int = 10  # consolidate after every N new episodes (0: only after the conversation's QA)
    consolidate_after_qa: bool = True
    cluster_min_sim: float = knob(0.6, rule=Rule(lo=-1, hi=1))  # trajectory cosine to join a cluster
    min_cluster_size: int = knob(2, rule=POS)
    max_cluster_episodes: int = 6  # episodes shown to the LLM per cluster
    rerun_episodes: int = knob(3, rule=POS)  # source episodes re-run per skill version
    skill_max_words: int = knob(80, rule=POS)
    # upstream: PEMS = S / (|skills| · ln(words)) · (1 − drift), rewrite until |ΔPEMS| < pems_threshold or
    # pems_rounds evaluations (metrics/pems.py, stage3_consolidation.py); linear: our earlier weighted score
    pems_formula: str = knob("upstream", rule=Rule(choices=PEMS_FORMULAS))
    pems_threshold: float = knob(0.01, rule=UNIT)  # upstream ε: |ΔPEMS| below it = converged (linear: minimum gain)
    pems_rounds: int = knob(5, rule=POS)  # upstream max_consolidation_rounds (evaluations per skill)
    pems_target: float = knob(0.9, rule=UNIT)  # linear only: skills scoring at least this are not rewritten
    pems_max_iters: int = 3  # linear only: rewrites per skill
    pems_w_success: float = 1.0
    pems_w_length: float = 0.2
    pems_w_drift: float = 0.3
    pems_length_ref: int = knob(120, rule=POS)  # linear only: tokens at which the length penalty saturates

    # sampling temperatures per call purpose (upstream OpenAILLM: verify 0.1, attribute_failure 0.2,
    # reshape_content 0.4, extract_skills 0.3, refine_skill 0.5, generate 0.7); seeded so the cache replays them
    temperature_verify: float = 0.1
    temperature_check: float = 0.2
    temperature_reshape: float = 0.4
    temperature_skill_extract: float = 0.3
    temperature_skill_refine: float = 0.5
    temperature_skill_rerun: float = 0.7

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> FluxMemConfig:
        """Validate a plain dict (the Hydra section); unknown keys and bad values raise ConfigError."""
        known = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(raw) - set(known))
        if unknown:
            raise ConfigError(
                f"fluxmem: unknown config key(s) {', '.join(unknown)}; known keys: {', '.join(sorted(known))} "
                "(see configs/method/fluxmem.yaml)."
            )
        values: dict[str, Any] = {}
        for key, value in raw.items():
            default = getattr(cls, key)
            if isinstance(default, bool):
                if not isinstance(value, bool):
                    raise ConfigError(f"fluxmem: {key} must be true or false, got {value!r}.")
            elif isinstance(default, int):
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ConfigError(f"fluxmem: {key} must be an integer, got {value!r}.")
            elif isinstance(default, float):
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ConfigError(f"fluxmem: {key} must be a number, got {value!r}.")
                value = float(value)
            values[key] = value
        cfg = cls(**values)
        cfg.check()
        return cfg

    def check(self) -> None:
        """The fields' rules (the ranges memcore-run checks; every other number >= 0), then what relates two
        fields; raises ConfigError naming the key."""
        if isinstance(self.note_cap, bool) or not isinstance(self.note_cap, int | None):
            raise ConfigError(f"fluxmem: note_cap must be an integer >= 1 or null, got {self.note_cap!r}.")
        check_rules(self, "fluxmem", error=ConfigError)
        if self.verify_pool < self.k:
            raise ConfigError(f"fluxmem: verify_pool ({self.verify_pool}) must be >= k ({self.k}).")
        if self.w_dense + self.w_sparse <= 0:
            raise ConfigError(
                "fluxmem: w_dense + w_sparse must be > 0 (the candidates are ranked by them before verification)."
            )
        if self.max_cluster_episodes < self.min_cluster_size:
            raise ConfigError("fluxmem: max_cluster_episodes must be >= min_cluster_size.")

    def construction(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in CONSTRUCTION_KEYS}


#: Keys whose values change the built memory (the semantic layer; marked ``build``); they form the snapshot key.
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(FluxMemConfig)

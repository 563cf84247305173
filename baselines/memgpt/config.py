"""MemGPT's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baselines.lightmem.config import build_config
from memcore.schema import POS, TEMPERATURE, Rule, build_keys, check_rules, knob

RECALL_SEARCH = ("keyword", "substring")


@dataclass(frozen=True)
class MemGPTConfig:
    """Defaults follow MemGPT's constants (cpacker/MemGPT ``memgpt/constants.py``) where they apply.
    ``context_window_tokens`` ``None`` means the backbone's window (its preset's ``context_budget_tokens``),
    as MemGPT sizes its main context by the model's context window; the factory fills it in.
    See baselines/memgpt/README.md."""

    format_version: int = knob(2, build=True, rule=POS)
    # main context: system + core memory + summary + FIFO; None: backbone
    context_window_tokens: int | None = knob(None, build=True, rule=POS)
    # MESSAGE_SUMMARY_WARNING_FRAC: memory-pressure alert
    warning_fraction: float = knob(0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    # MESSAGE_SUMMARY_TRUNC_TOKEN_FRAC: share of FIFO tokens evicted
    evict_fraction: float = knob(0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True, hi_open=True))
    keep_last_messages: int = knob(3, build=True)  # MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST
    core_block_chars: int = knob(2000, build=True, rule=POS)  # CORE_MEMORY_{PERSONA,HUMAN}_CHAR_LIMIT
    max_steps_per_turn: int = knob(2, build=True, rule=POS)  # heartbeat chain length while ingesting one message
    # keep the agent's `done` replies in the FIFO (MemGPT keeps every reply)
    keep_noop_steps: bool = knob(False, build=True)
    page_size: int = knob(5, build=True, rule=POS)  # RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE
    # keyword (ranked term overlap) | substring (MemGPT's text_search)
    recall_search: str = knob("keyword", build=True, rule=Rule(choices=RECALL_SEARCH))
    function_result_chars: int = knob(3000, build=True, rule=POS)  # FUNCTION_RETURN_CHAR_LIMIT
    summary_words: int = knob(100, build=True, rule=POS)  # gpt_summarize.WORD_LIMIT
    summary_max_tokens: int = knob(256, build=True, rule=POS)
    temperature: float = knob(0.0, build=True, rule=TEMPERATURE)
    max_tokens: int = knob(256, build=True, rule=POS)
    # question time (retrieval only; the snapshot is reused across these)
    qa_max_steps: int = knob(3, rule=POS)
    qa_fallback_search: bool = True
    qa_max_results: int = 0  # cap on search-result notes (0 = none); eval.budget overrides

    def __post_init__(self) -> None:
        window = self.context_window_tokens
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
            raise ValueError(f"memgpt: context_window_tokens must be an int >= 1 or null, got {window!r}")
        check_rules(self, "memgpt")


#: Everything but the ``qa_*`` knobs changes the built memory (marked ``build`` on the fields).
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(MemGPTConfig)


def config_from_dict(raw: dict[str, Any]) -> MemGPTConfig:
    """Validate the Hydra method dict (``name`` is ignored); unknown keys or wrong types are an error."""
    return build_config(MemGPTConfig, raw, "memgpt")

"""MemGPT's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baselines.lightmem.config import build_config
from memcore.schema import POS, TEMPERATURE, Rule, build_keys, knob

RECALL_SEARCH = ("keyword", "substring")


@dataclass(frozen=True)
class MemGPTConfig:
    """Defaults follow MemGPT's constants (cpacker/MemGPT ``memgpt/constants.py``) where they apply.
    ``context_window_tokens`` ``None`` means the backbone's window (its preset's ``context_budget_tokens``),
    as MemGPT sizes its main context by the model's context window; the factory fills it in.
    See baselines/memgpt/README.md."""

    format_version: int = knob(2, build=True, rule=POS)
    context_window_tokens: int | None = knob(
        None, build=True, rule=POS
    )  # main context: system + core memory + summary + FIFO; None: backbone
    warning_fraction: float = knob(
        0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True)
    )  # MESSAGE_SUMMARY_WARNING_FRAC: memory-pressure alert
    evict_fraction: float = knob(
        0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True, hi_open=True)
    )  # MESSAGE_SUMMARY_TRUNC_TOKEN_FRAC: share of FIFO tokens evicted
    keep_last_messages: int = knob(3, build=True)  # MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST
    core_block_chars: int = knob(2000, build=True, rule=POS)  # CORE_MEMORY_{PERSONA,HUMAN}_CHAR_LIMIT
    max_steps_per_turn: int = knob(2, build=True, rule=POS)  # heartbeat chain length while ingesting one message
    keep_noop_steps: bool = knob(
        False, build=True
    )  # keep the agent's `done` replies in the FIFO (MemGPT keeps every reply)
    page_size: int = knob(5, build=True, rule=POS)  # RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE
    recall_search: str = knob(
        "keyword", build=True, rule=Rule(choices=RECALL_SEARCH)
    )  # keyword (ranked term overlap) | substring (MemGPT's text_search)
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
        if self.recall_search not in RECALL_SEARCH:
            raise ValueError(f"memgpt: recall_search must be one of {RECALL_SEARCH}, got {self.recall_search!r}")
        if not 0.0 < self.warning_fraction <= 1.0 or not 0.0 < self.evict_fraction < 1.0:
            raise ValueError("memgpt: need 0 < warning_fraction <= 1 and 0 < evict_fraction < 1")
        window = self.context_window_tokens
        if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
            raise ValueError(f"memgpt: context_window_tokens must be an int >= 1 or null, got {window!r}")
        for key in (
            "core_block_chars",
            "max_steps_per_turn",
            "page_size",
            "function_result_chars",
            "summary_words",
            "summary_max_tokens",
            "max_tokens",
            "qa_max_steps",
        ):
            if getattr(self, key) < 1:
                raise ValueError(f"memgpt: {key} must be >= 1, got {getattr(self, key)}")
        if self.keep_last_messages < 0 or self.qa_max_results < 0:
            raise ValueError("memgpt: keep_last_messages and qa_max_results must be >= 0")


#: Everything but the ``qa_*`` knobs changes the built memory (marked ``build`` on the fields).
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(MemGPTConfig)


def config_from_dict(raw: dict[str, Any]) -> MemGPTConfig:
    """Validate the Hydra method dict (``name`` is ignored); unknown keys or wrong types are an error."""
    return build_config(MemGPTConfig, raw, "memgpt")

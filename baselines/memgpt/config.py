"""MemGPT's knobs, validated from the plain dict the runner hands over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from baselines.lightmem.config import build_config
from baselines.memgpt.framing import system_message, worst_case_state
from memcore.schema import POS, TEMPERATURE, Rule, build_keys, check_rules, knob
from memcore.text import count_tokens

RECALL_SEARCH = ("keyword", "substring")
CONTEXT_WINDOW = ("memgpt", "backbone")

#: ``LLM_MAX_TOKENS`` of MemGPT 0.2.6 (cpacker/MemGPT ``memgpt/constants.py`` @ 0.2.6): the context window MemGPT
#: gives a model (``memgpt/config.py``: the model's entry, else ``DEFAULT``). No model of this harness is listed,
#: so every backbone gets ``DEFAULT``.
LLM_MAX_TOKENS: dict[str, int] = {
    "DEFAULT": 8192,
    "gpt-4-1106-preview": 128000,
    "gpt-4": 8192,
    "gpt-4-32k": 32768,
    "gpt-4-0613": 8192,
    "gpt-4-32k-0613": 32768,
    "gpt-4-0314": 8192,
    "gpt-4-32k-0314": 32768,
    "gpt-3.5-turbo-1106": 16385,
    "gpt-3.5-turbo": 4096,
    "gpt-3.5-turbo-16k": 16385,
    "gpt-3.5-turbo-0613": 4096,
    "gpt-3.5-turbo-16k-0613": 16385,
    "gpt-3.5-turbo-0301": 4096,
}

#: The OpenAI API's default temperature, which MemGPT 0.2.6's requests get by sending none.
API_DEFAULT_TEMPERATURE = 1.0
#: Reply cap standing for 0.2.6's none: far above an agent step (a function call with its monologue) or a summary.
REPLY_SAFETY_LIMIT = 4096
#: Agent steps per ingested message standing for 0.2.6's unbounded heartbeat chain.
STEP_SAFETY_LIMIT = 25
#: Room for one reply in the smallest usable window (a typical step; the safety cap above is not reserved).
REPLY_ROOM_TOKENS = 256

#: The backbone window assumed when neither the config nor the run names one (the default preset's prompt token cap).
DEFAULT_BACKBONE_WINDOW_TOKENS = 6000


@dataclass(frozen=True)
class MemGPTConfig:
    """Defaults follow MemGPT 0.2.6's constants (cpacker/MemGPT ``memgpt/constants.py``) where they apply.
    The main context's size is :func:`resolve_window`: ``context_window: memgpt`` is MemGPT's own sizing
    (:data:`LLM_MAX_TOKENS` of the backbone's model, 8,192 for a model it does not list, never more than the
    backbone's prompt budget); ``backbone`` is the backbone's whole prompt budget (``memgpt-full-window``);
    ``context_window_tokens`` fixes it. A window that cannot hold the system message and a full core memory is
    a ``ValueError`` at construction (so ``memcore-run`` stops before any work). See baselines/memgpt/README.md."""

    format_version: int = knob(4, build=True, rule=POS)
    # main context: system + core memory + summary + FIFO
    context_window: str = knob("memgpt", build=True, rule=Rule(choices=CONTEXT_WINDOW))
    context_window_tokens: int | None = knob(None, build=True, rule=POS)  # fixes the size (overrides the above)
    backbone_model: str | None = knob(None, build=True)  # ${backbone.model}: the key into LLM_MAX_TOKENS
    # ${backbone.prompt_token_cap}; its snapshot key keeps the name backbone_window_tokens (memcore.config_aliases)
    prompt_token_cap: int | None = knob(None, build=True, rule=POS)
    # MESSAGE_SUMMARY_WARNING_FRAC: memory-pressure alert
    warning_fraction: float = knob(0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True))
    # MESSAGE_SUMMARY_TRUNC_TOKEN_FRAC: share of FIFO tokens evicted
    evict_fraction: float = knob(0.75, build=True, rule=Rule(lo=0, hi=1, lo_open=True, hi_open=True))
    keep_last_messages: int = knob(3, build=True)  # MESSAGE_SUMMARY_TRUNC_KEEP_N_LAST
    core_block_chars: int = knob(2000, build=True, rule=POS)  # CORE_MEMORY_{PERSONA,HUMAN}_CHAR_LIMIT
    # MemGPT keeps stepping while a call asks for a heartbeat or fails, with no cap; this is only a safety limit,
    # far above a real chain (a turn that reaches it is counted: ``step_limit_hits``)
    max_steps_per_turn: int = knob(STEP_SAFETY_LIMIT, build=True, rule=POS)
    # keep the agent's `done` replies in the FIFO (MemGPT keeps every reply)
    keep_noop_steps: bool = knob(False, build=True)
    page_size: int = knob(5, build=True, rule=POS)  # RETRIEVAL_QUERY_DEFAULT_PAGE_SIZE
    # substring (MemGPT's text_search) | keyword (ranked term overlap)
    recall_search: str = knob("substring", build=True, rule=Rule(choices=RECALL_SEARCH))
    function_result_chars: int | None = knob(None, build=True, rule=POS)  # None: uncut, as 0.2.6 (no such limit)
    # archival_memory_insert splits its content into passages (0.2.6: llama_index SimpleNodeParser, chunk_size
    # = MemGPTConfig.embedding_chunk_size 300 tokens, its default overlap 20); 0 stores the content whole
    archival_chunk_tokens: int = knob(300, build=True)
    archival_chunk_overlap: int = knob(20, build=True)
    summary_words: int = knob(100, build=True, rule=POS)  # gpt_summarize.WORD_LIMIT
    # 0.2.6 sends neither temperature nor max_tokens (openai_tools.create): the API's defaults apply, temperature 1
    # and no reply cap. The harness's clients always send both: temperature 1.0, and a reply cap far above an agent
    # step or a 100-word summary (a reply that reaches it is counted: ``replies_at_max_tokens``)
    summary_max_tokens: int = knob(REPLY_SAFETY_LIMIT, build=True, rule=POS)
    temperature: float = knob(API_DEFAULT_TEMPERATURE, build=True, rule=TEMPERATURE)
    max_tokens: int = knob(REPLY_SAFETY_LIMIT, build=True, rule=POS)
    # question time (retrieval only; the snapshot is reused across these)
    qa_max_steps: int = knob(3, rule=POS)
    qa_fallback_search: bool = True
    qa_max_results: int = 0  # cap on search-result notes (0 = none); eval.note_cap overrides

    def __post_init__(self) -> None:
        for key in ("context_window_tokens", "prompt_token_cap"):
            window = getattr(self, key)
            if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
                raise ValueError(f"memgpt: {key} must be an int >= 1 or null, got {window!r}")
        check_rules(self, "memgpt")
        tokens, source = resolve_window(self)
        need = min_window_tokens(self)
        if tokens < need:
            raise ValueError(
                f"memgpt: the main context ({tokens} tokens, {source}) cannot hold MemGPT's system message and a full "
                f"core memory ({need} tokens); give it at least {need} (method.context_window_tokens, or a larger "
                "backbone.prompt_token_cap)"
            )


def resolve_window(cfg: MemGPTConfig) -> tuple[int, str]:
    """The main context's size in (approximate) tokens and where it comes from."""
    cap = cfg.prompt_token_cap
    if cfg.context_window_tokens is not None:
        return cfg.context_window_tokens, "method.context_window_tokens"
    if cfg.context_window == "backbone":
        return (cap or DEFAULT_BACKBONE_WINDOW_TOKENS), "the backbone's prompt budget"
    model = cfg.backbone_model or ""
    key = model if model in LLM_MAX_TOKENS else "DEFAULT"
    tokens = LLM_MAX_TOKENS[key]
    source = f"MemGPT 0.2.6 LLM_MAX_TOKENS[{key!r}]"
    if cap is not None and cap < tokens:
        return cap, f"{source} capped at the backbone's prompt budget"
    return tokens, source


def min_window_tokens(cfg: MemGPTConfig) -> int:
    """The smallest main context that holds the system message, the state message with every core memory block
    full (three blocks: persona and one per speaker; about 4 characters a token) and one reply."""
    names = ("Speaker A", "Speaker B")
    core_tokens = 3 * cfg.core_block_chars // 4
    return (
        count_tokens(system_message(*names, page_size=cfg.page_size))
        + count_tokens(worst_case_state())
        + core_tokens
        + REPLY_ROOM_TOKENS
    )


#: Everything but the ``qa_*`` knobs changes the built memory (marked ``build`` on the fields).
CONSTRUCTION_KEYS: tuple[str, ...] = build_keys(MemGPTConfig)


def config_from_dict(raw: dict[str, Any]) -> MemGPTConfig:
    """Validate the Hydra method dict (``name`` is ignored); unknown keys or wrong types are an error."""
    return build_config(MemGPTConfig, raw, "memgpt")

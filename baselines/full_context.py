"""The LoCoMo baseline: the whole conversation, with session dates, in the answer prompt.

Layout and truncation follow ``get_input_context`` / ``get_gpt_answers`` of the official
snap-research/locomo ``task_eval/evaluate_gpts.py`` (commit 9228632): the conversation header
``CONV_START_PROMPT`` naming both speakers, then per session ``DATE: <date>\\nCONVERSATION:\\n`` and one
``<speaker> said, "<text>"`` line per turn (an image turn adds a ``[shares <caption>]`` line). When the
conversation exceeds the budget, **turns** are dropped from the oldest end, one at a time, so the oldest
kept session may be partial (its DATE header stays). The budget counts everything in the context (the
header, every session's DATE/CONVERSATION lines, the turn lines) and reserves room for the question's
prompt and the answer, as the official ``MAX_LENGTH - PER_QA_TOKEN_BUDGET`` check does.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.turns import load_turns, save_turns, turn_note
from memcore.budget import BUDGET_KEY, budget_record
from memcore.interfaces import MethodContext, MethodSpec
from memcore.prompts import answer as answer_prompts
from memcore.schema import POS, check_rules, knob, method_validator
from memcore.text import count_tokens, truncate_to_tokens
from memcore.types import Evidence, Turn

#: The methods this package registers (read by memcore.methods without importing it).
METHODS = {"full_context": "baselines.full_context:SPEC"}

#: ``CONV_START_PROMPT`` of the official ``task_eval/evaluate_gpts.py``, verbatim (its typo "wriiten" included).
CONV_START_PROMPT = (
    "Below is a conversation between two people: {} and {}. The conversation takes place over multiple days "
    "and the date of each conversation is wriiten at the beginning of the conversation.\n\n"
)

#: The official ``PER_QA_TOKEN_BUDGET``: tokens reserved for one answer.
PER_QA_TOKEN_BUDGET = 50


def _prompt_overhead_tokens() -> int:
    """Approximate tokens of the longest answer prompt around context and question (system message and the
    "Not mentioned" option included), over both protocols."""
    p = answer_prompts
    amem = count_tokens(p.AMEM_SYSTEM) + max(count_tokens(t) for t in p.AMEM_BY_CATEGORY.values())
    locomo = count_tokens(p.LOCOMO_QA_PROMPT) + max(
        count_tokens(p.LOCOMO_TEMPORAL_SUFFIX), count_tokens(p.LOCOMO_ADVERSARIAL_SUFFIX)
    )
    return max(amem, locomo) + count_tokens(p.NOT_MENTIONED)


PROMPT_OVERHEAD_TOKENS = _prompt_overhead_tokens()


@dataclass(frozen=True)
class FullContextConfig:
    name: str = "full_context"
    context_budget_tokens: int | None = knob(None, rule=POS)  # None: the backbone preset's budget
    answer_reserve_tokens: int = PER_QA_TOKEN_BUDGET  # room kept for the answer
    prompt_reserve_tokens: int | None = None  # room for the answer prompt around context + question; None: measured

    def __post_init__(self) -> None:
        check_rules(self, "full_context")


def session_header(date: str) -> str:
    """The official per-session header."""
    return f"DATE: {date}\nCONVERSATION:\n"


def turn_line(turn: Turn) -> str:
    """One turn as the official code writes it, with its trailing newline; an image turn's caption goes on a
    ``[shares <caption>]`` line (the harness's ``Turn.text`` carries it inline, which is taken off here)."""
    text = turn.text
    if turn.image_caption:
        tag = f"[shares an image: {turn.image_caption}]"
        if text.endswith(tag):
            text = text[: -len(tag)].rstrip()
        return f'{turn.speaker} said, "{text}"\n[shares {turn.image_caption}]\n'
    return f'{turn.speaker} said, "{text}"\n'


def conversation_header(speaker_a: str, speaker_b: str) -> str:
    return CONV_START_PROMPT.format(speaker_a, speaker_b)


class FullContext:
    """Whole-conversation context cut to ``budget_tokens`` (the prompt budget of the backbone).

    ``retrieve(question)`` returns the most recent turns whose context (header + session headers + lines)
    fits ``budget_tokens`` minus the question's prompt reserve; contexts are cached per reserve size.
    """

    def __init__(self, cfg: FullContextConfig, budget_tokens: int, speakers: tuple[str, str] = ("", "")) -> None:
        self.cfg = cfg
        self.budget = budget_tokens
        self.speakers = speakers
        self.turns: list[Turn] = []
        self._cache: dict[tuple[int | None, ...], Evidence] = {}
        self._lock = threading.Lock()

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._cache = {}

    def finalize(self) -> None:
        pass

    def _speakers(self) -> tuple[str, str]:
        a, b = self.speakers
        if a and b:
            return a, b
        names = [*dict.fromkeys(t.speaker for t in self.turns), "", ""]
        return names[0], names[1]

    def reserve_tokens(self, query: str) -> int:
        """Tokens kept free for the answer prompt, the question and the answer."""
        overhead = PROMPT_OVERHEAD_TOKENS if self.cfg.prompt_reserve_tokens is None else self.cfg.prompt_reserve_tokens
        return overhead + count_tokens(query) + self.cfg.answer_reserve_tokens

    def build(self, reserve: int = 0, max_turns: int | None = None, limit: int | None = None) -> Evidence:
        """The context for a prompt that needs ``reserve`` tokens besides it; ``max_turns`` (``eval.budget``)
        also caps the number of turns, so the run gets as many notes as every other method; ``limit``
        (``eval.context_tokens``) caps the context's own tokens, header included."""
        header = conversation_header(*self._speakers())
        limit = self.budget - reserve if limit is None else min(limit, self.budget - reserve)
        used = count_tokens(header)
        kept: list[Turn] = []
        open_session: int | None = None
        for turn in reversed(self.turns):
            if max_turns is not None and len(kept) >= max_turns:
                break
            # the official check charges the session header with every turn; we charge it once per session
            extra = count_tokens(session_header(turn.session_time_raw)) if turn.session_index != open_session else 0
            cost = count_tokens(turn_line(turn)) + extra
            if used + cost > limit:
                break
            kept.append(turn)
            used += cost
            open_session = turn.session_index
        kept.reverse()
        parts = [header]
        current: int | None = None
        for turn in kept:
            if turn.session_index != current:
                parts.append(session_header(turn.session_time_raw))
                current = turn.session_index
            parts.append(turn_line(turn))
        return Evidence(
            notes=[turn_note(t, channels=("full_context",)) for t in kept],
            context="".join(parts).rstrip("\n"),
            extra={"turns_kept": len(kept), "turns_total": len(self.turns), "reserve_tokens": reserve},
        )

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        """The most recent turns that fit; ``budget`` (``eval.budget``) keeps at most that many turns."""
        reserve = self.reserve_tokens(query)
        key = (reserve, budget)
        with self._lock:
            ev = self._cache.get(key)
        if ev is None:
            ev = self.build(reserve, budget)
            with self._lock:
                self._cache[key] = ev
        return ev

    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
        """``memcore.budget.ContextBudgeted``: the official truncation at ``tokens`` (the most recent turns whose
        context, header and session headers included, fits). When not even the last turn fits, the context is
        the last turn's block cut at the budget, and the record says so."""
        reserve = self.reserve_tokens(query)
        key = (reserve, budget, tokens)
        with self._lock:
            ev = self._cache.get(key)
        if ev is None:
            ev = self.build(reserve, budget, limit=tokens)
            kept = int(ev.extra["turns_kept"])
            cut = kept == 0 and bool(self.turns)
            if cut:
                last = self.turns[-1]
                block = conversation_header(*self._speakers()) + session_header(last.session_time_raw) + turn_line(last)
                ev = Evidence(
                    notes=[turn_note(last, channels=("full_context",))],
                    context=truncate_to_tokens(block, tokens),
                    extra=dict(ev.extra, turns_kept=1),
                )
            ev.extra[BUDGET_KEY] = budget_record(
                tokens,
                kept=max(kept, int(cut)),
                dropped=len(self.turns) - max(kept, int(cut)),
                cut=cut,
                how="most_recent_turns",
            )
            with self._lock:
                self._cache[key] = ev
        return ev

    def save(self, path: Path) -> None:
        save_turns(self.turns, path / "turns.jsonl")

    def load(self, path: Path) -> None:
        self.turns = load_turns(path / "turns.jsonl")
        self._cache = {}

    def stats(self) -> dict[str, Any]:
        ev = self.build(0)
        return {"turns": len(self.turns), "turns_kept_without_reserve": ev.extra["turns_kept"]}


def _factory(ctx: MethodContext) -> FullContext:
    cfg = FullContextConfig(**ctx.config)
    budget = cfg.context_budget_tokens or int(ctx.extras.get("context_budget_tokens", 6000))
    conv = ctx.conversation
    return FullContext(cfg, budget, (conv.speaker_a, conv.speaker_b))


SPEC = MethodSpec(
    name="full_context",
    factory=_factory,
    ingest_uses_llm=lambda c, a: False,
    config_schema=(FullContextConfig,),  # no build fields: the stored turns do not depend on the config
    validate_config=method_validator(FullContextConfig, build=lambda name, cfg: FullContextConfig(**cfg)),
    description="LoCoMo full-context baseline (official layout; oldest turns cut to the backbone's budget)",
    upstream_answer="baselines.locomo_answer_prompt:UPSTREAM",
    budget_counts="most recent turns",
)

"""The LoCoMo baseline: the whole conversation, with session dates, in the answer prompt.

When it exceeds the backbone's context budget, whole sessions' turns are dropped from the oldest
end (as the LoCoMo paper's truncated-context baseline does), keeping the most recent turns.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.turns import load_turns, save_turns, turn_note
from memcore.interfaces import MethodContext, MethodSpec
from memcore.text import count_tokens
from memcore.types import Evidence, Turn


@dataclass(frozen=True)
class FullContextConfig:
    name: str = "full_context"
    context_budget_tokens: int | None = None  # None: the backbone preset's budget


def render_session_block(date: str, lines: list[str]) -> str:
    return f"DATE: {date}\nCONVERSATION:\n" + "\n".join(lines)


class FullContext:
    def __init__(self, cfg: FullContextConfig, budget_tokens: int) -> None:
        self.cfg = cfg
        self.budget = budget_tokens
        self.turns: list[Turn] = []
        self._evidence: Evidence | None = None

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)
        self._evidence = None

    def finalize(self) -> None:
        self._evidence = self._build()

    def _build(self) -> Evidence:
        kept: list[Turn] = []
        used = 0
        for turn in reversed(self.turns):
            line = f'{turn.speaker} said, "{turn.text}"'
            cost = count_tokens(line) + 1
            if used + cost > self.budget:
                break
            kept.append(turn)
            used += cost
        kept.reverse()
        blocks: list[str] = []
        current: str | None = None
        lines: list[str] = []
        for turn in kept:
            if turn.session_time_raw != current:
                if lines:
                    blocks.append(render_session_block(current or "", lines))
                current, lines = turn.session_time_raw, []
            lines.append(f'{turn.speaker} said, "{turn.text}"')
        if lines:
            blocks.append(render_session_block(current or "", lines))
        return Evidence(
            notes=[turn_note(t, channels=("full_context",)) for t in kept],
            context="\n\n".join(blocks),
            extra={"turns_kept": len(kept), "turns_total": len(self.turns)},
        )

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        if self._evidence is None:
            self._evidence = self._build()
        return self._evidence

    def save(self, path: Path) -> None:
        save_turns(self.turns, path / "turns.jsonl")

    def load(self, path: Path) -> None:
        self.turns = load_turns(path / "turns.jsonl")
        self._evidence = self._build()

    def stats(self) -> dict[str, Any]:
        ev = self._evidence or self._build()
        return {"turns": len(self.turns), **ev.extra}


def _factory(ctx: MethodContext) -> FullContext:
    cfg = FullContextConfig(**ctx.config)
    budget = cfg.context_budget_tokens or int(ctx.extras.get("context_budget_tokens", 6000))
    return FullContext(cfg, budget)


SPEC = MethodSpec(
    name="full_context",
    factory=_factory,
    ingest_uses_llm=lambda c, a: False,
    construction_keys=(),
    description="LoCoMo full-context baseline (oldest turns cut to the backbone's context budget)",
)

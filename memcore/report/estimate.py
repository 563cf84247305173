"""Estimate what a full-LoCoMo run would spend from a measured run on a slice.

``python -m memcore.report.estimate RUN_DIR… [--backbones gpt-4o-mini,gpt-4o]`` prints, per run, the
LLM calls and tokens per ingested turn (memory build, cached calls included — they are what the
method needs) and per question (retrieve / answer / judge / memory updates made while answering),
scaled to LoCoMo's 5,882 turns and 1,986 questions, with the USD those tokens cost at each OpenAI
preset's list price.

A method that answers from the whole conversation (its spec's ``whole_context_tokens``, e.g. full_context)
has an answer prompt that does not scale with the number of questions alone: its per-question context is
replaced by the mean whole-conversation size the spec computes.

A method whose main context holds the conversation (its spec's ``conversation_in_context`` for the run's
config, e.g. memgpt-full-window, whose window fits LoCoMo's conversations so nothing is evicted) has build and
retrieve / answer prompts that grow with the conversation. (A method that pages at a fixed window stops growing
there: its tail rate is the estimate, as for any other method.) For such a method the build continues the
slice's per-turn growth (the upper bound becomes the estimate) and the retrieve / answer prompts per question
scale with the target conversation's length over the slice's (measured: ×9–10 from the quick slice to all of
LoCoMo, ``results/measured/rehearsal_full.md``).

A method's build cost per turn can grow with its memory (MemCoRe's gate and merge prompts carry candidate notes,
which get more and longer as the conversation goes on; A-MEM's evolution, Mem0's update likewise), so a slice's
mean cost per turn underestimates a long conversation. When the run recorded its per-turn build usage
(``ingest_trace``), each conversation of LoCoMo is estimated as the slice's measured
prefix plus its remaining turns at the slice's *tail* rate (the mean over the last third of its turns: the
rate the memory has grown to); the upper bound also continues the per-turn growth the slice shows (a
least-squares slope over its turns), which is what a memory that never saturates would cost. Runs without a
trace fall back to the mean rate.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memcore.config_aliases import tokens_used
from memcore.eval.judge import load_backbone_preset
from memcore.methods import find_method
from memcore.report.collect import ReportInputError, RunData, load_runs, qa_stage_usage, qa_time_ingest

LOCOMO_TURNS = 5882
LOCOMO_QUESTIONS = 1986
#: Turns per conversation of locomo10.json, in file order (conv-26 … conv-50); they sum to :data:`LOCOMO_TURNS`.
LOCOMO_CONVERSATION_TURNS: tuple[int, ...] = (419, 369, 663, 629, 680, 675, 689, 681, 509, 568)
QA_STAGES: tuple[str, ...] = ("retrieve", "answer", "judge")
#: The QA stages whose prompts carry that context (the judge sees only the question and the answers).
CONTEXT_STAGES: tuple[str, ...] = ("retrieve", "answer")
#: The share of a slice's last turns whose mean cost is the rate a longer conversation continues at.
TAIL_FRACTION = 1 / 3

Usage3 = tuple[float, float, float]  # calls, prompt tokens, completion tokens


@dataclass(frozen=True)
class BuildCurve:
    """One measured conversation's build: the usage each turn added (``per_turn``, in order) and what
    ``finalize`` added after the last turn."""

    per_turn: tuple[Usage3, ...]
    finalize: Usage3

    def tail_rate(self) -> Usage3:
        """Mean usage per turn over the last :data:`TAIL_FRACTION` of the turns (at least one)."""
        tail = self.per_turn[-max(1, round(len(self.per_turn) * TAIL_FRACTION)) :]
        return _mean3(tail)

    def slope(self) -> Usage3:
        """Least-squares growth per turn of each per-turn usage (0 for fewer than 3 turns)."""
        n = len(self.per_turn)
        if n < 3:
            return (0.0, 0.0, 0.0)
        xm = (n - 1) / 2
        sxx = sum((i - xm) ** 2 for i in range(n))
        return tuple(  # type: ignore[return-value]
            sum((i - xm) * u[k] for i, u in enumerate(self.per_turn)) / sxx for k in range(3)
        )

    def cost(self, turns: int, *, upper: bool = False) -> Usage3:
        """Usage of building a conversation of ``turns`` turns: the measured prefix, the rest at the tail rate
        (``upper``: plus the measured growth continued, when it is positive), then ``finalize``."""
        n = len(self.per_turn)
        done = [sum(u[k] for u in self.per_turn[: min(turns, n)]) for k in range(3)]
        extra = max(0, turns - n)
        if extra:
            rate = self.tail_rate()
            tail_n = max(1, round(n * TAIL_FRACTION))
            mid = n - (tail_n + 1) / 2  # the tail window's centre, 0-based turn index
            # sum over the turns n .. turns-1 of (index - mid)
            offsets = extra * (n + turns - 1) / 2 - extra * mid
            growth = self.slope() if upper else (0.0, 0.0, 0.0)
            done = [d + extra * rate[k] + max(0.0, growth[k]) * offsets for k, d in enumerate(done)]
        return (done[0] + self.finalize[0], done[1] + self.finalize[1], done[2] + self.finalize[2])


def _mean3(rows: Sequence[Usage3]) -> Usage3:
    n = max(1, len(rows))
    return (sum(r[0] for r in rows) / n, sum(r[1] for r in rows) / n, sum(r[2] for r in rows) / n)


def _spread_final_flush(per_turn: tuple[Usage3, ...], fin: Usage3) -> tuple[tuple[Usage3, ...], Usage3]:
    """A method that processes turns in batches (Mem0 per session, LightMem per segment) leaves its last
    batch to ``finalize``: the turns after the last one that cost anything are that batch, so what ``finalize``
    made is theirs, spread evenly (all turns when none cost anything). Nothing moves when the last turn cost
    something: then ``finalize`` did work of its own, once per conversation."""
    n = len(per_turn)
    start = n
    while start > 0 and per_turn[start - 1][0] == 0:
        start -= 1
    if start == n or fin[0] <= 0:
        return per_turn, fin
    share = tuple(f / (n - start) for f in fin)
    spread = tuple((u[0] + share[0], u[1] + share[1], u[2] + share[2]) for u in per_turn[start:])
    return per_turn[:start] + spread, (0.0, 0.0, 0.0)


def build_curves(run: RunData, totals: Usage3) -> tuple[BuildCurve, ...]:
    """The run's per-conversation :class:`BuildCurve` from ``stats.json``'s ``ingest_trace``, each scaled so the
    curves sum to ``totals`` (the build usage after ``measured_rates``' adjustments); empty when a conversation
    has no trace (a run recorded before builds were traced, or a reused snapshot built before then)."""
    convs = (run.stats.get("conversations") or {}).values()
    curves = []
    raw = [0.0, 0.0, 0.0]
    for conv in convs:
        trace = conv.get("ingest_trace") or {}
        keys = ("calls", "prompt_tokens", "completion_tokens")
        if not all(isinstance(trace.get(k), list) for k in keys) or not trace["calls"]:
            return ()
        per_turn = tuple(zip(*(map(float, trace[k]) for k in keys)))
        total = ((conv.get("ingest_usage") or {}).get("total")) or {}
        fin = tuple(float(total.get(k, 0)) - sum(u[i] for u in per_turn) for i, k in enumerate(keys))
        per_turn, fin = _spread_final_flush(per_turn, fin)
        curves.append((per_turn, fin))
        raw = [raw[i] + sum(u[i] for u in per_turn) + fin[i] for i in range(3)]
    scale = [totals[i] / raw[i] if raw[i] else 0.0 for i in range(3)]
    return tuple(
        BuildCurve(
            tuple((u[0] * scale[0], u[1] * scale[1], u[2] * scale[2]) for u in per_turn),
            (fin[0] * scale[0], fin[1] * scale[1], fin[2] * scale[2]),
        )
        for per_turn, fin in curves
    )


@dataclass(frozen=True)
class Rates:
    """Measured per-turn (build) and per-question (QA stages + ``memory_update``) calls and tokens of one run."""

    calls_per_turn: float
    prompt_per_turn: float
    completion_per_turn: float
    calls_per_question: dict[str, float]
    prompt_per_question: float
    completion_per_question: float
    mean_context_tokens: float
    turns: int
    questions: int
    curves: tuple[BuildCurve, ...] = ()
    #: Prompt tokens per question of each QA stage and of memory updates (they sum to ``prompt_per_question``).
    prompt_per_question_by_stage: dict[str, float] = field(default_factory=dict)
    conversations: int = 1

    def build_usage(self, conversation_turns: Sequence[int], *, upper: bool = False) -> Usage3:
        """Build usage for conversations of these lengths: each conversation the mean over the measured
        :attr:`curves` (growth-aware), or the mean per-turn rates times its turns when there is no trace."""
        if not self.curves:
            n = sum(conversation_turns)
            return (self.calls_per_turn * n, self.prompt_per_turn * n, self.completion_per_turn * n)
        per_conv = [_mean3([c.cost(t, upper=upper) for c in self.curves]) for t in conversation_turns]
        return (sum(u[0] for u in per_conv), sum(u[1] for u in per_conv), sum(u[2] for u in per_conv))


def _stage_totals(
    stage: dict[str, Any], *, first_attempts_only: bool, completion_per_call: float | None
) -> tuple[float, float, float]:
    """(calls, prompt tokens, completion tokens) of one stage's usage block."""
    calls = float(stage.get("calls", 0))
    prompt = float(stage.get("prompt_tokens", 0))
    completion = float(stage.get("completion_tokens", 0))
    if first_attempts_only and calls:
        share = (calls - float(stage.get("parse_retries", 0))) / calls
        calls, prompt, completion = calls * share, prompt * share, completion * share
    if completion_per_call is not None:
        completion = calls * completion_per_call
    return calls, prompt, completion


def measured_rates(
    run: RunData,
    *,
    first_attempts_only: bool = False,
    completion_per_call: float | None = None,
    answer_completion: float | None = None,
) -> Rates:
    """Per-turn build and per-question QA rates of ``run``. ``first_attempts_only`` drops JSON retries
    (for runs on the content-free scripted backbone, whose every JSON reply fails once);
    ``completion_per_call`` / ``answer_completion`` replace measured completion tokens by an assumed
    size per call (answer calls: ``answer_completion``, every other call: ``completion_per_call``)."""
    kw = {"first_attempts_only": first_attempts_only, "completion_per_call": completion_per_call}
    convs = run.stats.get("conversations") or {}
    turns = sum(int(c.get("turns") or 0) for c in convs.values())
    build = [0.0, 0.0, 0.0]
    for conv in convs.values():
        for stage in ((conv.get("ingest_usage") or {}).get("by_stage") or {}).values():
            build = [a + b for a, b in zip(build, _stage_totals(stage, **kw))]
    by_stage, covered = qa_stage_usage(run)
    n = len(run.items) or int(run.metrics.get("n_items") or 0)
    if n == 0:
        raise ReportInputError(f"{run.path}: no QA items; cannot estimate per-question cost.")
    # per question: the QA stages over the questions their usage covers, memory updates over all of them
    scale = n / covered if covered else 0.0
    qa = {s: [v * scale for v in _stage_totals(by_stage.get(s) or {}, **kw)] for s in QA_STAGES}
    qa["memory_update"] = _stage_totals(qa_time_ingest(run), **kw)  # e.g. FluxMem's consolidation
    if answer_completion is not None:
        answer = _stage_totals(
            by_stage.get("answer") or {}, first_attempts_only=first_attempts_only, completion_per_call=answer_completion
        )
        qa["answer"] = [v * scale for v in answer]
    ctx = [float(tokens_used(r)) for r in run.items]
    curves = build_curves(run, (build[0], build[1], build[2]))
    return Rates(
        calls_per_turn=build[0] / turns if turns else 0.0,
        prompt_per_turn=build[1] / turns if turns else 0.0,
        completion_per_turn=build[2] / turns if turns else 0.0,
        calls_per_question={s: v[0] / n for s, v in qa.items()},
        prompt_per_question=sum(v[1] for v in qa.values()) / n,
        completion_per_question=sum(v[2] for v in qa.values()) / n,
        mean_context_tokens=sum(ctx) / len(ctx) if ctx else 0.0,
        turns=turns,
        questions=n,
        curves=curves,
        prompt_per_question_by_stage={s: v[1] / n for s, v in qa.items()},
        conversations=max(1, len(convs)),
    )


def conversation_in_context(run: RunData) -> bool:
    """Whether the run's method kept the whole conversation in its prompts (``MethodSpec.conversation_in_context``
    for the run's recorded method section); False for a method no longer registered."""
    spec = find_method(run.method)
    return bool(spec and spec.conversation_in_context(dict(run.config.get("method") or {})))


def whole_context_tokens(run: RunData, budget: int | None) -> float | None:
    """The mean context the run's method hands the answerer over whole LoCoMo conversations under ``budget``
    (``MethodSpec.whole_context_tokens``), or None for a method whose context does not depend on it."""
    spec = find_method(run.method)
    if spec is None or spec.whole_context_tokens is None:
        return None
    return spec.whole_context_tokens(dict(run.config.get("method") or {}), budget, None)


def estimate(
    rates: Rates,
    *,
    in_context: bool = False,
    context_tokens: float | None = None,
    conversation_turns: Sequence[int] = LOCOMO_CONVERSATION_TURNS,
    questions: int = LOCOMO_QUESTIONS,
) -> dict[str, float]:
    """Totals for conversations of ``conversation_turns`` turns and ``questions`` questions (default: all of
    LoCoMo): calls and prompt / completion tokens for build and QA, and ``*_upper`` tokens with the build's
    per-turn growth continued (equal to the point estimate without a trace or without growth).
    ``context_tokens``: the method's mean answer context over a whole target conversation
    (:func:`whole_context_tokens`; None: the measured one). ``in_context`` (:func:`conversation_in_context`):
    the upper build becomes the estimate and the :data:`CONTEXT_STAGES` prompts are scaled by the mean target
    conversation's turns over the slice's."""
    prompt_q = rates.prompt_per_question
    if context_tokens is not None:
        prompt_q += context_tokens - rates.mean_context_tokens
    build = rates.build_usage(conversation_turns)
    upper = rates.build_usage(conversation_turns, upper=True)
    if in_context and rates.turns and conversation_turns:
        growth = (sum(conversation_turns) / len(conversation_turns)) / (rates.turns / rates.conversations)
        carried = sum(rates.prompt_per_question_by_stage.get(s, 0.0) for s in CONTEXT_STAGES)
        prompt_q += carried * (growth - 1.0)
        build = upper
    qa_calls = sum(rates.calls_per_question.values()) * questions
    qa_prompt, qa_completion = prompt_q * questions, rates.completion_per_question * questions
    return {
        "build_calls": build[0],
        "qa_calls": qa_calls,
        "calls": build[0] + qa_calls,
        "prompt_tokens": build[1] + qa_prompt,
        "completion_tokens": build[2] + qa_completion,
        "prompt_tokens_upper": upper[1] + qa_prompt,
        "completion_tokens_upper": upper[2] + qa_completion,
    }


def usd(totals: dict[str, float], price_in: float, price_out: float, *, upper: bool = False) -> float:
    """USD of ``totals``' tokens at these list prices per million (``upper``: the ``*_upper`` tokens)."""
    sfx = "_upper" if upper else ""
    return (totals["prompt_tokens" + sfx] * price_in + totals["completion_tokens" + sfx] * price_out) / 1e6


def tail_tokens_per_turn(rates: Rates) -> float | None:
    """Build tokens per turn at the measured slices' tails (what a long conversation continues at); None
    without a trace."""
    if not rates.curves:
        return None
    tails = [c.tail_rate() for c in rates.curves]
    return sum(t[1] + t[2] for t in tails) / len(tails)


def estimate_table(
    runs: Sequence[RunData],
    backbones: Sequence[str],
    *,
    first_attempts_only: bool = False,
    completion_per_call: float | None = None,
    answer_completion: float | None = None,
) -> str:
    """Markdown: one row per run with the measured rates and the full-LoCoMo estimate."""
    prices = {b: load_backbone_preset(b) for b in backbones}
    context_cache: dict[str, float | None] = {}
    head = (
        "| method | measured on | calls/turn (build) | calls/question (retrieve + answer + judge + memory update) | "
        "tokens/turn | tokens/question | full LoCoMo: LLM calls | full LoCoMo: tokens in / out (M) | "
        + " | ".join(f"USD {b}" for b in backbones)
        + " |"
    )
    lines = [head, "|" + "---|" * 2 + "---:|" * (6 + len(backbones))]
    for run in runs:
        r = measured_rates(
            run,
            first_attempts_only=first_attempts_only,
            completion_per_call=completion_per_call,
            answer_completion=answer_completion,
        )
        budget = int(prices[backbones[0]].prompt_token_cap) if backbones else None
        key = f"{run.method}/{budget}/{sorted((run.config.get('method') or {}).items())}"
        if key not in context_cache:  # the whole-conversation context is computed once per method config
            context_cache[key] = whole_context_tokens(run, budget)
        t = estimate(r, in_context=conversation_in_context(run), context_tokens=context_cache[key])
        q = r.calls_per_question
        tail = tail_tokens_per_turn(r)
        per_turn = f"{r.prompt_per_turn + r.completion_per_turn:,.0f}" + (f" (tail {tail:,.0f})" if tail else "")

        def cost(b: str, t: dict[str, float] = t) -> str:
            point = usd(t, prices[b].price_in_per_mtok, prices[b].price_out_per_mtok)
            high = usd(t, prices[b].price_in_per_mtok, prices[b].price_out_per_mtok, upper=True)
            return f"{point:,.2f}" + (f" (≤ {high:,.2f})" if high > point * 1.005 else "")

        lines.append(
            f"| {run.label()} | {run.dataset} / {run.backbone} ({r.turns} turns, {r.questions} q) "
            f"| {r.calls_per_turn:.2f} | {q['retrieve']:.2f} + {q['answer']:.2f} + {q['judge']:.2f} + {q['memory_update']:.2f} "
            f"| {per_turn} | {r.prompt_per_question + r.completion_per_question:,.0f} "
            f"| {t['calls']:,.0f} | {t['prompt_tokens'] / 1e6:.1f} / {t['completion_tokens'] / 1e6:.2f} | "
            + " | ".join(cost(b) for b in backbones)
            + " |"
        )
    notes = (
        "\ntokens/turn: the slice's mean; (tail …): the rate over its last third, at which longer conversations "
        "are estimated. USD (≤ …): if the build's per-turn growth on the slice went on for all of a conversation.\n"
    )
    return "\n".join(lines) + "\n" + notes


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m memcore.report.estimate", description=__doc__.split("\n\n")[0])
    p.add_argument("runs", nargs="+", help="run dirs, sweep dirs or globs")
    p.add_argument("--backbones", default="gpt-4o-mini,gpt-4o", help="OpenAI presets to price (comma list)")
    p.add_argument(
        "--first-attempts-only", action="store_true", help="drop JSON retries (runs on the scripted backbone)"
    )
    p.add_argument(
        "--completion-per-call", type=float, default=None, help="assumed completion tokens per non-answer call"
    )
    p.add_argument("--answer-completion", type=float, default=None, help="assumed completion tokens per answer call")
    args = p.parse_args(argv)
    try:
        runs = load_runs(args.runs)
        table = estimate_table(
            runs,
            [b for b in args.backbones.split(",") if b],
            first_attempts_only=args.first_attempts_only,
            completion_per_call=args.completion_per_call,
            answer_completion=args.answer_completion,
        )
        print(table)
    except ReportInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Estimate what a full-LoCoMo run would spend from a measured run on a slice.

``python -m memcore.report.estimate RUN_DIR… [--backbones gpt-4o-mini,gpt-4o]`` prints, per run, the
LLM calls and tokens per ingested turn (memory build, cached calls included — they are what the
method needs) and per question (retrieve / answer / judge / memory updates made while answering),
scaled to LoCoMo's 5,882 turns and 1,986 questions, with the USD those tokens cost at each OpenAI
preset's list price.

``full_context`` answers from the whole conversation, so its answer prompt does not scale with the
number of questions alone: its per-question context is replaced by the mean full-conversation size.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memcore.report.collect import ReportInputError, RunData, load_runs, qa_stage_usage, qa_time_ingest

LOCOMO_TURNS = 5882
LOCOMO_QUESTIONS = 1986
QA_STAGES: tuple[str, ...] = ("retrieve", "answer", "judge")


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
    ctx = [float(r.get("context_tokens") or 0) for r in run.items]
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
    )


def full_conversation_tokens(budget: int | None = None) -> float:
    """Mean size (approximate tokens, ``memcore.text.count_tokens``, the unit of items' ``context_tokens``)
    of the context ``full_context`` builds for a whole LoCoMo conversation under ``budget``."""
    from baselines.full_context import FullContext, FullContextConfig
    from memcore.data import load_locomo, resolve_locomo_path
    from memcore.text import count_tokens

    dataset = load_locomo(resolve_locomo_path(None))
    sizes = []
    for conv in dataset.conversations:
        fc = FullContext(FullContextConfig(), budget or 10**9)
        for turn in conv.turns:
            fc.ingest(turn)
        fc.finalize()
        sizes.append(count_tokens(fc.retrieve("").render()))
    return sum(sizes) / len(sizes)


def estimate(rates: Rates, *, method: str, full_context_tokens: float | None = None) -> dict[str, float]:
    """Full-LoCoMo totals: calls and prompt/completion tokens for build and QA."""
    prompt_q = rates.prompt_per_question
    if method == "full_context" and full_context_tokens is not None:
        prompt_q += full_context_tokens - rates.mean_context_tokens
    build_calls = rates.calls_per_turn * LOCOMO_TURNS
    qa_calls = sum(rates.calls_per_question.values()) * LOCOMO_QUESTIONS
    return {
        "build_calls": build_calls,
        "qa_calls": qa_calls,
        "calls": build_calls + qa_calls,
        "prompt_tokens": rates.prompt_per_turn * LOCOMO_TURNS + prompt_q * LOCOMO_QUESTIONS,
        "completion_tokens": rates.completion_per_turn * LOCOMO_TURNS
        + rates.completion_per_question * LOCOMO_QUESTIONS,
    }


def usd(totals: dict[str, float], price_in: float, price_out: float) -> float:
    return (totals["prompt_tokens"] * price_in + totals["completion_tokens"] * price_out) / 1e6


def estimate_table(
    runs: Sequence[RunData],
    backbones: Sequence[str],
    *,
    first_attempts_only: bool = False,
    completion_per_call: float | None = None,
    answer_completion: float | None = None,
) -> str:
    """Markdown: one row per run with the measured rates and the full-LoCoMo estimate."""
    from memcore.eval.judge import load_backbone_preset

    prices = {b: load_backbone_preset(b) for b in backbones}
    fc_cache: dict[str, float] = {}
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
        fc = None
        if run.method == "full_context":
            budget = int(prices[backbones[0]].context_budget_tokens) if backbones else None
            fc = fc_cache.setdefault(str(budget), full_conversation_tokens(budget))
        t = estimate(r, method=run.method, full_context_tokens=fc)
        q = r.calls_per_question
        lines.append(
            f"| {run.label()} | {run.dataset} / {run.backbone} ({r.turns} turns, {r.questions} q) "
            f"| {r.calls_per_turn:.2f} | {q['retrieve']:.2f} + {q['answer']:.2f} + {q['judge']:.2f} + {q['memory_update']:.2f} "
            f"| {r.prompt_per_turn + r.completion_per_turn:,.0f} | {r.prompt_per_question + r.completion_per_question:,.0f} "
            f"| {t['calls']:,.0f} | {t['prompt_tokens'] / 1e6:.1f} / {t['completion_tokens'] / 1e6:.2f} | "
            + " | ".join(f"{usd(t, prices[b].price_in_per_mtok, prices[b].price_out_per_mtok):,.2f}" for b in backbones)
            + " |"
        )
    return "\n".join(lines) + "\n"


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

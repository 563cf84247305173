"""J: the share of answers an LLM judge labels CORRECT (:mod:`memcore.eval.judge` scores it in its own pipeline
stage when ``eval.judge`` is on; a preset may skip categories). Its aggregate also reports the spread of
repeated judge runs."""

from collections.abc import Sequence
from typing import Any

from memcore.itemlog import LoggedItem
from memcore.metrics import Metric, mean


def _score(item: LoggedItem, key: str) -> float | None:
    value = item.scores.get(key)
    return None if value is None else float(value)


def judge_summary(items: Sequence[LoggedItem]) -> dict[str, Any]:
    """J over the judged items: ``judge`` (mean of the items' mean over runs = the mean of the runs' J),
    ``n_judged``; with repeated runs also ``judge_per_run``, ``judge_std`` (population std of the runs' J),
    ``judge_majority`` (J of the majority labels), ``judge_agreement`` (share of items all runs labelled alike)
    and ``judge_n_runs``."""
    judged = [it for it in items if _score(it, "judge") is not None]
    values = [v for it in judged if (v := _score(it, "judge")) is not None]
    out: dict[str, Any] = {"judge": mean(values), "n_judged": len(judged)}
    runs = [it.scores.get("judge_runs") for it in judged]
    if judged and all(isinstance(r, list) and r for r in runs):
        n_runs = min(len(r) for r in runs)  # type: ignore[arg-type]
        per_run = [sum(float(r[k]) for r in runs) / len(runs) for k in range(n_runs)]  # type: ignore[index]
        avg = sum(per_run) / n_runs
        majority = [v for it in judged if (v := _score(it, "judge_majority")) is not None]
        out.update(
            judge_per_run=per_run,
            judge_std=(sum((v - avg) ** 2 for v in per_run) / n_runs) ** 0.5,
            judge_majority=mean(majority),
            judge_agreement=sum(1 for r in runs if len(set(r[:n_runs])) == 1) / len(runs),  # type: ignore[index]
            judge_n_runs=n_runs,
        )
    return out


METRIC = Metric(
    name="judge",
    label="J",
    target="answer",
    summarize=judge_summary,
    needs_llm=True,
    description="share of answers an LLM judge labels CORRECT",
)

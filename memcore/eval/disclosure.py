"""Answer disclosure: which answer prompt, temperature and answer length produced a run's numbers.

The answer prompt moves J more than the memory does (full context with GPT-4.1-mini: 81.95 with a
short-answer prompt, 92.62 with chain of thought), so every run's ``metrics.json`` (``run.answer``) and
``table.md`` state it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _mean_words(answers: Sequence[str]) -> float | None:
    return sum(len(a.split()) for a in answers) / len(answers) if answers else None


def answer_disclosure(protocol: Mapping[str, Any], items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"prompt", "prompt_name", "temperature", "temperature_adversarial", "max_tokens", "mean_words",
    "mean_words_no_adv", "n_answers"}`` for the protocol config and the run's items (answers None are skipped;
    words = white-space tokens)."""
    from memcore.eval.protocols import PROTOCOLS
    from memcore.prompts import answer as prompts

    name = str(protocol["name"])
    spec = PROTOCOLS.get(name) if name in PROTOCOLS else None
    defaults = spec.sampling_defaults if spec is not None else {}
    versions = sorted({str(r.get("prompt_version")) for r in items if r.get("prompt_version")})
    answered = [r for r in items if r.get("answer") is not None]
    max_tokens = protocol.get("max_tokens")
    return {
        "prompt": ", ".join(versions) or f"{prompts.VERSION}/{name}",
        "prompt_name": spec.prompt_name if spec is not None else name,
        "temperature": float(protocol.get("temperature", defaults.get("temperature_default", 0.0))),
        "temperature_adversarial": float(
            protocol.get("temperature_adversarial", defaults.get("temperature_adversarial", 0.0))
        ),
        "max_tokens": int(max_tokens if max_tokens is not None else defaults.get("max_tokens", 0)),
        "mean_words": _mean_words([str(r["answer"]) for r in answered]),
        "mean_words_no_adv": _mean_words([str(r["answer"]) for r in answered if int(r["category"]) != 5]),
        "n_answers": len(answered),
    }


def disclosure_line(info: Mapping[str, Any]) -> str:
    """One Markdown line for ``table.md`` and reports."""
    words = info.get("mean_words")
    no_adv = info.get("mean_words_no_adv")
    length = "–" if words is None else f"{words:.1f} words"
    if no_adv is not None:
        length += f" ({no_adv:.1f} over categories 1-4)"
    return (
        f"Answers: prompt {info.get('prompt')} ({info.get('prompt_name')}), temperature {info.get('temperature')}"
        f" (category 5: {info.get('temperature_adversarial')}), max_tokens {info.get('max_tokens')},"
        f" mean length {length}, n={info.get('n_answers')}."
    )

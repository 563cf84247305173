"""Answer and evidence disclosure: which answer prompt, temperature and answer length, and how much evidence
per question, produced a run's numbers.

The answer prompt moves J more than the memory does (full context with GPT-4.1-mini: 81.95 with a
short-answer prompt, 92.62 with chain of thought), so every run's ``metrics.json`` (``run.answer``) and
``table.md`` state it. Methods compared at their own defaults read different amounts of evidence (MemCoRe 20
notes, A-MEM 10 plus neighbours, Mem0 10 per speaker, …), so ``run.evidence`` states the budget, what it counts
and the evidence each question actually got.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memcore.config_aliases import evidence_token_cap
from memcore.datasets.registry import DEFAULT_DATASET_KIND, get_dataset
from memcore.datasets.spec import DatasetCategories
from memcore.eval.protocols import PROTOCOLS
from memcore.eval.upstream import no_upstream_line
from memcore.itemlog import LoggedItem, as_logged

#: The sampling key of a protocol that answers some categories at their own temperature (LoCoMo's category 5).
OWN_TEMPERATURE_KEY = "temperature_adversarial"


def _mean_words(answers: Sequence[str]) -> float | None:
    return sum(len(a.split()) for a in answers) / len(answers) if answers else None


def _categories(categories: DatasetCategories | None) -> DatasetCategories:
    """``categories`` (the run's dataset's), or the default dataset's for a run recorded before datasets had kinds."""
    return categories if categories is not None else get_dataset(DEFAULT_DATASET_KIND).categories


def _lengths(answered: Sequence[LoggedItem], categories: DatasetCategories) -> dict[str, Any]:
    """``mean_words`` and, when the dataset's headline leaves categories out, ``mean_words_no_adv`` (over the
    headline categories)."""
    out: dict[str, Any] = {"mean_words": _mean_words([str(r.answer) for r in answered])}
    if categories.headline_ids != categories.ids:
        headline = set(categories.headline_ids)
        out["mean_words_no_adv"] = _mean_words([str(r.answer) for r in answered if r.category in headline])
    return out


def answer_disclosure(
    protocol: Mapping[str, Any],
    items: Sequence[Mapping[str, Any]],
    *,
    answer_prompt: str = "harness",
    upstream: Any = None,
    method: str = "",
    categories: DatasetCategories | None = None,
) -> dict[str, Any]:
    """``{"prompt", "prompt_name", "temperature", "temperature_adversarial", "max_tokens", "mean_words",
    "mean_words_no_adv", "n_answers"}`` for the protocol config and the run's items (answers None are skipped;
    words = white-space tokens) of a dataset with ``categories`` (see :func:`_categories`): ``temperature_adversarial``
    only for a protocol that has it (:data:`OWN_TEMPERATURE_KEY`), ``mean_words_no_adv`` (over the headline
    categories) only for a dataset whose headline leaves categories out. Under ``answer_prompt="upstream"`` also
    ``answer_prompt`` and either
    ``prompt_source`` (``upstream``: the method's :class:`~memcore.eval.upstream.UpstreamAnswer`, whose name and
    sampling replace the protocol's) or ``answer_prompt_note`` (the method has none and kept the harness's)."""
    name = str(protocol["name"])
    spec = PROTOCOLS.get(name) if name in PROTOCOLS else None
    defaults = spec.sampling_defaults if spec is not None else {}
    logged = [as_logged(r) for r in items]
    versions = sorted({str(r.get("prompt_version")) for r in logged if r.get("prompt_version")})
    answered = [r for r in logged if r.answer is not None]
    lengths = _lengths(answered, _categories(categories))
    max_tokens = protocol.get("max_tokens")
    if answer_prompt == "upstream" and upstream is not None:
        up = upstream.spec
        return {
            "prompt": ", ".join(versions) or up.prompt_version(),
            "prompt_name": up.prompt_name,
            "temperature": float(up.temperature_default),
            "temperature_adversarial": float(
                up.sampling_defaults.get("temperature_adversarial", up.temperature_default)
            ),
            "max_tokens": int(up.max_tokens),
            **lengths,
            "n_answers": len(answered),
            "answer_prompt": "upstream",
            "prompt_source": upstream.source,
        }
    out: dict[str, Any] = {
        "prompt": ", ".join(versions) or (spec.prompt_version() if spec is not None else name),
        "prompt_name": spec.prompt_name if spec is not None else name,
        "temperature": float(protocol.get("temperature", defaults.get("temperature_default", 0.0))),
    }
    if spec is None or OWN_TEMPERATURE_KEY in defaults:
        out[OWN_TEMPERATURE_KEY] = float(protocol.get(OWN_TEMPERATURE_KEY, defaults.get(OWN_TEMPERATURE_KEY, 0.0)))
    out.update(
        max_tokens=int(max_tokens if max_tokens is not None else defaults.get("max_tokens", 0)),
        **lengths,
        n_answers=len(answered),
    )
    if answer_prompt == "upstream":
        out.update(answer_prompt="upstream", answer_prompt_note=no_upstream_line(method))
    return out


def disclosure_line(info: Mapping[str, Any], categories: DatasetCategories | None = None) -> str:
    """One Markdown line for ``table.md`` and reports, in the words of the run's dataset's ``categories`` (see
    :func:`_categories`)."""
    cats = _categories(categories)
    words = info.get("mean_words")
    no_adv = info.get("mean_words_no_adv")
    length = "–" if words is None else f"{words:.1f} words"
    if no_adv is not None:
        length += f" ({no_adv:.1f} over categories {cats.span(cats.headline_ids)})"
    own = ""
    if OWN_TEMPERATURE_KEY in info:
        label = f"category {cats.span(cats.adversarial_ids)}" if cats.adversarial_ids else OWN_TEMPERATURE_KEY
        own = f" ({label}: {info.get(OWN_TEMPERATURE_KEY)})"
    which = ""
    if info.get("prompt_source"):
        which = f" [eval.answer_prompt=upstream: the method's own, from {info['prompt_source']}]"
    elif info.get("answer_prompt_note"):
        which = " [eval.answer_prompt=upstream: no upstream prompt for this method, the harness's]"
    return (
        f"Answers{which}: prompt {info.get('prompt')} ({info.get('prompt_name')}), temperature {info.get('temperature')}"
        f"{own}, max_tokens {info.get('max_tokens')},"
        f" mean length {length}, n={info.get('n_answers')}."
    )


def evidence_disclosure(
    note_cap: int | None, counts: str, items: Sequence[Mapping[str, Any]], token_cap: int | None = None
) -> dict[str, Any]:
    """``{"budget", "budget_counts", "mean_notes", "max_notes", "mean_context_tokens", "n_items"}``: the run's
    ``eval.note_cap`` (None: the method's own default), what one unit of it is for the method, and the evidence
    the questions got (notes and tokens used per item; None without items). With ``eval.token_cap`` also
    ``token_cap``, ``max_context_tokens`` (the most tokens used) and ``n_cut`` (items whose only unit was cut to
    fit)."""
    logged = [as_logged(r) for r in items]
    notes = [len(r.notes) for r in logged]
    tokens = [r.tokens_used for r in logged]
    out: dict[str, Any] = {
        "budget": note_cap,
        "budget_counts": counts,
        "mean_notes": sum(notes) / len(notes) if notes else None,
        "max_notes": max(notes) if notes else None,
        "mean_context_tokens": sum(tokens) / len(tokens) if tokens else None,
        "n_items": len(items),
    }
    if token_cap is not None:
        recs = [r.extra.get("context_budget") or {} for r in logged]
        out.update(
            token_cap=int(token_cap),
            max_context_tokens=max(tokens) if tokens else None,
            n_cut=sum(1 for rec in recs if rec.get("cut")),
            fill=sorted({str(rec.get("how")) for rec in recs if rec.get("how")}),
        )
    return out


def evidence_cell(info: Mapping[str, Any]) -> str:
    """``budget 5 notes; 4.9 notes (max 5), 612 tok`` or ``own default; 20.0 notes (max 20), 2,310 tok``."""
    if not info:
        return "–"
    budget = info.get("budget")
    lead = "own default" if budget is None else f"budget {budget} {info.get('budget_counts', 'notes')}"
    cap = evidence_token_cap(info)
    if cap is not None:
        lead += f", ≤ {cap:,} context tok"
    if info.get("mean_notes") is None:
        return lead
    return (
        f"{lead}; {float(info['mean_notes']):.1f} notes (max {info.get('max_notes')}), "
        f"{float(info.get('mean_context_tokens') or 0):,.0f} tok"
    )


def evidence_line(info: Mapping[str, Any]) -> str:
    """One Markdown line for ``table.md``: the evidence budget and what each question got."""
    budget = info.get("budget")
    if budget is None:
        lead = "eval.note_cap unset: the method's own retrieval default (methods differ; set eval.note_cap to equalise)"
    else:
        lead = f"eval.note_cap={budget}: at most {budget} {info.get('budget_counts', 'notes')} of evidence per question"
    cap = evidence_token_cap(info)
    if cap is not None:
        lead += (
            f"; eval.token_cap={cap}: at most that many context tokens per question"
            f" (max used {info.get('max_context_tokens')}, {info.get('n_cut', 0)} questions got one unit cut to fit)"
        )
    got = ""
    if info.get("mean_notes") is not None:
        got = (
            f"; per question {float(info['mean_notes']):.1f} notes (max {info.get('max_notes')}),"
            f" {float(info.get('mean_context_tokens') or 0):,.0f} context tokens, n={info.get('n_items')}"
        )
    return f"Evidence: {lead}{got}."

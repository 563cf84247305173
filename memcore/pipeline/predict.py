"""Stage 3 of the pipeline: retrieve the evidence for one QA item and answer it."""

from __future__ import annotations

import time
from dataclasses import dataclass

from memcore.config import ConfigError
from memcore.interfaces import LazyResource, MemorySystem, SelfAnsweringMemory
from memcore.packing.budget import fit_evidence, retrieve_within
from memcore.text import truncate_to_tokens
from memcore.types import Evidence, QAItem


@dataclass(frozen=True)
class Prediction:
    """What a memory system and the answerer produced for one item. ``answer`` is ``None`` for a
    retrieval-only run; ``raw`` is the reply as received and ``prompt_hash`` the digest of the request
    (:meth:`AnswerPrompt.digest`), both ``None`` when the harness did not ask (retrieval-only, or a method that
    answers itself); ``retrieve_s`` includes answering for a self-answering method (``answer_s`` is 0)."""

    evidence: Evidence
    answer: str | None
    prompt_version: str = ""
    cached: bool = False
    retrieve_s: float = 0.0
    answer_s: float = 0.0
    raw: str | None = None
    prompt_hash: str | None = None


def predict(
    system: MemorySystem,
    item: QAItem,
    answerer: LazyResource,
    *,
    note_cap: int | None,
    answer: bool,
    method: str,
    token_cap: int | None = None,
) -> Prediction:
    """Retrieve for ``item.question`` (at most ``note_cap`` notes), then answer with the run's answerer (built on
    first use) unless ``answer`` is false. With ``token_cap`` the evidence is at most that many context
    tokens (:func:`memcore.packing.budget.retrieve_within`), and so is what the answerer sees. A
    :class:`SelfAnsweringMemory` answers as part of retrieval, so ``answer=false`` is a ``ConfigError`` for it;
    under ``token_cap`` each context it hands the answerer is cut to the budget."""
    t0 = time.perf_counter()
    if isinstance(system, SelfAnsweringMemory):
        if not answer:
            raise ConfigError(
                f"method {method} answers as part of retrieval; eval.answer=false is not available for it"
            )
        bound = answerer.get()

        def answer_fn(context: str) -> str:
            if token_cap is not None:
                context = truncate_to_tokens(context, int(token_cap))
            return bound.answer(item, context).text

        text, evidence = system.answer(item, answer_fn)
        if token_cap is not None:
            evidence = fit_evidence(evidence, int(token_cap))
        return Prediction(evidence, text, retrieve_s=time.perf_counter() - t0)
    if token_cap is None:
        evidence = system.retrieve(item.question, budget=note_cap)
    else:
        evidence = retrieve_within(system, item.question, int(token_cap), budget=note_cap)
    t_retrieve = time.perf_counter() - t0
    if not answer:
        return Prediction(evidence, None, retrieve_s=t_retrieve)
    t1 = time.perf_counter()
    bound = answerer.get()
    res = bound.answer(item, bound.context_of(evidence))
    return Prediction(
        evidence,
        res.text,
        res.prompt_version,
        res.cached,
        retrieve_s=t_retrieve,
        answer_s=time.perf_counter() - t1,
        raw=res.raw,
        prompt_hash=res.prompt_hash,
    )

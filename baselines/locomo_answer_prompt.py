"""LoCoMo's own answer prompt for ``full_context`` and ``rag_locomo`` under ``eval.answer_prompt=upstream``:
``QA_PROMPT`` / ``QA_PROMPT_CAT_5`` of snap-research/locomo ``task_eval/evaluate_gpts.py``, sent as its
``get_gpt_answers`` sends them with batch size 1 (commit ``9228632``).

The texts are the harness's LoCoMo protocol prompts (:mod:`memcore.datasets.locomo.prompts.answer`, ``LOCOMO_*``; sha256 in
``baselines/FIDELITY.md``): the method's context (the official ``get_input_context`` layout for ``full_context``,
``<date>: <speaker> said, "<text>"`` lines for ``rag_locomo``), then the prompt, as one user message; temperature
0; 32 answer tokens; category 2 appends the DATE instruction to the question; category 5 offers the two options
and maps a bare option letter to its text. Under ``protocol=locomo`` this is what the harness sends anyway; under
``protocol=amem`` (the paper's table) it replaces A-MEM's prompts for these two rows.
"""

from __future__ import annotations

from dataclasses import replace

from memcore.eval.protocols import PROTOCOLS
from memcore.eval.upstream import UpstreamAnswer

SOURCE = "snap-research/locomo task_eval/evaluate_gpts.py @ 9228632"

UPSTREAM = UpstreamAnswer(
    # the LoCoMo protocol's prompt, sampling and post-processing are the official code's; only the label differs
    spec=replace(PROTOCOLS.get("locomo"), prompt_name="LoCoMo's QA_PROMPT (task_eval), short phrase"),
    source=SOURCE,
)

#: ``rag_locomo``'s upstream layout needs its LoCoMo context format.
UPSTREAM_RAG = UpstreamAnswer(spec=UPSTREAM.spec, source=SOURCE, requires=(("context_format", "locomo"),))

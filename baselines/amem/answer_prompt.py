"""A-MEM's own LoCoMo answer prompts for ``eval.answer_prompt=upstream``: ``advancedMemAgent.answer_question`` of
WujiangXu/A-mem ``test_advanced.py`` at commit ``0c8039f``.

The texts are the harness's A-MEM protocol prompts (:mod:`memcore.datasets.locomo.prompts.answer`, ``AMEM_*``; checked against
that commit byte for byte, sha256 in ``baselines/FIDELITY.md``): per category a user message after the JSON
system message, temperature 0.7 (category 5: their ``temperature_c5`` default 0.5), ``max_tokens`` 1000 (their
client), the context as A-MEM's ``retrieve_memory`` lays it out (the method's own rendering), the JSON reply's
``answer``. Under ``protocol=amem`` this is what the harness sends anyway; under ``protocol=locomo`` it replaces
LoCoMo's prompt for ``amem`` only. The one adaptation, as in the protocol: their strict ``json_schema`` response
format is stated in the system message (:data:`memcore.datasets.locomo.prompts.answer.AMEM_SYSTEM`), since the harness's client
offers JSON-object mode only.
"""

from __future__ import annotations

from dataclasses import replace

from memcore.eval.protocols import PROTOCOLS
from memcore.eval.upstream import UpstreamAnswer

SOURCE = "WujiangXu/A-mem test_advanced.py @ 0c8039f"

UPSTREAM = UpstreamAnswer(
    # the A-MEM protocol's prompts and sampling are A-MEM's own; only the label differs
    spec=replace(
        PROTOCOLS.get("amem"),
        prompt_name="A-MEM's LoCoMo answer prompts (test_advanced.py answer_question), JSON reply",
    ),
    source=SOURCE,
)

"""The harness's own prompts, one module per prompt, each with its ``VERSION``: the answer prompts of the two
protocols (:mod:`.answer`) and the judge presets (:mod:`.judge`, :mod:`.judge_mem0`). MemCoRe's prompts are in
:mod:`memcore.memory.prompts`, each baseline's beside its code."""

"""MemCoRe's own prompts, one module per prompt, each with its ``VERSION`` (the harness's answer and judge
prompts are in :mod:`memcore.prompts`)."""

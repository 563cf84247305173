"""Chat backbones, embedders, response cache, local llama.cpp server, usage accounting.

A chat backbone is a stack (:mod:`memcore.llm.stack`): transport with retries (``backbone.OpenAITransport``,
``scripted.ScriptedTransport``) → response cache (``cache.CachedBackbone``) → usage metering (``stack.Metered``,
recording into the run's tracker and the active ``usage.usage_scope`` blocks) → request limiter
(``limiter.RequestLimiter``); ``scoped.ScopedBackbone`` is a view accounting one conversation's build.
"""

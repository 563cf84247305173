"""Content-free but well-formed replies for every prompt, so a scripted backbone drives the real code paths
(merges, links, IER rounds) instead of the JSON fallbacks. Timing only: never a result. The replies live in
:mod:`memcore.testing.sim_replies`, shared with the OpenAI-compatible simulator (``memcore-simulate``)."""

from __future__ import annotations

from memcore.testing.sim_replies import structured_responder

__all__ = ["structured_responder"]

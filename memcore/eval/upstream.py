"""``eval.answer_prompt``: the harness's answer prompt for every method (``harness``, the default), or each
method's own upstream answer prompt (``upstream``).

Under ``harness`` every method is answered by the run protocol's prompt (:mod:`memcore.eval.protocols`), so methods
compare on equal terms. Under ``upstream`` a method whose authors published an answer prompt is answered with it --
its text, context layout, temperature and max_tokens as upstream ran it -- so a baseline can be checked against its
published number. Scoring (gold, F1, BLEU-1, the judge) stays the run protocol's either way.

A method names its upstream answer in ``MethodSpec.upstream_answer`` (``"module:ATTRIBUTE"`` of an
:class:`UpstreamAnswer`, one module beside the method); a method with none (MemCoRe, the ``rag_*`` rows, FluxMem, which
answers through the harness's answerer itself, MemGPT) keeps the harness's prompt and the run says so in one line.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from memcore.errors import ConfigError
from memcore.eval.protocols import PROTOCOLS, EvalProtocol

#: The values of ``eval.answer_prompt``.
ANSWER_PROMPTS: tuple[str, ...] = ("harness", "upstream")


@dataclass(frozen=True)
class UpstreamAnswer:
    """A method's upstream answer prompt: ``spec`` builds the messages from the method's evidence
    (:meth:`EvalProtocol.context` then :meth:`EvalProtocol.messages`) and carries upstream's sampling; ``source``
    names where it comes from (``owner/repo path @ commit``). ``needs_layout``: the prompt is filled from the
    method's structured ``Evidence.layout`` (per-speaker lists), so the context cannot be cut to
    ``eval.token_cap``. ``requires``: method keys that must hold these values for upstream's layout
    (``{"context_format": "locomo"}``); a run that sets another value cannot honour ``upstream``."""

    spec: EvalProtocol
    source: str
    needs_layout: bool = False
    requires: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        """``<prompt name> (<source>)`` for disclosures."""
        return f"{self.spec.prompt_name} ({self.source})"


def upstream_answer(target: str) -> UpstreamAnswer | None:
    """The :class:`UpstreamAnswer` at ``"module:ATTRIBUTE"`` (``""``: None)."""
    if not target:
        return None
    module, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    if not isinstance(obj, UpstreamAnswer):
        raise TypeError(f"{target} is not an UpstreamAnswer")
    return obj


def no_upstream_line(method: str) -> str:
    """The one line a run under ``eval.answer_prompt=upstream`` logs for a method without an upstream prompt."""
    return (
        f"eval.answer_prompt=upstream: method {method} has no upstream answer prompt of its own; "
        "it answers with the harness's (the run protocol's) prompt."
    )


def check_answer_prompt(cfg: dict[str, Any], upstream: UpstreamAnswer | None) -> None:
    """Refuse (ConfigError) an ``eval.answer_prompt`` other than :data:`ANSWER_PROMPTS`, and ``upstream`` for a
    method that cannot honour it because of a switch the run sets: ``protocol.temperature`` /
    ``max_tokens`` or another sampling key of the protocol away from the protocol's defaults (upstream's sampling replaces
    them), ``eval.token_cap`` with a prompt filled from a structured layout, or a method key away from the
    value upstream's layout needs. ``cfg``: the resolved run config as a dict."""
    value = (cfg.get("eval") or {}).get("answer_prompt", "harness")
    if value not in ANSWER_PROMPTS:
        raise ConfigError(f"eval.answer_prompt={value!r}: use one of {', '.join(ANSWER_PROMPTS)}.")
    if value != "upstream" or upstream is None:
        return
    method = str(cfg["method"]["name"])
    protocol = cfg["protocol"]
    defaults = PROTOCOLS.get(str(protocol["name"])) if str(protocol["name"]) in PROTOCOLS else None
    if defaults is not None:
        # every sampling key the protocol reads; protocol.temperature is its temperature_default, and a
        # max_tokens of the protocol's own default is still explicit (the config leaves it null)
        explicit = {
            f"protocol.{'temperature' if k == 'temperature_default' else k}": (
                protocol.get("temperature" if k == "temperature_default" else k),
                None if k == "max_tokens" else v,
            )
            for k, v in defaults.sampling_defaults.items()
        }
        for key, (got, default) in explicit.items():
            if got is not None and got != default:
                raise ConfigError(
                    f"eval.answer_prompt=upstream answers {method} with upstream's sampling "
                    f"({upstream.spec.prompt_name}), but {key}={got} is set; drop {key} or use eval.answer_prompt=harness."
                )
    if upstream.needs_layout and (cfg.get("eval") or {}).get("token_cap") is not None:
        raise ConfigError(
            f"eval.answer_prompt=upstream fills {method}'s upstream prompt from per-speaker memory lists, which "
            "eval.token_cap cannot cut; drop eval.token_cap or use eval.answer_prompt=harness."
        )
    for key, want in upstream.requires:
        got = cfg["method"].get(key)
        if got != want:
            raise ConfigError(
                f"eval.answer_prompt=upstream needs {method}'s upstream context layout (method.{key}={want}), but "
                f"method.{key}={got} is set; drop it or use eval.answer_prompt=harness."
            )


__all__ = ["ANSWER_PROMPTS", "UpstreamAnswer", "check_answer_prompt", "no_upstream_line", "upstream_answer"]

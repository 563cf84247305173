"""FluxMem's model calls: the providers of its backbone and embedder, the one JSON call every stage makes
(the purpose's temperature, seeded, counted per purpose) and the validators of those replies."""

from __future__ import annotations

import logging
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from baselines.fluxmem import prompt_verify as V
from baselines.fluxmem import prompts as P
from baselines.fluxmem.config import FluxMemConfig
from memcore.interfaces import ChatBackbone, Embedder
from memcore.llm.json_reply import JSONResult, complete_json
from memcore.llm.usage import usage_of

log = logging.getLogger(__name__)
_SCORE_RE = re.compile(V.SCORE_PATTERN)
#: Reply budget of one graded verification (a number; upstream sets none).
VERIFY_MAX_TOKENS = 32


@dataclass
class FluxCalls:
    """The backbone and embedder behind one FluxMem, through providers called only when needed (so a build
    without fact extraction starts no LLM server). ``counters`` is the memory's one counter
    (``stats()['counters']``): the calls per purpose and the stages' own counts."""

    cfg: FluxMemConfig
    provide_backbone: Callable[[], ChatBackbone]
    provide_embedder: Callable[[], Embedder]
    seed: int
    counters: Counter[str]

    @property
    def backbone(self) -> ChatBackbone:
        return self.provide_backbone()

    @property
    def embedder(self) -> Embedder:
        return self.provide_embedder()

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.embedder.encode(texts)

    def temperature(self, purpose: str) -> float:
        """The sampling temperature of a call purpose (upstream's per-call values; fact extraction: 0)."""
        return float(getattr(self.cfg, f"temperature_{purpose}", 0.0))

    def json(self, purpose: str, stage: str, system: str, user: str, **kw: Any) -> JSONResult[Any]:
        """One JSON call at the purpose's temperature (seeded), counted per purpose (attempts included)."""
        temperature = self.temperature(purpose)
        result = complete_json(
            self.backbone,
            [{"role": "system", "content": system}, {"role": "user", "content": user}],
            stage=stage,
            prompt_version=f"{P.VERSION}:{purpose}",
            temperature=temperature,
            seed=self.seed if temperature > 0 else None,
            **kw,
        )
        self.counters[f"calls_{purpose}"] += result.attempts
        if not result.ok:
            self.counters[f"fallback_{purpose}"] += 1
        return result

    def grade(self, claim: str, evidence: str) -> float | None:
        """Upstream's graded verification of one candidate: the first number of the reply, clipped to [0, 1].
        A reply without a number is asked once more, then counted (``fallback_verify`` and the backbone's
        parse failures) and logged, and None is returned (upstream scores it 0.0)."""
        temperature = self.temperature("verify")
        messages = [
            {"role": "system", "content": V.VERIFY_SYSTEM},
            {"role": "user", "content": V.VERIFY_USER.format(claim=claim, evidence=evidence)},
        ]
        text = ""
        for attempt in (1, 2):
            version = V.VERSION if attempt == 1 else f"{V.VERSION}#retry-{attempt}"
            text = self.backbone.complete(
                messages,
                stage="retrieve",
                temperature=temperature,
                max_tokens=VERIFY_MAX_TOKENS,
                seed=self.seed if temperature > 0 else None,
                prompt_version=version,
            ).text
            self.counters["calls_verify"] += 1
            match = _SCORE_RE.search(text.strip())
            if match:
                return max(0.0, min(1.0, float(match.group(1))))
            usage = usage_of(self.backbone)
            if attempt == 1 and usage is not None:
                usage.record_parse_retry("retrieve")
        usage = usage_of(self.backbone)
        if usage is not None:
            usage.record_parse_failure("retrieve", "fluxmem graded verification → score 0 (as upstream)")
        self.counters["fallback_verify"] += 1
        log.warning(
            "retrieve: graded verification reply has no number after 2 attempts; scored 0. Reply: %r", text[:120]
        )
        return None


def validate_facts(obj: Any, limit: int) -> list[str]:
    """The distinct non-empty ``facts`` of a reply, at most ``limit``; ValueError without a list."""
    facts = obj.get("facts") if isinstance(obj, dict) else None
    if not isinstance(facts, list):
        raise ValueError("reply needs a 'facts' list")
    out = [str(f).strip() for f in facts if isinstance(f, str | int | float) and str(f).strip()]
    return list(dict.fromkeys(out))[:limit]


def validate_relevant(obj: Any, n: int) -> set[int]:
    """The 1-based candidate numbers in ``relevant`` that lie in 1..n; ValueError without a list."""
    rel = obj.get("relevant") if isinstance(obj, dict) else None
    if not isinstance(rel, list):
        raise ValueError("reply needs a 'relevant' list")
    out: set[int] = set()
    for v in rel:
        try:
            i = int(str(v).strip().strip("[]"))
        except ValueError:
            continue
        if 1 <= i <= n:
            out.add(i)
    return out


def validate_text(key: str) -> Callable[[Any], str]:
    """Validator of a reply whose ``key`` must be a non-empty string (returned stripped)."""

    def check(obj: Any) -> str:
        text = obj.get(key) if isinstance(obj, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"reply needs a non-empty '{key}' string")
        return text.strip()

    return check


def validate_rerun(obj: Any) -> tuple[str, bool]:
    """A skill re-run reply: (answer, success); ``success`` may be a true/false/yes/no string."""
    if not isinstance(obj, dict) or "success" not in obj:
        raise ValueError("reply needs 'answer' and 'success'")
    success = obj["success"]
    if isinstance(success, str) and success.strip().lower() in ("true", "false", "yes", "no"):
        success = success.strip().lower() in ("true", "yes")
    if not isinstance(success, bool):
        raise ValueError("'success' must be true or false")
    return str(obj.get("answer", "")).strip(), success

"""Ask for JSON, validate, retry, then fall back in a counted, logged way (never silently)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from memcore.interfaces import ChatBackbone, Message
from memcore.llm.usage import usage_of

log = logging.getLogger(__name__)
T = TypeVar("T")

_FENCE_RE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)


class ReplyFormatError(ValueError):
    """A reply that is not the JSON shape a prompt asked for."""


def extract_json(text: str) -> Any:
    """Parse the first JSON object in ``text`` (tolerates code fences and chatter around it)."""
    stripped = _FENCE_RE.sub("", text.strip()).strip()
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    start = stripped.find("{")
    while start != -1:
        depth, in_str, esc = 0, False, False
        for i in range(start, len(stripped)):
            ch = stripped[i]
            if in_str:
                if esc:
                    esc = False
                elif ch == "\\":
                    esc = True
                elif ch == '"':
                    in_str = False
            elif ch == '"':
                in_str = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    try:
                        return json.loads(stripped[start : i + 1])
                    except json.JSONDecodeError:
                        break
        start = stripped.find("{", start + 1)
    raise ReplyFormatError(f"no JSON object in reply: {text[:120]!r}")


@dataclass
class JSONResult(Generic[T]):
    value: T
    ok: bool
    attempts: int
    raw: str = ""
    truncated: bool = False  # the last reply used its whole max_tokens budget


def complete_json(
    backbone: ChatBackbone,
    messages: Sequence[Message],
    *,
    stage: str,
    validate: Callable[[Any], T],
    fallback: T,
    fallback_kind: str,
    prompt_version: str,
    max_attempts: int = 2,
    temperature: float = 0.0,
    max_tokens: int = 512,
    seed: int | None = None,
    retry_truncated: bool = True,
    top_p: float | None = None,
) -> JSONResult[T]:
    """Call ``backbone`` for JSON; ``validate`` maps the parsed object to ``T`` or raises ValueError.

    Attempt k>1 carries ``#retry-k`` in the prompt version, so the response cache cannot hand back
    the same bad reply. After ``max_attempts`` the ``fallback`` is returned with ``ok=False`` and
    the failure is counted in the backbone's usage tracker under ``fallback_kind``. With
    ``retry_truncated=False`` a bad reply that ran to ``max_tokens`` is not retried (a retry of the same
    request would run to the cap again); the caller gets it in ``raw`` with ``truncated=True``.
    """
    raw = ""
    truncated = False
    attempt = 0
    for attempt in range(1, max_attempts + 1):
        version = prompt_version if attempt == 1 else f"{prompt_version}#retry-{attempt}"
        msgs = list(messages)
        if attempt > 1:
            msgs = [
                *msgs,
                {"role": "user", "content": "Reply with one valid JSON object only, exactly in the requested format."},
            ]
        extra: dict[str, Any] = {} if top_p is None else {"top_p": top_p}  # wrappers without top_p keep working
        completion = backbone.complete(
            msgs,
            stage=stage,
            temperature=temperature,
            max_tokens=max_tokens,
            json=True,
            seed=seed,
            prompt_version=version,
            **extra,
        )
        raw = completion.text
        truncated = completion.completion_tokens >= max_tokens
        try:
            return JSONResult(validate(extract_json(raw)), True, attempt, raw, truncated)
        except (ValueError, TypeError, KeyError) as exc:
            log.debug("%s reply failed validation (attempt %d): %s", stage, attempt, exc)
            if truncated and not retry_truncated:
                break
            usage = usage_of(backbone)
            if attempt < max_attempts and usage is not None:
                usage.record_parse_retry(stage)
    usage = usage_of(backbone)
    if usage is not None:
        usage.record_parse_failure(stage, fallback_kind)
    log.warning(
        "%s: unparseable LLM reply after %d attempts%s; fallback %s. Reply: %r",
        stage,
        attempt,
        f" (cut at max_tokens={max_tokens})" if truncated else "",
        fallback_kind,
        raw[:200],
    )
    return JSONResult(fallback, False, attempt, raw, truncated)

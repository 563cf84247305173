"""The OpenAI-compatible transport (OpenAI, vLLM, llama.cpp server, Ollama): the bottom layer of a backbone stack.

:class:`OpenAITransport` sends one request with bounded concurrency and exponential backoff with a cap on
connection errors / timeouts / 429 / 5xx / malformed bodies. Caching and usage accounting are the layers
above it (:mod:`memcore.llm.stack`); :func:`openai_chat` builds the usual stack. API keys are read from the
environment at construction and never stored in configs, logs or exception texts.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from json import JSONDecodeError
from typing import TYPE_CHECKING, Any

from memcore.interfaces import Completion, Message
from memcore.llm.stack import build_stack
from memcore.llm.usage import UsageSink, UsageTracker

if TYPE_CHECKING:
    from memcore.llm.cache import ResponseCache
    from memcore.llm.stack import Metered
log = logging.getLogger(__name__)

_THINK_RE = re.compile(r"<think>.*?</think>\s*", re.DOTALL)


class BackboneError(RuntimeError):
    """The backbone could not be reached or kept failing; the message says what to do."""


class MissingKeyError(BackboneError):
    pass


class ServerExitedError(BackboneError):
    """The server this run started has exited: retrying against its closed port cannot succeed."""


def redact(text: str, secrets: Sequence[str]) -> str:
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    return text


class OpenAITransport:
    """Transport over the ``openai`` package: one request on the wire, retried with backoff; no cache, no usage.

    At most ``max_concurrency`` requests of this transport are in flight. A transport retry is counted on
    ``usage`` (``record_transport_retry``; the run's tracker). Every reply has ``cached=False``.
    ``model``, ``json_mode`` and ``extra_body`` are what the cache layer keys on besides the request.
    """

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None,
        api_key: str,
        name: str = "",
        extra_body: dict[str, Any] | None = None,
        json_mode: bool = True,
        max_concurrency: int = 4,
        timeout_s: float = 120.0,
        max_attempts: int = 8,
        backoff_base_s: float = 1.0,
        backoff_cap_s: float = 30.0,
        usage: UsageSink | None = None,
        exit_reason: Callable[[], str | None] | None = None,
    ) -> None:
        import openai

        self._openai = openai
        self.model = model
        self.name = name or model
        self.base_url = base_url or "https://api.openai.com/v1"
        self._secrets = [api_key]
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key, max_retries=0, timeout=timeout_s)
        self.extra_body = dict(extra_body or {})
        self.json_mode = json_mode
        self._sem = threading.BoundedSemaphore(max(1, int(max_concurrency)))
        self.max_attempts = max(1, int(max_attempts))
        self.backoff_base_s = backoff_base_s
        self.backoff_cap_s = backoff_cap_s
        self._usage = usage
        self._exit_reason = exit_reason
        self._retry_log = RetryLog(self.base_url)

    def _raise_if_server_exited(self) -> None:
        """For a server the run owns: a connection failure after it exited ends the call at once, with how it died."""
        reason = self._exit_reason() if self._exit_reason is not None else None
        if reason is not None:
            raise ServerExitedError(
                f"{reason}. Nothing more can be answered; rerun the same command to resume (finished items are "
                "kept). A crash on the first completion means a bad llama.cpp build: rerun `make install`."
            )

    def connection_kwargs(self) -> dict[str, Any]:
        """``base_url``, ``model`` and ``api_key`` for an in-process client that must reach the same
        server (e.g. mem0ai's own OpenAI client). Contains the secret: never log or persist it."""
        return {"base_url": self.base_url, "model": self.model, "api_key": self._secrets[0]}

    # -- health -------------------------------------------------------------------------------
    def check_reachable(self, timeout_s: float = 10.0) -> None:
        """Fail fast with one clear message when the server is down or the key is wrong."""
        try:
            self._client.with_options(timeout=timeout_s, max_retries=0).models.list()
        except self._openai.AuthenticationError:
            raise BackboneError(
                f"the server at {self.base_url} rejected the API key for model {self.model}; check the key's environment variable."
            ) from None
        except (self._openai.APIConnectionError, self._openai.APITimeoutError):
            raise BackboneError(
                f"cannot reach the chat backbone at {self.base_url} (model {self.model}). Start the server "
                "(scripts/serve_vllm.sh for Qwen3; backbone=local starts llama.cpp itself) or fix backbone.base_url."
            ) from None
        except self._openai.APIStatusError as exc:
            # Some OpenAI-compatible servers do not implement /models; a status reply still proves reachability.
            log.debug("models.list returned HTTP %s; treating server as reachable", exc.status_code)

    # -- completion ---------------------------------------------------------------------------
    def complete(
        self,
        messages: Sequence[Message],
        *,
        stage: str,
        temperature: float = 0.0,
        max_tokens: int = 256,
        json: bool = False,
        seed: int | None = None,
        prompt_version: str = "",
        top_p: float | None = None,
    ) -> Completion:
        """One completion (``<think>`` blocks stripped), retried with capped exponential backoff and jitter on
        transport faults; raises :class:`BackboneError` after ``max_attempts``. ``prompt_version`` is not sent."""
        msgs = [dict(m) for m in messages]
        oa = self._openai
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": msgs,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        if seed is not None:
            kwargs["seed"] = int(seed)
        if top_p is not None:
            kwargs["top_p"] = float(top_p)
        if json and self.json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if self.extra_body:
            kwargs["extra_body"] = self.extra_body
        last: str = ""
        not_completion = False  # the last failure was a reply that is not a chat completion (HTML, empty, cut)
        for attempt in range(1, self.max_attempts + 1):
            retry_after = 0.0
            kind = "other"
            with self._sem:
                t0 = time.perf_counter()
                raw: Any = None
                try:
                    raw = self._client.chat.completions.with_raw_response.create(**kwargs)
                    resp = raw.parse()
                except (oa.APIConnectionError, oa.APITimeoutError) as exc:
                    self._raise_if_server_exited()
                    last, not_completion = f"{type(exc).__name__}: {redact(str(exc), self._secrets)}", False
                    kind = "timeout" if isinstance(exc, oa.APITimeoutError) else "drop"
                except oa.RateLimitError as exc:
                    last, not_completion = f"{type(exc).__name__}: {redact(str(exc), self._secrets)}", False
                    retry_after = _retry_after_s(exc.response)
                    kind = "429"
                except oa.InternalServerError as exc:
                    last, not_completion = f"{type(exc).__name__}: {redact(str(exc), self._secrets)}", False
                    kind = _status_kind(exc.status_code)
                except (JSONDecodeError, oa.APIResponseValidationError) as exc:
                    # A 200 whose body is cut or not the completion schema (a proxy or server dying mid-reply).
                    last, not_completion = _describe_body(raw, f"malformed response body ({type(exc).__name__})"), True
                    kind = "malformed"
                except oa.AuthenticationError:
                    raise MissingKeyError(
                        f"{self.base_url} rejected the API key (model {self.model}); set the key's environment variable correctly."
                    ) from None
                except oa.APIStatusError as exc:
                    if exc.status_code in (408, 409, 425) or exc.status_code >= 500:
                        last, not_completion = f"HTTP {exc.status_code}", False
                        kind = _status_kind(exc.status_code)
                    else:
                        raise BackboneError(
                            f"{self.base_url} refused the request for model {self.model} with HTTP {exc.status_code}: "
                            f"{redact(str(exc), self._secrets)[:300]}"
                            + (" Check backbone.model and backbone.base_url." if exc.status_code == 404 else "")
                        ) from None
                else:
                    latency = time.perf_counter() - t0
                    text = _message_text(resp)
                    if text is None:
                        last, not_completion = _describe_body(raw, "empty or malformed completion payload"), True
                        kind = "malformed"
                    else:
                        usage = getattr(resp, "usage", None)
                        return Completion(
                            text=_THINK_RE.sub("", text).strip(),
                            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                            latency_s=latency,
                            cached=False,
                            model=self.model,
                        )
            if attempt < self.max_attempts:
                delay = min(self.backoff_cap_s, self.backoff_base_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
                delay = max(delay, retry_after)  # a 429's Retry-After is the server's own estimate: never retry sooner
                self._retry_log.retry(stage, kind, last, attempt, self.max_attempts - 1, delay)
                time.sleep(delay)
                if self._usage is not None:
                    self._usage.record_transport_retry(stage, kind, time.perf_counter() - t0)
        fix = (
            " backbone.base_url must be the /v1 root of an OpenAI-compatible server (a wrong path, a proxy or a "
            "captive portal answers like this); fix it and rerun the same command, finished items are kept."
            if not_completion
            else " Is the server up? Rerun the same command to resume; finished items are kept."
        )
        raise BackboneError(
            f"the chat backbone at {self.base_url} (model {self.model}) failed {self.max_attempts} times in a row "
            f"(last: {last}).{fix}"
        )


class RetryLog:
    """Retries of one transport as at most one WARNING line a minute: the first retry of a quiet spell is logged
    as it happens; later ones are counted and summarised (how many, by stage and kind, the last failure) by the
    first retry after ``every_s`` seconds. The exact counts of a run are in ``cost.json`` (``retries_by_kind``)."""

    def __init__(self, base_url: str, every_s: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.base_url = base_url
        self.every_s = every_s
        self._clock = clock
        self._lock = threading.Lock()
        self._last_line: float | None = None
        self._pending: dict[tuple[str, str], int] = {}

    def retry(self, stage: str, kind: str, last: str, attempt: int, of: int, delay: float) -> None:
        """Record one retry; log a line when the minute since the last one has passed (or there was none)."""
        with self._lock:
            now = self._clock()
            self._pending[(stage, kind)] = self._pending.get((stage, kind), 0) + 1
            if self._last_line is not None and now - self._last_line < self.every_s:
                return
            pending, self._pending = self._pending, {}
            since, self._last_line = self._last_line, now
        n = sum(pending.values())
        if since is None or n == 1:
            log.warning(
                "%s call to %s failed (%s); retry %d/%d in %.1fs", stage, self.base_url, last, attempt, of, delay
            )
            if since is None:
                log.warning("further retries against %s are summarised once a minute", self.base_url)
            return
        counts = ", ".join(f"{st} {k}: {c}" for (st, k), c in sorted(pending.items()))
        log.warning(
            "%d retries against %s in the last %.0f s (%s); last: %s", n, self.base_url, now - since, counts, last
        )


def _status_kind(status: int) -> str:
    """The transport-fault kind of a retried HTTP status (:data:`memcore.llm.usage.TRANSPORT_FAULTS`)."""
    return str(status) if status in (429, 500, 503) else f"http_{status}"


#: The longest Retry-After a 429 may impose before a retry (seconds); a longer one is capped to it.
MAX_RETRY_AFTER_S = 60.0


def _retry_after_s(response: Any) -> float:
    """The ``Retry-After`` (or ``retry-after-ms``) header of a 429 in seconds, capped at
    :data:`MAX_RETRY_AFTER_S`; 0 when absent or not a number (an HTTP date counts as absent)."""
    headers = getattr(response, "headers", None) or {}
    try:
        if headers.get("retry-after-ms") is not None:
            return min(MAX_RETRY_AFTER_S, max(0.0, float(headers["retry-after-ms"]) / 1000.0))
        if headers.get("retry-after") is not None:
            return min(MAX_RETRY_AFTER_S, max(0.0, float(headers["retry-after"])))
    except (TypeError, ValueError):
        pass
    return 0.0


def _describe_body(raw: Any, what: str) -> str:
    """``what``, plus the status, content type and first characters of the reply ``raw`` (a raw openai response)
    when there is one: what the server said instead of a chat completion."""
    http = getattr(raw, "http_response", None)
    if http is None:
        return what
    snippet = " ".join(http.text.split())[:80]  # httpx decodes with errors="replace": never raises
    ctype = http.headers.get("content-type", "no content type")
    said = f"HTTP {http.status_code} {ctype}, " + (f"body {snippet!r}" if snippet else "empty body")
    return f"{what}: the server sent {said}"


def _message_text(resp: Any) -> str | None:
    try:
        content = resp.choices[0].message.content
    except (AttributeError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def openai_chat(*, cache: ResponseCache | None = None, usage: UsageTracker | None = None, **transport: Any) -> Metered:
    """The usual stack over one OpenAI-compatible server: :class:`OpenAITransport` (``transport`` keyword
    arguments) → response cache (when ``cache``) → usage metering into ``usage`` (a new tracker by default)."""
    tracker = usage if usage is not None else UsageTracker()
    return build_stack(OpenAITransport(usage=tracker, **transport), tracker=tracker, cache=cache)

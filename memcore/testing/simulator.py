"""An OpenAI-compatible chat server that behaves like a real endpoint, for rehearsing a long sweep without a key.

``memcore-simulate`` (:mod:`memcore.commands.simulate`) or :func:`running_simulator` in-process serves, on
127.0.0.1 only:

- ``POST /v1/chat/completions``: a schema-valid reply for every prompt the harness sends
  (:mod:`memcore.testing.sim_replies`), with ``usage`` from a simple deterministic tokenizer (:func:`count_tokens`),
  ``n`` choices, ``response_format`` JSON mode, ``max_tokens`` truncation (``finish_reason: "length"``) and a
  latency model: ``(ttft_s + completion_tokens / tokens_per_s) * time_scale`` seconds before the reply;
- ``GET /v1/models``: the model names it serves; another model gets HTTP 404 ``model_not_found`` as OpenAI does;
  with ``api_key`` set, a request without ``Authorization: Bearer <api_key>`` gets HTTP 401 ``invalid_api_key``;
- ``GET /stats``: counts per fault kind, per prompt kind, tokens and truncations (also written on exit with
  ``--stats-out``).

Faults, at configurable rates: HTTP 429 with ``Retry-After``, 500, 503, a dropped connection (the request read,
the socket closed without a reply) and a read timeout (no reply for ``hang_s`` seconds, past the client's timeout,
then the socket closed). Each is drawn from a hash of (seed, request body, attempt), where the attempt is how often
this server has seen the same body, so a run is reproducible and the same request is faulted at most
``max_faults_per_request`` times in a row (a client with more attempts than that never gives up).
``wrong_json``: that fraction of JSON-mode requests (drawn from (seed, request body) only: the reply is a function
of the request, as a cache assumes) gets prose with no JSON object, so every method's parse-retry and fallback
path runs. ``body_mode`` makes every chat reply an HTML page, an empty body or a cut JSON body (a wrong
``base_url``, a proxy in the way) for bad-input tests.

Replies mean nothing: scores of a run against the simulator are plumbing checks, never results.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memcore.interfaces import Message
from memcore.testing.sim_replies import method_responders
from memcore.testing.sim_replies import reply as default_reply

#: The models the backbone presets name (configs/backbone/*.yaml of kind openai_compatible); a test keeps them in
#: step with the presets.
DEFAULT_MODELS = ("gpt-4o-mini-2024-07-18", "gpt-4o-2024-08-06", "qwen3-8b", "qwen3-14b")
FAULT_KINDS = ("429", "500", "503", "drop", "timeout")
BODY_MODES = ("normal", "html", "empty", "malformed")
#: A reply with no JSON object in it (the ``wrong_json`` fault).
WRONG_JSON_TEXT = "Sure! Here is what I found, in plain words and without any braces at all."
HTML_BODY = "<html><head><title>Sign in</title></head><body><h1>Welcome to the guest network</h1></body></html>"

_TOKEN_RE = re.compile(r"\w+|[^\w\s]")

#: ``(messages) -> (prompt kind, reply text)``.
Replier = Callable[[Sequence[Message]], tuple[str, str]]


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by the simulator's tokenizer: words and single punctuation marks."""
    return len(_TOKEN_RE.findall(text))


def truncate_tokens(text: str, limit: int) -> str:
    """``text`` cut after its first ``limit`` tokens (:func:`count_tokens`' tokens)."""
    for i, m in enumerate(_TOKEN_RE.finditer(text)):
        if i == limit - 1:
            return text[: m.end()]
    return text


def prompt_tokens(messages: Sequence[Message]) -> int:
    """Prompt tokens of a chat request: every message's content plus 3 per message and 3 for the reply priming
    (OpenAI's chat overhead)."""
    return sum(count_tokens(str(m.get("content") or "")) + 3 for m in messages) + 3


def _unit(*parts: object) -> float:
    """A number in [0, 1) that is a pure function of ``parts``."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass(frozen=True)
class SimulatorConfig:
    """What the simulator serves and how it misbehaves; :meth:`validate` raises ValueError naming the option."""

    models: tuple[str, ...] = DEFAULT_MODELS
    seed: int = 0
    ttft_s: float = 0.4
    tokens_per_s: float = 80.0
    time_scale: float = 1.0
    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_503: float = 0.0
    rate_drop: float = 0.0
    rate_timeout: float = 0.0
    wrong_json: float = 0.0
    max_faults_per_request: int = 3
    retry_after_s: int = 1
    hang_s: float = 150.0  # real seconds (not scaled): it must outlast the client's timeout
    api_key: str | None = None
    body_mode: str = "normal"

    def rates(self) -> dict[str, float]:
        return {
            "429": self.rate_429,
            "500": self.rate_500,
            "503": self.rate_503,
            "drop": self.rate_drop,
            "timeout": self.rate_timeout,
        }

    def validate(self) -> SimulatorConfig:
        if not self.models or any(not m for m in self.models):
            raise ValueError("--model: give at least one non-empty model name")
        for name, rate in {**{f"rate_{k}": v for k, v in self.rates().items()}, "wrong_json": self.wrong_json}.items():
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"--{name.replace('_', '-')} must be in [0, 1], got {rate}")
        if sum(self.rates().values()) > 1.0:
            raise ValueError("the fault rates (--rate-429 … --rate-timeout) add up to more than 1")
        if self.ttft_s < 0 or self.tokens_per_s <= 0 or self.time_scale < 0:
            raise ValueError("--ttft-s and --time-scale must be >= 0 and --tokens-per-s > 0")
        if self.max_faults_per_request < 0 or self.retry_after_s < 0 or self.hang_s < 0:
            raise ValueError("--max-faults-per-request, --retry-after-s and --hang-s must be >= 0")
        if self.body_mode not in BODY_MODES:
            raise ValueError(f"--body-mode must be one of {', '.join(BODY_MODES)}, got {self.body_mode!r}")
        return self

    def latency_s(self, completion_tokens: int) -> float:
        """Seconds a reply of ``completion_tokens`` takes: time to first token plus decoding, scaled."""
        return (self.ttft_s + completion_tokens / self.tokens_per_s) * self.time_scale


@dataclass
class SimulatorStats:
    """What the simulator saw and did (thread-safe through the server's lock)."""

    requests: int = 0  # chat requests received, faulted or not
    replies: int = 0  # chat completions sent (HTTP 200)
    faults: Counter[str] = field(default_factory=Counter)
    prompt_kinds: Counter[str] = field(default_factory=Counter)
    wrong_json: int = 0
    truncated: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unauthorized: int = 0
    unknown_model: int = 0
    bad_request: int = 0
    simulated_latency_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["faults"] = {k: self.faults.get(k, 0) for k in FAULT_KINDS}
        out["prompt_kinds"] = dict(sorted(self.prompt_kinds.items()))
        out["simulated_latency_s"] = round(self.simulated_latency_s, 3)
        return out


def _error(message: str, type_: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


class _Handler(BaseHTTPRequestHandler):
    server: SimulatorServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, status: int, body: bytes, content_type: str = "application/json", **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers.items():
            self.send_header(k.replace("_", "-"), v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: dict[str, Any], **headers: str) -> None:
        self._send(status, json.dumps(obj).encode(), **headers)

    def _authorized(self) -> bool:
        key = self.server.config.api_key
        if key is None or self.headers.get("Authorization", "") == f"Bearer {key}":
            return True
        with self.server.lock:
            self.server.stats.unauthorized += 1
        self._json(
            401,
            _error(
                "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            ),
        )
        return False

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path == "/stats":
            self._json(200, self.server.stats_json())
        elif path == "/v1/models":
            if self._authorized():
                data = [
                    {"id": m, "object": "model", "created": 0, "owned_by": "simulator"}
                    for m in self.server.config.models
                ]
                self._json(200, {"object": "list", "data": data})
        else:
            self._json(404, _error(f"no route {path}", "invalid_request_error", None))

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
        if path != "/v1/chat/completions":
            self._json(404, _error(f"no route {path}", "invalid_request_error", None))
            return
        if not self._authorized():
            return
        try:
            req = json.loads(raw or b"{}")
            messages = req["messages"]
            if not isinstance(messages, list) or not messages:
                raise ValueError("messages must be a non-empty list")
            if req.get("stream"):
                raise ValueError("stream=true is not simulated")
        except (ValueError, KeyError, TypeError) as exc:
            with self.server.lock:
                self.server.stats.bad_request += 1
            self._json(400, _error(f"invalid request: {exc}", "invalid_request_error", None))
            return
        cfg = self.server.config
        model = str(req.get("model", ""))
        if model not in cfg.models:
            with self.server.lock:
                self.server.stats.unknown_model += 1
            msg = f"The model `{model}` does not exist or you do not have access to it."
            self._json(404, _error(msg, "invalid_request_error", "model_not_found"))
            return
        fault = self.server.draw_fault(raw)
        if fault == "429":
            msg = "Rate limit reached for requests. Please try again later."
            self._json(429, _error(msg, "requests", "rate_limit_exceeded"), Retry_After=str(cfg.retry_after_s))
        elif fault in ("500", "503"):
            self._json(
                int(fault), _error("The server had an error while processing your request.", "server_error", None)
            )
        elif fault == "drop":
            self._hang_up()
        elif fault == "timeout":
            self.server.stopped.wait(cfg.hang_s)
            self._hang_up()
        else:
            self._complete(req, raw, messages, model)

    def _complete(self, req: dict[str, Any], raw: bytes, messages: list[Message], model: str) -> None:
        cfg = self.server.config
        if cfg.body_mode == "html":
            self._send(200, HTML_BODY.encode(), "text/html; charset=utf-8")
            return
        if cfg.body_mode == "empty":
            self._send(200, b"")
            return
        kind, text = self.server.replier(messages)
        json_mode = isinstance(req.get("response_format"), dict) and req["response_format"].get("type") in (
            "json_object",
            "json_schema",
        )
        wrong = json_mode and _unit(cfg.seed, "wrong-json", raw) < cfg.wrong_json
        if wrong:
            text = WRONG_JSON_TEXT
        limit = req.get("max_completion_tokens", req.get("max_tokens"))
        finish = "stop"
        if isinstance(limit, int) and limit > 0 and count_tokens(text) > limit:
            text, finish = truncate_tokens(text, limit), "length"
        n = max(1, int(req.get("n") or 1))
        completion = count_tokens(text)
        prompt = prompt_tokens(messages)
        latency = cfg.latency_s(completion)
        with self.server.lock:
            st = self.server.stats
            st.replies += 1
            st.prompt_kinds[kind] += 1
            st.wrong_json += int(wrong)
            st.truncated += int(finish == "length")
            st.prompt_tokens += prompt
            st.completion_tokens += completion * n
            st.simulated_latency_s += latency
        if self.server.stopped.wait(latency):
            self._hang_up()
            return
        choice = {"message": {"role": "assistant", "content": text}, "finish_reason": finish, "logprobs": None}
        body = {
            "id": "chatcmpl-sim-" + hashlib.sha256(raw).hexdigest()[:24],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": f"fp_sim_{cfg.seed}",
            "choices": [{"index": i, **choice} for i in range(n)],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion * n,
                "total_tokens": prompt + completion * n,
            },
        }
        if cfg.body_mode == "malformed":
            blob = json.dumps(body).encode()
            self._send(200, blob[: len(blob) // 2])
            return
        self._json(200, body)


class SimulatorServer(ThreadingHTTPServer):
    """The simulator's HTTP server on 127.0.0.1; ``base_url`` is its ``/v1`` root."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, config: SimulatorConfig, *, port: int = 0, replier: Replier = default_reply) -> None:
        self.config = config.validate()
        self.replier = replier
        if replier is default_reply:
            method_responders()  # import every method's responder now: the first request must not wait for it
        self.stats = SimulatorStats()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self._seen: Counter[str] = Counter()
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/v1"

    def draw_fault(self, raw: bytes) -> str | None:
        """The fault for this request body at its current attempt (None: answer it), counted in the stats."""
        key = hashlib.sha256(raw).hexdigest()
        with self.lock:
            attempt = self._seen[key]
            self._seen[key] += 1
            self.stats.requests += 1
            if attempt >= self.config.max_faults_per_request:
                return None
            u = _unit(self.config.seed, "fault", key, attempt)
            edge = 0.0
            for kind, rate in self.config.rates().items():
                edge += rate
                if u < edge:
                    self.stats.faults[kind] += 1
                    return kind
        return None

    def stats_json(self) -> dict[str, Any]:
        with self.lock:
            return {"config": {**asdict(self.config), "api_key": None}, **self.stats.to_json()}

    def stop(self) -> None:
        """Wake hanging handlers, stop serving and close the port."""
        self.stopped.set()
        self.shutdown()
        self.server_close()


@contextlib.contextmanager
def running_simulator(
    config: SimulatorConfig | None = None, *, port: int = 0, replier: Replier = default_reply
) -> Iterator[SimulatorServer]:
    """Serve the simulator in a daemon thread for the ``with`` block (a free port by default)."""
    server = SimulatorServer(config or SimulatorConfig(), port=port, replier=replier)
    thread = threading.Thread(target=server.serve_forever, name="memcore-simulate", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.stop()
        thread.join(timeout=5)

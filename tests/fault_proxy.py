"""Fault injection for the chat backbone: a fake OpenAI-compatible upstream and a scripted proxy.

Both listen on 127.0.0.1 only, run in daemon threads of the test process, serve a bounded number of
requests and stop by themselves after ``lifetime_s`` — a forgotten instance cannot outlive its test
for long or loop forever.

``FakeUpstream`` answers ``GET /v1/models`` and ``POST /v1/chat/completions`` from a deterministic
``responder(messages) -> str``; ``kill()`` resets in-flight connections and closes the port (what a
crashed server looks like to a client), ``start()`` again binds the same port.

``FaultProxy`` forwards to an upstream and applies one action per chat-completion request, taken in
arrival order from ``schedule`` (a list, or a function of the request index); other paths pass.
Actions:

==================  ===========================================================================
``pass``            forward unchanged
``drop``            read the request, close the connection without a reply
``reset``           read the request, reset the connection (TCP RST)
``delay:S``         wait S seconds (capped at 30), then forward (a client timeout fires first)
``status:N``        reply HTTP N with an OpenAI-style error body (429, 500, 503, …)
``truncate``        forward, reply 200 with the JSON body cut in half (Content-Length matches)
``cut``             forward, announce the full Content-Length, send half, close
``html``            reply 200 ``text/html`` (a captive portal or a wrong URL)
``empty_choices``   reply 200 with ``{"choices": []}``
``null_content``    forward, set ``choices[0].message.content`` to null
``garbage_content`` forward, replace the completion text by prose that holds no JSON object
``cut_content``     forward, cut the completion text in half (a JSON reply stops mid-object)
==================  ===========================================================================
"""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

Responder = Callable[[list[dict[str, Any]]], str]
Schedule = Sequence[str] | Callable[[int], str]

ACTIONS = (
    "pass",
    "drop",
    "reset",
    "delay",
    "status",
    "truncate",
    "cut",
    "html",
    "empty_choices",
    "null_content",
    "garbage_content",
    "cut_content",
)
MAX_DELAY_S = 30.0
GARBAGE = "Sure! Here is what I found, in plain words and without any braces at all."

_QUESTION_RE = re.compile(r"Question:\s*(.+?)\s*(?:Short answer:|$)", re.DOTALL)
_WORD_RE = re.compile(r"[A-Za-z0-9']+")


def scripted_answer(messages: list[dict[str, Any]]) -> str:
    """A deterministic stand-in for a model: the answer is a function of the prompt only.

    It takes the prompt line (other than the question) sharing the most words with the question and
    answers with its last twenty words (so scores are non-trivial and differ per item), wrapped as
    ``{"answer": …}`` when a message mentions JSON."""
    text = "\n".join(str(m.get("content") or "") for m in messages)
    found = _QUESTION_RE.findall(text)
    question = found[-1] if found else (text.strip().splitlines() or [""])[-1]
    q_words = {w.lower() for w in _WORD_RE.findall(question) if len(w) > 3}
    best, best_score = "", -1
    for line in text.splitlines():
        if question in line or not line.strip():
            continue
        score = len(q_words & {w.lower() for w in _WORD_RE.findall(line)})
        if score > best_score:
            best, best_score = line, score
    answer = " ".join(_WORD_RE.findall(best)[-20:]) or "unknown"
    return json.dumps({"answer": answer}) if "json" in text.lower() else answer


def _parse_action(action: str) -> tuple[str, float]:
    name, _, arg = action.partition(":")
    if name not in ACTIONS:
        raise ValueError(f"unknown fault action {action!r}; known: {', '.join(ACTIONS)}")
    if name in ("delay", "status") and not arg:
        raise ValueError(f"fault action {name!r} needs an argument, e.g. {name}:{'2' if name == 'delay' else '429'}")
    return name, float(arg) if arg else 0.0


def _reset(sock: socket.socket) -> None:
    """Close with SO_LINGER 0: the peer sees a TCP reset, like a killed server."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeout) or a reset we caused ourselves: expected here


class _BoundedServer:
    """Shared life cycle: bind 127.0.0.1, serve in a thread, stop after ``max_requests`` or ``lifetime_s``."""

    def __init__(self, port: int, max_requests: int, lifetime_s: float) -> None:
        self.port = port
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.requests = 0
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._active: set[socket.socket] = set()
        self.kills = 0

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> _BoundedServer:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", self.port), self._handler())
        self.port = int(server.server_address[1])
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True, name=type(self).__name__
        )
        self._thread.start()
        if self._timer is None:
            self._timer = threading.Timer(self.lifetime_s, self.stop)
            self._timer.daemon = True
            self._timer.start()
        return self

    def _take(self, sock: socket.socket) -> int | None:
        """Register a request; its index, or None when the request budget is spent."""
        with self._lock:
            if self.requests >= self.max_requests:
                return None
            self.requests += 1
            self._active.add(sock)
            return self.requests - 1

    def _release(self, sock: socket.socket) -> None:
        with self._lock:
            self._active.discard(sock)

    def kill(self) -> None:
        """Stop like a crashed process: reset in-flight connections, close the listening port."""
        server, self._server = self._server, None
        if server is None:
            return
        self.kills += 1
        with self._lock:
            active = list(self._active)
            self._active.clear()
        for sock in active:
            _reset(sock)
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def stop(self) -> None:
        """Stop for good (also cancels the lifetime timer)."""
        if self._timer is not None:
            self._timer.cancel()
        self.kill()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeUpstream(_BoundedServer):
    """A tiny OpenAI-compatible server. ``api_key`` (when set) must arrive as the bearer token;
    ``echo_key_in_errors`` makes its 401/400 error bodies quote the Authorization header, the way a
    careless proxy might, so tests can check that the key never reaches an exception text."""

    def __init__(
        self,
        responder: Responder = scripted_answer,
        *,
        port: int = 0,
        model: str = "fake-model",
        api_key: str | None = None,
        fail_with_status: int | None = None,
        echo_key_in_errors: bool = False,
        latency_s: float = 0.0,
        max_requests: int = 5000,
        lifetime_s: float = 600.0,
    ) -> None:
        super().__init__(port, max_requests, lifetime_s)
        self.responder = responder
        self.latency_s = latency_s
        self.model = model
        self.api_key = api_key
        self.fail_with_status = fail_with_status
        self.echo_key_in_errors = echo_key_in_errors
        self.chat_requests = 0
        self.auth_seen: set[str] = set()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _reply(self, status: int, obj: Any) -> None:
                body = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _auth_ok(self) -> bool:
                auth = self.headers.get("Authorization", "")
                with owner._lock:
                    owner.auth_seen.add(auth)
                if owner.api_key is None or auth == f"Bearer {owner.api_key}":
                    return True
                detail = f" (got {auth})" if owner.echo_key_in_errors else ""
                self._reply(
                    401, {"error": {"message": f"Incorrect API key provided{detail}", "code": "invalid_api_key"}}
                )
                return False

            def do_GET(self) -> None:
                if owner._take(self.connection) is None:
                    return _reset(self.connection)
                try:
                    if not self._auth_ok():
                        return
                    if self.path.rstrip("/").endswith("/models"):
                        self._reply(200, {"object": "list", "data": [{"id": owner.model, "object": "model"}]})
                    else:
                        self._reply(404, {"error": {"message": f"no route {self.path}"}})
                finally:
                    owner._release(self.connection)

            def do_POST(self) -> None:
                if owner._take(self.connection) is None:
                    return _reset(self.connection)
                try:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    if not self._auth_ok():
                        return
                    if not self.path.rstrip("/").endswith("/chat/completions"):
                        return self._reply(404, {"error": {"message": f"no route {self.path}"}})
                    if owner.fail_with_status is not None:
                        auth = self.headers.get("Authorization", "")
                        detail = f" for {auth}" if owner.echo_key_in_errors else ""
                        return self._reply(
                            owner.fail_with_status, {"error": {"message": f"request rejected{detail}", "code": "bad"}}
                        )
                    req = json.loads(body)
                    if owner.latency_s:
                        time.sleep(owner.latency_s)
                    text = owner.responder(req.get("messages", []))
                    with owner._lock:
                        owner.chat_requests += 1
                    prompt_tokens = sum(len(str(m.get("content") or "")) // 4 + 1 for m in req.get("messages", []))
                    self._reply(
                        200,
                        {
                            "id": f"chatcmpl-{owner.chat_requests}",
                            "object": "chat.completion",
                            "created": int(time.time()),
                            "model": req.get("model", owner.model),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": text},
                                    "finish_reason": "stop",
                                }
                            ],
                            "usage": {
                                "prompt_tokens": prompt_tokens,
                                "completion_tokens": len(text) // 4 + 1,
                                "total_tokens": prompt_tokens + len(text) // 4 + 1,
                            },
                        },
                    )
                finally:
                    owner._release(self.connection)

        return Handler


class FaultProxy(_BoundedServer):
    """Forward to ``upstream`` (a base URL such as ``http://127.0.0.1:PORT/v1``), injecting faults.

    ``schedule`` gives the action of the k-th chat-completion request (k from 0): a list (requests
    past its end get ``default``) or a function of k. ``only`` (a predicate on the parsed request
    body) narrows which chat requests are counted and faulted; the rest pass. ``log`` records
    (k, action) as applied."""

    def __init__(
        self,
        upstream: str,
        schedule: Schedule = (),
        *,
        default: str = "pass",
        only: Callable[[dict[str, Any]], bool] | None = None,
        port: int = 0,
        max_requests: int = 5000,
        lifetime_s: float = 600.0,
    ) -> None:
        super().__init__(port, max_requests, lifetime_s)
        self.only = only
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"FaultProxy only forwards to loopback, not {upstream}")
        self.upstream_host = parts.hostname
        self.upstream_port = parts.port or 80
        self.upstream_prefix = parts.path.rstrip("/")
        self.schedule = schedule
        self.default = default
        if not callable(schedule):
            for a in schedule:
                _parse_action(a)
        _parse_action(default)
        self.chat_index = 0
        self.log: list[tuple[int, str]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.upstream_prefix}"

    def action_for(self, k: int) -> str:
        if callable(self.schedule):
            return self.schedule(k)
        return self.schedule[k] if k < len(self.schedule) else self.default

    def counts(self) -> dict[str, int]:
        """How often each action was applied."""
        out: dict[str, int] = {}
        with self._lock:
            for _, a in self.log:
                out[a] = out.get(a, 0) + 1
        return out

    def _forward(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str, bytes]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            conn.request(method, path, body=body or None, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.getheader("Content-Type", "application/json"), resp.read()
        except (OSError, http.client.HTTPException) as exc:
            err = json.dumps({"error": {"message": f"bad gateway: {type(exc).__name__}"}}).encode()
            return 502, "application/json", err
        finally:
            conn.close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _send(self, status: int, ctype: str, body: bytes, *, length: int | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body) if length is None else length))
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def _handle(self, method: str) -> None:
                if owner._take(self.connection) is None:
                    return _reset(self.connection)
                try:
                    body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                    headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                    is_chat = method == "POST" and self.path.rstrip("/").endswith("/chat/completions")
                    if is_chat and owner.only is not None:
                        is_chat = owner.only(json.loads(body or b"{}"))
                    if is_chat:
                        with owner._lock:
                            k = owner.chat_index
                            owner.chat_index += 1
                        action = owner.action_for(k)
                        with owner._lock:
                            owner.log.append((k, action))
                    else:
                        action = "pass"
                    self._apply(action, method, body, headers)
                finally:
                    owner._release(self.connection)

            def _apply(self, action: str, method: str, body: bytes, headers: dict[str, str]) -> None:
                name, arg = _parse_action(action)
                if name == "drop":
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if name == "reset":
                    self.close_connection = True
                    return _reset(self.connection)
                if name == "status":
                    code = int(arg)
                    err = {"error": {"message": f"injected HTTP {code}", "type": "injected", "code": str(code)}}
                    return self._send(code, "application/json", json.dumps(err).encode())
                if name == "html":
                    return self._send(200, "text/html", b"<html><body>Welcome to the network</body></html>")
                if name == "empty_choices":
                    return self._send(
                        200, "application/json", b'{"id": "x", "object": "chat.completion", "choices": []}'
                    )
                if name == "delay":
                    time.sleep(min(arg, MAX_DELAY_S))
                status, ctype, payload = owner._forward(method, self.path, body, headers)
                if status == 200 and name in ("null_content", "garbage_content", "cut_content"):
                    obj = json.loads(payload)
                    msg = obj["choices"][0]["message"]
                    if name == "null_content":
                        msg["content"] = None
                    elif name == "garbage_content":
                        msg["content"] = GARBAGE
                    else:
                        msg["content"] = (msg.get("content") or "")[: max(1, len(msg.get("content") or "") // 2)]
                    payload = json.dumps(obj).encode()
                if name == "truncate":
                    return self._send(status, ctype, payload[: len(payload) // 2])
                if name == "cut":
                    self._send(status, ctype, payload[: len(payload) // 2], length=len(payload))
                    self.close_connection = True
                    with contextlib.suppress(OSError):
                        self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self._send(status, ctype, payload)

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

        return Handler


def unused_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, read, released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

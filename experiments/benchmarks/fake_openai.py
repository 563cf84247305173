"""A local OpenAI-compatible chat server with a fixed latency and scripted replies, so benchmarks exercise the
real client (``OpenAIChat``: its request semaphore, retries and SQLite response cache) without a model.
Timing only: its replies mean nothing."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from memcore.llm.scripted import Responder


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, body: dict[str, Any]) -> None:
        blob = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(blob)))
        self.end_headers()
        self.wfile.write(blob)

    def do_GET(self) -> None:
        self._send({"object": "list", "data": [{"id": self.server.model, "object": "model"}]})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        req = json.loads(self.rfile.read(length) or b"{}")
        messages = req.get("messages", [])
        time.sleep(self.server.latency_s)
        text = self.server.responder(messages)
        with self.server.lock:
            self.server.requests += 1
        prompt_tokens = sum(len(str(m.get("content", ""))) // 4 for m in messages)
        self._send(
            {
                "id": "fake",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.server.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": prompt_tokens,
                    "completion_tokens": max(1, len(text) // 4),
                    "total_tokens": prompt_tokens + max(1, len(text) // 4),
                },
            }
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, responder: Responder, latency_s: float, model: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.responder = responder
        self.latency_s = latency_s
        self.model = model
        self.requests = 0
        self.lock = threading.Lock()


@contextmanager
def fake_openai_server(responder: Responder, *, latency_s: float, model: str = "fake-scripted") -> Iterator[_Server]:
    """Serve ``responder`` on 127.0.0.1 (free port) for the ``with`` block; ``.server_address`` has the port,
    ``.requests`` counts the chat requests that reached it (cache hits never do)."""
    server = _Server(responder, latency_s, model)
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def backbone_overrides(server: _Server, max_concurrency: int = 64) -> list[str]:
    """Hydra overrides that point a run at ``server`` through the real OpenAI-compatible client."""
    host, port = server.server_address[:2]
    return [
        "backbone=scripted",
        "++backbone.name=fake-openai",
        "++backbone.kind=openai_compatible",
        f"++backbone.model={server.model}",
        f"++backbone.base_url=http://{host}:{port}/v1",
        f"++backbone.max_concurrency={max_concurrency}",
        "++backbone.max_attempts=2",
        "++backbone.timeout_s=60",
    ]

"""A local OpenAI-compatible chat server with a fixed latency and scripted replies, so benchmarks exercise the
real client (``OpenAIChat``: its request semaphore, retries and SQLite response cache) without a model.
A thin front of the simulator (:mod:`memcore.testing.simulator`, ``memcore-simulate``) with no faults and a fixed
latency per request. Timing only: its replies mean nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memcore.llm.scripted import Responder
from memcore.testing.simulator import SimulatorConfig, SimulatorServer, running_simulator


@dataclass(frozen=True)
class FakeServer:
    """The running server: ``server_address`` (host, port), ``model``, ``requests`` (chat requests that reached it;
    cache hits never do)."""

    sim: SimulatorServer
    model: str

    @property
    def server_address(self) -> tuple[str, int]:
        host, port = self.sim.server_address[:2]
        return str(host), int(port)

    @property
    def requests(self) -> int:
        return self.sim.stats.requests


@contextmanager
def fake_openai_server(responder: Responder, *, latency_s: float, model: str = "fake-scripted") -> Iterator[FakeServer]:
    """Serve ``responder`` on 127.0.0.1 (free port) for the ``with`` block, ``latency_s`` per request."""
    config = SimulatorConfig(models=(model,), ttft_s=latency_s, tokens_per_s=1e12)
    with running_simulator(config, replier=lambda messages: ("scripted", responder(messages))) as sim:
        yield FakeServer(sim, model)


def backbone_overrides(server: FakeServer, max_concurrency: int = 64) -> list[str]:
    """Hydra overrides that point a run at ``server`` through the real OpenAI-compatible client."""
    host, port = server.server_address
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

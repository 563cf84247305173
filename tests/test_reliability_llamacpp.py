"""The real llama.cpp server, started outside the run, stopped mid-run and restarted on the same port:
the run retries, completes with one line per QA item and the metrics of an uninterrupted run.
Slow (minutes on 2 cores): ``pytest --runslow``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcore.itemlog import read_items
from memcore.llm.local_model import ModelNotFoundError, resolve_gguf
from memcore.llm.local_server import LlamaCppServer, free_port
from tests.support import CHILD_OF_TEST, REPO, data_file_or_skip

pytestmark = [pytest.mark.slow]

SMALL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
N_ITEMS = 4  # a short slice: on 2 shared cores each answer takes seconds to minutes


def _gguf_or_skip() -> Path:
    data_file_or_skip()
    try:
        return resolve_gguf(SMALL)
    except ModelNotFoundError:
        pytest.fail(f"small GGUF missing: run python scripts/get_local_model.py --model {SMALL} (make test does)")


def _cmd(root: Path, run_dir: Path, base_url: str) -> list[str]:
    """A run against an externally started server: the local-small preset as an OpenAI-compatible backbone."""
    return [
        sys.executable, "-m", "memcore.commands.run",
        "backbone=local-small", "backbone.kind=openai_compatible", f"++backbone.base_url={base_url}",
        "++backbone.max_attempts=30", "++backbone.backoff_cap_s=4",
        "embedder=hashing", "dataset=locomo-tiny", f"dataset.max_qa={N_ITEMS}", "method=rag_bm25", "method.top_k=5",
        "protocol=locomo", "concurrency=1",
        "progress=false", "print_table=false", f"paths.root={root}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip


def _crash(server: LlamaCppServer) -> None:
    """SIGKILL the llama.cpp process itself (a crash: the in-flight request dies with it), then let its
    guard exit. A plain ``stop()`` is graceful: uvicorn would finish the in-flight request first."""
    assert server.proc is not None
    guard = server.proc.pid
    children = Path(f"/proc/{guard}/task/{guard}/children").read_text().split()
    assert children, "the guard has no server child"
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    server.stop()


def test_llamacpp_stopped_and_restarted_mid_run(tmp_path: Path) -> None:
    gguf = _gguf_or_skip()
    port = free_port()

    def server(tag: str) -> LlamaCppServer:
        return LlamaCppServer(gguf, n_ctx=8192, alias=SMALL, port=port, log_path=tmp_path / f"server-{tag}.log")

    first = server("1").start()
    try:
        ref = subprocess.run(
            _cmd(tmp_path / "ref-results", tmp_path / "ref", first.base_url),
            cwd=REPO, capture_output=True, text=True, timeout=1800, **CHILD_OF_TEST,
        )  # fmt: skip
        assert ref.returncode == 0, ref.stderr[-3000:]
        reference = json.loads((tmp_path / "ref" / "metrics.json").read_text())

        # The same command, its own cache (so every answer needs the server): crash the server after 2 items.
        items_path = tmp_path / "cut" / "items.jsonl"
        log = open(tmp_path / "cut.log", "w")  # noqa: SIM115 — a file, not a pipe that could fill up
        proc = subprocess.Popen(
            _cmd(tmp_path / "cut-results", tmp_path / "cut", first.base_url),
            cwd=REPO, stdout=log, stderr=subprocess.STDOUT, text=True, **CHILD_OF_TEST,
        )  # fmt: skip
        deadline = time.monotonic() + 1200
        while not (items_path.exists() and len(read_items(items_path)) >= 2):
            assert proc.poll() is None, "the run ended before the server could be stopped"
            assert time.monotonic() < deadline
            time.sleep(0.2)
        _crash(first)
    finally:
        first.stop()
    n_at_stop = len(read_items(items_path))
    time.sleep(5)  # the run is retrying against a closed port
    assert proc.poll() is None, "the run gave up while the server was down"
    second = server("2").start()
    try:
        proc.wait(timeout=1800)
    finally:
        second.stop()
        log.close()
    output = (tmp_path / "cut.log").read_text()
    assert proc.returncode == 0, output[-3000:]
    assert n_at_stop < N_ITEMS
    items = read_items(items_path)
    assert len(items) == len({r["item_id"] for r in items}) == N_ITEMS
    resumed = json.loads((tmp_path / "cut" / "metrics.json").read_text())
    assert resumed["overall"] == reference["overall"]
    assert resumed["by_category"] == reference["by_category"]
    cost = json.loads((tmp_path / "cut" / "cost.json").read_text())
    assert cost["usage"]["by_stage"]["answer"]["errors_retried"] >= 1
    assert "retry" in output  # the retries were logged

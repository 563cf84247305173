"""A server the run owns that dies is reported as dead at once: how it died, where its log is, no
retries against its closed port. A stand-in server process for the transport path, and the real llama.cpp server
under ``memcore-run`` for the whole run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcore.itemlog import read_items
from memcore.llm.backbone import OpenAITransport, ServerExitedError
from memcore.llm.local_model import ModelNotFoundError, resolve_gguf
from memcore.llm.local_server import LlamaCppServer, describe_exit, log_tail
from memcore.llm.usage import UsageTracker
from tests.support import CHILD_OF_TEST, REPO, data_file_or_skip

# A minimal OpenAI-compatible server: /v1/models and a fixed chat completion; it logs each request.
STAND_IN = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer

class H(BaseHTTPRequestHandler):
    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "stand-in", "object": "model"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        print("served a completion", flush=True)
        self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "stand-in",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "OK"}}],
                    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})

    def log_message(self, *a):
        pass

HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


N_MINI = 25  # QA items of locomo-mini


class StandInServer(LlamaCppServer):
    """The harness's server lifecycle (guard, log, health wait, exit check) around the stand-in process."""

    def command(self) -> list[str]:
        return [sys.executable, "-c", STAND_IN, str(self.port)]


def _server_child(server: LlamaCppServer) -> int:
    """The pid of the process the guard runs (the server itself)."""
    assert server.proc is not None
    guard = server.proc.pid
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        children = Path(f"/proc/{guard}/task/{guard}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.05)
    raise AssertionError("the guard has no server child")


@pytest.mark.parametrize(
    ("code", "said"),
    [(-11, "killed by SIGSEGV"), (139, "killed by SIGSEGV"), (137, "killed by SIGKILL"), (1, "exited with code 1"),
     (0, "exited with code 0"), (255, "exited with code 255")],
)  # fmt: skip
def test_describe_exit(code: int, said: str) -> None:
    assert describe_exit(code) == said


def test_log_tail_keeps_the_last_non_empty_lines(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("a\n\nb\nc\n  \nd\n")
    assert log_tail(log, lines=3) == "b | c | d"
    assert log_tail(tmp_path / "missing.log") == ""
    assert log_tail(None) == ""


@pytest.mark.e2e
def test_a_killed_server_fails_the_next_call_at_once_with_how_it_died(tmp_path: Path) -> None:
    log = tmp_path / "llama_server.log"
    server = StandInServer(Path("unused.gguf"), alias="stand-in", log_path=log, startup_timeout_s=30)
    with server:
        usage = UsageTracker()
        transport = OpenAITransport(
            model="stand-in", base_url=server.base_url, api_key="sk-no-key-required", usage=usage,
            max_attempts=8, backoff_base_s=1.0, exit_reason=server.exit_reason,
        )  # fmt: skip
        msgs = [{"role": "user", "content": "hi"}]
        assert transport.complete(msgs, stage="answer").text == "OK"
        assert server.exit_reason(wait_s=0) is None  # alive: no verdict
        os.kill(_server_child(server), signal.SIGSEGV)
        t0 = time.monotonic()
        with pytest.raises(ServerExitedError) as err:
            transport.complete(msgs, stage="answer")
        waited = time.monotonic() - t0
    text = str(err.value)
    assert "killed by SIGSEGV" in text
    assert str(log) in text
    assert "served a completion" in text  # the log's last lines come with it
    assert "rerun the same command" in text
    # No retry against the closed port: the 8 attempts with backoff would take over a minute.
    assert usage.stage("answer").errors_retried == 0
    assert waited < 10


@pytest.mark.e2e
def test_a_run_whose_llama_server_segfaults_stops_with_one_line_and_keeps_its_items(tmp_path: Path) -> None:
    """The real server of ``backbone=local-small``, owned by the run, killed with SIGSEGV after the first answered
    item of locomo-mini's 25 (answers take about a second each, so most are still to come): the run exits 2 within seconds, saying the server was killed by SIGSEGV and where its log is; the items
    already written stay, and nothing is half-written."""
    data_file_or_skip()
    try:
        resolve_gguf("qwen2.5-coder-0.5b-instruct-q4_k_m")
    except ModelNotFoundError:
        pytest.fail(
            "small GGUF missing: run python scripts/get_local_model.py --model qwen2.5-coder-0.5b-instruct-q4_k_m"
        )
    run_dir = tmp_path / "run"
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "backbone=local-small", "++backbone.exclusive=false",
        "embedder=hashing", "dataset=locomo-mini", "method=rag_bm25", "method.top_k=3",
        "concurrency=1", "progress=false", "print_table=false", f"paths.root={tmp_path / 'root'}",
        f"hydra.run.dir={run_dir}",
    ]  # fmt: skip
    out = tmp_path / "run.log"
    with open(out, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=fh, stderr=subprocess.STDOUT, text=True, **CHILD_OF_TEST)
        items_path = run_dir / "items.jsonl"
        deadline = time.monotonic() + 900
        while not (items_path.exists() and read_items(items_path)):
            assert proc.poll() is None, out.read_text()[-3000:]
            assert time.monotonic() < deadline, "no item answered in 15 min"
            time.sleep(0.2)
        server_pids = subprocess.run(
            ["pgrep", "-f", "llama_server_main"], capture_output=True, text=True
        ).stdout.split()
        ours = [int(p) for p in server_pids if _descends_from(int(p), proc.pid) and not _is_guard(int(p))]
        assert ours, "the run's llama.cpp server was not found"
        os.kill(ours[0], signal.SIGSEGV)
        t_kill = time.monotonic()
        rc = proc.wait(timeout=120)
        after_kill = time.monotonic() - t_kill
    text = out.read_text()
    assert rc == 2, text[-3000:]
    assert "killed by SIGSEGV" in text, text[-3000:]
    assert "llama_server.log" in text
    assert "retry 1/" not in text  # no backoff against the closed port
    assert after_kill < 60, f"the run took {after_kill:.0f} s to stop after the crash"
    kept = read_items(items_path)
    assert kept and len(kept) == len({r["item_id"] for r in kept}) < N_MINI
    assert not (run_dir / "metrics.json").exists()


def _is_guard(pid: int) -> bool:
    """The guard's command line names the server's module too; the server itself is its child."""
    try:
        return b"memcore.llm.server_guard" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return False
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return False

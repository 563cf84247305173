"""What a user sees from ``memcore-run``: bad data, unknown names, an unreachable server, damaged
results — one line on stderr and exit 2 (or Hydra's own list of options), never a traceback.
And: an API key never reaches any file, log or error text."""

from __future__ import annotations

import copy
import json
import os
import secrets
import subprocess
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcore.llm.backbone import BackboneError
from memcore.runner import run_config
from tests.fault_proxy import FakeUpstream, unused_port
from tests.support import CHILD_OF_TEST, REPO, compose_run, minimal_locomo

OFFLINE = ["backbone=scripted", "embedder=hashing", "method=rag_bm25"]  # no model: the data layer is under test


def cli(
    tmp_path: Path, *overrides: str, env: dict[str, str] | None = None, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable, "-m", "memcore.commands.run", "progress=false", "print_table=false",
        f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'run'}", *overrides,
    ]  # fmt: skip
    full_env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=full_env, **CHILD_OF_TEST)


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    assert proc.returncode == 2, (
        f"exit {proc.returncode}\nSTDOUT:\n{proc.stdout[-2000:]}\nSTDERR:\n{proc.stderr[-2000:]}"
    )
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    line = lines[0]
    assert line.startswith("error: ")
    for frag in fragments:
        assert frag in line, line
    return line


# ---------------------------------------------------------------- bad input, one case per README row
def _conv(d: list[dict[str, Any]]) -> dict[str, Any]:
    return d[0]["conversation"]


def _json(mutate: Callable[[list[dict[str, Any]]], None]) -> bytes:
    data = minimal_locomo()
    mutate(data)
    return json.dumps(data).encode()


def _dup_qa(d: list[dict[str, Any]]) -> None:
    d[0]["qa"].append(copy.deepcopy(d[0]["qa"][0]))


GOOD = json.dumps(minimal_locomo())

# (case id as in memcore/datasets/locomo/README.md, file bytes (None: no file), exit code, what the user must see)
BAD_INPUT: list[tuple[str, bytes | None, int, tuple[str, ...]]] = [
    ("missing_file", None, 2, ("is neither locomo10.json nor a folder holding it", "python scripts/get_locomo.py")),
    ("empty_file", b"", 2, ("file is empty",)),
    ("truncated_json", GOOD[: len(GOOD) // 2].encode(), 2, ("truncated JSON (ends early)", "(line 1, column")),
    ("invalid_json", b'[{"sample_id": "conv-x",, }]\n', 2, ("invalid JSON", "(line 1, column 25)")),
    ("not_utf8", GOOD.replace("a dog", "a caf\u00e9 dog").encode("latin-1"), 2, ("not UTF-8 (byte 0xe9", "UTF-8")),
    ("top_level_not_list", json.dumps({"conv-x": minimal_locomo()[0]}).encode(), 2, ("top level is a JSON object",)),
    ("conversation_missing", _json(lambda d: d[0].pop("conversation")), 2, ("conversation 'conv-x' (index 0)", "field 'conversation'", "missing")),
    ("speaker_missing", _json(lambda d: _conv(d).pop("speaker_b")), 2, ("field 'conversation.speaker_b'", "missing or empty")),
    ("session_without_date", _json(lambda d: _conv(d).pop("session_2_date_time")), 2, ("field 'conversation.session_2_date_time'", "every session needs its date")),
    ("unparseable_date", _json(lambda d: _conv(d).update(session_1_date_time="sometime in May")), 2, ("field 'conversation.session_1_date_time'", "unparseable session date")),
    ("turn_without_dia_id", _json(lambda d: _conv(d)["session_1"][1].pop("dia_id")), 2, ("field 'conversation.session_1[1].dia_id'", "turn has no dia_id")),
    ("turn_without_text", _json(lambda d: _conv(d)["session_1"][0].pop("text")), 2, ("field 'conversation.session_1[0].text'", "turn D1:1 has no text")),
    ("unknown_category", _json(lambda d: d[0]["qa"][0].update(category=6)), 2, ("field 'qa[0].category'", "unknown category 6", "known: 1 multi-hop")),
    ("evidence_not_list", _json(lambda d: d[0]["qa"][0].update(evidence="D1:1")), 2, ("field 'qa[0].evidence'", "must be a list of strings")),
    ("answer_missing", _json(lambda d: d[0]["qa"][0].pop("answer")), 2, ("field 'qa[0].answer'", "category-4 item without an answer")),
    ("adversarial_missing", _json(lambda d: d[0]["qa"][1].pop("adversarial_answer")), 2, ("field 'qa[1].adversarial_answer'",)),
    # counted cleanings: the run completes and says what it cleaned
    ("evidence_garbage", _json(lambda d: d[0]["qa"][0].update(evidence=["D1:1", "D"])), 0, ("garbage_dropped=1",)),
    ("duplicate_qa", _json(_dup_qa), 0, ("duplicate_qa=1",)),
    ("int_answer", _json(lambda d: d[0]["qa"][0].update(answer=2022)), 0, ("int_answer=1",)),
]  # fmt: skip


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize(("case", "content", "code", "expected"), BAD_INPUT, ids=[c[0] for c in BAD_INPUT])
def test_bad_input_from_the_cli(
    tmp_path: Path, case: str, content: bytes | None, code: int, expected: tuple[str, ...]
) -> None:
    path = tmp_path / "data.json"
    if content is not None:
        path.write_bytes(content)
    proc = cli(tmp_path, *OFFLINE, "dataset=locomo", f"dataset.path={path}")
    if code == 2:
        line = assert_one_line_error(proc, str(path), *expected)
        assert not (tmp_path / "run" / "items.jsonl").exists()
        assert line.rstrip().endswith((".", ")"))  # ends with what to do, not mid-sentence
        return
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    log = proc.stdout + proc.stderr
    for frag in expected:
        assert "locomo cleaning applied: " in log and frag in log, log[-2000:]
    stats = json.loads((tmp_path / "run" / "stats.json").read_text())
    kind, _, count = expected[0].partition("=")
    assert stats["data_cleaning"][kind]["count"] == int(count)


def test_readme_cases_are_all_known_cases() -> None:
    """Every case id used here is a row of the data layer's malformed-input table."""
    table = (REPO / "memcore" / "datasets" / "locomo" / "README.md").read_text()
    for case, *_ in BAD_INPUT:
        assert f"`{case}`" in table, case
    assert len(BAD_INPUT) >= 12


# ---------------------------------------------------------------- unknown names
@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize(
    ("override", "known"),
    [
        ("method=rag_dnse", ["rag_dense", "rag_bm25", "memcore", "amem"]),
        ("backbone=gpt4o-mini", ["gpt-4o-mini", "local", "qwen3-8b"]),
        ("dataset=locomo-tny", ["locomo-tiny", "locomo-mini", "locomo"]),
        ("ablation=wo_updates", ["wo_update", "wo_merge", "none"]),
    ],
)
def test_unknown_config_group_option_lists_the_known_ones(tmp_path: Path, override: str, known: list[str]) -> None:
    """Hydra's own error already lists the options of the group; no traceback, exit 2 (a configuration error, not
    the unwritable-run-dir line its OSError base class once led to)."""
    proc = cli(tmp_path, override)
    assert proc.returncode == 2 and "run dir" not in proc.stderr
    group, _, name = override.partition("=")
    assert f"Could not find '{group}/{name}'" in proc.stderr
    assert f"Available options in '{group}'" in proc.stderr
    for k in known:
        assert f"\t{k}\n" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (["method.name=rag_dnse"], ["unknown method 'rag_dnse'", "Did you mean 'rag_dense'", "Known: amem"]),
        (["backbone.kind=openai"], ["unknown backbone kind 'openai'", "openai_compatible", "Known: llamacpp"]),
        (
            ["embedder.kind=mini"],
            ["unknown embedder kind 'mini'", "Did you mean 'minilm'", "Known: hashing, hub, minilm, openai"],
        ),
        (["ablation.name=wo_merge", "method=rag_bm25"], ["does not support ablation 'wo_merge'", "it supports: none"]),
    ],
)
def test_unknown_names_inside_a_config_are_one_line(tmp_path: Path, overrides: list[str], fragments: list[str]) -> None:
    proc = cli(tmp_path, "dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", *overrides)
    assert_one_line_error(proc, *fragments)


# ---------------------------------------------------------------- backbone faults the user sees
def _fake(url: str, *extra: str) -> list[str]:
    return ["backbone=gpt-4o-mini", f"++backbone.base_url={url}", "++backbone.backoff_cap_s=0.05", *extra]


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_unreachable_server_at_start_is_one_line_naming_the_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    proc = cli(
        tmp_path,
        *_fake(url, "++backbone.api_key_required=false"),
        "dataset=locomo-tiny",
        "embedder=hashing",
        "method=rag_bm25",
    )
    line = assert_one_line_error(proc, f"cannot reach the chat backbone at {url}", "backbone.base_url")
    assert "gpt-4o-mini" in line
    assert not (tmp_path / "run" / "items.jsonl").read_text()  # nothing was answered, nothing half-written


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_damaged_item_log_is_refused_with_what_to_do(tmp_path: Path) -> None:
    args = ("dataset=locomo-tiny", *OFFLINE)
    assert cli(tmp_path, *args).returncode == 0
    path = tmp_path / "run" / "items.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    assert_one_line_error(cli(tmp_path, *args), str(path), "line 2 is not valid JSON", "Move it away and rerun")


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_changed_config_is_refused_in_one_line(tmp_path: Path) -> None:
    assert cli(tmp_path, "dataset=locomo-tiny", *OFFLINE).returncode == 0
    proc = cli(tmp_path, "dataset=locomo-tiny", *OFFLINE, "protocol=locomo")
    assert_one_line_error(proc, "holds results of a different configuration (changed: protocol)", "overwrite=true")


# ---------------------------------------------------------------- secrets
def _all_text_under(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _assert_absent(key: str, *texts: str, roots: tuple[Path, ...] = ()) -> None:
    for t in texts:
        assert key not in t
        assert key[len("sk-test-") :] not in t  # not even the random part, e.g. after partial masking
    for root in roots:
        files = _all_text_under(root)
        assert files, root
        leaks = [p for p, data in files.items() if key.encode() in data or key[8:].encode() in data]
        assert not leaks, leaks


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_api_key_never_written_anywhere(tmp_path: Path) -> None:
    key = f"sk-test-{secrets.token_hex(16)}"
    with FakeUpstream(api_key=key, lifetime_s=120) as up:
        proc = cli(
            tmp_path,
            *_fake(up.base_url),
            "dataset=locomo-tiny",
            "embedder=hashing",
            "method=rag_bm25",
            env={"OPENAI_API_KEY": key},
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert up.auth_seen == {f"Bearer {key}"}  # the key was really used for every request
        assert up.chat_requests == 8
    assert (tmp_path / "run" / "config.yaml").is_file() and (tmp_path / "run" / "items.jsonl").is_file()
    assert "api_key_env: OPENAI_API_KEY" in (tmp_path / "run" / "config.yaml").read_text()
    _assert_absent(key, proc.stdout, proc.stderr, roots=(tmp_path,))


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.parametrize("status", [400, 401, 429])
def test_api_key_absent_from_errors_even_when_the_server_echoes_it(
    tmp_path: Path, status: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose error bodies quote the Authorization header: the key must not reach stderr,
    logs, files, or the exception (message and printed traceback)."""
    key = f"sk-test-{secrets.token_hex(16)}"  # the key the run sends (for 401: a wrong one)
    server = FakeUpstream(
        api_key=f"sk-test-{secrets.token_hex(16)}" if status == 401 else None,
        fail_with_status=None if status == 401 else status,
        echo_key_in_errors=True,
        lifetime_s=120,
    )
    with server as up:
        overrides = [
            *_fake(up.base_url, "++backbone.max_attempts=2"),
            "dataset=locomo-tiny",
            "embedder=hashing",
            "method=rag_bm25",
        ]
        proc = cli(tmp_path, *overrides, env={"OPENAI_API_KEY": key})
        assert up.auth_seen == {f"Bearer {key}"}
        assert_one_line_error(proc, "rejected the API key" if status == 401 else up.base_url)
        _assert_absent(key, proc.stdout, proc.stderr, roots=(tmp_path,))

        # the same in-process: the exception's text and its printed traceback
        monkeypatch.setenv("OPENAI_API_KEY", key)
        with pytest.raises(BackboneError) as info:
            run_config(compose_run(tmp_path / "inproc", overrides), tmp_path / "inproc" / "run")
    shown = "".join(traceback.format_exception(info.value))
    _assert_absent(key, str(info.value), repr(info.value), shown)
    if status == 400:
        assert "***" in str(info.value)  # the echoed key was masked, the rest of the server's message kept

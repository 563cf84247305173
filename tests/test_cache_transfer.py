"""memcore.llm.cache_transfer and memcore-cache: a cache exported on one machine replays on another."""

from __future__ import annotations

import gzip
import json
import logging
from pathlib import Path

import pytest

from memcore.commands.cache import main as cache_main
from memcore.interfaces import Completion
from memcore.llm.cache import CachedBackbone, ResponseCache
from memcore.llm.cache_transfer import CacheTransferError, export_cache, import_cache, read_export


def _filled(path: Path, replies: dict[str, str]) -> ResponseCache:
    cache = ResponseCache(path)
    for key, text in replies.items():
        cache.put(key, {"text": text, "prompt_tokens": 10, "completion_tokens": 2})
    return cache


def test_export_then_import_into_an_empty_cache_copies_every_reply(tmp_path: Path) -> None:
    src = _filled(tmp_path / "a.sqlite", {"k2": "two", "k1": "one", "k3": "three"})
    out = tmp_path / "x.jsonl.gz"
    assert export_cache(src, out) == 3
    with gzip.open(out, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert json.loads(lines[0]) == {"format": "memcore-response-cache", "version": 1, "rows": 3}
    assert [json.loads(line)["k"] for line in lines[1:]] == ["k1", "k2", "k3"]  # key order

    dst = ResponseCache(tmp_path / "b.sqlite")
    counts = import_cache(dst, out)
    assert (counts.added, counts.same, counts.conflicts) == (3, 0, 0)
    assert dst.get("k2") == {"text": "two", "prompt_tokens": 10, "completion_tokens": 2}
    # A second import adds nothing.
    again = import_cache(dst, out)
    assert (again.added, again.same, again.conflicts) == (0, 3, 0)


def test_export_is_byte_stable(tmp_path: Path) -> None:
    src = _filled(tmp_path / "a.sqlite", {"k1": "one", "k2": "two"})
    export_cache(src, tmp_path / "1.gz")
    export_cache(src, tmp_path / "2.gz")
    assert (tmp_path / "1.gz").read_bytes() == (tmp_path / "2.gz").read_bytes()


def test_import_keeps_a_conflicting_local_reply_and_counts_it(tmp_path: Path, caplog) -> None:
    out = tmp_path / "x.gz"
    export_cache(_filled(tmp_path / "a.sqlite", {"k1": "remote", "k2": "new"}), out)
    dst = _filled(tmp_path / "b.sqlite", {"k1": "local"})
    with caplog.at_level(logging.WARNING):
        counts = import_cache(dst, out)
    assert (counts.added, counts.same, counts.conflicts) == (1, 0, 1)
    assert dst.get("k1")["text"] == "local"
    assert dst.get("k2")["text"] == "new"
    assert "keeping the local reply" in caplog.text


def test_a_bad_file_writes_nothing_and_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gz"
    with gzip.open(bad, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": "memcore-response-cache", "version": 1, "rows": 2}) + "\n")
        fh.write(json.dumps({"k": "k1", "v": {"text": "one"}}) + "\n")
        fh.write('{"k": "k2"}\n')
    dst = ResponseCache(tmp_path / "b.sqlite")
    with pytest.raises(CacheTransferError, match=r"bad.gz:3: expected"):
        import_cache(dst, bad)
    assert len(dst.kv) == 0

    truncated = tmp_path / "short.gz"
    with gzip.open(truncated, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"format": "memcore-response-cache", "version": 1, "rows": 5}) + "\n")
    with pytest.raises(CacheTransferError, match="promises 5 entries, the file holds 0"):
        read_export(truncated)

    plain = tmp_path / "plain.jsonl"
    plain.write_text("{}\n")
    with pytest.raises(CacheTransferError, match="not a gzipped"):
        read_export(plain)
    with pytest.raises(CacheTransferError, match="no such file"):
        read_export(tmp_path / "missing.gz")


class _CountingTransport:
    """The layer below the cache: answers every request and counts how often it was asked."""

    name = "t"
    model = "m"
    json_mode = False

    def __init__(self) -> None:
        self.extra_body: dict = {}
        self.calls = 0

    def complete(self, messages, *, stage, json=False, prompt_version="", **request) -> Completion:
        self.calls += 1
        return Completion(text=f"reply to {messages[-1]['content']}", prompt_tokens=5, completion_tokens=3)


def test_an_imported_cache_serves_the_calls_of_the_machine_that_made_it(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "q"}]
    first = _CountingTransport()
    CachedBackbone(first, ResponseCache(tmp_path / "a.sqlite")).complete(msgs, stage="answer")
    assert first.calls == 1
    export_cache(ResponseCache(tmp_path / "a.sqlite"), tmp_path / "x.gz")

    second = _CountingTransport()
    fresh = ResponseCache(tmp_path / "b.sqlite")
    import_cache(fresh, tmp_path / "x.gz")
    reply = CachedBackbone(second, fresh).complete(msgs, stage="answer")
    assert second.calls == 0
    assert reply.cached and reply.text == "reply to q"


def test_cli_round_trip_and_errors(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("MEMCORE_RESULTS", str(tmp_path / "root"))
    assert cache_main(["stats"]) == 2
    assert "no response cache" in capsys.readouterr().err

    _filled(tmp_path / "root" / "cache" / "llm.sqlite", {"k1": "one"})
    assert cache_main(["stats"]) == 0
    assert "1 replies" in capsys.readouterr().out
    assert cache_main(["export", "--out", str(tmp_path / "x.gz")]) == 0
    assert cache_main(["--cache", str(tmp_path / "other.sqlite"), "import", str(tmp_path / "x.gz")]) == 0
    assert "1 added" in capsys.readouterr().out
    assert cache_main(["import", str(tmp_path / "missing.gz")]) == 2
    assert "no such file" in capsys.readouterr().err

"""Registry, RRF, seeding, redaction, token counting, item log, caches."""

from __future__ import annotations

import json
import sqlite3
import threading

import pytest

from memcore.fusion import rrf_fuse
from memcore.itemlog import ItemLogError, ItemWriter, read_items
from memcore.llm.cache import ResponseCache, SQLiteKV
from memcore.methods import get_method, method_names
from memcore.redact import redact_config
from memcore.registry import Registry, UnknownNameError
from memcore.seeding import derive_seed
from memcore.text import count_tokens, truncate_to_tokens


def test_registry_did_you_mean() -> None:
    reg: Registry[int] = Registry("backbone")
    reg.add("gpt-4o-mini", 1)
    reg.add("qwen3-8b", 2)
    assert reg.get("qwen3-8b") == 2
    with pytest.raises(UnknownNameError) as exc:
        reg.get("gpt4o-mini")
    msg = str(exc.value)
    assert "Did you mean 'gpt-4o-mini'" in msg and "Known: gpt-4o-mini, qwen3-8b" in msg


def test_method_registry_unknown_lists_known() -> None:
    with pytest.raises(UnknownNameError) as exc:
        get_method("rag_dnse")
    assert "'rag_dense'" in str(exc.value)
    assert "memcore" in method_names()
    assert get_method("rag_bm25").name == "rag_bm25"


def test_rrf_hand_computed() -> None:
    fused = rrf_fuse({"a": ["x", "y", "z"], "b": ["y", "w"]}, k=60)
    scores = dict(fused)
    assert scores["y"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["x"] == pytest.approx(1 / 61)
    assert scores["w"] == pytest.approx(1 / 62)
    assert scores["z"] == pytest.approx(1 / 63)
    assert [d for d, _ in fused] == ["y", "x", "w", "z"]  # x and w: 1/61 > 1/62


def test_rrf_ties_keep_first_seen_and_weights() -> None:
    fused = rrf_fuse({"a": ["p"], "b": ["q"]}, k=60)
    assert [d for d, _ in fused] == ["p", "q"]
    weighted = dict(rrf_fuse({"a": ["p"], "b": ["q"]}, k=60, weights={"b": 2.0}))
    assert weighted["q"] == pytest.approx(2 / 61)


def test_rrf_a_repeated_id_counts_once_at_its_first_rank_and_the_ranks_after_it_keep_their_places() -> None:
    fused = dict(rrf_fuse({"a": ["x", "x", "y"]}, k=60))
    assert fused == {"x": 1 / 61, "y": 1 / 63}  # y is third in the list, repeat or not


def test_rrf_equal_scores_from_different_lists_stay_in_first_seen_order() -> None:
    fused = rrf_fuse({"a": ["p", "r"], "b": ["q", "s"], "c": ["s"]}, k=60)
    assert [d for d, _ in fused] == ["s", "p", "q", "r"]  # p and q tie at 1/61: p was seen first


def test_derive_seed_stable_and_purpose_specific() -> None:
    assert derive_seed(42, "answer", "conv-26#3") == derive_seed(42, "answer", "conv-26#3")
    assert derive_seed(42, "answer", "conv-26#3") != derive_seed(42, "method", "conv-26#3")
    assert derive_seed(42, "x") != derive_seed(43, "x")
    assert 0 <= derive_seed(1, "a") < 2**31


def test_redact_config_masks_keys_and_values() -> None:
    cfg = {"backbone": {"api_key": "abc12345", "api_key_env": "OPENAI_API_KEY", "note": "key sk-ABCDEFGHIJKLMNOP here"}}
    out = redact_config(cfg)
    assert out["backbone"]["api_key"] == "***"
    assert out["backbone"]["api_key_env"] == "OPENAI_API_KEY"
    assert "sk-ABCDEFGHIJKLMNOP" not in out["backbone"]["note"]


def test_count_and_truncate_tokens() -> None:
    assert count_tokens("Hello, world!") == 4
    assert truncate_to_tokens("one two three four", 2) == "one two"
    assert truncate_to_tokens("one two", 5) == "one two"


def test_itemlog_drops_torn_last_line_and_repairs(tmp_path) -> None:
    p = tmp_path / "items.jsonl"
    with ItemWriter(p) as w:
        w.write({"item_id": "a"})
        w.write({"item_id": "b"})
    with open(p, "ab") as fh:
        fh.write(b'{"item_id": "c", "answ')  # a kill mid-write
    assert [r["item_id"] for r in read_items(p)] == ["a", "b"]
    read_items(p, repair=True)
    assert p.read_bytes().endswith(b"\n")
    with ItemWriter(p) as w:
        w.write({"item_id": "c"})
    assert [r["item_id"] for r in read_items(p)] == ["a", "b", "c"]


def test_a_record_is_in_the_file_as_soon_as_it_is_written_between_fsyncs(tmp_path) -> None:
    p = tmp_path / "items.jsonl"
    w = ItemWriter(p, sync_every_s=3600.0)  # no fsync until close: a killed process still leaves its records
    w.write({"item_id": "a"})
    w.write({"item_id": "b"})
    assert [r["item_id"] for r in read_items(p)] == ["a", "b"] and w.written == 2
    w.close()
    w.close()  # closing twice is harmless
    assert [r["item_id"] for r in read_items(p)] == ["a", "b"]


def test_itemlog_damage_in_the_middle_is_an_error(tmp_path) -> None:
    p = tmp_path / "items.jsonl"
    p.write_text('{"item_id": "a"}\nnot json\n{"item_id": "b"}\n')
    with pytest.raises(ItemLogError, match="damaged"):
        read_items(p)


def test_itemwriter_concurrent_lines_are_whole(tmp_path) -> None:
    p = tmp_path / "items.jsonl"
    with ItemWriter(p) as w:
        threads = [
            threading.Thread(target=lambda i=i: [w.write({"item_id": f"{i}-{j}", "pad": "x" * 500}) for j in range(50)])
            for i in range(8)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    items = read_items(p)
    assert len(items) == 400 and len({r["item_id"] for r in items}) == 400


def test_response_cache_roundtrip_and_counts(tmp_path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    key = ResponseCache.key({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert cache.get(key) is None
    cache.put(key, {"text": "hello", "prompt_tokens": 3, "completion_tokens": 1})
    assert cache.get(key) == {"text": "hello", "prompt_tokens": 3, "completion_tokens": 1}
    assert cache.stats() == {"hits": 1, "misses": 1}


def test_corrupted_cache_is_moved_aside_and_rebuilt(tmp_path, caplog) -> None:
    path = tmp_path / "llm.sqlite"
    kv = SQLiteKV(path, table="responses")
    kv.put("k", b"v")
    del kv
    path.write_bytes(b"this is not a sqlite database at all" * 100)
    for side in ("-wal", "-shm"):
        (tmp_path / f"llm.sqlite{side}").unlink(missing_ok=True)
    kv2 = SQLiteKV(path, table="responses")
    assert kv2.get("k") is None
    kv2.put("k2", b"v2")
    assert kv2.get("k2") == b"v2"
    assert any(p.name.startswith("llm.sqlite.corrupt-") for p in tmp_path.iterdir())
    assert "integrity" in caplog.text


def test_cache_shared_by_two_processes(tmp_path) -> None:
    import multiprocessing as mp

    path = tmp_path / "llm.sqlite"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer_proc, args=(str(path), i)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 400
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _writer_proc(path: str, worker: int) -> None:
    from pathlib import Path

    cache = ResponseCache(Path(path))
    for j in range(200):
        cache.put(f"{worker}-{j}", {"text": json.dumps([worker, j])})
        assert cache.get(f"{worker}-{j}") is not None


def test_fresh_cache_opened_by_many_threads_at_once(tmp_path) -> None:
    """Regression (CI, session 1): threads opening a new cache file together raced on the switch to
    WAL and one got 'database is locked'. Every thread must get a working connection."""
    cache = ResponseCache(tmp_path / "llm.sqlite")
    start = threading.Barrier(8)
    errors: list[BaseException] = []

    def worker(i: int) -> None:
        start.wait()
        try:
            assert cache.get(f"k{i}") is None
            cache.put(f"k{i}", {"text": str(i)})
        except BaseException as exc:  # collected and asserted below, with the thread's own error
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert [cache.get(f"k{i}") for i in range(8)] == [{"text": str(i)} for i in range(8)]
    assert sqlite3.connect(tmp_path / "llm.sqlite").execute("PRAGMA journal_mode").fetchone()[0] == "wal"

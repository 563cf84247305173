"""Whole runs against a fake OpenAI-compatible upstream (deterministic answers), with faults injected
on the wire, the server killed and restarted, two processes sharing one cache, damaged caches and
snapshots. "Correct" means: one line per QA item and the same metrics as a fault-free run."""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.eval.aggregate import aggregate
from memcore.itemlog import read_items
from memcore.llm.backbone import BackboneError
from memcore.runner import RunResult, run_config
from memcore.snapshots import MANIFEST, SnapshotStore
from tests.fakes import upstream_backbone
from tests.fault_proxy import GARBAGE, FakeUpstream, FaultProxy, scripted_answer
from tests.support import CHILD_OF_TEST, compose_run

BASE = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25"]
N_ITEMS = 8


def run(root: Path, run_dir: Path, url: str, *extra: str, attempts: int = 12, timeout_s: float = 1.0) -> RunResult:
    cfg = compose_run(root, [*BASE, *upstream_backbone(url, attempts=attempts, timeout_s=timeout_s), *extra])
    return run_config(cfg, run_dir)


def assert_complete_and_identical(run_dir: Path, reference: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per QA item, the reference's answers and the reference's metrics."""
    items = read_items(run_dir / "items.jsonl")
    ids = [r["item_id"] for r in items]
    assert len(ids) == len(set(ids)) == N_ITEMS, ids
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["overall"] == reference["metrics"]["overall"]
    assert metrics["by_category"] == reference["metrics"]["by_category"]
    assert {r["item_id"]: r["answer"] for r in items} == reference["answers"]
    return items


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch: pytest.MonkeyPatch, locomo_path: Path) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # never send a developer's real key, even to 127.0.0.1


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, locomo_path: Path) -> dict[str, Any]:
    """A fault-free run: its metrics and answers are what every faulty run must reproduce."""
    root = tmp_path_factory.mktemp("reference")
    with FakeUpstream(lifetime_s=120) as up:
        result = run(root, root / "run", up.base_url)
    items = read_items(root / "run" / "items.jsonl")
    assert result.metrics["parse_failures"] == {}
    assert 0.0 < result.metrics["overall"]["f1"] < 1.0  # the scripted answers score something, not everything
    return {"metrics": result.metrics, "answers": {r["item_id"]: r["answer"] for r in items}}


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(lifetime_s=120) as up:
        yield up


# ---------------------------------------------------------------- faults on the wire
MIXED = [
    "drop",
    "status:429",
    "status:500",
    "delay:2",
    "truncate",
    "cut",
    "empty_choices",
    "reset",
    "html",
    "null_content",
]


def test_every_transport_fault_is_retried_and_the_run_is_exact(tmp_path, upstream, reference) -> None:
    # 8 items + 10 faults = 18 requests; each of the 8 passes finishes an item, so all faults must come
    # before the last pass: two back-to-back pairs first, then fault/pass alternating.
    schedule = [MIXED[0], MIXED[1], "pass", MIXED[2], MIXED[3]] + [a for f in MIXED[4:] for a in ("pass", f)] + ["pass"]
    assert schedule.count("pass") == N_ITEMS and len(schedule) == N_ITEMS + len(MIXED)
    with FaultProxy(upstream.base_url, schedule, lifetime_s=120) as proxy:
        result = run(tmp_path, tmp_path / "run", proxy.base_url, "concurrency=3")
        assert {a for _, a in proxy.log} == {*MIXED, "pass"}
    assert_complete_and_identical(tmp_path / "run", reference)
    answer = result.cost["usage"]["by_stage"]["answer"]
    assert answer["errors_retried"] == len(MIXED)  # each fault cost exactly one retry
    assert answer["calls"] == N_ITEMS and answer["parse_failures"] == 0


def test_unparseable_answer_is_a_counted_fallback_in_cost_and_metrics(tmp_path, upstream, reference) -> None:
    with FaultProxy(upstream.base_url, ["garbage_content"], lifetime_s=60) as proxy:
        run(tmp_path, tmp_path / "run", proxy.base_url, "concurrency=1")
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == N_ITEMS
    assert [r["answer"] for r in items].count(GARBAGE) == 1  # amem protocol: one attempt, raw text kept
    cost = json.loads((tmp_path / "run" / "cost.json").read_text())
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert cost["usage"]["parse_failures_by_kind"] == {"answer": {"answer_raw_text": 1}}
    assert cost["usage"]["by_stage"]["answer"]["parse_failures"] == 1
    assert metrics["parse_failures"] == {"answer": {"answer_raw_text": 1}}
    assert "parse fallbacks 1" in (tmp_path / "run" / "table.md").read_text()
    others = {r["item_id"]: r["answer"] for r in items if r["answer"] != GARBAGE}
    assert others == {k: v for k, v in reference["answers"].items() if k in others}


def test_exhausted_retries_stop_the_run_and_a_rerun_finishes_it(tmp_path, upstream, reference) -> None:
    run_dir = tmp_path / "run"

    def schedule(k: int) -> str:
        return "status:503" if 3 <= k < 6 else "pass"  # the 4th item fails 3 times in a row

    with FaultProxy(upstream.base_url, schedule, lifetime_s=60) as proxy:
        with pytest.raises(BackboneError) as info:
            run(tmp_path, run_dir, proxy.base_url, "concurrency=1", attempts=3)
        msg = str(info.value)
        assert proxy.base_url in msg and "Rerun the same command to resume" in msg
    assert len(read_items(run_dir / "items.jsonl")) == 3  # finished items are kept
    # The rerun goes through another proxy (another port): transport settings do not block resuming.
    with FaultProxy(upstream.base_url, lifetime_s=60) as proxy2:
        resumed = run(tmp_path, run_dir, proxy2.base_url, "concurrency=1", attempts=3)
        assert len(proxy2.log) == N_ITEMS - 3
    assert_complete_and_identical(run_dir, reference)
    assert resumed.cost["usage"]["by_stage"]["answer"]["calls"] == N_ITEMS - 3


def test_a_dead_backbone_stops_every_conversation_promptly(tmp_path, upstream, compose) -> None:
    """After retries are exhausted no further item is tried (in this or another conversation): the run
    stops at once instead of grinding through every pending item against a dead server."""
    two_convs = [
        "dataset=locomo",
        "dataset.conversations=[conv-26,conv-30]",
        "dataset.max_sessions=2",
        "dataset.max_qa=4",
    ]
    overrides = ["embedder=hashing", "method=rag_bm25", "concurrency=1", *two_convs]

    def schedule(k: int) -> str:
        return "pass" if k < 2 else "status:503"

    with FaultProxy(upstream.base_url, schedule, lifetime_s=60) as proxy:
        cfg = compose([*overrides, *upstream_backbone(proxy.base_url, attempts=2)])
        with pytest.raises(BackboneError):
            run_config(cfg, tmp_path / "run")
        assert len(proxy.log) == 4  # two answers, then one item's two attempts; nothing after
    assert len(read_items(tmp_path / "run" / "items.jsonl")) == 2
    with FaultProxy(upstream.base_url, lifetime_s=60) as proxy:
        cfg = compose([*overrides, *upstream_backbone(proxy.base_url, attempts=2)])
        result = run_config(cfg, tmp_path / "run")
        assert len(proxy.log) == 6
    assert result.n_items == 8 and len({r["item_id"] for r in read_items(tmp_path / "run" / "items.jsonl")}) == 8


def test_server_killed_and_restarted_mid_run(tmp_path, reference) -> None:
    """The upstream dies after its 3rd answer (in-flight requests reset, port closed) and is back 1 s later."""
    restarted = threading.Event()
    holder: dict[str, FakeUpstream] = {}

    def crash_then_restart() -> None:
        up = holder["up"]
        up.kill()
        threading.Timer(1.0, lambda: (up.start(), restarted.set())).start()

    def responder(messages: list[dict[str, Any]]) -> str:
        if holder["up"].chat_requests == 3 and not restarted.is_set() and holder["up"].kills == 0:
            threading.Thread(target=crash_then_restart).start()
        return scripted_answer(messages)

    up = FakeUpstream(responder, latency_s=0.05, lifetime_s=120)
    holder["up"] = up
    with up:
        result = run(tmp_path, tmp_path / "run", up.base_url, "concurrency=2", attempts=40)
    assert up.kills == 2 and restarted.is_set()  # the crash, then the final stop
    assert_complete_and_identical(tmp_path / "run", reference)
    assert result.cost["usage"]["by_stage"]["answer"]["errors_retried"] >= 1


def test_metrics_do_not_depend_on_the_order_items_finished(tmp_path, upstream, compose) -> None:
    """Threads and resumes change the order of items.jsonl; metrics are summed in dataset order, so they
    stay bit-identical (float addition is not associative: summed in file order they would differ)."""
    overrides = ["dataset=locomo-mini", "embedder=hashing", "method=rag_bm25", *upstream_backbone(upstream.base_url)]
    first = run_config(compose(overrides), tmp_path / "run")
    path = tmp_path / "run" / "items.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    file_order_differs = False
    for seed in range(5):
        random.Random(seed).shuffle(lines)
        path.write_text("".join(lines))
        file_order_differs |= aggregate(read_items(path))["by_category"] != first.metrics["by_category"]
        again = run_config(compose(overrides), tmp_path / "run")  # nothing to do: re-aggregates
        assert again.cost["this_invocation"]["calls"] == 0
        assert again.metrics["overall"] == first.metrics["overall"]
        assert again.metrics["by_category"] == first.metrics["by_category"]
    assert file_order_differs  # the hazard is real on this slice


# ---------------------------------------------------------------- damaged cache and snapshot
def test_damaged_cache_and_snapshot_are_rebuilt_with_a_warning(tmp_path, upstream, reference, caplog) -> None:
    first = run(tmp_path, tmp_path / "first", upstream.base_url)
    assert first.cost["memory_build"]["snapshots_built"] == 1
    db = tmp_path / "results" / "cache" / "llm.sqlite"
    snap = Path(first.stats["conversations"]["conv-26"]["snapshot"])
    assert db.is_file() and (snap / MANIFEST).is_file()
    # A torn cache file (a crash of the disk, not of SQLite) and one flipped byte in the snapshot.
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    db.write_bytes(db.read_bytes()[: db.stat().st_size // 2])
    victim = next(p for p in sorted(snap.iterdir()) if p.is_file() and p.name != MANIFEST)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    calls_before = upstream.chat_requests

    second = run(tmp_path, tmp_path / "second", upstream.base_url)
    assert "failed its integrity check" in caplog.text and "failed its checksum" in caplog.text
    assert any(p.name.startswith("llm.sqlite.corrupt-") for p in db.parent.iterdir())
    assert second.cost["memory_build"]["snapshots_built"] == 1  # rebuilt, not silently reused
    assert upstream.chat_requests - calls_before == N_ITEMS  # the damaged cache served nothing
    assert_complete_and_identical(tmp_path / "second", reference)
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    third = run(tmp_path, tmp_path / "third", upstream.base_url)  # repaired: everything reused
    assert third.cost["memory_build"]["snapshots_reused"] == 1
    assert third.cost["usage"]["total"]["cached_calls"] == N_ITEMS


def test_unreadable_cache_entry_is_ignored_not_used(tmp_path, upstream, reference, caplog) -> None:
    run(tmp_path, tmp_path / "first", upstream.base_url)
    db = tmp_path / "results" / "cache" / "llm.sqlite"
    con = sqlite3.connect(db)
    con.execute("UPDATE responses SET v = ?", (b"\x00\xff not json",))
    con.commit()
    con.close()
    before = upstream.chat_requests
    run(tmp_path, tmp_path / "second", upstream.base_url)
    assert upstream.chat_requests - before == N_ITEMS
    assert "is unreadable; ignoring it" in caplog.text
    assert_complete_and_identical(tmp_path / "second", reference)


def test_stale_half_built_snapshot_dirs_are_cleared(tmp_path, upstream) -> None:
    """A process killed mid-build leaves ``<key>.tmp-<pid>``; the next build under the lock removes it."""
    first = run(tmp_path, tmp_path / "first", upstream.base_url)
    snap = Path(first.stats["conversations"]["conv-26"]["snapshot"])
    stale = snap.with_name(f"{snap.name}.tmp-999999")
    stale.mkdir()
    (stale / "half.bin").write_bytes(b"x" * 100)
    shutil.rmtree(snap)  # force a rebuild of that key
    run(tmp_path, tmp_path / "second", upstream.base_url)
    assert not stale.exists()
    assert (snap / MANIFEST).is_file()


# ---------------------------------------------------------------- two processes, one cache
def _cli(root: Path, run_dir: Path, url: str, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "memcore.commands.run", *upstream_backbone(url), "embedder=hashing", "method=rag_hybrid",
        "progress=false", "print_table=false", f"paths.root={root}", f"hydra.run.dir={run_dir}", *extra,
    ]  # fmt: skip


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_two_concurrent_runs_share_one_cache_and_snapshot_dir(tmp_path) -> None:
    root = tmp_path / "results"
    slice_ = ["dataset=locomo", "dataset.conversations=[conv-26,conv-30]", "dataset.max_sessions=2", "dataset.max_qa=4"]
    with FakeUpstream(latency_s=0.05, lifetime_s=300) as up:
        procs = [
            subprocess.Popen(
                _cli(root, tmp_path / name, up.base_url, *slice_),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                **CHILD_OF_TEST,
            )
            for name in ("a", "b")
        ]
        outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, f"exit {p.returncode}\n{out[-2000:]}\n{err[-2000:]}"
    costs = [json.loads((tmp_path / n / "cost.json").read_text()) for n in ("a", "b")]
    metrics = [json.loads((tmp_path / n / "metrics.json").read_text()) for n in ("a", "b")]
    for n in ("a", "b"):
        items = read_items(tmp_path / n / "items.jsonl")
        assert len(items) == len({r["item_id"] for r in items}) == 8
    assert metrics[0]["overall"] == metrics[1]["overall"]
    # Each of the two memories was built exactly once across both processes, and reused by the other.
    assert sum(c["memory_build"]["snapshots_built"] for c in costs) == 2
    assert sum(c["memory_build"]["snapshots_reused"] for c in costs) == 2
    snaps = sorted(p for p in (root / "snapshots" / "rag_hybrid").iterdir() if p.is_dir() and "." not in p.name)
    assert len(snaps) == 2
    store = SnapshotStore(root / "snapshots")
    for s in snaps:
        assert store.verify(s, s.name) is not None
    assert not [p for p in (root / "snapshots" / "rag_hybrid").iterdir() if ".tmp-" in p.name]
    for db in sorted((root / "cache").glob("*.sqlite")):
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok", db
    con = sqlite3.connect(root / "cache" / "llm.sqlite")
    assert con.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 8  # same 8 questions, one entry each

"""A response cache that survives a real cluster. ``cache_mode`` (auto | shared | sharded), the
network-file-system check, per-job shards reading through to the shared file, and ``memcore-cache merge``, with
real SQLite files and real (spawned) processes."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
import sys
from pathlib import Path

import pytest

from memcore.commands.cache import main as cache_main
from memcore.commands.run import run_main
from memcore.config import ConfigError
from memcore.llm.cache import RESPONSE_CACHE_FILE, RESPONSE_TABLE, ResponseCache
from memcore.llm.cache_shards import (
    SHARDS_DIR,
    CacheLayout,
    ShardedKV,
    check_cache_mode,
    job_id,
    merge_shards,
    resolve_layout,
)
from memcore.llm.fs_kind import mount_of, network_fs_of, parse_mounts

N_PROCS = 4
OWN = 60  # keys only one process writes
COMMON = 30  # keys every process writes with the same reply


def _mounts(tmp_path: Path, fs_type: str = "nfs4") -> str:
    """A mount table where ``tmp_path/net`` is a ``fs_type`` mount and ``tmp_path/net/scratch`` a local one."""
    net = (tmp_path / "net").resolve()
    (net / "scratch").mkdir(parents=True, exist_ok=True)
    return (
        "/dev/sda1 / ext4 rw,relatime 0 0\n"
        "tmpfs /dev/shm tmpfs rw 0 0\n"
        f"filer:/export {net} {fs_type} rw,vers=4.2 0 0\n"
        f"/dev/nvme0n1 {net}/scratch xfs rw 0 0\n"
        "garbage\n"
    )


# ---------------------------------------------------------------------------------------------- fs detection
def test_network_fs_is_the_longest_mount_point_holding_the_path(tmp_path: Path) -> None:
    text = _mounts(tmp_path)
    net = (tmp_path / "net").resolve()
    assert network_fs_of(net / "results" / "cache", text) == "nfs4"  # need not exist yet
    assert network_fs_of(net, text) == "nfs4"
    assert network_fs_of(net / "scratch" / "cache", text) is None  # a local fs mounted inside the NFS one
    (tmp_path / "netfoo").mkdir()
    assert network_fs_of(tmp_path / "netfoo", text) is None  # a prefix of the name is not a parent
    link = tmp_path / "link"
    link.symlink_to(net)
    assert network_fs_of(link / "cache", text) == "nfs4"  # symlinks resolved
    for kind in ("lustre", "gpfs", "cifs", "fuse.sshfs", "beegfs", "9p", "ceph", "glusterfs"):
        assert network_fs_of(net / "c", _mounts(tmp_path, kind)) == kind
    assert network_fs_of(net / "c", _mounts(tmp_path, "ext4")) is None


def test_mount_table_escapes_and_last_mount_wins(tmp_path: Path) -> None:
    spaced = tmp_path / "my dir"
    spaced.mkdir()
    escaped = str(spaced.resolve()).replace(" ", "\\040")
    text = f"/dev/sda1 / ext4 rw 0 0\nfiler:/a {escaped} nfs rw 0 0\n"
    assert parse_mounts(text)[1].point == str(spaced.resolve())
    assert network_fs_of(spaced / "cache", text) == "nfs"
    # mounted over again with a local fs: the later line shadows the earlier
    assert network_fs_of(spaced, text + f"/dev/sdb1 {escaped} ext4 rw 0 0\n") is None
    mount = mount_of(spaced, parse_mounts(text))
    assert mount is not None and mount.fs_type == "nfs"


# ---------------------------------------------------------------------------------------------- modes
def test_modes_and_their_errors(tmp_path: Path) -> None:
    text = _mounts(tmp_path)
    net = (tmp_path / "net").resolve() / "cache"
    local = tmp_path / "local" / "cache"
    env = {"SLURM_JOB_ID": "77"}
    assert resolve_layout(local, "auto", mounts_text=text, env=env).sharded is False
    auto = resolve_layout(net, "auto", mounts_text=text, env=env)
    assert auto.sharded and auto.network_fs == "nfs4" and auto.job == "slurm-77"
    assert "sharded" in auto.describe() and "nfs4" in auto.describe() and "memcore-cache merge" in auto.describe()
    assert resolve_layout(local, "sharded", mounts_text=text, env=env).sharded is True
    with pytest.raises(ConfigError) as info:
        resolve_layout(net, "shared", mounts_text=text, env=env)
    msg = str(info.value)
    assert "\n" not in msg and "cache_mode=shared" in msg and "nfs4" in msg and "cache_mode=sharded" in msg
    with pytest.raises(ConfigError, match=r"cache_mode='shard': unknown cache mode 'shard'\. Did you mean"):
        check_cache_mode("shard")
    with pytest.raises(ConfigError, match="Known: auto, shared, sharded"):
        resolve_layout(local, "wal", mounts_text=text)


def test_job_id_names_the_scheduler_job_and_is_filename_safe() -> None:
    assert job_id({"SLURM_ARRAY_JOB_ID": "10", "SLURM_ARRAY_TASK_ID": "3", "SLURM_JOB_ID": "13"}) == "slurm-10_3"
    assert job_id({"SLURM_JOB_ID": "13"}) == "slurm-13"
    assert job_id({"SLURM_JOB_ID": "13", "SLURM_NTASKS": "2", "SLURM_PROCID": "1"}) == "slurm-13-task1"
    assert job_id({"SUBMITIT_LOCAL_JOB_ID": "4242"}, host="n1") == "host-n1"  # local jobs: one host, one shard
    assert job_id({}, host="node 7/a.example.org") == "host-node_7_a.example.org"


# ---------------------------------------------------------------------------------------------- read-through
def _shared_file(root: Path, replies: dict[str, str]) -> Path:
    """The shared response cache as a merge leaves it on NFS (rollback journal), with connection closed."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / RESPONSE_CACHE_FILE
    with sqlite3.connect(path) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {RESPONSE_TABLE} (k TEXT PRIMARY KEY, v BLOB NOT NULL)")
        conn.executemany(
            f"INSERT INTO {RESPONSE_TABLE} VALUES (?, ?)",
            [(k, ResponseCache.encode({"text": v})) for k, v in replies.items()],
        )
    conn.close()
    return path


def test_a_sharded_cache_reads_the_shared_file_and_writes_only_its_shard(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    shared = _shared_file(root, {"old": "from the shared file"})
    layout = CacheLayout(root, sharded=True, job="job-1")
    cache = ResponseCache(layout.open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    assert isinstance(cache.kv, ShardedKV)
    assert cache.get("old") == {"text": "from the shared file"}
    cache.put("new", {"text": "made by this job"})
    cache.put("old", {"text": "a newer reply"})  # the shard's value wins in this job; shared untouched
    assert cache.get("new") == {"text": "made by this job"} and cache.get("old") == {"text": "a newer reply"}
    assert cache.get("absent") is None
    assert cache.stats() == {"hits": 3, "misses": 1}
    assert [k for k, _ in cache.kv.items()] == ["new", "old"] and len(cache.kv) == 2
    shard = root / SHARDS_DIR / "llm" / "job-1.sqlite"
    assert layout.shard_path(RESPONSE_CACHE_FILE) == shard and shard.is_file()
    with sqlite3.connect(shared) as conn:
        assert conn.execute(f"SELECT k FROM {RESPONSE_TABLE}").fetchall() == [("old",)]
    conn.close()
    with sqlite3.connect(shard) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    conn.close()
    assert sorted(p.name for p in root.iterdir()) == [RESPONSE_CACHE_FILE, SHARDS_DIR]  # no -wal / -shm


def test_a_sharded_cache_without_a_shared_file_is_its_shard_alone(tmp_path: Path) -> None:
    cache = ResponseCache(
        CacheLayout(tmp_path / "cache", sharded=True, job="j").open(RESPONSE_CACHE_FILE, RESPONSE_TABLE)
    )
    assert cache.get("k") is None
    cache.put("k", {"text": "v"})
    assert cache.get("k") == {"text": "v"}
    assert not (tmp_path / "cache" / RESPONSE_CACHE_FILE).exists()


def test_an_unreadable_shared_file_is_logged_and_the_shard_still_works(tmp_path: Path, caplog) -> None:
    root = tmp_path / "cache"
    root.mkdir()
    (root / RESPONSE_CACHE_FILE).write_bytes(b"not a database" * 300)
    cache = ResponseCache(CacheLayout(root, sharded=True, job="j").open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    assert cache.get("k") is None
    cache.put("k", {"text": "v"})
    assert cache.get("k") == {"text": "v"}
    assert "cannot read the shared cache" in caplog.text
    assert (root / RESPONSE_CACHE_FILE).read_bytes().startswith(b"not a database")  # never moved aside by a job


# ---------------------------------------------------------------------------------------------- processes
def _job(root: str, mode: str, worker: int) -> None:
    """One job of a sweep: its own SLURM id, ``OWN`` keys of its own, ``COMMON`` keys every job writes with the same
    reply, one key every job writes with its own reply; it reads everything back and sees the shared file."""
    layout = resolve_layout(Path(root), mode, env={"SLURM_JOB_ID": str(1000 + worker)})
    cache = ResponseCache(layout.open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    assert cache.get("pre-0") == {"text": "pre"}
    for j in range(OWN):
        cache.put(f"own-{worker}-{j}", {"text": json.dumps([worker, j])})
        assert cache.get(f"own-{worker}-{j}") == {"text": json.dumps([worker, j])}
    for j in range(COMMON):
        cache.put(f"common-{j}", {"text": f"common {j}"})
    cache.put("contested", {"text": f"job {worker}"})
    assert cache.get("contested") == {"text": f"job {worker}"}


def _run_jobs(root: Path, mode: str) -> None:
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_job, args=(str(root), mode, i)) for i in range(N_PROCS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * N_PROCS


def _rows(path: Path) -> dict[str, dict]:
    with sqlite3.connect(path) as conn:
        rows = {k: json.loads(v) for k, v in conn.execute(f"SELECT k, v FROM {RESPONSE_TABLE}")}
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    return rows


def test_concurrent_sharded_jobs_then_merge_leave_every_key_once_in_the_shared_file(tmp_path: Path, capsys) -> None:
    root = tmp_path / "cache"
    _shared_file(root, {"pre-0": "pre"})
    _run_jobs(root, "sharded")
    shards = sorted((root / SHARDS_DIR / "llm").glob("*.sqlite"))
    assert [p.name for p in shards] == [f"slurm-{1000 + i}.sqlite" for i in range(N_PROCS)]
    assert list(_rows(root / RESPONSE_CACHE_FILE)) == ["pre-0"]  # the jobs wrote only their shards

    assert cache_main(["merge", "--cache-dir", str(root)]) == 0
    out = capsys.readouterr().out
    own, common = N_PROCS * OWN, COMMON
    added = own + common + 1  # + "contested", from the first shard
    same = (N_PROCS - 1) * common
    assert f"merged {N_PROCS} of {N_PROCS} shards into {root / RESPONSE_CACHE_FILE}: {added} added, {same}" in out
    assert f"{N_PROCS - 1} conflicting (shared kept); {N_PROCS} shards deleted" in out
    rows = _rows(root / RESPONSE_CACHE_FILE)
    assert len(rows) == 1 + added
    assert all(rows[f"own-{w}-{j}"] == {"text": json.dumps([w, j])} for w in range(N_PROCS) for j in range(OWN))
    assert all(rows[f"common-{j}"] == {"text": f"common {j}"} for j in range(COMMON))
    assert rows["contested"] == {"text": "job 0"}  # the first shard's reply, the others counted as conflicts
    assert list((root / SHARDS_DIR / "llm").glob("*")) == []

    # idempotent: nothing left to merge, nothing changes
    assert cache_main(["merge", "--cache-dir", str(root)]) == 0
    assert "nothing to merge" in capsys.readouterr().out
    assert _rows(root / RESPONSE_CACHE_FILE) == rows
    # a later sharded job reads the merged replies through
    later = ResponseCache(CacheLayout(root, sharded=True, job="later").open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    assert later.get("own-3-0") == {"text": json.dumps([3, 0])}


def test_concurrent_shared_mode_jobs_write_one_wal_file(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    _shared_file(root, {"pre-0": "pre"})
    _run_jobs(root, "shared")
    assert not (root / SHARDS_DIR).exists()
    rows = _rows(root / RESPONSE_CACHE_FILE)
    assert len(rows) == 1 + N_PROCS * OWN + COMMON + 1
    assert rows["contested"]["text"] in {f"job {w}" for w in range(N_PROCS)}  # last writer wins in one file
    with sqlite3.connect(root / RESPONSE_CACHE_FILE) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


# ---------------------------------------------------------------------------------------------- merge
def _shard(root: Path, job: str, replies: dict[str, str]) -> Path:
    cache = ResponseCache(CacheLayout(root, sharded=True, job=job).open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    for k, v in replies.items():
        cache.put(k, {"text": v})
    return CacheLayout(root, sharded=True, job=job).shard_path(RESPONSE_CACHE_FILE)


def test_merge_with_keep_is_idempotent_and_a_corrupt_shard_stays_in_place(tmp_path: Path, capsys) -> None:
    root = tmp_path / "cache"
    a = _shard(root, "a", {"k1": "one", "k2": "two"})
    b = _shard(root, "b", {"k2": "two", "k3": "three"})
    bad = a.with_name("bad.sqlite")
    bad.write_bytes(b"this is not a sqlite database" * 200)

    first = merge_shards(root, keep=True)[RESPONSE_CACHE_FILE]
    assert [(r.shard.name, r.counts and (r.counts.added, r.counts.same, r.counts.conflicts)) for r in first] == [
        ("a.sqlite", (2, 0, 0)),
        ("b.sqlite", (1, 1, 0)),
        ("bad.sqlite", None),
    ]
    assert first[2].error and not first[2].deleted
    again = merge_shards(root, keep=True)[RESPONSE_CACHE_FILE]
    assert [r.counts and (r.counts.added, r.counts.same) for r in again] == [(0, 2), (0, 2), None]
    assert a.is_file() and b.is_file()
    assert cache_main(["--cache", str(root / RESPONSE_CACHE_FILE), "stats"]) == 0
    assert "3 replies; 3 job shards not merged yet" in capsys.readouterr().out

    assert cache_main(["merge", "--cache-dir", str(root)]) == 1  # a shard was left unmerged
    captured = capsys.readouterr()
    assert "merged 2 of 3 shards" in captured.out and "0 added, 4 already there" in captured.out
    assert f"error: shard {bad} is unreadable" in captured.err and "left in place" in captured.err
    assert not a.exists() and not b.exists() and bad.is_file()
    assert sorted(_rows(root / RESPONSE_CACHE_FILE)) == ["k1", "k2", "k3"]


def test_merge_needs_a_cache_dir(tmp_path: Path, capsys) -> None:
    assert cache_main(["merge", "--cache-dir", str(tmp_path / "missing")]) == 2
    assert "no cache directory" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------- through a run
def _run_cli(tmp_path: Path, overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    argv = [
        "memcore-run", "progress=false", "print_table=false", "dataset=locomo-tiny", "backbone=scripted",
        "embedder=hashing", f"hydra.run.dir={tmp_path / 'run'}", *overrides,
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    try:
        run_main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.parametrize(
    ("override", "fragment"),
    [("cache_mode=shard", "Did you mean 'shared', 'sharded'?"), ("cache_mode=shared", "nfs4")],
)
def test_a_bad_cache_mode_is_one_line_exit_2_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd, override: str, fragment: str
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(_mounts(tmp_path))
    monkeypatch.setattr("memcore.llm.fs_kind.MOUNTS_FILE", mounts)
    root = (tmp_path / "net").resolve() / "results"
    code = _run_cli(tmp_path, ["method=rag_bm25", f"paths.root={root}", override], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cache_mode=") and fragment in lines[0], err
    assert not root.exists()  # no work started


@pytest.mark.usefixtures("locomo_path")
def test_a_run_on_a_network_fs_shards_its_embedding_cache_and_merge_folds_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(_mounts(tmp_path))
    monkeypatch.setattr("memcore.llm.fs_kind.MOUNTS_FILE", mounts)
    monkeypatch.setenv("SLURM_JOB_ID", "5")
    monkeypatch.delenv("SLURM_ARRAY_JOB_ID", raising=False)
    cache = (tmp_path / "net").resolve() / "results" / "cache"
    assert _run_cli(tmp_path, ["method=rag_dense", f"paths.root={cache.parent}"], monkeypatch) == 0
    assert "cache: sharded" in capfd.readouterr().out
    shard = cache / SHARDS_DIR / "embeddings" / "slurm-5.sqlite"
    assert shard.is_file() and not (cache / "embeddings.sqlite").exists()

    assert cache_main(["merge", "--cache-dir", str(cache)]) == 0
    assert not shard.exists()
    with sqlite3.connect(cache / "embeddings.sqlite") as conn:
        n = conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0]
        assert n > 0 and conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # merged on 'NFS'
    conn.close()


@pytest.mark.usefixtures("locomo_path")
def test_a_run_on_a_local_fs_keeps_the_shared_wal_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    mounts = tmp_path / "mounts"
    mounts.write_text(_mounts(tmp_path))
    monkeypatch.setattr("memcore.llm.fs_kind.MOUNTS_FILE", mounts)
    cache = tmp_path / "local" / "results" / "cache"
    assert _run_cli(tmp_path, ["method=rag_dense", f"paths.root={cache.parent}"], monkeypatch) == 0
    assert "cache: shared" in capfd.readouterr().out
    assert (cache / "embeddings.sqlite").is_file() and not (cache / SHARDS_DIR).exists()


def test_a_wal_shared_file_on_a_network_fs_is_read_without_making_shm_files(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    path = _shared_file(root, {"k": "from a WAL file"})
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
    conn.close()  # checkpointed; the file's header still says WAL
    layout = CacheLayout(root, sharded=True, job="j", network_fs="nfs4")
    cache = ResponseCache(layout.open(RESPONSE_CACHE_FILE, RESPONSE_TABLE))
    assert cache.get("k") == {"text": "from a WAL file"}
    assert sorted(p.name for p in root.iterdir()) == [RESPONSE_CACHE_FILE, SHARDS_DIR]  # no -wal / -shm made

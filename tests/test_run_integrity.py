"""A run dir nothing can corrupt: one writer per run dir (a POSIX lock, tested with real processes), repeated item
ids refused by every reader that counts, ``memcore-archive --verify`` recomputing every item, counters that
survive reruns, and every check (keys, model files, writable paths) before any work."""

from __future__ import annotations

import gzip
import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from memcore.commands.archive import main as archive_main
from memcore.commands.report import main as report_main
from memcore.commands.rescore import main as rescore_main
from memcore.commands.run import run_main
from memcore.itemlog import ITEMS_GZ, DuplicateItemsError, read_items, read_run_items
from memcore.itemlog import main as itemlog_main
from memcore.llm.backbone import BackboneError
from memcore.llm.scripted import ScriptedBackbone
from memcore.pipeline import runlock
from memcore.pipeline.load import load_slice
from memcore.pipeline.report import run_metrics
from memcore.pipeline.runlock import LOCK_FILE, Holder, RunDirBusyError, RunDirLock
from memcore.report.archive import archive_run
from memcore.report.verify import DERIVED_KEYS, verify_run
from memcore.runner import run_config
from tests.fakes import JudgeLLM
from tests.support import CHILD_OF_TEST, REPO, resume_command

#: A run that calls no LLM: seconds on the real data.
RETRIEVAL = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "eval.answer=false", "concurrency=1"]
#: A run whose scripted backbone answers in plain text where JSON is asked: every JSON prompt falls back (counted).
FALLBACKS = ["dataset=locomo-tiny", "embedder=hashing", "backbone=scripted", "method=amem", "concurrency=1"]
CLI_BASE = ["progress=false", "print_table=false", *RETRIEVAL]

HOLDER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from memcore.pipeline.runlock import Holder, RunDirLock
    lock = RunDirLock(Path(sys.argv[1])).acquire()
    if len(sys.argv) > 2:  # pose as a process that is gone: the lock is held under its name
        fake = Holder(Holder.me().host, int(sys.argv[2]), "2020-01-01 00:00:00 UTC", None)
        os.ftruncate(lock._fd, 0)
        os.pwrite(lock._fd, fake.to_text().encode(), 0)
    print("held", flush=True)
    time.sleep(300)
    """
)


def _hold(run_dir: Path, *pose_as: str) -> subprocess.Popen[bytes]:
    """A real process holding ``run_dir``'s lock (until killed)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(run_dir), *pose_as], cwd=REPO, stdout=subprocess.PIPE, **CHILD_OF_TEST
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"held"
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def _cli(tmp_path: Path, run_dir: Path, *extra: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "memcore.commands.run",
        *CLI_BASE,
        f"paths.root={tmp_path / 'results'}",
        f"hydra.run.dir={run_dir}",
    ]
    return subprocess.run(
        [*cmd, *extra], cwd=REPO, capture_output=True, text=True, timeout=300, env=env, **CHILD_OF_TEST
    )


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


# ---------------------------------------------------------------- 1. one writer per run dir
@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
def test_a_second_run_on_a_locked_run_dir_exits_2_naming_the_holder_and_a_dead_holder_is_taken_over(
    tmp_path: Path,
) -> None:
    run_dir = tmp_path / "run"
    holder = _hold(run_dir)
    try:
        proc = _cli(tmp_path, run_dir)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        line = proc.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and f"pid {holder.pid} on host {socket.gethostname()}, started " in line
        assert not (run_dir / "items.jsonl").exists() and not (run_dir / "run_state.json").exists()
    finally:
        _stop(holder)  # SIGKILL: the kernel drops its lock, its name stays in the lock file
    again = _cli(tmp_path, run_dir)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"taking over the lock left by pid {holder.pid}" in again.stdout + again.stderr
    assert len(read_items(run_dir / "items.jsonl")) == 8
    assert (run_dir / LOCK_FILE).read_text() == ""  # released cleanly: the next run takes it without a word


@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
def test_two_memcore_runs_on_one_run_dir_one_writes_the_other_exits_2(tmp_path: Path) -> None:
    """No doubled table: a second ``memcore-run`` started while the first works is refused, and the first
    finishes with each item once."""
    root, run_dir = tmp_path / "results", tmp_path / "run"
    # ~80 scripted calls of 0.25 s: the first run outlasts the second's start-up even on a busy machine
    cmd = [
        a if not a.startswith("backbone.scripted_latency_s=") else "backbone.scripted_latency_s=0.25"
        for a in resume_command(root, run_dir)
    ]
    first = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **CHILD_OF_TEST)
    try:
        lock = run_dir / LOCK_FILE
        deadline = time.monotonic() + 120
        while not (lock.is_file() and lock.read_text()):
            assert first.poll() is None and time.monotonic() < deadline, "the first run never took the lock"
            time.sleep(0.05)
        second = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300, **CHILD_OF_TEST)
        assert first.poll() is None, "the first run ended before the second was refused: nothing was tested"
        assert second.returncode == 2, second.stderr[-2000:]
        assert f"in use by another memcore-run (pid {first.pid} on host" in second.stderr
        _, err = first.communicate(timeout=600)
        assert first.returncode == 0, err[-2000:]
    finally:
        _stop(first)
    items = read_items(run_dir / "items.jsonl")
    assert len(items) == len({r["item_id"] for r in items}) == 8
    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["overall"]["n"] == 8


@pytest.mark.e2e
def test_a_lock_held_under_the_name_of_a_gone_process_is_taken_over_with_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    run_dir = tmp_path / "run"
    dead = _dead_pid()
    holder = _hold(run_dir, str(dead))  # a live lock, named for a process of this host that no longer runs
    monkeypatch.setattr(runlock, "STALE_RECHECK_S", 0.05)
    try:
        with caplog.at_level(logging.WARNING, logger="memcore.pipeline.runlock"), RunDirLock(run_dir):
            assert Holder.parse((run_dir / LOCK_FILE).read_text()).pid == os.getpid()  # type: ignore[union-attr]
        assert f"taking over the lock still held for pid {dead} on host" in caplog.text
    finally:
        _stop(holder)


def test_a_live_holder_of_another_host_or_this_process_is_never_taken_over(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    with RunDirLock(run_dir), pytest.raises(RunDirBusyError, match="another run of this process"):
        RunDirLock(run_dir).acquire()
    RunDirLock(run_dir).acquire().release()  # released: free again
    elsewhere = Holder("some-other-host", _dead_pid(), "now", None)
    assert not elsewhere.gone()  # a pid is only judged on its own host


@pytest.mark.usefixtures("locomo_path")
def test_overwrite_moves_the_old_run_aside_but_keeps_the_lock_in_place(tmp_path: Path, compose) -> None:
    run_dir = tmp_path / "run"
    run_config(compose(RETRIEVAL), run_dir)
    run_config(compose([*RETRIEVAL, "eval.note_cap=5", "overwrite=true"]), run_dir)
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("run.old-")]
    assert (aside / "items.jsonl").is_file() and not (aside / LOCK_FILE).exists()
    assert (run_dir / LOCK_FILE).is_file() and len(read_items(run_dir / "items.jsonl")) == 8


@pytest.mark.usefixtures("locomo_path")
def test_repeated_item_ids_are_refused_by_the_runner_report_and_rescore_until_deduped(
    tmp_path: Path, compose, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_config(compose(RETRIEVAL), run_dir)
    items = run_dir / "items.jsonl"
    items.write_text(items.read_text() * 2)  # two processes appended the same items
    with pytest.raises(DuplicateItemsError) as info:
        run_config(compose(RETRIEVAL), run_dir)
    msg = str(info.value)
    assert "\n" not in msg and "repeat 8 item ids" in msg and f"python -m memcore.itemlog dedupe {run_dir}" in msg
    capsys.readouterr()
    assert report_main([str(run_dir), "--out", str(tmp_path / "report"), "--no-plots", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "repeat 8 item ids" in err[0]
    assert rescore_main([str(run_dir), "--out", str(tmp_path / "rescored")]) == 2
    err = capsys.readouterr().err.strip().splitlines()  # (an earlier test's logging handler may add its own lines)
    assert err[-1].startswith("error: ") and "dedupe" in err[-1]
    assert archive_main([str(run_dir), "--out", str(tmp_path / "archive")]) == 2
    assert "repeat 8 item ids" in capsys.readouterr().err
    assert itemlog_main(["dedupe", str(run_dir)]) == 0
    assert "removed 8 repeated lines" in capsys.readouterr().out
    assert list(run_dir.glob("items.jsonl.dup-*"))  # the original is kept
    fixed = run_config(compose(RETRIEVAL), run_dir)
    assert fixed.metrics["overall"]["n"] == 8 and len(read_items(items)) == 8


# ---------------------------------------------------------------- 2. verify recomputes every item
ANSWERED = ["dataset=locomo-tiny", "embedder=hashing", "method=rag_bm25", "concurrency=1"]


@pytest.fixture()
def answered_archive(tmp_path: Path, compose, locomo_path: Path) -> Path:
    answers = ScriptedBackbone(JudgeLLM(answer="beagle", correct=lambda gold: True))
    run_config(compose([*ANSWERED, "eval.judge=true"]), tmp_path / "run", backbone_override=answers)
    return archive_run(tmp_path / "run", tmp_path / "archive", roots=[tmp_path / "results"])


def _forge(archive: Path, edit) -> str:
    """Apply ``edit`` to the first item with gold evidence, rewrite ``metrics.json`` to match the forged items (so
    re-adding the stored scores finds nothing); the forged item's id."""
    from omegaconf import OmegaConf

    items = read_run_items(archive)
    target = next(r for r in items if r["evidence"] and r["answer"])
    edit(target)
    body = "".join(json.dumps(r) + "\n" for r in items).encode()
    (archive / ITEMS_GZ).write_bytes(gzip.compress(body, mtime=0))
    cfg = OmegaConf.load(archive / "config.yaml")
    data = load_slice(cfg.dataset)
    metrics = json.loads((archive / "metrics.json").read_text())
    again = run_metrics(cfg, metrics["run"]["method"], data, items)
    metrics.update({k: again[k] for k in DERIVED_KEYS if k in again})
    (archive / "metrics.json").write_text(json.dumps(metrics))
    return str(target["item_id"])


def _set_recall(r: dict) -> None:
    r["recall"] = 0.25 if r["recall"] != 0.25 else 0.5


def _set_f1(r: dict) -> None:
    r["scores"]["f1"] = 0.99


def _flip_judge(r: dict) -> None:
    run = r["judge"]["runs"][0]
    run["label"] = "WRONG" if run["label"] == "CORRECT" else "CORRECT"


@pytest.mark.parametrize(
    ("edit", "field"),
    [(_set_recall, "recall"), (_set_f1, "scores"), (_flip_judge, "scores")],
    ids=["recall", "f1", "judge"],
)
def test_verify_names_a_forged_item_whose_metrics_were_regenerated_to_match(
    answered_archive: Path, edit, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert verify_run(answered_archive).differences == []
    assert archive_main(["--verify", str(answered_archive)]) == 0
    forged = _forge(answered_archive, edit)
    found = verify_run(answered_archive)
    assert found.differences[0].startswith(f"item {forged}: {field}: stored ")
    assert not any(d in DERIVED_KEYS for d in found.differences)  # the stored items re-add to the forged metrics
    capsys.readouterr()
    assert archive_main(["--verify", str(answered_archive)]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS" in out and f"item {forged}: {field}" in out


def test_verify_says_what_a_slim_item_does_not_carry(answered_archive: Path, capsys) -> None:
    items = read_run_items(answered_archive)
    for r in items:
        del r["retrieved_dia_ids"]
    body = "".join(json.dumps(r) + "\n" for r in items).encode()
    (answered_archive / ITEMS_GZ).write_bytes(gzip.compress(body, mtime=0))
    found = verify_run(answered_archive)
    assert found.differences == []
    assert found.not_recomputed == [f"recall and hit (no retrieved_dia_ids or evidence): {len(items)} items"]
    assert archive_main(["--verify", str(answered_archive)]) == 0
    assert "not recomputed (the items do not carry it): recall and hit" in capsys.readouterr().out


# ---------------------------------------------------------------- 3. records survive reruns
@pytest.mark.usefixtures("locomo_path")
def test_counters_survive_an_idle_rerun_and_accumulate_over_invocations(tmp_path: Path, compose) -> None:
    run_dir = tmp_path / "run"
    first = run_config(compose(FALLBACKS), run_dir)
    totals = first.cost["run_totals"]
    assert totals["parse_failures"] > 0 and totals["invocations"] == 1
    assert first.metrics["parse_failures"] == totals["parse_failures_by_kind"]
    assert f"parse fallbacks {totals['parse_failures']};" in (run_dir / "table.md").read_text()
    before = {n: (run_dir / n).read_text() for n in ("metrics.json", "table.md")}

    again = run_config(compose(FALLBACKS), run_dir)  # nothing left to do
    assert again.cost["this_invocation"]["idle"]
    assert {n: (run_dir / n).read_text() for n in before} == before  # not one number changed

    items = run_dir / "items.jsonl"
    lines = items.read_text().splitlines(keepends=True)
    items.write_text("".join(lines[:5]))  # as if the first invocation had stopped after 5 items
    resumed = run_config(compose(FALLBACKS), run_dir)
    invocations = resumed.stats["invocations"]
    assert [i["items_written"] for i in invocations] == [8, 3]
    assert invocations[0]["snapshots_built"] == ["conv-26"] and invocations[1]["snapshots_reused"] == ["conv-26"]
    build = resumed.stats["conversations"]["conv-26"]["ingest_usage"]["parse_failures_by_kind"]
    n_build = sum(sum(k.values()) for k in build.values())
    n_qa = [sum(sum(k.values()) for k in i["qa_parse_failures_by_kind"].values()) for i in invocations]
    assert n_build > 0 and n_qa[1] > 0
    assert resumed.cost["run_totals"]["parse_failures"] == n_build + sum(n_qa)  # the build counted once
    assert "LLM calls (2 invocations)" in (run_dir / "table.md").read_text()


@pytest.mark.usefixtures("locomo_path")
def test_a_run_recorded_before_invocations_were_kept_keeps_its_numbers_on_an_idle_rerun(
    tmp_path: Path, compose
) -> None:
    run_dir = tmp_path / "run"
    run_config(compose(FALLBACKS), run_dir)
    metrics = (run_dir / "metrics.json").read_text()
    stats = json.loads((run_dir / "stats.json").read_text())
    del stats["invocations"]  # as an older harness wrote them
    (run_dir / "stats.json").write_text(json.dumps(stats))
    cost = json.loads((run_dir / "cost.json").read_text())
    del cost["run_totals"], cost["this_invocation"]
    (run_dir / "cost.json").write_text(json.dumps(cost))
    again = run_config(compose(FALLBACKS), run_dir)
    assert (run_dir / "metrics.json").read_text() == metrics
    (only,) = again.stats["invocations"]
    assert (
        only["status"] == "recorded before invocations were kept" and only["calls"] == cost["usage"]["total"]["calls"]
    )


@pytest.mark.usefixtures("locomo_path")
def test_a_run_that_reuses_a_snapshot_reports_the_fallbacks_of_its_build(tmp_path: Path, compose) -> None:
    built = run_config(compose(FALLBACKS), tmp_path / "built")
    reused = run_config(compose(FALLBACKS), tmp_path / "reused")  # same snapshot store: the memory is loaded
    assert reused.stats["conversations"]["conv-26"]["reused"]
    assert reused.metrics["parse_failures"] == built.metrics["parse_failures"]
    ingest = reused.metrics["parse_failures"]["ingest"]
    n = sum(ingest.values())
    assert n > 0 and reused.cost["run_totals"]["reused_snapshot_parse_failures"] == n
    assert f"({n} recorded when reused snapshots were built)" in (tmp_path / "reused" / "table.md").read_text()


@pytest.mark.usefixtures("locomo_path")
def test_a_failed_invocation_is_recorded_and_the_rerun_adds_its_own(tmp_path: Path, compose) -> None:
    run_dir, calls = tmp_path / "run", {"n": 0}

    def failing_at_the_fourth(messages):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] == 4:
            raise BackboneError("the server went away (scripted)")
        return "beagle"

    with pytest.raises(BackboneError):
        run_config(compose(ANSWERED), run_dir, backbone_override=ScriptedBackbone(failing_at_the_fourth))
    (first,) = json.loads((run_dir / "stats.json").read_text())["invocations"]
    assert first["status"] == "failed: BackboneError" and first["items_written"] == 3
    done = run_config(compose(ANSWERED), run_dir, backbone_override=ScriptedBackbone(lambda m: "beagle"))
    assert [i["items_written"] for i in done.stats["invocations"]] == [3, 5]


# ---------------------------------------------------------------- 4. every check before any work
def _run_cli_inprocess(tmp_path: Path, run_dir: Path, overrides: list[str], monkeypatch) -> int:
    argv = ["memcore-run", *CLI_BASE, f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={run_dir}", *overrides]
    monkeypatch.setattr(sys, "argv", argv)
    try:
        run_main()
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0


@pytest.mark.e2e  # Hydra composition per case
@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (["backbone=gpt-4o-mini", "eval.answer=true"], ["needs an API key in $OPENAI_API_KEY"]),
        (["backbone=local", "eval.answer=true"], ["is not assembled yet", "get_local_model.py --model", "make model"]),
        (
            ["backbone=local", "eval.answer=true", "backbone.gguf=/no/such.gguf"],
            ["backbone.gguf points to /no/such.gguf"],
        ),
        (["eval.judge=true", "eval.answer=true", "eval.judge_preset=no-such-judge"], ["no-such-judge"]),
        (["embedder=openai-3-small"], ["needs an API key in $OPENAI_API_KEY"]),
    ],
    ids=["key", "model", "gguf", "judge", "embedder-key"],
)
def test_a_missing_key_or_model_is_one_line_before_work_and_overwrite_moves_nothing(
    tmp_path: Path, overrides: list[str], fragments: list[str], monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    run_dir = tmp_path / "run"
    assert _run_cli_inprocess(tmp_path, run_dir, [], monkeypatch) == 0  # a finished run
    before = sorted(p.name for p in run_dir.iterdir())
    snapshots = sorted((tmp_path / "results" / "snapshots").rglob("*"))
    capfd.readouterr()
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path / "no-home"))
    monkeypatch.delenv("MEMCORE_GGUF", raising=False)
    code = _run_cli_inprocess(tmp_path, run_dir, [*overrides, "overwrite=true"], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "Traceback" not in err
    for fragment in fragments:
        assert fragment in line, line
    assert sorted(p.name for p in run_dir.iterdir()) == before  # nothing moved aside
    assert not [p for p in tmp_path.iterdir() if ".old-" in p.name]
    assert sorted((tmp_path / "results" / "snapshots").rglob("*")) == snapshots


@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
def test_a_retrieval_only_run_needs_no_key_and_no_model(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "MEMCORE_GGUF")}
    env["MEMCORE_HOME"] = str(tmp_path / "no-home")
    for backbone in ("gpt-4o-mini", "local"):
        proc = _cli(tmp_path, tmp_path / backbone, f"backbone={backbone}", env=env)
        assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.e2e
@pytest.mark.usefixtures("locomo_path")
def test_a_path_a_user_can_type_is_one_line_and_exit_2(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a dir")
    cases = [
        ([], "/proc/memcore-run", "/proc/memcore-run"),
        ([], str(a_file), "a file is in the way"),
        ([], str(a_file / "below"), str(a_file)),
        ([f"paths.snapshots={a_file}"], str(tmp_path / "run1"), "paths.snapshots"),
        (["paths.cache=/proc/memcore-cache"], str(tmp_path / "run2"), "paths.cache"),
    ]
    for extra, run_dir, fragment in cases:
        cmd = [sys.executable, "-m", "memcore.commands.run", *CLI_BASE, f"paths.root={tmp_path / 'results'}"]
        proc = subprocess.run(
            [*cmd, f"hydra.run.dir={run_dir}", *extra], cwd=REPO, capture_output=True, text=True, timeout=300,
            **CHILD_OF_TEST,
        )  # fmt: skip
        assert proc.returncode == 2, (extra, run_dir, proc.stderr[-2000:])
        assert "Traceback" not in proc.stderr
        line = proc.stderr.strip().splitlines()[-1]
        assert line.startswith("error: ") and fragment in line, line
    assert not (tmp_path / "run1" / "items.jsonl").exists() and not (tmp_path / "run2" / "items.jsonl").exists()


@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("damage", ["torn", "short"])
def test_rescore_of_an_incomplete_run_says_so_and_exits_non_zero_unless_allowed(
    tmp_path: Path, compose, damage: str, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_config(compose(RETRIEVAL), run_dir)
    items = run_dir / "items.jsonl"
    lines = items.read_bytes().splitlines(keepends=True)
    items.write_bytes(b"".join(lines[:-1]) + (lines[-1][:30] if damage == "torn" else b""))
    assert rescore_main([str(run_dir), "--out", str(tmp_path / "strict")]) == 1
    captured = capsys.readouterr()
    assert "INCOMPLETE: 7 of the slice's 8 items" in captured.out
    last = captured.err.strip().splitlines()[-1]
    assert last.startswith("error: ") and "is incomplete" in last and "--allow-incomplete" in last
    if damage == "torn":
        assert "a torn last line (30 bytes) was dropped" in captured.out
    table = (tmp_path / "strict" / "table.md").read_text()
    assert "INCOMPLETE" in table and "(n=7)" in table
    assert rescore_main([str(run_dir), "--out", str(tmp_path / "allowed"), "--allow-incomplete"]) == 0
    assert json.loads((tmp_path / "allowed" / "metrics.json").read_text())["run"]["incomplete"]["n_items"] == 7


@pytest.mark.usefixtures("locomo_path")
def test_an_out_path_a_user_can_type_is_one_line_and_exit_2_for_rescore_archive_and_report(
    tmp_path: Path, compose, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    run_config(compose(RETRIEVAL), run_dir)
    a_file = tmp_path / "a-file"
    a_file.write_text("not a dir")
    for out, reason in ((a_file, "a file is in the way"), (Path("/proc/memcore-out"), "a directory cannot be made")):
        for main, extra in ((rescore_main, []), (archive_main, []), (report_main, ["--no-plots", "--quiet"])):
            capsys.readouterr()
            assert main([str(run_dir), "--out", str(out), *extra]) == 2, main
            err = capsys.readouterr().err.strip().splitlines()
            assert err[-1].startswith("error: ") and reason in err[-1] and "Traceback" not in "\n".join(err)

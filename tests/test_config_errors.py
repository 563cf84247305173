"""Every bad knob, and every selection that holds no QA item, is one line from ``memcore-run``, exit 2, before any
work.

The sweep drives the real entry point (``memcore.commands.run.run_main`` with ``sys.argv`` set, Hydra composition
included) in-process, so dozens of cases cost seconds rather than as many interpreter start-ups; one case also
goes through a real subprocess. Each case checks: exit code 2, stderr is exactly one ``error: …`` line naming the
key and the bad value (and what is allowed), no traceback, and no work was done (no items, no LLM cache, no
snapshot; for an empty selection, not even the run-dir lock). Item ids that match only in part run the matches
with one warning line. The caps of values above what can help are in ``tests/test_concurrency.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import memcore.commands.run as cli
from memcore.config import ConfigError
from memcore.memory.config import MemCoReConfig
from memcore.methods import method_names, method_specs
from memcore.pipeline.rundir import RUN_STATE
from memcore.pipeline.runlock import LOCK_FILE
from memcore.schema import check_fields
from memcore.validation import METHOD_VALIDATORS, validate_method
from tests.support import CHILD_OF_TEST, REPO, compose_run

BASE = ["progress=false", "print_table=false", "dataset=locomo-tiny", "backbone=scripted", "embedder=hashing"]

#: Each method's bad values, declared on its spec (``MethodSpec.bad_configs``): (overrides, fragments the one
#: error line must contain).
METHOD_BAD_VALUES: list[tuple[list[str], list[str]]] = [
    ([f"method={spec.name}", *overrides], list(fragments))
    for spec in method_specs()
    for overrides, fragments in spec.bad_configs
]

#: The harness's own sections: (overrides, fragments the one error line must contain).
HARNESS_BAD_VALUES: list[tuple[list[str], list[str]]] = [
    # backbone and embedder presets
    (["+backbone.max_attempts=0"], ["backbone.max_attempts=0", ">= 1"]),
    (["backbone.max_attempts=0"], ["backbone.max_attempts=0", "add it with +backbone.max_attempts=0"]),
    (["+backbone.timeout_s=0"], ["backbone.timeout_s=0", "> 0"]),
    (["backbone=local-small", "backbone.n_ctx=100"], ["backbone.n_ctx=100", ">= 256"]),
    (
        ["backbone=local", "backbone.prompt_token_cap=9000"],
        ["backbone.prompt_token_cap=9000", "< backbone.n_ctx"],
    ),
    (["backbone=gpt-4o-mini", "backbone.max_concurrency=0"], ["backbone.max_concurrency=0", ">= 1"]),
    (["backbone.kind=openai"], ["backbone.kind='openai'", "Known: llamacpp"]),
    (["embedder.dim=0"], ["embedder.dim=0", ">= 1"]),
    (["embedder=minilm", "+embedder.batch_size=-1"], ["embedder.batch_size=-1", ">= 1"]),
    (["embedder=minilm", "embedder.threads=0"], ["embedder.threads=0", ">= 1"]),
    # eval, dataset, protocol, run
    (["eval.note_cap=0"], ["eval.note_cap=0", ">= 1"]),
    (["eval.token_cap=0"], ["eval.token_cap=0", ">= 1"]),
    (["eval.token_cap=-5"], ["eval.token_cap=-5", ">= 1"]),
    (["eval.token_cap=abc"], ["'abc'", "eval.token_cap"]),
    (["eval.report_token_caps=[500,0]"], ["eval.report_token_caps=[500, 0]", "integers >= 1"]),
    (["eval.answer=maybe"], ["'maybe'", "eval.answer"]),
    (["eval.answer_prompt=paper"], ["eval.answer_prompt='paper'", "harness, upstream"]),
    (
        ["method=mem0-two-phase", "eval.answer_prompt=upstream", "protocol.temperature=0.2"],
        ["eval.answer_prompt=upstream", "protocol.temperature=0.2", "eval.answer_prompt=harness"],
    ),
    (
        ["method=lightmem", "eval.answer_prompt=upstream", "eval.token_cap=500"],
        ["eval.answer_prompt=upstream", "eval.token_cap", "lightmem"],
    ),
    (
        ["method=rag_locomo", "eval.answer_prompt=upstream", "method.context_format=notes"],
        ["eval.answer_prompt=upstream", "method.context_format=notes", "locomo"],
    ),
    (["method=full_context", "eval.answer_prompt=upstream", "protocol.max_tokens=64"], ["protocol.max_tokens=64"]),
    (["+eval.foo=1"], ["eval.foo", "EvalConfig"]),
    (["dataset.max_qa=0"], ["dataset.max_qa=0", ">= 1", "0 keeps no QA item"]),
    (["dataset.max_sessions=0"], ["dataset.max_sessions=0", ">= 1", "0 keeps no session"]),
    (["dataset.item_ids=[]"], ["dataset.item_ids=[]", "a non-empty list of QA item ids", "null for no cut"]),
    (["dataset.conversations=[]"], ["dataset.conversations=[]", "a non-empty list of conversation ids"]),
    (["dataset.categories=[]"], ["dataset.categories=[]", "a non-empty list of category ids"]),
    (["dataset.categories=[7]"], ["dataset.categories=[7]", "categories 1-5"]),
    (["dataset.kind=locomoo"], ["dataset.kind='locomoo'", "Did you mean 'locomo'?", "Known: locomo"]),
    (["protocol.temperature=-0.1"], ["protocol.temperature=-0.1", "in [0, 2]"]),
    (["concurrency=0"], ["concurrency=0", ">= 1"]),
    (["concurrency=-4"], ["concurrency=-4", ">= 1"]),
    (["build_processes=-1"], ["build_processes=-1", ">= 0"]),
    (["backbone.max_concurrency=0"], ["backbone.max_concurrency=0", ">= 1"]),
    (["+eval.judge_server.max_concurrency=0"], ["eval.judge_server.max_concurrency=0", ">= 1"]),
    (["cache_mode=shard"], ["cache_mode='shard'", "Did you mean 'shared', 'sharded'?", "Known: auto, shared, sharded"]),
    (["on_locked_run=skipp"], ["on_locked_run='skipp'", "Did you mean 'skip'?", "Known: skip, wait, error"]),
    (["seed=abc"], ["'abc'", "seed"]),
    (["+ablation.foo=1"], ["ablation.foo", "AblationConfig"]),
    (["method=rag_dense", "+ablation.foo=1"], ["ablation.foo", "AblationConfig"]),
    (["ablation.merge=maybe"], ["'maybe'", "ablation.merge"]),
]
BAD_VALUES = METHOD_BAD_VALUES + HARNESS_BAD_VALUES

#: Selections that are empty once the data is read (BASE's slice is locomo-tiny: conv-26, 8 items of categories
#: 1-4): (overrides, fragments the one error line must contain).
EMPTY_SELECTIONS: list[tuple[list[str], list[str]]] = [
    (["dataset.conversations=[nope]"], ["dataset.conversations", "unknown conversation 'nope'", "known ids: conv-26"]),
    (["dataset.categories=[5]"], ["dataset.categories=[5] selects no QA item of dataset locomo-tiny", "1, 2, 3, 4"]),
    (['dataset.item_ids=["conv-26#199"]'], ["dataset.item_ids selects no QA item", "conv-26#199 (not in the dataset"]),
    (
        ['dataset.item_ids=["conv-30#0","conv-26#150"]'],
        ["conv-30#0 (conversation conv-30 is not in the slice)", "conv-26#150 (cut by the slice's sessions"],
    ),
]


def _run_cli(tmp_path: Path, overrides: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    argv = ["memcore-run", *BASE, f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={tmp_path / 'run'}", *overrides]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as info:
        cli.run_main()
    return int(info.value.code or 0)


def test_every_method_declares_a_bad_value_and_the_table_has_25() -> None:
    assert [s.name for s in method_specs() if not s.bad_configs] == []
    assert len(BAD_VALUES) >= 25


def test_every_registered_method_has_a_validator_that_accepts_its_yaml() -> None:
    """The shipped configs/method/*.yaml pass their own validator (no false alarms)."""
    assert set(METHOD_VALIDATORS) == set(method_names())
    for name in method_names():
        cfg = compose_run(Path("/tmp"), [f"method={name}"])
        validate_method(name, dict(cfg.method), dict(cfg.ablation))


@pytest.mark.e2e  # ~1 s per case (Hydra composition): make test, not make test-fast
@pytest.mark.parametrize(("overrides", "fragments"), BAD_VALUES, ids=[" ".join(o) for o, _ in BAD_VALUES])
def test_bad_value_is_one_line_exit_2_before_any_work(
    tmp_path: Path, overrides: list[str], fragments: list[str], monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    code = _run_cli(tmp_path, overrides, monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    results = tmp_path / "results"
    assert not (tmp_path / "run" / "items.jsonl").exists()
    assert not (results / "cache").exists() and not (results / "snapshots").exists()  # no work started


@pytest.mark.e2e  # ~1 s (Hydra composition)
def test_an_old_key_name_on_the_command_line_works_as_its_new_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    """``eval.budget=0`` (the name before the rename) is read as ``eval.note_cap=0``: one line names the new key,
    then the range check refuses it under the new name."""
    code = _run_cli(tmp_path, ["eval.budget=0"], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert lines[0] == "eval.budget is renamed: use eval.note_cap", err
    assert len(lines) == 2 and lines[1].startswith("error: ") and "eval.note_cap=0" in lines[1], err


@pytest.mark.e2e  # ~1 s per case (Hydra composition and the data file read)
@pytest.mark.parametrize(("overrides", "fragments"), EMPTY_SELECTIONS, ids=[" ".join(o) for o, _ in EMPTY_SELECTIONS])
def test_an_empty_selection_is_one_line_exit_2_before_any_work(
    tmp_path: Path,
    overrides: list[str],
    fragments: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capfd,
    locomo_path: Path,
) -> None:
    code = _run_cli(tmp_path, ["method=rag_bm25", "eval.answer=false", *overrides], monkeypatch)
    err = capfd.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    run, results = tmp_path / "run", tmp_path / "results"
    assert not (run / "items.jsonl").exists() and not (run / "config.yaml").exists()
    assert not (run / LOCK_FILE).exists() and not (run / RUN_STATE).exists()  # the run dir was not taken
    assert not (results / "cache").exists() and not (results / "snapshots").exists()


@pytest.mark.e2e  # one in-process run of memcore-run on locomo-tiny (retrieval only, seconds)
def test_item_ids_that_match_in_part_run_the_matches_with_one_warning_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd, locomo_path: Path
) -> None:
    run = tmp_path / "run"
    argv = [
        "memcore-run", *BASE, f"paths.root={tmp_path / 'results'}", f"hydra.run.dir={run}", "method=rag_bm25",
        "eval.answer=false", 'dataset.item_ids=["conv-26#0","conv-26#999"]',
    ]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    cli.run_main()
    out = capfd.readouterr()
    warned = [ln for ln in (out.out + out.err).splitlines() if "[WARNING]" in ln]
    assert len(warned) == 1, warned
    assert warned[0].endswith(
        "dataset.item_ids: 1 of 2 ids match no QA item of this slice and are left out: conv-26#999 (not in the "
        "dataset; closest: conv-26#99)"
    )
    assert [json.loads(ln)["item_id"] for ln in (run / "items.jsonl").read_text().splitlines()] == ["conv-26#0"]


@pytest.mark.e2e  # one real process: the console entry point, its exit code and its stderr
def test_bad_value_through_a_real_process(tmp_path: Path) -> None:
    cmd = [
        sys.executable, "-m", "memcore.commands.run", *BASE, f"paths.root={tmp_path / 'results'}",
        f"hydra.run.dir={tmp_path / 'run'}", "method=amem", "method.top_k=0",
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=REPO, **CHILD_OF_TEST)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert proc.stderr.startswith("error: method.top_k=0 is not allowed: unknown key 'top_k'; method amem keys:")


def test_an_interrupted_run_exits_130_with_one_line_and_no_traceback(monkeypatch: pytest.MonkeyPatch, capfd) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt("signal SIGTERM")

    monkeypatch.setattr(cli, "_hydra_main", interrupted)
    with pytest.raises(SystemExit) as info:
        cli.run_main()
    err = capfd.readouterr().err
    assert info.value.code == 130
    assert err.strip().splitlines() == [
        "interrupted (signal SIGTERM): finished items are kept; rerun the same command to resume"
    ]


def test_validate_method_rejects_what_the_method_constructor_rejects() -> None:
    """Cross-field checks come from the method's own config class (A-MEM's content_template placeholders)."""
    with pytest.raises(ConfigError, match=r"content_template must contain \{speaker\} and \{text\}"):
        validate_method("amem", {"name": "amem", "content_template": "no placeholders"}, {"name": "none"})


def test_an_unknown_method_key_names_the_close_ones() -> None:
    with pytest.raises(ConfigError, match=r"unknown key; did you mean method\.pack_keyword or ") as err:
        check_fields(MemCoReConfig, {"pack_keywords": 1.0}, prefix="method.", where="method memcore-cheap")
    assert "\n" not in str(err.value)

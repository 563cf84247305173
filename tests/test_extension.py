"""Extending the harness edits nothing: in a temporary copy of the tree a new method is its folder plus its
``configs/method/<name>.yaml`` (and, with switches, its ``configs/ablation/`` files), run through ``memcore-run``
(retrieval only, scripted backbone, hashing embedder) and ``memcore-report``, with no other file touched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.extension_support import copy_tree, edited_files, run_module, write
from tests.support import data_file_or_skip

#: A memory that hands the answerer the conversation's last k turns: the whole method, as one folder.
RECENT_TURNS = '''"""recent_turns: the last k turns of the conversation, whatever the question."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from baselines.turns import load_turns, save_turns, turn_note
from memcore.interfaces import MethodContext, MethodSpec
from memcore.schema import POS, knob, method_validator
from memcore.types import Evidence, Turn

METHODS = {"recent_turns": "baselines.recent_turns:SPEC"}


@dataclass(frozen=True)
class RecentTurnsConfig:
    k: int = knob(10, rule=POS)


class RecentTurns:
    def __init__(self, cfg: RecentTurnsConfig) -> None:
        self.cfg = cfg
        self.turns: list[Turn] = []

    def ingest(self, turn: Turn) -> None:
        self.turns.append(turn)

    def finalize(self) -> None:
        pass

    def retrieve(self, query: str, *, budget: int | None = None) -> Evidence:
        k = budget or self.cfg.k
        return Evidence(notes=[turn_note(t) for t in reversed(self.turns[-k:])])

    def save(self, path: Path) -> None:
        save_turns(self.turns, path / "turns.jsonl")

    def load(self, path: Path) -> None:
        self.turns = load_turns(path / "turns.jsonl")

    def stats(self) -> dict[str, Any]:
        return {"turns": len(self.turns)}


SPEC = MethodSpec(
    name="recent_turns",
    factory=lambda ctx: RecentTurns(RecentTurnsConfig(**{k: v for k, v in ctx.config.items() if k != "name"})),
    ingest_uses_llm=lambda config, ablation: False,
    config_schema=(RecentTurnsConfig,),
    validate_config=method_validator(RecentTurnsConfig),
    description="the last k turns (an extension example)",
    bad_configs=((("method.k=0",), ("method.k=0", ">= 1")),),
)
'''

#: The same memory with one ablation switch (``newest_first``) and its ablation presets.
SWITCHED = '''"""switched_turns: recent_turns with an ablation switch."""

from __future__ import annotations

from dataclasses import dataclass

from baselines.recent_turns import RecentTurns, RecentTurnsConfig
from memcore.interfaces import MethodSpec
from memcore.schema import method_validator

METHODS = {"switched_turns": "baselines.switched_turns:SPEC"}


@dataclass(frozen=True)
class Switches:
    name: str = "full"
    newest_first: bool = True


SPEC = MethodSpec(
    name="switched_turns",
    factory=lambda ctx: RecentTurns(RecentTurnsConfig(**{k: v for k, v in ctx.config.items() if k != "name"})),
    ingest_uses_llm=lambda config, ablation: False,
    config_schema=(RecentTurnsConfig,),
    validate_config=method_validator(RecentTurnsConfig),
    ablation_schema=Switches,
    ablations=("full", "wo_newest_first"),
)
'''

RETRIEVAL_ONLY = ["dataset=locomo-tiny", "backbone=scripted", "eval.answer=false", "embedder=hashing", "progress=false"]


def _tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The copy, reading the LoCoMo file the repository reads (the copy has no ``../shared`` beside it)."""
    monkeypatch.setenv("MEMCORE_DATA", str(data_file_or_skip("locomo")))
    return copy_tree(tmp_path / "tree")


def test_new_method_is_one_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, monkeypatch)
    added = ["baselines/recent_turns/__init__.py", "configs/method/recent_turns.yaml"]
    write(tree, added[0], RECENT_TURNS)
    write(tree, added[1], "name: recent_turns\nk: 10\n")

    run = run_module(tree, "memcore.cli", ["method=recent_turns", *RETRIEVAL_ONLY, "hydra.run.dir=results/run"])
    assert run.returncode == 0, run.stderr
    metrics = json.loads((tree / "results" / "run" / "metrics.json").read_text())
    assert metrics["run"]["method"] == "recent_turns"
    assert metrics["overall"]["recall"] is not None and 0.0 <= metrics["overall"]["recall"] <= 1.0

    report = run_module(tree, "memcore.report.cli", ["results/run", "--no-reference", "--out", "results/report"])
    assert report.returncode == 0, report.stderr
    assert "recent_turns" in report.stdout + "".join(p.read_text() for p in (tree / "results" / "report").glob("*.md"))
    assert edited_files(tree, added) == []


def test_a_bad_ablation_key_of_a_method_with_switches_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = _tree(tmp_path, monkeypatch)
    added = [
        "baselines/recent_turns/__init__.py",
        "baselines/switched_turns/__init__.py",
        "configs/method/switched_turns.yaml",
        "configs/ablation/full.yaml",
    ]
    write(tree, added[0], RECENT_TURNS)
    write(tree, added[1], SWITCHED)
    write(tree, added[2], "name: switched_turns\nk: 10\n")
    write(tree, added[3], "name: full\nnewest_first: true\n")
    base = ["method=switched_turns", "ablation=full", *RETRIEVAL_ONLY, "hydra.run.dir=results/run"]

    bad = run_module(tree, "memcore.cli", [*base, "+ablation.newest_frist=false"])
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and "Traceback" not in bad.stderr
    assert "ablation.newest_frist" in bad.stderr and "AblationConfig" in bad.stderr
    wrong_type = run_module(tree, "memcore.cli", [*base, "ablation.newest_first=maybe"])
    assert wrong_type.returncode == 2 and "ablation.newest_first" in wrong_type.stderr
    # MemCoRe's switches are MemCoRe's: the default preset's keys are not this method's
    theirs = run_module(tree, "memcore.cli", ["method=switched_turns", *RETRIEVAL_ONLY, "hydra.run.dir=results/run"])
    assert theirs.returncode == 2 and "ablation." in theirs.stderr
    assert not (tree / "results" / "run" / "items.jsonl").exists()
    assert edited_files(tree, added) == []

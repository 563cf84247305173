"""What the tests share besides fixtures (those are in ``conftest.py``) and fake LLMs (``fakes.py``): the repository
root, the one rule for skipping when the LoCoMo data is absent, the run config as ``memcore-run`` composes it, tiny
hand-made conversations, MemCoRe factories over the scripted backbone and the hashing embedder, synthetic run dirs
for the report, a memcore-run killed and rerun, and a minimal valid LoCoMo file."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, open_dict

from memcore.commands.run import CONFIG_PATH
from memcore.config_aliases import rename_overrides
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.paths import resolve_audit_path, resolve_locomo_path
from memcore.eval.aggregate import aggregate
from memcore.interfaces import LazyResource, MethodContext
from memcore.itemlog import LoggedItem, read_items
from memcore.llm.embedders import HashingEmbedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.memory.system import SPEC, SPEC_CHEAP, MemCoRe
from memcore.published.paths import published_dir
from memcore.snapshots import MANIFEST
from memcore.types import Conversation, QAItem, Session, Turn
from tests.fakes import MemCoReLLM

#: The repository root (the worktree the tests run from).
REPO = Path(__file__).resolve().parents[1]

_PR_SET_PDEATHSIG = 1


def die_with_test() -> None:
    """``preexec_fn`` for a child a test starts: it gets SIGTERM when the test process dies (Linux
    ``PR_SET_PDEATHSIG``; a no-op elsewhere), so a killed pytest leaves no ``memcore-run`` behind that holds the
    machine-wide llama.cpp lock and blocks the next suite."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM))


#: Keyword arguments for ``subprocess.run`` / ``Popen`` of a child that must not outlive the test.
CHILD_OF_TEST: dict[str, Any] = {"preexec_fn": die_with_test}


# ---------------------------------------------------------------- data
def data_file_or_skip(which: Literal["locomo", "audit"] = "locomo") -> Path:
    """The LoCoMo file (or the locomo-audit ``errors.json``) as the harness finds it; the test is skipped when it
    is absent. The one skip rule for data: fixtures ``locomo_path`` / ``locomo`` / ``audit_path`` use it."""
    try:
        return resolve_locomo_path(None) if which == "locomo" else resolve_audit_path(None)
    except DataError as exc:
        what = "LoCoMo data" if which == "locomo" else "locomo-audit file"
        pytest.skip(f"{what} not found (set MEMCORE_{'DATA' if which == 'locomo' else 'AUDIT'}): {exc}")


def published_dir_or_skip() -> Path:
    """The published answer files' dir as the importer finds it ($MEMCORE_PUBLISHED, ../shared/data/published); the
    test is skipped when it is absent."""

    try:
        return published_dir()
    except DataError as exc:
        pytest.skip(f"published answer files not found (set MEMCORE_PUBLISHED): {exc}")


# ---------------------------------------------------------------- config
def compose_config(overrides: Sequence[str], *, hydra: bool = False) -> DictConfig:
    """``configs/run.yaml`` composed with ``overrides`` (with Hydra's own node when ``hydra``), as is; an old key
    name is respelled as ``memcore-run`` respells it."""
    with initialize_config_dir(config_dir=CONFIG_PATH, version_base="1.3"):
        return compose(config_name="run", overrides=rename_overrides(overrides)[0], return_hydra_config=hydra)


def compose_run(root: Path, overrides: Sequence[str]) -> DictConfig:
    """The run config as ``memcore-run`` would compose it, with results under ``root`` (the ``compose`` fixture
    does this under ``tmp_path``)."""
    cfg = compose_config([*overrides, "progress=false", "print_table=false"])
    with open_dict(cfg):
        cfg.paths.root = str(root / "results")
        cfg.paths.runs = str(root / "results" / "runs")
        cfg.paths.cache = str(root / "results" / "cache")
        cfg.paths.snapshots = str(root / "results" / "snapshots")
        cfg.run_dir = str(root / "run")
    return cfg


# ---------------------------------------------------------------- conversations
SessionSpec = tuple[datetime, str, Sequence[tuple[str, str]]]


def conversation(
    sessions: Sequence[SessionSpec],
    *,
    conv_id: str = "conv-test",
    speakers: tuple[str, str] = ("Alice", "Bob"),
    qa: Sequence[QAItem] = (),
) -> Conversation:
    """A conversation from ``(date, raw date, [(speaker, text), ...])`` per session; dia_ids ``D<session>:<turn>``."""
    out = []
    for s, (when, raw, lines) in enumerate(sessions, start=1):
        turns = tuple(Turn(f"D{s}:{i}", sp, text, s, when, raw) for i, (sp, text) in enumerate(lines, start=1))
        out.append(Session(s, when, raw, turns))
    return Conversation(conv_id, speakers[0], speakers[1], tuple(out), tuple(qa))


STORY = [
    [
        ("Alice", "I adopted a puppy named Rex last week."),
        ("Bob", "Congrats! What breed is Rex?"),
        ("Alice", "Rex is a beagle."),
    ],
    [
        ("Bob", "I started learning the violin in March."),
        ("Alice", "Nice, how is the violin going?"),
        ("Bob", "Slowly, I practise daily."),
    ],
    [
        ("Alice", "We moved to Lisbon in the summer."),
        ("Bob", "Lisbon is lovely."),
        ("Alice", "Rex loves the beach there."),
    ],
]


def story_conversation(conv_id: str = "conv-x", n_sessions: int = 2) -> Conversation:
    """Alice and Bob: Rex the puppy, the violin, Lisbon (three turns a session, a week apart; the story repeats
    after three sessions) and three QA items (no data file needed; the ``tiny_conversation`` fixture)."""
    sessions = [
        (datetime(2023, 5, 1 + 7 * s, 13, 0), f"1:00 pm on {1 + 7 * s} May, 2023", STORY[s % len(STORY)])
        for s in range(n_sessions)
    ]
    qa = (
        QAItem(conv_id, 0, "What breed is Rex?", Category.SINGLE_HOP, "beagle", ("D1:3",)),
        QAItem(conv_id, 1, "When did Bob start the violin?", Category.TEMPORAL, "March", ("D2:1",)),
        QAItem(
            conv_id,
            2,
            "What did Alice name her cat?",
            Category.ADVERSARIAL,
            None,
            ("D1:1",),
            metadata={"adversarial_answer": "Rex"},
        ),
    )
    return conversation(sessions, conv_id=conv_id, qa=qa)


def conversation_of(texts: Sequence[str], conv_id: str = "conv-test", per_session: int = 50) -> Conversation:
    """Turns alternate between Alice and Bob; a new session (one day later) every ``per_session`` turns."""
    speakers = ("Alice", "Bob")
    sessions = [
        (
            datetime(2023, 5, s, 13, 0),
            f"1:00 pm on {s} May, 2023",
            [(speakers[(start + i) % 2], t) for i, t in enumerate(texts[start : start + per_session])],
        )
        for s, start in enumerate(range(0, len(texts), per_session), start=1)
    ]
    return conversation(sessions, conv_id=conv_id, speakers=speakers)


# ---------------------------------------------------------------- method contexts
def method_context(
    config: dict[str, Any],
    conversation: Conversation,
    workdir: Path,
    *,
    backbone: Callable[[], Any] = lambda: None,
    embedder: Callable[[], Any] = lambda: HashingEmbedder(64),
    seed: int = 1,
    ablation: dict[str, Any] | None = None,
    extras: dict[str, Any] | None = None,
) -> MethodContext:
    """What a method factory gets: ``backbone`` and ``embedder`` are factories, started lazily on first use."""
    return MethodContext(
        config=config,
        ablation=ablation or {"name": "none"},
        conversation=conversation,
        seed=seed,
        workdir=workdir,
        _backbone=LazyResource(backbone),
        _embedder=LazyResource(embedder),
        extras=extras or {},
    )


# ---------------------------------------------------------------- MemCoRe over the scripted backbone
#: Tag-structured turns: same tag + "dup" → redundant (0.9); same tag → complementary (0.6); else unrelated (0.1).
TAGGED_TURNS = [
    "tagA: I adopted a dog named Rex from the shelter",
    "tagA dup: I adopted a dog named Rex from the shelter last week",
    "tagA: Rex loves running in the park every morning",
    "tagB: I started painting landscapes with watercolors",
    "tagB: my painting class meets on Monday evenings",
]
#: Three topics of eight turns each, for the retrieval switches (one snapshot serves them all).
TOPIC_TURNS = (
    [f"tagA: I adopted a dog named Rex, note {i} about walks in the park {i}" for i in range(8)]
    + [f"tagB: painting landscapes with watercolors, lesson {i} at the studio {i}" for i in range(8)]
    + [f"tagC: my guitar band rehearses songs, session {i} downtown {i}" for i in range(8)]
)
QUESTIONS = ["What is the name of the dog?", "Where are the painting lessons?", "What does the guitar band rehearse?"]


def method_config(cheap: bool = False, **over: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {"name": "memcore-cheap" if cheap else "memcore", "judge": "embedding" if cheap else "llm"}
    cfg.update(over)
    return cfg


def ablation(name: str = "none") -> dict[str, Any]:
    sw = {k: True for k in ("update", "merge", "link", "denoise", "topic", "keyword", "neighbor", "ier")}
    if name != "none":
        sw[name.removeprefix("wo_")] = False
    return {"name": name, **sw}


def make_memory(
    conv: Conversation,
    tmp: Path,
    *,
    llm: MemCoReLLM | None = None,
    abl: str = "none",
    cheap: bool = False,
    dim: int = 512,
    **cfg: Any,
) -> tuple[MemCoRe, ScriptedBackbone | None, MethodContext]:
    """A MemCoRe through its registered spec's factory (cheap mode: a backbone that fails if touched)."""
    backbone = None if cheap else ScriptedBackbone(llm or MemCoReLLM())

    def no_backbone() -> Any:
        raise AssertionError("cheap mode touched the chat backbone")

    ctx = method_context(
        method_config(cheap, **cfg),
        conv,
        tmp,
        backbone=no_backbone if cheap else (lambda: backbone),
        embedder=lambda: HashingEmbedder(dim),
        seed=7,
        ablation=ablation(abl),
    )
    system = (SPEC_CHEAP if cheap else SPEC).factory(ctx)
    assert isinstance(system, MemCoRe)
    return system, backbone, ctx


def build(conv: Conversation, tmp: Path, **kw: Any) -> tuple[MemCoRe, ScriptedBackbone | None, MethodContext]:
    """:func:`make_memory`, then every turn of ``conv`` ingested and the memory finalized."""
    system, backbone, ctx = make_memory(conv, tmp, **kw)
    for turn in conv.turns:
        system.ingest(turn)
    system.finalize()
    return system, backbone, ctx


# ---------------------------------------------------------------- synthetic run dirs (memcore-report)
def run_item(conv: str, idx: int, cat: int, f1: float | None, bleu: float | None, **kw: Any) -> dict[str, Any]:
    """One ``items.jsonl`` record with the fields the report reads."""
    rec: dict[str, Any] = {
        "item_id": f"{conv}#{idx}",
        "conv_id": conv,
        "category": cat,
        "scores": {} if f1 is None else {"f1": f1, "bleu1": bleu},
        "recall": kw.pop("recall", None),
        "hit": kw.pop("hit", None),
        "evidence": kw.pop("evidence", []),
        "notes": kw.pop("notes", []),
    }
    rec.update(kw)
    return rec


def write_run(
    root: Path,
    *,
    backbone: str,
    method: str,
    items: list[dict[str, Any]],
    ablation: str = "none",
    dataset: str = "locomo",
    protocol: str = "amem",
    cost: dict[str, Any] | None = None,
    stats: dict[str, Any] | None = None,
    answered: bool = True,
) -> Path:
    """A run dir as the runner writes it (metrics = aggregate(items) + run info [+ audited])."""
    path = root / dataset / backbone / protocol / method / ablation
    path.mkdir(parents=True)
    with open(path / "items.jsonl", "w") as fh:
        for r in items:
            fh.write(json.dumps(r) + "\n")
    metrics = aggregate([LoggedItem(r) for r in items])
    convs = sorted({r["conv_id"] for r in items})
    metrics["run"] = {
        "method": method,
        "ablation": ablation,
        "backbone": backbone,
        "embedder": "minilm",
        "dataset": dataset,
        "protocol": protocol,
        "n_conversations": len(convs),
        "answered": answered,
    }
    if any("audited" in r for r in items):
        metrics["audited"] = aggregate([LoggedItem(r).under_audit() for r in items])
    (path / "metrics.json").write_text(json.dumps(metrics))
    (path / "cost.json").write_text(json.dumps(cost or {"usage": {"by_stage": {}}, "wall_s": {"total": 0.0}}))
    (path / "stats.json").write_text(json.dumps(stats or {"conversations": {}}))
    (path / "config.yaml").write_text(yaml.safe_dump({"experiment_name": "synthetic", "method": {"name": method}}))
    return path


# ---------------------------------------------------------------- SIGKILL a memcore-run, then rerun it
#: A-MEM on locomo-tiny with a small per-call latency on the scripted backbone: slow enough to be killed mid-way
#: (tests/test_reliability_resume.py, and the fault matrix of tests/test_reliability_measure.py).
RESUME_OVERRIDES = [
    "dataset=locomo-tiny",
    "embedder=hashing",
    "backbone=scripted",
    "backbone.scripted_latency_s=0.03",
    "method=amem",
    "concurrency=1",
]
RESUME_ITEMS = 8


def resume_command(root: Path, run_dir: Path) -> list[str]:
    return [
        sys.executable, "-m", "memcore.commands.run", *RESUME_OVERRIDES, "progress=false", "print_table=false",
        f"paths.root={root}", f"hydra.run.dir={run_dir}",
    ]  # fmt: skip


def _wait(pred: Any, proc: subprocess.Popen[bytes], what: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert proc.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def kill_and_resume(tmp_path: Path, point: str, rng: random.Random) -> tuple[int, Path]:
    """Start the CLI, SIGKILL it at ``point`` ("ingest" or "qa"), rerun it; items done before the kill."""
    root, run_dir = tmp_path / "results", tmp_path / "run"
    snaps = root / "snapshots" / "amem"
    items_path = run_dir / "items.jsonl"
    cmd = resume_command(root, run_dir)
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, **CHILD_OF_TEST
    )
    try:
        if point == "ingest":
            _wait(lambda: snaps.is_dir() and any(".tmp-" in p.name for p in snaps.iterdir()), proc, "ingest started")
            time.sleep(rng.uniform(0.1, 1.5))
        else:
            k = rng.randint(1, RESUME_ITEMS - 2)
            _wait(lambda: items_path.exists() and len(read_items(items_path)) >= k, proc, f"{k} items")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    before = len(read_items(items_path)) if items_path.exists() else 0
    if point == "ingest":
        assert before == 0
        assert not [p for p in snaps.iterdir() if (p / MANIFEST).is_file()], "the kill came after the build"
        assert [p for p in snaps.iterdir() if ".tmp-" in p.name], "a half-built snapshot is left behind"

    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, **CHILD_OF_TEST)
    assert again.returncode == 0, again.stderr[-3000:]
    return before, run_dir


# ---------------------------------------------------------------- a minimal LoCoMo file
def minimal_locomo() -> list[dict[str, Any]]:
    """A minimal valid file: one conversation, two sessions, one image turn, a category-4 and a category-5 item."""
    return [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog."},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "What is its name?"},
                ],
                "session_2_date_time": "10:05 am on 9 June, 2023",
                "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "Rex."}],
            },
            "qa": [
                {"question": "What did Ann adopt?", "answer": "a dog", "evidence": ["D1:1"], "category": 4},
                {
                    "question": "What is Bob's cat called?",
                    "adversarial_answer": "Rex",
                    "evidence": ["D2:1"],
                    "category": 5,
                },
            ],
        }
    ]

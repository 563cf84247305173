"""Extending the harness edits nothing. In a temporary copy of the tree, each kind of extension is only its added
files, run through ``memcore-run`` and ``memcore-report``:

- a new method: its folder plus ``configs/method/<name>.yaml`` (and, with switches, its ``configs/ablation/``
  files), retrieval only, scripted backbone, hashing embedder;
- a new metric: one file ``memcore/metrics/<name>.py``, named in ``eval.metrics``, scored for every item,
  aggregated, shown in ``table.md`` and the report's tables (plus the metric registry's own contracts);
- a new dataset: a toy in another file format (JSON lines of turns and questions) with its own two categories,
  one adversarial, as one folder plus one yaml, retrieval only;
- a dataset with session-level evidence, its own protocol (prompt, metrics, table note), its own categories, its
  own metric and its own judge (``eval.judge=true`` grades with it), as one folder plus its dataset and protocol
  yaml.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from memcore.config import ConfigError
from memcore.eval.aggregate import aggregate, summarize
from memcore.eval.bootstrap import metric_value
from memcore.eval.protocols import get_protocol
from memcore.eval.scoring import score_answer, score_evidence
from memcore.itemlog import LoggedItem
from memcore.metrics import METRICS, STANDARD_METRICS, Metric, get_metric, resolve_metrics
from memcore.pipeline.score import run_extra_metrics
from memcore.registry import UnknownNameError
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

    run = run_module(
        tree, "memcore.commands.run", ["method=recent_turns", *RETRIEVAL_ONLY, "hydra.run.dir=results/run"]
    )
    assert run.returncode == 0, run.stderr
    metrics = json.loads((tree / "results" / "run" / "metrics.json").read_text())
    assert metrics["run"]["method"] == "recent_turns"
    assert metrics["overall"]["recall"] is not None and 0.0 <= metrics["overall"]["recall"] <= 1.0

    report = run_module(tree, "memcore.commands.report", ["results/run", "--no-reference", "--out", "results/report"])
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

    bad = run_module(tree, "memcore.commands.run", [*base, "+ablation.newest_frist=false"])
    assert bad.returncode == 2, bad.stderr
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip()] and "Traceback" not in bad.stderr
    assert "ablation.newest_frist" in bad.stderr and "AblationConfig" in bad.stderr
    wrong_type = run_module(tree, "memcore.commands.run", [*base, "ablation.newest_first=maybe"])
    assert wrong_type.returncode == 2 and "ablation.newest_first" in wrong_type.stderr
    # MemCoRe's switches are MemCoRe's: the default preset's keys are not this method's
    theirs = run_module(
        tree, "memcore.commands.run", ["method=switched_turns", *RETRIEVAL_ONLY, "hydra.run.dir=results/run"]
    )
    assert theirs.returncode == 2 and "ablation." in theirs.stderr
    assert not (tree / "results" / "run" / "items.jsonl").exists()
    assert edited_files(tree, added) == []


NEW_METRIC = "memcore/metrics/answer_words.py"
NEW_METRIC_SOURCE = '''"""Answer length in words: how long the answers a method's context leads to are."""

from memcore.metrics import Metric


def answer_words(prediction: str, gold: str, category: int) -> float:
    return float(len(prediction.split()))


METRIC = Metric(
    name="answer_words",
    label="Answer words",
    target="answer",
    score=answer_words,
    higher_is_better=False,
    percent=False,
)
'''


def _items(run_dir: Path) -> list[dict]:
    plain = run_dir / "items.jsonl"
    if plain.is_file():
        return [json.loads(line) for line in plain.read_text().splitlines() if line.strip()]
    with gzip.open(run_dir / "items.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_new_metric_is_one_file(tmp_path: Path) -> None:
    data = data_file_or_skip("locomo")
    tree = copy_tree(tmp_path / "tree")
    write(tree, NEW_METRIC, NEW_METRIC_SOURCE)
    run = run_module(
        tree,
        "memcore.commands.run",
        [
            "dataset=locomo-tiny",
            "dataset.max_qa=4",
            f"dataset.path={data}",
            "embedder=hashing",
            "backbone=scripted",
            "method=rag_bm25",
            "eval.metrics=[answer_words]",
            "experiment_name=ext_metric",
            "progress=false",
            "concurrency=1",
        ],
    )
    assert run.returncode == 0, run.stderr[-3000:]
    (metrics_path,) = (tree / "results" / "runs" / "ext_metric").rglob("metrics.json")
    run_dir = metrics_path.parent
    items = _items(run_dir)
    assert items and all(it["scores"]["answer_words"] == float(len((it["answer"] or "").split())) for it in items)
    assert list(items[0]["scores"])[:2] == ["f1", "bleu1"]  # the protocol's scores keep their place
    metrics = json.loads(metrics_path.read_text())
    want = sum(it["scores"]["answer_words"] for it in items) / len(items)
    assert metrics["overall"]["answer_words"] == pytest.approx(want)
    assert metrics["run"]["metrics"] == ["answer_words"]
    assert "Answer words |" in (run_dir / "table.md").read_text()

    report = run_module(
        tree,
        "memcore.commands.report",
        [str(tree / "results" / "runs"), "--n-boot", "50", "--no-plots", "--no-reference"],
    )
    assert report.returncode == 0, report.stderr[-3000:]
    detail = (tree / "results" / "runs" / "report" / "detail_table.md").read_text()
    assert "| Answer words |" in detail and f"{want:.2f}" in detail
    assert edited_files(tree, [NEW_METRIC]) == []


# --------------------------------------------------------------------------------------------- registry
def test_unknown_metric_gets_did_you_mean() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'recall'"):
        get_metric("recal")
    assert get_metric("hit_rate") is get_metric("hit")  # a metric is found by its aggregate's key too
    assert {"f1", "bleu1", "recall", "hit", "session_hit", "judge"} <= set(METRICS.names())
    assert [m.name for m in get_protocol("amem").declared_metrics()] == list(STANDARD_METRICS)


def test_a_metric_declaration_is_checked() -> None:
    with pytest.raises(ValueError, match="needs a scorer"):
        Metric(name="x", label="X", target="evidence")
    with pytest.raises(ValueError, match="target"):
        Metric(name="x", label="X", target="sessions")  # type: ignore[arg-type]


def test_declared_aggregation_is_used() -> None:
    def median(values: list[float]) -> float | None:
        ordered = sorted(values)
        return ordered[len(ordered) // 2] if ordered else None

    longest = Metric(name="longest", label="Longest", target="answer", aggregate=median, percent=False)
    items = [LoggedItem(category=1, scores={"longest": v}) for v in (1.0, 2.0, 9.0)]
    assert longest.summary(items) == {"longest": 2.0}  # the median, not the mean (4.0)
    block = summarize(items, (*resolve_metrics(["f1"]), longest))
    assert block == {"n": 3, "f1": None, "longest": 2.0, "n_with_evidence": 0}
    assert aggregate(items, (longest,))["overall"]["longest"] == 2.0


def test_built_in_metrics_by_hand() -> None:
    locomo, amem = get_protocol("locomo"), get_protocol("amem")
    # LoCoMo's f1: stemmed multiset overlap; A-MEM's: token sets ("running" and "runs" differ there)
    assert score_answer("running", "runs", 4, locomo)["f1"] == 1.0
    assert score_answer("running", "runs", 4, amem)["f1"] == 0.0
    # bleu1 is the metric's own scorer under both protocols: 1 for an exact single-token answer
    assert score_answer("Paris", "Paris", 4, locomo)["bleu1"] == score_answer("Paris", "Paris", 4, amem)["bleu1"] == 1.0
    # evidence: recall 1 of 2 gold turns, hit 1; session hit on D2 among the first five sessions
    evidence = score_evidence(["D1:1", "D2:7"], ["D1:1", "D3:2"], resolve_metrics(["recall", "hit", "session_hit"]))
    assert evidence == {"recall": 0.5, "hit": 1.0}  # session hit is derived when read, not stored
    item = LoggedItem(evidence=["D2:7"], retrieved_dia_ids=["D1:1", "D2:1"], recall=0.0, hit=0.0)
    assert metric_value(item, "session_hit") == 1.0 and metric_value(item, "hit_rate") == 0.0
    judged = [LoggedItem(scores={"judge": 1.0, "judge_runs": [1.0, 1.0], "judge_majority": 1.0}),
              LoggedItem(scores={"judge": 0.5, "judge_runs": [1.0, 0.0], "judge_majority": 0.0})]  # fmt: skip
    j = get_metric("judge").summary(judged)
    assert j["judge"] == 0.75 and j["judge_per_run"] == [1.0, 0.5] and j["judge_std"] == 0.25
    assert j["judge_majority"] == 0.5 and j["judge_agreement"] == 0.5 and j["n_judged"] == 2


def test_extra_metrics_are_scored_after_the_protocols() -> None:
    words = Metric(name="words", label="Words", target="answer", score=lambda p, g, c: float(len(p.split())))
    scores = score_answer("in May 2023", "May 2023", 2, get_protocol("locomo"), (words,))
    assert list(scores) == ["f1", "bleu1", "words"] and scores["words"] == 3.0


def test_eval_metrics_names_are_checked_before_any_work() -> None:
    def cfg(names: list[str]) -> DictConfig:
        return OmegaConf.create({"eval": {"metrics": names}})

    assert [m.name for m in run_extra_metrics(cfg(["session_hit"]))] == ["session_hit"]
    assert run_extra_metrics(OmegaConf.create({"eval": {}})) == ()  # a run recorded before the key existed
    with pytest.raises(ConfigError, match="Did you mean 'session_hit'"):
        run_extra_metrics(cfg(["session_hits"]))
    with pytest.raises(ConfigError, match=r"eval\.judge"):
        run_extra_metrics(cfg(["judge"]))


TOY_INIT = '''"""Toy: two short conversations as JSON lines, two question categories."""

DATASETS = {"toy": "memcore.datasets.toy.loader:TOY"}
'''

TOY_LOADER = '''"""The toy dataset: one JSON object per line, ``"type": "turn"`` (conversation, session, date, id, speaker,
text) or ``"type": "question"`` (conversation, question, answer, category, evidence turn ids)."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

from memcore.datasets.errors import DataError
from memcore.datasets.spec import CategoryInfo, DatasetCategories, DatasetFile, DatasetSpec
from memcore.types import Conversation, QAItem, Session, Turn

DATA_FILE = Path(__file__).with_name("toy.jsonl")
CATEGORIES = DatasetCategories(
    (
        CategoryInfo(1, "recall_fact", "recall-fact"),
        CategoryInfo(2, "never_said", "never-said", adversarial=True, headline_excludes=True),
    )
)


def locate(path: str | None) -> Path:
    found = Path(path) if path else DATA_FILE
    if not found.is_file():
        raise DataError("file not found", path=found, hint="Point dataset.path at a toy .jsonl file.")
    return found


def load(path: Path) -> DatasetFile:
    raw = path.read_bytes()
    turns: dict[str, dict[int, list[dict]]] = {}
    questions: dict[str, list[dict]] = {}
    for line in raw.decode("utf-8").splitlines():
        rec = json.loads(line)
        if rec["type"] == "turn":
            turns.setdefault(rec["conv"], {}).setdefault(rec["session"], []).append(rec)
        else:
            questions.setdefault(rec["conv"], []).append(rec)
    conversations = []
    for conv_id, sessions in turns.items():
        built = []
        for index, recs in sorted(sessions.items()):
            when = datetime.fromisoformat(recs[0]["date"])
            built.append(
                Session(
                    index,
                    when,
                    recs[0]["date"],
                    tuple(Turn(r["id"], r["speaker"], r["text"], index, when, r["date"]) for r in recs),
                )
            )
        qa = tuple(
            QAItem(
                conv_id, i, q["question"], q["category"], q.get("answer"), tuple(q["evidence"]),
                metadata={"wrong": q.get("wrong")},
            )
            for i, q in enumerate(questions.get(conv_id, []))
        )
        speakers = sorted({t.speaker for s in built for t in s.turns})
        conversations.append(Conversation(conv_id, speakers[0], speakers[-1], tuple(built), qa))
    return DatasetFile(tuple(conversations), hashlib.sha256(raw).hexdigest(), {})


TOY = DatasetSpec(
    kind="toy",
    description="two toy conversations",
    locate=locate,
    load=load,
    categories=CATEGORIES,
    evidence_unit="a turn's id",
)
'''


def _turn(conv: str, session: int, tid: str, speaker: str, text: str) -> dict:
    date = f"2024-03-0{session}T10:00:00"
    return {"type": "turn", "conv": conv, "session": session, "date": date, "id": tid, "speaker": speaker, "text": text}


def _question(conv: str, question: str, category: int, answer: str | None, evidence: list[str]) -> dict:
    return {
        "type": "question",
        "conv": conv,
        "question": question,
        "category": category,
        "answer": answer,
        "wrong": None if answer else "a cat",
        "evidence": evidence,
    }


TOY_RECORDS = [
    _turn("toy-a", 1, "a1", "Ann", "I adopted a beagle called Rex last week."),
    _turn("toy-a", 1, "a2", "Bo", "Lovely! I started learning the violin."),
    _turn("toy-a", 2, "a3", "Ann", "Rex chewed my favourite red shoes today."),
    _turn("toy-a", 2, "a4", "Bo", "My violin teacher lives in Lisbon."),
    _turn("toy-b", 1, "b1", "Cy", "We moved to a small flat near the harbour."),
    _turn("toy-b", 1, "b2", "Di", "I bake sourdough bread every Sunday morning."),
    _question("toy-a", "What breed is Ann's dog Rex?", 1, "beagle", ["a1"]),
    _question("toy-a", "Where does Bo's violin teacher live?", 1, "Lisbon", ["a4"]),
    _question("toy-a", "What is the name of Ann's cat?", 2, None, []),
    _question("toy-b", "What does Di bake on Sundays?", 1, "sourdough bread", ["b2"]),
    _question("toy-b", "Which harbour city did Cy grow up in?", 2, None, ["b1"]),
]

TOY_YAML = """# The toy dataset of tests/test_extension.py: memcore/datasets/toy/.
name: toy
kind: toy
"""

ADDED = {
    "memcore/datasets/toy/__init__.py": TOY_INIT,
    "memcore/datasets/toy/loader.py": TOY_LOADER,
    "memcore/datasets/toy/toy.jsonl": "".join(json.dumps(r) + "\n" for r in TOY_RECORDS),
    "configs/dataset/toy.yaml": TOY_YAML,
}


def test_new_dataset_is_one_folder(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    for rel, text in ADDED.items():
        write(tree, rel, text)
    overrides = ["dataset=toy", "method=rag_bm25", "eval.answer=false", "embedder=hashing", "backbone=scripted"]
    run = run_module(tree, "memcore.commands.run", overrides)
    assert run.returncode == 0, run.stderr[-3000:]
    (run_dir,) = [p.parent for p in (tree / "results" / "runs").rglob("metrics.json")]

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert {k: (b["name"], b["n"]) for k, b in metrics["by_category"].items()} == {
        "1": ("recall-fact", 3),
        "2": ("never-said", 2),
    }
    assert metrics["overall"]["n"] == 5 and metrics["overall_no_adv"]["n"] == 3  # the headline leaves out category 2
    items = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    assert sorted({(r["category"], r["category_name"]) for r in items}) == [(1, "recall_fact"), (2, "never_said")]
    # recall against the toy's evidence: the item without evidence has none, every other one its share of turns found
    for r in items:
        found = set(r["retrieved_dia_ids"]) & set(r["evidence"])
        assert r["recall"] == (None if not r["evidence"] else len(found) / len(r["evidence"]))
    assert metrics["overall"]["n_with_evidence"] == 4 and metrics["overall"]["recall"] == 1.0  # 2 turns a conversation
    table = (run_dir / "table.md").read_text()
    assert "1 recall-fact (n=3)" in table and "2 never-said (n=2)" in table

    report = run_module(
        tree, "memcore.commands.report", [str(tree / "results" / "runs"), "--no-plots", "--no-reference"]
    )
    assert report.returncode == 0, report.stderr[-3000:]
    detail = (tree / "results" / "runs" / "report" / "detail_table.md").read_text()
    assert "dataset toy" in detail
    rows = [line.split("|")[2:4] for line in detail.splitlines() if line.startswith("|  |") or "| rag_bm25 |" in line]
    assert [(cat.strip(), n.strip()) for cat, n in rows[:2]] == [("1 recall-fact", "3"), ("2 never-said", "2")]
    assert "| overall 1 |" in detail  # the headline covers the toy's one non-adversarial category

    assert edited_files(tree, list(ADDED)) == []


DIARY_INIT = '''"""Diary: one person's dated notes to an assistant, evidence given per session, its own protocol and metric."""

DATASETS = {"diary": "memcore.datasets.diary.spec:DIARY"}
PROTOCOLS = {"diary": "memcore.datasets.diary.spec:DIARY_PROTOCOL"}
METRICS = {"diary_session_recall": "memcore.datasets.diary.spec:SESSION_RECALL"}
JUDGES = {"diary-judge": "memcore.datasets.diary.spec:DIARY_JUDGE"}
'''

DIARY_SPEC = '''"""The diary dataset: a JSON object {"days": [[date, [lines...]], ...], "questions": [{question, answer, type,
days: [day numbers]}]}; a question's evidence is whole days (sessions), so every line of an evidence day is gold."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from memcore.datasets.judge import JudgePreset
from memcore.datasets.protocol import EvalProtocol
from memcore.datasets.spec import CategoryInfo, DatasetCategories, DatasetFile, DatasetSpec
from memcore.metrics import Metric
from memcore.turn_ids import session_key, turn_id
from memcore.types import Conversation, QAItem, Session, Turn

CATEGORIES = DatasetCategories(
    (CategoryInfo(7, "what", "what"), CategoryInfo(9, "when", "when")), headline_title="All diary questions"
)


def load(path: Path) -> DatasetFile:
    raw = path.read_bytes()
    data = json.loads(raw)
    sessions = []
    for s, (day, lines) in enumerate(data["days"], start=1):
        when = datetime.combine(date.fromisoformat(day), datetime.min.time())
        turns = tuple(Turn(turn_id(s, t), "me", text, s, when, day) for t, text in enumerate(lines, start=1))
        sessions.append(Session(s, when, day, turns))
    qa = tuple(
        QAItem(
            "diary", i, q["question"], {"what": 7, "when": 9}[q["type"]], q["answer"],
            tuple(t.dia_id for s in q["days"] for t in sessions[s - 1].turns),
            question_date=data["days"][-1][0],
            metadata={"evidence_sessions": [f"D{s}" for s in q["days"]]},
        )
        for i, q in enumerate(data["questions"])
    )
    return DatasetFile((Conversation("diary", "me", "assistant", tuple(sessions), qa),), hashlib.sha256(raw).hexdigest())


@dataclass(frozen=True)
class DiaryProtocol(EvalProtocol):
    def messages(self, item, context, options):
        return [{"role": "user", "content": f"My diary:\\n{context}\\nToday is {item.question_date}. {item.question}"}]

    def table_notes(self, categories=()):
        return ("protocol=diary: a question's gold is every line of its days.",)


def session_recall(gold: Sequence[str], retrieved: Sequence[str]) -> float | None:
    days = {session_key(d) for d in gold}
    return len(days & {session_key(d) for d in retrieved}) / len(days) if days else None


SESSION_RECALL = Metric("diary_session_recall", "Day recall", "evidence", score=session_recall)
JUDGE_PROMPT = "Does the answer {answer!r} say {gold!r}? Reply yes or no."
DIARY_JUDGE = JudgePreset(
    name="diary-judge", version="diary-judge-v1", hash_parts=lambda: (JUDGE_PROMPT,),
    messages=lambda item, gold_item, answer, protocol: [
        {"role": "user", "content": JUDGE_PROMPT.format(answer=answer, gold=gold_item.answer)}
    ],
    read=lambda reply: ("CORRECT" if "yes" in reply.lower() else "WRONG", reply.strip()),
    categories=(7, 9), default_backbone=None, default_runs=1, max_tokens=4, source="the diary's own",
    json_reply=False,
)
DIARY_PROTOCOL = DiaryProtocol(
    "diary", "the diary's own prompt", 0.0, 64, False,
    metrics=("judge", "recall", "hit", "diary_session_recall"), judges=("diary-judge",),
)
DIARY = DatasetSpec(
    kind="diary",
    description="one diary",
    locate=lambda path: Path(path) if path else Path(__file__).with_name("diary.json"),
    load=load,
    categories=CATEGORIES,
    evidence_unit="a day (session) of the diary",
    protocols=("diary",),
    evidence_levels=("session",),
    table_notes=("Categories are the diary's question types (7 what, 9 when).",),
)
'''

DIARY_DATA = {
    "days": [
        ["2024-03-01", ["I adopted a beagle called Rex.", "The weather was grey all day."]],
        ["2024-03-02", ["Rex chewed my red shoes.", "I bought a new lead for Rex."]],
        ["2024-03-05", ["I started violin lessons in Lisbon.", "My teacher is called Ana."]],
    ],
    "questions": [
        {"question": "What breed is Rex?", "answer": "beagle", "type": "what", "days": [1]},
        {"question": "When did I start violin lessons?", "answer": "5 March", "type": "when", "days": [3]},
        {
            "question": "What did Rex chew and what did I buy him?",
            "answer": "shoes, a lead",
            "type": "what",
            "days": [2],
        },
    ],
}

DIARY_ADDED = {
    "memcore/datasets/diary/__init__.py": DIARY_INIT,
    "memcore/datasets/diary/spec.py": DIARY_SPEC,
    "memcore/datasets/diary/diary.json": json.dumps(DIARY_DATA),
    "configs/dataset/diary.yaml": "defaults:\n  - override /protocol@_global_.protocol: diary\n  - _self_\nname: diary\nkind: diary\n",
    "configs/protocol/diary.yaml": "name: diary\ntemperature: 0.0\nmax_tokens: null\n",
}


def test_dataset_with_session_evidence_its_own_protocol_and_categories_is_one_folder(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    for rel, text in DIARY_ADDED.items():
        write(tree, rel, text)
    overrides = ["dataset=diary", "method=rag_bm25", "eval.answer=false", "embedder=hashing", "backbone=scripted"]
    run = run_module(tree, "memcore.commands.run", overrides)
    assert run.returncode == 0, run.stderr[-3000:]
    (run_dir,) = [p.parent for p in (tree / "results" / "runs").rglob("metrics.json")]
    assert run_dir.relative_to(tree / "results" / "runs").parts[:4] == ("default", "diary", "none", "diary")

    metrics = json.loads((run_dir / "metrics.json").read_text())
    assert metrics["run"]["dataset_kind"] == "diary" and metrics["run"]["protocol"] == "diary"
    assert {k: (b["name"], b["n"]) for k, b in metrics["by_category"].items()} == {"7": ("what", 2), "9": ("when", 1)}
    items = [json.loads(line) for line in (run_dir / "items.jsonl").read_text().splitlines()]
    for r in items:  # the dataset's own session-level metric, scored by the harness from the record
        days = {d.split(":")[0] for d in r["evidence"]}
        found = days & {d.split(":")[0] for d in r["retrieved_dia_ids"]}
        assert r["scores"]["diary_session_recall"] == len(found) / len(days)
    table = (run_dir / "table.md").read_text()
    assert "| Day recall % |" in table.splitlines()[2]
    assert "7 what (n=2)" in table and "9 when (n=1)" in table
    assert "All diary questions" not in table  # the headline is every category: one overall row
    assert "Categories are the diary's question types (7 what, 9 when)." in table
    assert "protocol=diary: a question's gold is every line of its days." in table
    assert "LoCoMo" not in table

    # its own judge: named by its protocol, so eval.judge=true grades with it, J per question type
    judged_run = ["dataset=diary", "method=rag_bm25", "embedder=hashing", "backbone=scripted", "eval.judge=true"]
    judged = run_module(tree, "memcore.commands.run", judged_run)
    assert judged.returncode == 0, judged.stderr[-3000:]
    (judged_dir,) = [p.parent for p in (tree / "results" / "runs").rglob("metrics.json") if p.parent != run_dir]
    metrics = json.loads((judged_dir / "metrics.json").read_text())
    assert metrics["run"]["judge"]["judge_preset"] == "diary-judge" and metrics["run"]["judge"]["categories"] == [7, 9]
    assert all(metrics["by_category"][c]["judge"] is not None for c in ("7", "9"))
    items = [json.loads(line) for line in (judged_dir / "items.jsonl").read_text().splitlines()]
    assert all(r["judge"]["preset"] == "diary-judge" and "judge" in r["scores"] for r in items)
    assert "J: judge preset diary-judge (the diary's own)" in (judged_dir / "table.md").read_text()

    assert edited_files(tree, list(DIARY_ADDED)) == []

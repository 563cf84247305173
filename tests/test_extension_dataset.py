"""A second dataset is one folder plus one yaml: a toy dataset in another file format (JSON lines of turns and
questions) with its own two categories, one adversarial, added to a temporary copy of the tree and run through
``memcore-run`` (retrieval only: no LLM, no model) and ``memcore-report``, with no other file edited."""

from __future__ import annotations

import json
from pathlib import Path

from tests.extension_support import copy_tree, edited_files, run_module, write

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

from memcore.data.errors import DataError
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
            QAItem(conv_id, i, q["question"], q["category"], q.get("answer"), q.get("wrong"), tuple(q["evidence"]))
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

TOY_YAML = """# The toy dataset of tests/test_extension_dataset.py: memcore/datasets/toy/.
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
    run = run_module(tree, "memcore.cli", overrides)
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

    report = run_module(tree, "memcore.report.cli", [str(tree / "results" / "runs"), "--no-plots", "--no-reference"])
    assert report.returncode == 0, report.stderr[-3000:]
    detail = (tree / "results" / "runs" / "report" / "detail_table.md").read_text()
    assert "dataset toy" in detail
    rows = [line.split("|")[2:4] for line in detail.splitlines() if line.startswith("|  |") or "| rag_bm25 |" in line]
    assert [(cat.strip()[:1], n.strip()) for cat, n in rows[:2]] == [("1", "3"), ("2", "2")]

    assert edited_files(tree, list(ADDED)) == []

"""Evidence packing: MemCoRe's ranked notes as an index of raw turns, and the context-token budget
every method's evidence is cut by (``eval.token_cap``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.itemlog import read_items
from memcore.packing.budget import ContextBudgeted, fill_units, fit_evidence, rendered_tokens, retrieve_within
from memcore.report.collect import load_runs
from memcore.report.equal_tokens import category_table, equal_token_table, plot_recall_vs_context_tokens
from memcore.runner import run_config
from memcore.text import count_tokens
from memcore.types import Evidence, EvidenceNote
from tests.support import REPO, build, compose_run, conversation_of, run_item, story_conversation, write_run

METHODS = sorted(p.stem for p in (REPO / "configs" / "method").glob("*.yaml"))


# ------------------------------------------------------------------ the fill rule
def test_fill_units_skips_what_does_not_fit_and_cuts_only_when_nothing_fits() -> None:
    fill = fill_units([5, 9, 3, 4], 12)
    assert fill.taken == [0, 2, 3] and fill.used == 12 and not fill.cut and fill.skipped == 1
    cut = fill_units([20, 30], 10)
    assert cut.taken == [0] and cut.cut and cut.used == 10
    assert fill_units([], 10).taken == []
    with pytest.raises(ValueError, match=">= 1 token"):
        fill_units([1], 0)


def _notes(*texts: str) -> list[EvidenceNote]:
    return [EvidenceNote(f"n{i}", t, (f"D1:{i}",), timestamp="1 May") for i, t in enumerate(texts)]


def test_rendered_tokens_is_the_count_of_the_rendered_notes() -> None:
    notes = [
        EvidenceNote("a", "Caroline: I went to the LGBTQ support group.", ("D1:3",), 1.0, (), "8 May, 2023"),
        EvidenceNote("b", "...and then? (it's fine)", ("D1:4",), 0.5, ()),
        EvidenceNote("c", "", ("D1:5",), 0.1, (), "9 May"),
    ]
    for k in range(len(notes) + 1):
        assert rendered_tokens(notes[:k]) == count_tokens(Evidence(notes=notes[:k]).render())
    # hand-counted: [ 8 May , 2023 ] + Caroline : I went to the LGBTQ support group . = 6 + 10;
    # . . . and then ? ( it ' s fine ) = 12; [ 9 May ] = 4 (an empty text adds nothing)
    assert rendered_tokens(notes) == 16 + 12 + 4


def test_fit_evidence_fills_rendered_notes_and_records_the_cut() -> None:
    ev = Evidence(notes=_notes("Alice: one two three four five six", "Bob: yes", "Alice: seven eight nine ten"))
    line = [count_tokens(f"[1 May] {n.text}") for n in ev.notes]
    got = fit_evidence(ev, line[0] + line[1])
    assert [n.note_id for n in got.notes] == ["n0", "n1"]
    assert count_tokens(got.render()) <= line[0] + line[1]
    assert got.extra["context_budget"]["how"] == "fill_notes" and not got.extra["context_budget"]["cut"]
    tiny = fit_evidence(ev, 4)  # smaller than any note: the best one, cut, and said so
    assert len(tiny.notes) == 1 and tiny.notes[0].dia_ids == ("D1:0",)
    assert count_tokens(tiny.render()) <= 4 and tiny.render()
    assert tiny.extra["context_budget"]["cut"] is True
    same = fit_evidence(ev, 10_000)
    assert same.notes == ev.notes and same.extra["context_budget"]["how"] == "fits"


def test_fit_evidence_on_a_custom_context_counts_the_notes_left_in_it() -> None:
    notes = _notes("first fact here", "second fact here", "third fact here")
    ev = Evidence(notes=notes, context="\n\n".join(n.text for n in notes))
    got = fit_evidence(ev, 7)
    assert count_tokens(got.render()) <= 7
    assert [n.note_id for n in got.notes] == ["n0", "n1"]
    assert got.extra["context_budget"]["how"] == "head_of_context"


class _Overspender:
    def retrieve_within(self, query: str, tokens: int, *, budget: int | None = None) -> Evidence:
        return Evidence(notes=_notes("far too many words for the budget given here"))


def test_a_method_over_its_budget_is_an_error_not_a_silent_overrun() -> None:
    assert isinstance(_Overspender(), ContextBudgeted)
    with pytest.raises(RuntimeError, match="budget of 3"):
        retrieve_within(_Overspender(), "q", 3)


# ------------------------------------------------------------------ MemCoRe packing
MERGED = [
    "I adopted a dog named Rex from the shelter",
    "I adopted a dog named Rex from the shelter last week",
    "I adopted a dog named Rex, he is a beagle puppy",
    "my painting class meets on Monday evenings",
    "I started painting landscapes with watercolors",
] * 3


def test_packing_off_is_whole_notes_and_on_is_raw_turns_within_the_budget(tmp_path: Path) -> None:
    conv = conversation_of(MERGED)
    off, _, _ = build(conv, tmp_path / "off", cheap=True)
    on, _, _ = build(conv, tmp_path / "on", cheap=True, pack=True)
    q = "Is Rex a beagle puppy?"
    whole = off.retrieve(q)
    assert any(len(n.dia_ids) > 1 for n in whole.notes), "the fixture should merge turns into notes"
    packed = on.retrieve(q)
    assert all(len(n.dia_ids) == 1 for n in packed.notes)  # one raw turn per packed unit, with its date
    assert all(n.timestamp for n in packed.notes)
    info = packed.extra["packing"]
    assert info["tokens"] == count_tokens(whole.render())  # no cap: what the whole notes cost
    assert count_tokens(packed.render()) <= info["tokens"] and info["used"] == count_tokens(packed.render())
    assert set(packed.dia_ids) <= {d for n in on.store.notes for d in n.dia_ids}
    # the turn that answers is ranked inside its merged note
    assert "beagle" in packed.notes[0].text
    for tokens in (40, 120):
        ev = on.retrieve_within(q, tokens)
        assert count_tokens(ev.render()) <= tokens
        assert ev.extra["context_budget"]["how"] == "memcore_packing"
        assert ev.dia_ids == [d for n in ev.notes for d in n.dia_ids]
    off_ev = off.retrieve_within(q, 40)
    assert count_tokens(off_ev.render()) <= 40 and off_ev.extra["context_budget"]["how"] in ("fill_notes", "fits")


def test_a_budget_smaller_than_one_turn_gives_the_best_turn_cut_and_counts_it(tmp_path: Path) -> None:
    on, _, _ = build(conversation_of(MERGED), tmp_path, cheap=True, pack=True)
    ev = on.retrieve_within("What breed is the dog Rex?", 3)
    assert len(ev.notes) == 1 and ev.render() and count_tokens(ev.render()) <= 3
    assert ev.extra["packing"]["cut"] and ev.extra["context_budget"]["cut"]
    assert on.stats()["packing"]["cut"] == 1


def test_the_summary_line_is_charged_and_carries_no_dia_ids(tmp_path: Path) -> None:
    on, _, _ = build(story_conversation(n_sessions=3), tmp_path, pack=True, pack_summary=True)
    ev = on.retrieve_within("What breed is Rex?", 200)
    summaries = [n for n in ev.notes if n.note_id.endswith(".c")]
    assert summaries and all(n.dia_ids == () for n in summaries)
    assert count_tokens(ev.render()) <= 200


# ------------------------------------------------------------------ eval.token_cap, every method
@pytest.mark.usefixtures("locomo_path")
@pytest.mark.parametrize("method", METHODS)
def test_every_method_hands_over_at_most_token_cap(method: str, tmp_path: Path) -> None:
    overrides = [
        f"method={method}",
        "dataset=locomo-tiny",
        "dataset.max_qa=3",
        "embedder=hashing",
        "backbone=scripted",
        "eval.token_cap=60",
        "concurrency=1",
    ]
    run_config(compose_run(tmp_path, overrides), tmp_path / "run")
    items = read_items(tmp_path / "run" / "items.jsonl")
    assert len(items) == 3
    assert max(int(r["tokens_used"]) for r in items) <= 60
    info = json.loads((tmp_path / "run" / "metrics.json").read_text())["run"]["evidence"]
    assert info["token_cap"] == 60 and info["max_context_tokens"] <= 60
    for r in items:  # recall is scored on the dia_ids that are in the context, nothing else
        assert set(r["retrieved_dia_ids"]) == {d for n in r["notes"] for d in n["dia_ids"]}


# ------------------------------------------------------------------ the equal-token report
def test_equal_token_tables_pair_each_method_with_the_reference_at_its_budget(tmp_path: Path) -> None:
    import yaml

    def items(recalls: list[float]) -> list[dict]:
        return [
            dict(
                run_item("conv-1", i, 1 + i % 4, None, None),
                recall=r,
                hit=float(r > 0),
                evidence=["D1:1"],
                retrieved_dia_ids=["D1:1"] if r > 0 else ["D2:4"],
            )
            for i, r in enumerate(recalls)
        ]

    runs = {
        ("rag_hybrid", 500): [0.0, 1.0, 0.0, 1.0],
        ("memcore-cheap", 500): [1.0, 1.0, 0.0, 1.0],
        ("rag_hybrid", 250): [0.0, 0.0, 0.0, 1.0],
    }
    for (method, n), recalls in runs.items():
        path = write_run(tmp_path / f"b{n}", backbone="local", method=method, items=items(recalls), answered=False)
        cfg = {"method": {"name": method, **({"pack": True} if method.startswith("memcore") else {})}}
        (path / "config.yaml").write_text(yaml.safe_dump({**cfg, "eval": {"context_tokens": n}}))
    loaded = load_runs([tmp_path])
    table = equal_token_table(loaded, n_boot=200)
    assert table is not None
    rows = {r[0]: r for r in table.rows}
    mem = rows["memcore-cheap, packed"]
    assert mem[1:3] == ["–", "–"]  # no run at 250 tokens
    assert mem[3] == "75.0 / 75.0 / 75.0" and mem[4].startswith("+25.0 [")  # one item of four gains a full recall
    assert rows["rag_hybrid"][4] == "ref." and rows["memcore-cheap, packed"][1] == "–"
    assert category_table(loaded, n_boot=200) is not None
    written = plot_recall_vs_context_tokens(loaded, tmp_path / "plots")
    assert any(p.suffix == ".csv" for p in written)

"""One test per row of the malformed-input table in memcore/datasets/locomo/README.md."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.loader import load_locomo
from tests.support import REPO, minimal_locomo

README = REPO / "memcore" / "datasets" / "locomo" / "README.md"


def write(tmp_path: Path, data: Any) -> Path:
    p = tmp_path / "locomo.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def mutated(tmp_path: Path, fn: Callable[[list[dict[str, Any]]], None]) -> Path:
    data = minimal_locomo()
    fn(data)
    return write(tmp_path, data)


def conv(d: list[dict[str, Any]]) -> dict[str, Any]:
    return d[0]["conversation"]


def qa(d: list[dict[str, Any]], j: int = 0) -> dict[str, Any]:
    return d[0]["qa"][j]


def expect_error(path: Path, *fragments: str, field: str | None = None, conversation: str | None = None) -> DataError:
    with pytest.raises(DataError) as info:
        load_locomo(path)
    err = info.value
    msg = str(err)
    assert str(path) in msg
    for frag in fragments:
        assert frag in msg, msg
    assert err.field == field
    if conversation is not None:
        assert err.conversation == conversation
        assert f"conversation {conversation}" in msg
    if field is not None:
        assert f"field {field!r}" in msg
    assert err.hint
    assert msg.endswith(err.hint)
    return err


def test_valid_base_loads(tmp_path: Path) -> None:
    ds = load_locomo(write(tmp_path, minimal_locomo()))
    (c,) = ds.conversations
    assert [t.dia_id for t in c.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [q.category for q in c.qa] == [Category.SINGLE_HOP, Category.ADVERSARIAL]
    assert ds.report.counts == {}


# ---- file-level errors ---------------------------------------------------------------------------------------


def test_missing_file(tmp_path: Path) -> None:
    err = expect_error(tmp_path / "nope.json", "file not found", "scripts/get_locomo.py")
    assert err.conversation is None


def test_not_a_file(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="is not a file"):
        load_locomo(tmp_path)


def test_empty_file(tmp_path: Path) -> None:
    for content in (b"", b"  \n"):
        p = tmp_path / "empty.json"
        p.write_bytes(content)
        expect_error(p, "file is empty")


def test_truncated_json(tmp_path: Path) -> None:
    text = json.dumps(minimal_locomo())
    p = tmp_path / "cut.json"
    for cut in (len(text) // 2, len(text) - 1, text.index('"D1:1"') + 3):
        p.write_text(text[:cut], encoding="utf-8")
        expect_error(p, "truncated JSON (ends early)", "(line 1, column")


def test_invalid_json(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text('[{"sample_id": "conv-x",, }]\n', encoding="utf-8")
    expect_error(p, "invalid JSON", "(line 1, column 25)")


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "latin1.json"
    text = json.dumps(minimal_locomo(), ensure_ascii=False).replace("Rex.", "Rexé.")
    p.write_bytes(text.encode("latin-1"))
    offset = text.index("é")
    expect_error(p, f"not UTF-8 (byte 0xe9 at offset {offset})", "UTF-8")


def test_utf8_bom(tmp_path: Path) -> None:
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(minimal_locomo()).encode())
    ds = load_locomo(p)
    assert ds.report["utf8_bom"] == 1
    assert len(ds.conversations) == 1


def test_top_level_not_list(tmp_path: Path) -> None:
    expect_error(write(tmp_path, {"conv-x": minimal_locomo()[0]}), "top level is a JSON object, expected a list")


def test_no_conversations(tmp_path: Path) -> None:
    expect_error(write(tmp_path, []), "top-level list is empty")


def test_conversation_not_object(tmp_path: Path) -> None:
    expect_error(write(tmp_path, [*minimal_locomo(), "conv-y"]), "is a JSON string", conversation="index 1")


# ---- conversation-level errors -------------------------------------------------------------------------------


def test_sample_id_missing(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: d[0].pop("sample_id"))
    expect_error(p, "missing or empty", field="sample_id", conversation="index 0")


def test_sample_id_duplicate(tmp_path: Path) -> None:
    data = minimal_locomo() + minimal_locomo()
    expect_error(
        write(tmp_path, data),
        "repeats the one of conversation index 0",
        field="sample_id",
        conversation="'conv-x' (index 1)",
    )


def test_conversation_missing(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: d[0].pop("conversation"))
    expect_error(p, "missing", field="conversation", conversation="'conv-x' (index 0)")


def test_qa_missing(tmp_path: Path) -> None:
    expect_error(mutated(tmp_path, lambda d: d[0].pop("qa")), "missing", field="qa", conversation="'conv-x' (index 0)")
    p = mutated(tmp_path, lambda d: d[0].update(qa={"q": 1}))
    expect_error(p, "is a JSON object, expected a list of QA items", field="qa")


def test_speaker_missing(tmp_path: Path) -> None:
    expect_error(
        mutated(tmp_path, lambda d: conv(d).pop("speaker_b")), "missing or empty", field="conversation.speaker_b"
    )
    p = mutated(tmp_path, lambda d: conv(d).update(speaker_a="  "))
    expect_error(p, "missing or empty", field="conversation.speaker_a")


def test_no_sessions(tmp_path: Path) -> None:
    def drop(d: list[dict[str, Any]]) -> None:
        for k in ("session_1", "session_2", "session_1_date_time", "session_2_date_time"):
            conv(d).pop(k)

    expect_error(mutated(tmp_path, drop), "no session_N keys", field="conversation")


def test_session_without_date(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d).pop("session_2_date_time"))
    expect_error(
        p, "every session needs its date", field="conversation.session_2_date_time", conversation="'conv-x' (index 0)"
    )


def test_unparseable_date(tmp_path: Path) -> None:
    for bad in ("yesterday", "13:56 pm on 8 May, 2023", "1:56 pm on 31 February, 2023", "1:56 pm on 8 Mai, 2023"):
        p = mutated(tmp_path, lambda d, bad=bad: conv(d).update(session_1_date_time=bad))
        expect_error(p, "unparseable session date", field="conversation.session_1_date_time")


def test_orphan_date(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d).update(session_3_date_time="1:00 pm on 1 July, 2023"))
    ds = load_locomo(p)
    assert ds.report["orphan_session_date"] == 1
    assert [s.index for s in ds.conversations[0].sessions] == [1, 2]


def test_session_not_list(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d).update(session_2={"D2:1": "Rex."}))
    expect_error(p, "expected a list of turns", field="conversation.session_2")


# ---- turn-level ----------------------------------------------------------------------------------------------


def test_turn_not_object(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"].append("Ann: bye"))
    expect_error(p, "expected a turn object", field="conversation.session_1[2]")


def test_turn_without_dia_id(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][1].pop("dia_id"))
    expect_error(p, "turn has no dia_id", field="conversation.session_1[1].dia_id", conversation="'conv-x' (index 0)")


def test_bad_dia_id(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][1].update(dia_id="1:2"))
    expect_error(p, "'1:2' is not of the form D<session>:<turn>", field="conversation.session_1[1].dia_id")


def test_duplicate_dia_id(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_2"][0].update(dia_id="D1:1"))
    expect_error(p, "'D1:1' appears twice", field="conversation.session_2[0].dia_id")


def test_turn_without_speaker(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][0].pop("speaker"))
    expect_error(p, "turn D1:1 has no speaker", field="conversation.session_1[0].speaker")


def test_turn_without_text(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][0].pop("text"))
    expect_error(p, "turn D1:1 has no text", field="conversation.session_1[0].text")
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][0].update(text=""))
    expect_error(p, "turn D1:1 text is empty", field="conversation.session_1[0].text")
    # empty text is fine when the turn shares a captioned image
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][0].update(text="", blip_caption="a dog"))
    assert load_locomo(p).conversations[0].turns[0].text == "[shares an image: a dog]"


def test_bad_caption(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: conv(d)["session_1"][0].update(blip_caption=["a dog"]))
    expect_error(p, "blip_caption is a JSON array", field="conversation.session_1[0].blip_caption")


def test_image_caption(tmp_path: Path) -> None:
    def add(d: list[dict[str, Any]]) -> None:
        conv(d)["session_1"][0].update(blip_caption="a photo of a dog", img_url=["https://x/y.jpg"])
        conv(d)["session_2"][0].update(blip_caption="a puppy")  # no img_url: captioned all the same

    ds = load_locomo(mutated(tmp_path, add))
    turns = ds.conversations[0].turns
    assert turns[0].text == "I adopted a dog. [shares an image: a photo of a dog]"
    assert turns[0].image_caption == "a photo of a dog"
    assert turns[2].text == "Rex. [shares an image: a puppy]"
    assert turns[1].image_caption is None
    assert turns[1].text == "What is its name?"
    assert ds.report["caption_appended"] == 2
    assert ds.report["caption_without_img_url"] == 1


# ---- QA-level ------------------------------------------------------------------------------------------------


def test_qa_not_object(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: d[0]["qa"].append(["q", "a"]))
    expect_error(p, "expected a QA object", field="qa[2]")


def test_question_missing(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: qa(d, 1).pop("question"))
    expect_error(p, "missing or empty question", field="qa[1].question", conversation="'conv-x' (index 0)")


def test_unknown_category(tmp_path: Path) -> None:
    for bad in (6, 0, "2", True, None):
        p = mutated(tmp_path, lambda d, bad=bad: qa(d).update(category=bad))
        err = expect_error(
            p, f"unknown category {bad!r}", "known: 1 multi-hop", "5 adversarial", field="qa[0].category"
        )
        assert err.conversation == "'conv-x' (index 0)"
    p = mutated(tmp_path, lambda d: qa(d).pop("category"))
    expect_error(p, "unknown category None", field="qa[0].category")


def test_evidence_not_list(tmp_path: Path) -> None:
    for bad in ("D1:1", {"D1:1": 1}, ["D1:1", 2]):
        p = mutated(tmp_path, lambda d, bad=bad: qa(d).update(evidence=bad))
        expect_error(p, "must be a list of strings", field="qa[0].evidence")
    expect_error(mutated(tmp_path, lambda d: qa(d).pop("evidence")), "missing", field="qa[0].evidence")


def _evidence_case(tmp_path: Path, raw: list[str]) -> tuple[tuple[str, ...], dict[str, int]]:
    ds = load_locomo(mutated(tmp_path, lambda d: qa(d).update(evidence=raw)))
    item = ds.conversations[0].qa[0]
    assert item.raw_evidence == tuple(raw)
    return item.evidence, ds.report.counts


def test_evidence_joined(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D1:1; D2:1", "D1:2 D1:1,D2:1"])
    assert ev == ("D1:1", "D2:1", "D1:2")
    assert counts == {"split": 2, "duplicate_dropped": 2}


def test_evidence_colon(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D:1:2"])
    assert ev == ("D1:2",)
    assert counts == {"colon_fixed": 1}


def test_evidence_zero(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D02:01", "D1:1"])
    assert ev == ("D2:1", "D1:1")
    assert counts == {"zero_stripped": 1}


def test_evidence_garbage(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D1:1", "D", "see above"])
    assert ev == ("D1:1",)
    assert counts == {"garbage_dropped": 3, "split": 1}  # "see above" splits into two garbage tokens


def test_evidence_unknown(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D1:1", "D9:9"])
    assert ev == ("D1:1",)
    assert counts == {"unknown_dropped": 1}


def test_evidence_duplicate(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, ["D1:2", "D1:1", "D1:2"])
    assert ev == ("D1:2", "D1:1")
    assert counts == {"duplicate_dropped": 1}


def test_evidence_empty(tmp_path: Path) -> None:
    ev, counts = _evidence_case(tmp_path, [])
    assert ev == ()
    assert counts == {"empty_evidence": 1}
    ev, counts = _evidence_case(tmp_path, ["D7:7"])  # nothing left after cleaning
    assert ev == ()
    assert counts == {"unknown_dropped": 1, "empty_evidence": 1}


def test_int_answer(tmp_path: Path) -> None:
    ds = load_locomo(mutated(tmp_path, lambda d: qa(d).update(answer=2022)))
    assert ds.conversations[0].qa[0].answer == "2022"
    assert ds.report["int_answer"] == 1


def test_answer_whitespace(tmp_path: Path) -> None:
    ds = load_locomo(mutated(tmp_path, lambda d: qa(d).update(answer=" 23 July, 2023 ")))
    assert ds.conversations[0].qa[0].answer == "23 July, 2023"
    assert ds.report["answer_stripped"] == 1


def test_answer_missing(tmp_path: Path) -> None:
    for setter in (
        lambda d: qa(d).pop("answer"),
        lambda d: qa(d).update(answer=None),
        lambda d: qa(d).update(answer=" "),
    ):
        expect_error(mutated(tmp_path, setter), "category-4 item without an answer", field="qa[0].answer")
    # category 5 may lack one
    assert load_locomo(write(tmp_path, minimal_locomo())).conversations[0].qa[1].answer is None


def test_answer_wrong_type(tmp_path: Path) -> None:
    for bad, kind in ((["a", "dog"], "array"), (2.5, "number"), (True, "boolean")):
        p = mutated(tmp_path, lambda d, bad=bad: qa(d).update(answer=bad))
        expect_error(p, f"is a JSON {kind}", "expected a string", field="qa[0].answer")


def test_adversarial_missing(tmp_path: Path) -> None:
    p = mutated(tmp_path, lambda d: qa(d, 1).pop("adversarial_answer"))
    expect_error(p, "category-5 item without adversarial_answer", field="qa[1].adversarial_answer")


def test_duplicate_qa(tmp_path: Path) -> None:
    def dup(d: list[dict[str, Any]]) -> None:
        extra = copy.deepcopy(qa(d))
        extra["answer"] = "a cat"  # a later copy with another answer: the first one wins under dedupe
        d[0]["qa"].append(extra)

    p = mutated(tmp_path, dup)
    kept = load_locomo(p)
    assert [q.index for q in kept.conversations[0].qa] == [0, 1, 2]
    assert kept.report["duplicate_qa"] == 1
    deduped = load_locomo(p, dedupe_qa=True)
    assert [(q.index, q.answer) for q in deduped.conversations[0].qa] == [(0, "a dog"), (1, None)]
    assert deduped.report["duplicate_qa_dropped"] == 1
    assert "duplicate_qa" not in deduped.report.counts


# ---- the README table and this file agree ---------------------------------------------------------------------


def test_readme_table_matches_tests() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index("| case | outcome | message or counter |") :]
    rows = re.findall(r"^\| `([a-z0-9_]+)`[^|]*\| (error|cleaning) \|", table, flags=re.MULTILINE)
    assert len(rows) >= 12
    cases = [case for case, _ in rows]
    assert len(cases) == len(set(cases))
    tests = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(cases) <= tests, sorted(set(cases) - tests)

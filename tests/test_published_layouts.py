"""Published-file layouts and the record → item mapping on small files the tests write (no data file needed): each
layout's records, the generic JSON Lines layout, each bad-input case as one DataError naming the file, and the
J-as-published aggregate kept apart from the harness's J."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore.datasets.errors import DataError
from memcore.datasets.registry import get_dataset
from memcore.eval.published import length_stats, published_judge
from memcore.itemlog import LoggedItem
from memcore.published.layouts import LAYOUTS, get_layout
from memcore.published.mapping import map_records, normalise_question
from memcore.published.paths import published_dir
from memcore.registry import UnknownNameError
from tests.support import story_conversation

CONVS = [story_conversation("conv-a"), story_conversation("conv-b")]  # items 0, 1 (categories 4, 2) and 2 (cat. 5)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_every_layout_is_registered_and_an_unknown_one_says_what_it_meant() -> None:
    assert sorted(LAYOUTS.names()) == ["backboard", "dial481", "jsonl", "mem0-pr", "memobase", "zep"]
    with pytest.raises(UnknownNameError, match=r"memobse.*memobase"):
        get_layout("memobse")


def test_generic_layout_maps_by_qa_index_and_checks_the_question_without_mapping_by_it(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "answers.jsonl",
        [
            {
                "sample_id": "conv-b",
                "qa_index": 1,
                "answer": "in March",
                "grade": 0.5,
                "question": "When did BOB start the violin",
            },
            {
                "sample_id": "conv-b",
                "qa_index": 0,
                "answer": 7,
                "grade": True,
                "question": "What breed is Alice's cat?",
            },
        ],
    )
    parsed = get_layout("jsonl").parse([path])
    mapping = map_records(path, parsed, CONVS)
    assert [m.item.item_id for m in mapping.items] == ["conv-b#0", "conv-b#1"]  # dataset order
    assert [m.record.answer for m in mapping.items] == ["7", "in March"]
    assert [m.record.grade for m in mapping.items] == [1.0, 0.5]
    assert [m.item.item_id for m in mapping.mismatched] == ["conv-b#0"]  # case and punctuation do not count
    assert mapping.conversations == ["conv-b"] and mapping.categories == [2, 4]  # every category of the data but 5


def test_position_layouts_map_the_category_1_to_4_items_in_order(tmp_path: Path) -> None:
    data = {
        "1": [{"question": "What breed is Rex?", "answer": "beagle", "response": "a beagle", "category": "4",
               "bleu_score": 0.5, "f1_score": 0.6666, "llm_score": 1},
              {"question": "When did Bob start the violin?", "answer": "March", "response": "May", "category": "2",
               "bleu_score": 0.0, "f1_score": 0.0, "llm_score": 0}],
    }  # fmt: skip
    path = tmp_path / "memobase.json"
    path.write_text(json.dumps(data))
    parsed = get_layout("memobase").parse([path])
    mapping = map_records(path, parsed, CONVS)
    assert [(m.item.item_id, m.record.answer, m.record.grade) for m in mapping.items] == [
        ("conv-b#0", "a beagle", 1.0),
        ("conv-b#1", "May", 0.0),
    ]
    assert mapping.items[0].record.vendor_scores == {"f1": 0.6666, "bleu1": 0.5}


def test_zep_dial481_and_backboard_files_parse(tmp_path: Path) -> None:
    zep = tmp_path / "zep.json"
    zep.write_text(json.dumps({"locomo_experiment_user_0": [
        {"question": "What breed is Rex?", "answer": "Rex is a beagle.", "golden_answer": "beagle", "grade": True, "category": 4},
        {"question": "When did Bob start the violin?", "answer": "March", "golden_answer": "March", "grade": False, "category": 2},
    ]}))  # fmt: skip
    m = map_records(zep, get_layout("zep").parse([zep]), CONVS)
    assert [(x.item.item_id, x.record.grade) for x in m.items] == [("conv-a#0", 1.0), ("conv-a#1", 0.0)]

    audit = tmp_path / "eval_results.json"
    audit.write_text(json.dumps({
        "metadata": {"answer_model": "gpt-x", "judge_model": "judge-y", "num_runs": 3, "answer_prompt": "cot"},
        "detailed_results": {"locomo_exp_user_1": [
            {"question_id": "locomo_1_qa1", "question": "When did Bob start the violin?", "generated_answer": "March",
             "llm_judgments": {"judgment_1": True, "judgment_2": False, "judgment_3": True}, "category": "2"},
            {"question_id": "locomo_1_qa0", "question": "What breed is Rex?", "generated_answer": "beagle",
             "llm_judgments": {"judgment_1": True, "judgment_2": True, "judgment_3": True}, "category": "4"},
        ]},
    }))  # fmt: skip
    parsed = get_layout("dial481").parse([audit])
    assert (parsed.answer_model, parsed.judge, parsed.answer_prompt) == ("gpt-x", "judge-y ×3", "cot")
    m = map_records(audit, parsed, CONVS)
    assert [(x.item.item_id, x.record.grade) for x in m.items] == [
        ("conv-b#0", 1.0),
        ("conv-b#1", pytest.approx(2 / 3)),
    ]

    files = []
    for conv in ("conv-a", "conv-b"):
        f = tmp_path / f"{conv}.json"
        f.write_text(json.dumps({"conversation_id": conv, "responses": [
            {"question": "What breed is Rex?", "ai_response": "beagle", "evaluation": {"is_correct": True}},
            {"question": "When did Bob start the violin?", "ai_response": "June", "evaluation": {"is_correct": False}},
        ]}))  # fmt: skip
        files.append(f)
    m = map_records(files[0], get_layout("backboard").parse(files), CONVS)
    assert [x.item.item_id for x in m.items] == ["conv-a#0", "conv-a#1", "conv-b#0", "conv-b#1"]
    assert m.categories == [2, 4] and m.conversations == ["conv-a", "conv-b"]


@pytest.mark.parametrize(
    ("records", "problem"),
    [
        ([{"sample_id": "conv-a", "qa_index": 0, "answer": "x"}] * 2 + [{"sample_id": "conv-a", "qa_index": 1, "answer": "y"}],
         r"qa_index 0 of conv-a repeats"),
        ([{"sample_id": "conv-a", "qa_index": 9, "answer": "x"}], r"qa_index 9 is out of range for conv-a"),
        ([{"sample_id": "conv-a", "qa_index": 0}], r"line 1 has no answer field 'answer'"),
        ([{"sample_id": "conv-a", "qa_index": 0, "answer": "x"}], r"counts that do not match.*first missing conv-a#1"),
        ([{"sample_id": "conv-zz", "qa_index": 0, "answer": "x"}], r"conversation 'conv-zz' is not in the dataset"),
        ([{"sample_id": "conv-a", "qa_index": "0", "answer": "x"}], r"'qa_index' '0' is not an integer"),
        ([{"sample_id": "conv-a", "qa_index": 0, "answer": "x", "grade": 2}], r"grade 2 is neither a bool nor"),
    ],
)  # fmt: skip
def test_bad_generic_records_are_one_error_naming_the_file(tmp_path: Path, records: list, problem: str) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", records)
    with pytest.raises(DataError, match=problem) as err:
        map_records(path, get_layout("jsonl").parse([path]), CONVS)
    assert str(err.value).startswith(str(path)) and "\n" not in str(err.value)


def test_a_file_that_is_not_json_or_of_another_shape_is_one_error(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("<html>not json</html>")
    for layout in ("zep", "dial481", "memobase", "mem0-pr", "backboard"):
        with pytest.raises(DataError, match=r"x.json: not JSON"):
            get_layout(layout).parse([path])
    with pytest.raises(DataError, match=r"line 1 is not JSON"):
        get_layout("jsonl").parse([path])
    path.write_text(json.dumps({"locomo_experiment_user_0": []}))
    with pytest.raises(DataError, match=r"key 'locomo_experiment_user_0' is not <conversation index>"):
        get_layout("memobase").parse([path])
    path.write_text(json.dumps({"0": [{"question": "q", "answer": "gold"}]}))
    with pytest.raises(DataError, match=r"\['0'\]\[0\] has no answer field 'response'"):
        get_layout("memobase").parse([path])


def test_a_position_file_with_other_counts_is_another_slice(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"0": [{"response": "x", "llm_score": 1}]}))
    with pytest.raises(DataError, match=r"1 records for conversation conv-a, which has 2 category 1-4 items"):
        map_records(path, get_layout("memobase").parse([path]), CONVS)
    path.write_text(json.dumps({"7": [{"response": "x"}, {"response": "y"}]}))
    with pytest.raises(DataError, match=r"conversation index 7 is out of range"):
        map_records(path, get_layout("memobase").parse([path]), CONVS)


def test_j_as_published_is_aggregated_apart_with_its_judge_and_interval() -> None:
    items = [
        LoggedItem(item_id=f"c{c}#{i}", conv_id=f"c{c}", category=cat, answer="a b c"[: 1 + 2 * i],
                   scores={"f1": 0.1}, extra={"published": {"grade": g}})
        for c in range(3) for i, (cat, g) in enumerate([(1, 1.0), (4, 0.0), (4, 2 / 3)])
    ]  # fmt: skip
    block = published_judge(items, get_dataset("locomo").categories, "judge-y")
    assert block is not None and block["judge_name"] == "judge-y"
    assert block["overall_no_adv"]["judge"] == pytest.approx(5 / 9)
    assert block["by_category"]["4"]["judge"] == pytest.approx(1 / 3) and block["by_category"]["1"]["n_graded"] == 3
    low, high = block["overall_no_adv"]["ci"]
    assert low == pytest.approx(5 / 9) and high == pytest.approx(5 / 9)  # identical conversations: no spread
    assert all("judge" not in it["scores"] for it in items)  # the harness's J is untouched
    assert length_stats(items) == {"mean_words": 2.0, "median_words": 2.0}
    assert published_judge([LoggedItem(items[0], extra={})], get_dataset("locomo").categories, None) is None


def test_question_normalisation_ignores_case_punctuation_and_spacing() -> None:
    assert normalise_question("Which  classical musicians does Melanie enjoy?") == normalise_question(
        "which classical musicians does melanie enjoy"
    )


def test_generic_files_beyond_the_shared_ones(tmp_path: Path) -> None:
    """Category 5 answered for every item keeps it in the slice; answered for some only is another slice; an empty
    file, a JSON array on a line and a bool index are each one error."""
    every = [{"sample_id": c, "qa_index": i, "answer": "x"} for c in ("conv-a", "conv-b") for i in range(3)]
    path = write_jsonl(tmp_path / "all.jsonl", every)
    mapping = map_records(path, get_layout("jsonl").parse([path]), CONVS)
    assert mapping.categories is None and len(mapping.items) == 6
    path = write_jsonl(tmp_path / "some.jsonl", every[:3] + every[3:5])
    with pytest.raises(DataError, match=r"category 5 is answered for some items but not for conv-b#2"):
        map_records(path, get_layout("jsonl").parse([path]), CONVS)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(DataError, match=r"empty.jsonl: holds no record"):
        get_layout("jsonl").parse([empty])
    array = tmp_path / "array.jsonl"
    array.write_text(json.dumps(every) + "\n")
    with pytest.raises(DataError, match=r"line 1 is a list, not a record"):
        get_layout("jsonl").parse([array])
    flag = write_jsonl(tmp_path / "flag.jsonl", [{"sample_id": "conv-a", "qa_index": True, "answer": "x"}])
    with pytest.raises(DataError, match=r"'qa_index' True is not an integer"):
        get_layout("jsonl").parse([flag])


def test_the_published_dir_is_explicit_then_the_environment_then_shared(tmp_path: Path) -> None:

    assert published_dir(tmp_path, env={}) == tmp_path
    assert published_dir(env={"MEMCORE_PUBLISHED": str(tmp_path)}) == tmp_path
    with pytest.raises(DataError, match=r"MEMCORE_PUBLISHED 'nowhere' is not a directory"):
        published_dir(env={"MEMCORE_PUBLISHED": "nowhere"})
    shared = tmp_path / "shared" / "data" / "published"
    shared.mkdir(parents=True)
    assert published_dir(env={}, bases=[tmp_path / "repo"]) == shared
    with pytest.raises(DataError, match=r"published answer files not found.*get_published.py"):
        published_dir(env={}, bases=[tmp_path / "elsewhere" / "repo"])

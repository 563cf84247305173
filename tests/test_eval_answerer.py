"""The answerer with a scripted backbone: prompts per protocol and category, seeds, temperatures, parsing."""

from __future__ import annotations

import random

import pytest

from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.prompts import answer as prompts
from memcore.datasets.locomo.protocols import adversarial_options, locomo_cat5_choice
from memcore.eval.answerer import Answerer, strip_answer_label
from memcore.seeding import derive_seed
from memcore.types import QAItem

CONTEXT = "[8 May, 2023] Alice: We moved to Lisbon yesterday."


def qa(index: int, category: Category, answer: str | None = "Lisbon", adversarial: str | None = None) -> QAItem:
    return QAItem(
        "conv-t",
        index,
        "Where did Alice move?",
        category,
        answer,
        ("D1:1",),
        metadata={} if adversarial is None else {"adversarial_answer": adversarial},
    )


def test_amem_temporal_prompt_and_sampling(scripted) -> None:
    bb = scripted('{"answer": "7 May 2023"}')
    res = Answerer(bb, "amem", seed=11).answer(qa(0, Category.TEMPORAL), CONTEXT)
    assert res.text == "7 May 2023"
    assert res.parse_ok and not res.cached
    stage, msgs = bb.calls[0]
    assert stage == "answer"
    assert msgs[0] == {"role": "system", "content": prompts.AMEM_SYSTEM}
    user = msgs[1]["content"]
    assert "Use DATE of CONVERSATION to answer with an approximate date." in user
    assert f"Based on the context: {CONTEXT}, answer the following question." in user
    assert "Question: Where did Alice move? Short answer:" in user
    kw = bb.kwargs[0]
    assert kw["temperature"] == 0.7 == res.temperature
    assert kw["json"] is True
    assert kw["max_tokens"] == 1000
    assert kw["seed"] == derive_seed(11, "answer", "conv-t#0") == res.seed
    assert kw["prompt_version"] == f"{prompts.VERSION}/amem" == res.prompt_version


def test_amem_prompts_are_a_mem_text_verbatim(scripted) -> None:
    pad = " " * 28
    ans = Answerer(scripted("{}"), "amem", seed=0)
    general = ans.build_prompt(qa(1, Category.SINGLE_HOP), "CTX").messages[1]["content"]
    assert general == (
        "Based on the context: CTX, write an answer in the form of a short phrase for the following question. "
        "Answer with exact words from the context whenever possible.\n\n"
        f"{pad}Question: Where did Alice move? Short answer:\n{pad}"
    )
    assert ans.build_prompt(qa(2, Category.MULTI_HOP), "CTX").messages[1]["content"] == general
    assert ans.build_prompt(qa(3, Category.OPEN_DOMAIN), "CTX").messages[1]["content"] == f"\n{pad}" + general
    temporal = ans.build_prompt(qa(4, Category.TEMPORAL), "CTX").messages[1]["content"]
    assert "and avoid using any subjects.   \n\n" in temporal


def test_amem_adversarial_options_in_seeded_order(scripted) -> None:
    orders = {}
    for i in range(12):
        item = qa(i, Category.ADVERSARIAL, answer=None, adversarial="Porto")
        bb = scripted('{"answer": "Porto"}')
        res = Answerer(bb, "amem", seed=5).answer(item, CONTEXT)
        user = bb.calls[0][1][1]["content"]
        a, b = res.options
        assert {a, b} == {"Not mentioned in the conversation", "Porto"}
        assert f"Select the correct answer: {a} or {b}  Short answer:" in user
        coin = random.Random(derive_seed(5, "answer-options", item.item_id)).random()
        assert (a == prompts.NOT_MENTIONED) == (coin < 0.5)
        assert bb.kwargs[0]["temperature"] == 0.5 == res.temperature
        # the same run seed reproduces the order
        assert adversarial_options(item, 5) == res.options
        orders[i] = a == prompts.NOT_MENTIONED
    assert set(orders.values()) == {True, False}  # both orders occur


def test_amem_unparseable_reply_falls_back_to_raw_text(scripted) -> None:
    bb = scripted("Answer: Lisbon")
    res = Answerer(bb, "amem", seed=0).answer(qa(0, Category.SINGLE_HOP), CONTEXT)
    assert not res.parse_ok
    assert res.raw == "Answer: Lisbon"
    assert res.text == "Lisbon"
    assert len(bb.calls) == 1  # A-MEM makes one attempt
    assert bb.usage.to_json()["by_stage"]["answer"]["parse_failures"] == 1
    assert bb.usage.parse_failures() == {"answer": {"answer_raw_text": 1}}


def test_amem_json_retries_when_asked(scripted) -> None:
    bb = scripted(["not json", '{"answer": 2022}'])
    res = Answerer(bb, "amem", seed=0, json_attempts=2).answer(qa(0, Category.SINGLE_HOP), CONTEXT)
    assert res.parse_ok and res.text == "2022"
    assert len(bb.calls) == 2


def test_temperature_overrides(scripted) -> None:
    bb = scripted('{"answer": "x"}')
    ans = Answerer(bb, "amem", seed=0, temperature_default=0.0, temperature_adversarial=0.2, max_tokens=64)
    ans.answer(qa(0, Category.SINGLE_HOP), CONTEXT)
    ans.answer(qa(1, Category.ADVERSARIAL, None, "Porto"), CONTEXT)
    assert [k["temperature"] for k in bb.kwargs] == [0.0, 0.2]
    assert [k["max_tokens"] for k in bb.kwargs] == [64, 64]


def test_locomo_prompt_is_official(scripted) -> None:
    bb = scripted("  Lisbon \n")
    res = Answerer(bb, "locomo", seed=1).answer(qa(0, Category.TEMPORAL), CONTEXT)
    msgs = bb.calls[0][1]
    assert msgs == [
        {
            "role": "user",
            "content": CONTEXT
            + "\n\n\nBased on the above context, write an answer in the form of a short phrase for the following question. "
            "Answer with exact words from the context whenever possible.\n\n"
            "Question: Where did Alice move? Use DATE of CONVERSATION to answer with an approximate date. Short answer:\n",
        }
    ]
    assert res.text == "Lisbon"
    kw = bb.kwargs[0]
    assert kw["temperature"] == 0.0 and kw["max_tokens"] == 32 and kw.get("json", False) is False


def test_locomo_adversarial_options_and_letter_mapping(scripted) -> None:
    item = qa(3, Category.ADVERSARIAL, answer=None, adversarial="Porto")
    bb = scripted("(a)")
    res = Answerer(bb, "locomo", seed=2).answer(item, CONTEXT)
    a, b = res.options
    user = bb.calls[0][1][0]["content"]
    assert user.endswith(
        f"\n\nBased on the above context, answer the following question.\n\n"
        f"Question: Where did Alice move? Select the correct answer: (a) {a} (b) {b}.  Short answer:\n"
    )
    assert res.text == a  # "(a)" maps to the first option
    assert res.raw == "(a)"


def test_locomo_reply_reaches_the_cat5_mapping_unchanged(scripted) -> None:
    """``get_gpt_answers`` strips white space only: a label before the letter is not taken off, so the mapping
    sees a reply of neither one nor three characters and keeps it, lower-cased."""
    item = qa(3, Category.ADVERSARIAL, answer=None, adversarial="Porto")
    assert Answerer(scripted("Answer: (a)"), "locomo", seed=2).answer(item, CONTEXT).text == "answer: (a)"
    assert Answerer(scripted(" b "), "locomo", seed=2).answer(item, CONTEXT).text == adversarial_options(item, 2)[1]
    other = Answerer(scripted("Short answer: Lisbon "), "locomo", seed=2).answer(qa(0, Category.SINGLE_HOP), CONTEXT)
    assert other.text == "Short answer: Lisbon"


def test_locomo_cat5_choice_mirrors_official() -> None:
    assert locomo_cat5_choice("b", "X", "Y") == "Y"
    assert locomo_cat5_choice(" A ", "X", "Y") == "X"
    assert locomo_cat5_choice("(b)", "X", "Y") == "Y"
    assert locomo_cat5_choice("Not Mentioned", "X", "Y") == "not mentioned"


def test_strip_answer_label() -> None:
    assert strip_answer_label("Answer: 7 May") == "7 May"
    assert strip_answer_label("  short answer:  Lisbon ") == "Lisbon"
    assert strip_answer_label("The answer: is here") == "The answer: is here"


def test_unknown_protocol(scripted) -> None:
    with pytest.raises(ValueError, match="Known: amem, locomo"):
        Answerer(scripted(""), "mem0", seed=0)


def test_cached_flag_is_passed_through(scripted) -> None:
    assert (
        Answerer(scripted('{"answer": "x"}', cached=True), "amem", seed=0)
        .answer(qa(0, Category.SINGLE_HOP), CONTEXT)
        .cached
    )
    assert Answerer(scripted("x", cached=True), "locomo", seed=0).answer(qa(0, Category.SINGLE_HOP), CONTEXT).cached


def test_prompt_hash_pins_the_exact_request(scripted) -> None:
    """The record's prompt_hash is the digest of messages + sampling + seed: the same for the same
    request, different when the context, the item (its seed) or the protocol's prompt differs."""
    bb = scripted('{"answer": "Lisbon"}')
    amem = Answerer(bb, "amem", seed=0)
    item = qa(0, Category.SINGLE_HOP)
    first = amem.answer(item, CONTEXT)
    assert len(first.prompt_hash) == 16 and first.raw == '{"answer": "Lisbon"}'
    assert amem.answer(item, CONTEXT).prompt_hash == first.prompt_hash
    assert amem.build_prompt(item, CONTEXT).digest() == first.prompt_hash
    others = {
        amem.answer(item, CONTEXT + " More.").prompt_hash,
        amem.answer(qa(1, Category.SINGLE_HOP), CONTEXT).prompt_hash,
        Answerer(bb, "locomo", seed=0).answer(item, CONTEXT).prompt_hash,
    }
    assert first.prompt_hash not in others and len(others) == 3

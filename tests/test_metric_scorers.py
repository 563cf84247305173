"""Answer and evidence metrics under both protocols, against hand-computed values.

BLEU-1 by hand: p1 = clipped unigram matches / hypothesis length; BP = 1 if c > r else exp(1 - r/c).
"""

from __future__ import annotations

import math

import pytest

from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.scoring import amem_f1, amem_tokens, locomo_f1, locomo_normalize, locomo_tokens
from memcore.eval.protocols import EvalProtocol, get_protocol
from memcore.eval.scoring import score_answer as score_with
from memcore.metrics.scorers.answer import amem_bleu1
from memcore.metrics.scorers.evidence import evidence_scores, recall_at_budget


def score_answer(prediction: str, gold: str, category: int, protocol: str) -> dict[str, float]:
    """:func:`memcore.eval.scoring.score_answer` under the protocol named ``protocol``, resolved here once."""
    resolved: EvalProtocol = get_protocol(protocol)
    return score_with(prediction, gold, category, resolved)


def f1_of(p: float, r: float) -> float:
    return 2 * p * r / (p + r)


# --- A-MEM protocol ------------------------------------------------------------------------------
def test_amem_tokens_replace_only_four_marks() -> None:
    assert amem_tokens("St. Louis, MO! Why? it's: ok") == ["st", "louis", "mo", "why", "it's:", "ok"]


def test_amem_f1_is_over_token_sets() -> None:
    # pred {the, cat, sat} (duplicates collapse), gold {the, cat, sat, on, mat}: P = 1, R = 3/5
    assert amem_f1("The the cat sat.", "the cat sat on the mat") == pytest.approx(f1_of(1.0, 3 / 5))


def test_amem_punctuation() -> None:
    assert amem_f1("Paris!", "paris") == 1.0
    assert amem_f1("St. Louis, MO", "st louis mo") == 1.0
    # ':' is not removed: {answer:, 7, may} vs {7, may} -> P = 2/3, R = 1 -> 0.8
    assert amem_f1("Answer: 7 May", "7 May") == pytest.approx(0.8)


def test_amem_bleu1_hand_computed() -> None:
    # hyp [the, cat, sat, .] (4), ref [the, cat, sat, on, the, mat] (6): p1 = 3/4, BP = exp(1 - 6/4)
    assert amem_bleu1("The cat sat.", "the cat sat on the mat") == pytest.approx(0.75 * math.exp(-0.5))
    # hyp [answer, :, 7, may], ref [7, may]: p1 = 2/4, BP = 1
    assert amem_bleu1("Answer: 7 May", "7 May") == pytest.approx(0.5)


def test_bleu1_multi_sentence_uses_punkt_split() -> None:
    # Punkt splits "at home. then later." so "home." becomes "home", "." :
    # hyp [at, home, ., then, later, .] (6), ref [home]: p1 = 1/6, BP = 1.
    # Without the sentence split the hypothesis would hold "home." and score 0.
    assert amem_bleu1("At home. Then later.", "home") == pytest.approx(1 / 6)


def test_amem_empty_strings() -> None:
    assert score_answer("", "Paris", 4, "amem") == {"f1": 0.0, "bleu1": 0.0}
    assert score_answer("Paris", "", 4, "amem") == {"f1": 0.0, "bleu1": 0.0}
    assert score_answer(None, "Paris", 4, "amem") == {"f1": 0.0, "bleu1": 0.0}  # type: ignore[arg-type]
    # only separators: no tokens -> 0 (A-MEM's rule)
    assert amem_f1("?!", "Paris") == 0.0


def test_int_answers() -> None:
    # {in, 2022} vs {2022}: P = 1/2, R = 1 -> 2/3; BLEU: hyp [in, 2022, .], ref [2022] -> 1/3
    scores = score_answer("In 2022.", 2022, 2, "amem")  # type: ignore[arg-type]
    assert scores["f1"] == pytest.approx(2 / 3)
    assert scores["bleu1"] == pytest.approx(1 / 3)
    assert score_answer("2022", "2022", 2, "locomo")["f1"] == 1.0
    # locomo: stems [in, 2022] vs [2022] -> 2/3
    assert score_answer("In 2022.", "2022", 2, "locomo")["f1"] == pytest.approx(2 / 3)


def test_amem_category5_scored_against_adversarial_answer() -> None:
    # A-MEM scores category 5 against adversarial_answer like any other category.
    assert score_answer("Not mentioned in the conversation", "Sweden", 5, "amem") == {"f1": 0.0, "bleu1": 0.0}
    assert score_answer("Sweden", "Sweden", Category.ADVERSARIAL, "amem") == {"f1": 1.0, "bleu1": 1.0}


# --- official LoCoMo protocol --------------------------------------------------------------------
def test_locomo_normalize() -> None:
    assert locomo_normalize("The Cat, and a Dog!") == "cat dog"
    assert locomo_normalize("An apple; the end.") == "apple end"
    assert locomo_normalize("  Theatre  and  band ") == "theatre band"  # whole words only


def test_locomo_stemming() -> None:
    assert locomo_tokens("running runs") == ["run", "run"]
    assert score_answer("running", "runs", 4, "locomo")["f1"] == 1.0
    assert score_answer("running", "runs", 4, "amem")["f1"] == 0.0


def test_locomo_articles_removed() -> None:
    assert score_answer("the cat", "a cat", 4, "locomo")["f1"] == 1.0
    # amem keeps articles: {the, cat} vs {a, cat} -> P = R = 1/2
    assert score_answer("the cat", "a cat", 4, "amem")["f1"] == pytest.approx(0.5)


def test_locomo_multiset_f1() -> None:
    # stems [dog, dog, cat] vs [dog, cat]: common = 2, P = 2/3, R = 1 -> 0.8
    assert locomo_f1("dog dog cat", "dog cat", 4) == pytest.approx(0.8)


def test_locomo_category1_comma_split() -> None:
    # gold parts london, paris, rome; best prediction part per gold part: 1, 1, 0 -> 2/3
    assert locomo_f1("Paris, London", "London, Paris, Rome", 1) == pytest.approx(2 / 3)
    # one prediction part "i live in paris and london" -> stems [i, live, in, pari, london];
    # each gold part matches 1 token: P = 1/5, R = 1 -> 1/3; mean over the two gold parts = 1/3
    assert locomo_f1("I live in Paris and London", "Paris, London", 1) == pytest.approx(1 / 3)
    # the same pair under category 4 is one multiset F1: common {pari, london} = 2 of 5 / 2 of 2
    assert locomo_f1("I live in Paris and London", "Paris, London", 4) == pytest.approx(f1_of(2 / 5, 1.0))


def test_locomo_category3_cuts_gold_at_semicolon() -> None:
    assert locomo_f1("psychology", "Psychology; counseling certification", 3) == 1.0
    assert locomo_f1("psychology", "Psychology; counseling certification", 4) == pytest.approx(f1_of(1.0, 1 / 3))


def test_locomo_category5_refusal_detection() -> None:
    for answer in ["Not mentioned in the conversation", "It is NOT MENTIONED.", "No information available"]:
        assert score_answer(answer, "Sweden", 5, "locomo")["f1"] == 1.0
    for answer in ["Sweden", "", "I don't know", "no info available"]:
        assert score_answer(answer, "Sweden", 5, "locomo")["f1"] == 0.0


def test_locomo_empty_strings() -> None:
    assert score_answer("", "Paris", 4, "locomo") == {"f1": 0.0, "bleu1": 0.0}
    assert score_answer("Paris", "", 4, "locomo") == {"f1": 0.0, "bleu1": 0.0}
    assert score_answer("Paris", "", 1, "locomo")["f1"] == 0.0
    assert score_answer("the", "a", 4, "locomo")["f1"] == 0.0  # both normalise to nothing


def test_locomo_reports_amem_bleu1() -> None:
    # hyp [paris, ",", london], ref [london, ",", paris, ",", rome]: p1 = 3/3, BP = exp(1 - 5/3)
    scores = score_answer("Paris, London", "London, Paris, Rome", 1, "locomo")
    assert scores["bleu1"] == pytest.approx(math.exp(1 - 5 / 3))


def test_score_answer_validates_inputs() -> None:
    with pytest.raises(ValueError, match="amem, locomo"):
        get_protocol("official")
    # the harness passes any category through; LoCoMo's per-category F1 knows only its five
    with pytest.raises(ValueError, match="category"):
        score_answer("a", "a", 6, "locomo")
    assert score_answer("a", "a", 6, "amem")["f1"] == 1.0


def test_scores_are_fractions() -> None:
    for protocol in ("amem", "locomo"):
        for cat in range(1, 6):
            for pred, gold in [("7 May 2023", "7 May, 2023"), ("x", "y"), ("a b, c", "c, b")]:
                for value in score_answer(pred, gold, cat, protocol).values():
                    assert 0.0 <= value <= 1.0


# --- evidence ------------------------------------------------------------------------------------
def test_evidence_scores() -> None:
    assert evidence_scores(["D1:1", "D1:2", "D2:5"], ["D1:2", "D9:9", "D2:5"]) == {
        "recall": pytest.approx(2 / 3),
        "hit": 1.0,
    }
    assert evidence_scores(["D1:1"], ["D1:2"]) == {"recall": 0.0, "hit": 0.0}
    assert evidence_scores(["D4:5", "D4:5"], ["D4:5"]) == {"recall": 1.0, "hit": 1.0}  # ids are a set
    assert evidence_scores([], ["D1:1"]) == {"recall": None, "hit": None}


def test_recall_at_budget_takes_the_fitting_prefix() -> None:
    notes = [(["D1:1"], 10), (["D1:2", "D1:3"], 15), (["D2:1"], 5)]
    gold = ["D1:3", "D2:1"]
    # budget 24: only the first note fits (10; 10 + 15 > 24) -> nothing of E
    assert recall_at_budget(gold, notes, 24) == {"recall": 0.0, "hit": 0.0, "notes_used": 1, "tokens_used": 10}
    # budget 25: first two notes (25) -> D1:3 found: 1/2
    assert recall_at_budget(gold, notes, 25) == {"recall": 0.5, "hit": 1.0, "notes_used": 2, "tokens_used": 25}
    # budget 30: all three -> 2/2
    assert recall_at_budget(gold, notes, 30)["recall"] == 1.0
    assert recall_at_budget([], notes, 30)["recall"] is None
    with pytest.raises(ValueError):
        recall_at_budget(gold, notes, -1)

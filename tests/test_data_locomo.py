"""Every fact of ../shared/data/locomo/PROVENANCE.md, asserted on the real locomo10.json."""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.download import LOCOMO_SHA256
from memcore.datasets.locomo.loader import LoCoMoDataset, load_locomo, parse_session_time, with_image_caption
from memcore.eval.protocols import get_protocol
from memcore.types import Conversation, QAItem


@pytest.fixture(scope="module")
def path(locomo_path: Path) -> Path:
    return locomo_path


@pytest.fixture(scope="module")
def ds(locomo: LoCoMoDataset) -> LoCoMoDataset:
    return locomo


@pytest.fixture(scope="module")
def raw(path: Path) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))


def conv(ds: LoCoMoDataset, conv_id: str) -> Conversation:
    return ds.conversation(conv_id)


def item_with_raw(ds: LoCoMoDataset, raw_id: str) -> tuple[Conversation, QAItem]:
    """The single QA item whose raw evidence contains ``raw_id`` verbatim."""
    found = [(c, q) for c in ds.conversations for q in c.qa if raw_id in q.raw_evidence]
    assert len(found) == 1, found
    return found[0]


def raw_turns(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [t for c in raw for k, v in c["conversation"].items() if re.fullmatch(r"session_\d+", k) for t in v]


def test_file_identity(ds: LoCoMoDataset, path: Path) -> None:
    assert path.stat().st_size == 2_805_274
    assert ds.sha256 == LOCOMO_SHA256 == "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"
    assert ds.is_official


def test_sizes(ds: LoCoMoDataset) -> None:
    assert ds.counts() == {"conversations": 10, "sessions": 272, "turns": 5882, "qa": 1986}
    assert ds.conv_ids == (
        "conv-26", "conv-30", "conv-41", "conv-42", "conv-43", "conv-44", "conv-47", "conv-48", "conv-49", "conv-50",
    )  # fmt: skip


def test_category_counts(ds: LoCoMoDataset) -> None:
    counts = Counter(q.category for c in ds.conversations for q in c.qa)
    assert {int(k): v for k, v in counts.items()} == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert sum(v for k, v in counts.items() if k is not Category.ADVERSARIAL) == 1540
    assert [c.title for c in Category] == [
        "1 multi-hop",
        "2 temporal",
        "3 open-domain",
        "4 single-hop",
        "5 adversarial",
    ]


def test_category5_answers(ds: LoCoMoDataset) -> None:
    cat5 = [q for c in ds.conversations for q in c.qa if q.category is Category.ADVERSARIAL]
    assert len(cat5) == 446
    assert sum(q.answer is None for q in cat5) == 444
    assert all(q.metadata["adversarial_answer"] for q in cat5)
    assert all(q.answer for c in ds.conversations for q in c.qa if q.category is not Category.ADVERSARIAL)
    with_answer = [q for q in cat5 if q.answer is not None]
    assert [(q.answer, q.metadata["adversarial_answer"]) for q in with_answer] == [("No", "Yes"), ("No", "Yes")]
    assert get_protocol("amem").gold(with_answer[0]) == "Yes"
    assert get_protocol("locomo").gold(with_answer[0]) == "No"


def test_int_answers(ds: LoCoMoDataset, raw: list[dict[str, Any]]) -> None:
    ints = [
        (c["sample_id"], j, q["answer"]) for c in raw for j, q in enumerate(c["qa"]) if isinstance(q.get("answer"), int)
    ]
    assert len(ints) == 6
    assert sorted(a for _, _, a in ints) == [2, 3, 2022, 2022, 2022, 2022]
    for conv_id, j, value in ints:
        assert conv(ds, conv_id).qa[j].answer == str(value)
    assert ds.report["int_answer"] == 6
    assert all(isinstance(q.answer, str | None) for c in ds.conversations for q in c.qa)


def test_whitespace_answer(ds: LoCoMoDataset) -> None:
    assert ds.report["answer_stripped"] == 1
    assert conv(ds, "conv-30").qa[37].answer == "23 July, 2023"
    assert all(q.answer == q.answer.strip() for c in ds.conversations for q in c.qa if q.answer)


def test_malformed_evidence_strings(ds: LoCoMoDataset) -> None:
    c, q = item_with_raw(ds, "D8:6; D9:17")
    assert c.conv_id == "conv-26"
    assert q.evidence == ("D8:6", "D9:17")
    c, q = item_with_raw(ds, "D")
    assert c.conv_id == "conv-42"
    assert q.raw_evidence == ("D1:18", "D", "D1:20")
    assert q.evidence == ("D1:18", "D1:20")
    c, q = item_with_raw(ds, "D:11:26")
    assert c.conv_id == "conv-43"
    assert "D11:26" in q.evidence
    assert "D:11:26" not in q.evidence
    c, q = item_with_raw(ds, "D9:1 D4:4 D4:6")
    assert c.conv_id == "conv-49"
    assert q.evidence == ("D9:1", "D4:4", "D4:6")
    joined = [q for q in conv(ds, "conv-49").qa if any(" " in e for e in q.raw_evidence)]
    assert len(joined) == 3
    assert [q.evidence for q in joined[1:]] == [
        ("D22:1", "D22:2", "D9:10", "D9:11"),
        ("D21:18", "D21:22", "D11:15", "D11:19"),
    ]
    assert ds.report["split"] == 4
    assert ds.report["colon_fixed"] == 1
    assert ds.report["garbage_dropped"] == 1


def test_unknown_evidence_ids(ds: LoCoMoDataset) -> None:
    c, q = item_with_raw(ds, "D10:19")
    assert c.conv_id == "conv-42"
    assert "D10:19" not in c.turn_ids
    assert "D10:19" not in q.evidence
    assert len(q.evidence) == len(q.raw_evidence) - 1
    found = [(c, q) for c in ds.conversations for q in c.qa if "D4:36" in q.raw_evidence and c.conv_id == "conv-47"]
    ((c, q),) = found
    assert "D4:36" not in c.turn_ids
    assert q.evidence == ("D18:1", "D18:7")
    c, q = item_with_raw(ds, "D30:05")  # names no turn as written; the zero-stripped D30:5 does
    assert c.conv_id == "conv-50"
    assert "D30:5" in c.turn_ids
    assert q.evidence == ("D30:5",)
    assert ds.report["unknown_dropped"] == 2
    assert ds.report["zero_stripped"] == 1
    assert "conv-42" in ds.report.examples["unknown_dropped"][0]


def test_cleaned_evidence_names_real_turns(ds: LoCoMoDataset) -> None:
    for c in ds.conversations:
        ids = c.turn_ids
        for q in c.qa:
            assert set(q.evidence) <= ids
            assert len(set(q.evidence)) == len(q.evidence)


def test_empty_evidence(ds: LoCoMoDataset) -> None:
    empty = [(c.conv_id, q.category) for c in ds.conversations for q in c.qa if not q.raw_evidence]
    assert empty == [("conv-26", Category.OPEN_DOMAIN)] * 2 + [("conv-50", Category.OPEN_DOMAIN)] * 2
    assert ds.report["empty_evidence"] == 4
    assert sum(not q.evidence for c in ds.conversations for q in c.qa) == 4


def test_duplicate_evidence_id(ds: LoCoMoDataset) -> None:
    (hit,) = [(c, q) for c in ds.conversations for q in c.qa if q.raw_evidence.count("D4:5") == 2]
    assert hit[0].conv_id == "conv-50"
    assert hit[1].raw_evidence == ("D4:5", "D4:5", "D5:5")
    assert hit[1].evidence == ("D4:5", "D5:5")
    assert ds.report["duplicate_dropped"] == 1


def test_orphan_session_dates(ds: LoCoMoDataset, raw: list[dict[str, Any]]) -> None:
    assert ds.report["orphan_session_date"] == 16
    assert all(ex.startswith("'conv-26'") for ex in ds.report.examples["orphan_session_date"])
    assert len(conv(ds, "conv-26").sessions) == 19
    assert [s.index for s in conv(ds, "conv-26").sessions] == list(range(1, 20))
    dates = [k for k in raw[0]["conversation"] if k.endswith("_date_time")]
    assert len(dates) == 35


def test_image_turns(ds: LoCoMoDataset, raw: list[dict[str, Any]]) -> None:
    turns = raw_turns(raw)
    assert sum("img_url" in t for t in turns) == 910
    assert sum("blip_caption" in t for t in turns) == 1226
    assert sum("blip_caption" in t and "img_url" not in t for t in turns) == 316
    loaded = [t for c in ds.conversations for t in c.turns]
    captioned = [t for t in loaded if t.image_caption is not None]
    assert len(captioned) == 1226
    assert all(t.text.endswith(f" [shares an image: {t.image_caption}]") for t in captioned)
    assert sum("[shares an image:" in t.text for t in loaded) == 1226
    assert ds.report["caption_appended"] == 1226
    assert ds.report["caption_without_img_url"] == 316
    d15 = conv(ds, "conv-26").turns[4]
    assert d15.dia_id == "D1:5"
    assert d15.text == with_image_caption(
        "The transgender stories were so inspiring! I was so happy and thankful for all the support.",
        "a photo of a dog walking past a wall with a painting of a woman",
    )


def test_session_timestamps(ds: LoCoMoDataset) -> None:
    assert parse_session_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_session_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9)
    assert parse_session_time("12:30 pm on 1 Jan, 2024") == datetime(2024, 1, 1, 12, 30)
    first = conv(ds, "conv-26").sessions[0]
    assert (first.time_raw, first.time) == ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56))
    assert first.turns[0].session_time == first.time
    assert first.turns[0].session_index == 1
    for c in ds.conversations:
        times = [s.time for s in c.sessions]
        assert times == sorted(times), c.conv_id


def test_duplicate_questions(ds: LoCoMoDataset, path: Path) -> None:
    assert ds.report["duplicate_qa"] == 12
    deduped = load_locomo(path, dedupe_qa=True)
    assert deduped.counts()["qa"] == 1974
    counts = Counter(int(q.category) for c in deduped.conversations for q in c.qa)
    assert counts == {1: 282, 2: 321, 3: 96, 4: 830, 5: 445}
    assert deduped.report["duplicate_qa_dropped"] == 12
    assert [q.index for q in deduped.conversation("conv-48").qa][88:91] == [88, 100, 101]


def test_report_is_json_ready(ds: LoCoMoDataset) -> None:
    data = json.loads(json.dumps(ds.report.to_dict()))
    assert data["split"]["count"] == 4
    assert data["split"]["examples"][0] == "'conv-26' (index 0) qa[37]: 'D8:6; D9:17' -> D8:6, D9:17"
    assert "orphan_session_date" in ds.report.format()

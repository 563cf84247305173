"""select(): conversations, session cut, evidence-inside filter, max_qa; locomo-mini measured; load_slice(): the
item filters and every kind of empty selection."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from memcore.config import ConfigError, DatasetConfig
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.categories import Category
from memcore.datasets.locomo.loader import LoCoMoDataset, load_locomo
from memcore.datasets.slicing import check_cuts, select
from memcore.pipeline.load import load_slice
from tests.support import minimal_locomo


@pytest.fixture(scope="module")
def ds(locomo: LoCoMoDataset) -> LoCoMoDataset:
    return locomo


def test_locomo_mini(ds: LoCoMoDataset) -> None:
    (c,) = select(ds, conversations=["conv-26"], max_sessions=3, evidence_inside=True)
    assert c.conv_id == "conv-26"
    assert [s.index for s in c.sessions] == [1, 2, 3]
    assert len(c.turns) == 58
    assert len(c.qa) == 25
    assert Counter(int(q.category) for q in c.qa) == {1: 3, 2: 7, 3: 1, 4: 9, 5: 5}
    assert set(Category) == {q.category for q in c.qa}
    assert all(q.evidence and set(q.evidence) <= c.turn_ids for q in c.qa)
    # QA order and original indices are preserved
    idx = [q.index for q in c.qa]
    assert idx == sorted(idx)
    # the input dataset is untouched
    assert len(ds.conversation("conv-26").sessions) == 19
    assert len(ds.conversation("conv-26").qa) == 199


def test_whole_dataset(ds: LoCoMoDataset) -> None:
    out = select(ds)
    assert [c.conv_id for c in out] == list(ds.conv_ids)
    assert all(a is b for a, b in zip(out, ds.conversations, strict=True))  # nothing cut → same objects
    assert sum(len(c.qa) for c in out) == 1986  # incl. the 4 empty-evidence items: no session cut


def test_by_id_and_index(ds: LoCoMoDataset) -> None:
    assert [c.conv_id for c in select(ds, conversations=["conv-50", 0, "1"])] == ["conv-50", "conv-26", "conv-30"]
    assert [c.conv_id for c in select(ds, conversations=["conv-30", 1])] == ["conv-30"]
    assert [c.conv_id for c in select(ds.conversations, conversations="conv-41")] == ["conv-41"]


def test_unknown_conversation_lists_known(ds: LoCoMoDataset) -> None:
    for bad in (["conv-99"], [10], [-1]):
        with pytest.raises(DataError) as info:
            select(ds, conversations=bad)
        msg = str(info.value)
        assert f"unknown conversation {bad[0]!r}" in msg
        assert "conv-26, conv-30, conv-41" in msg
        assert "conv-50" in msg
        assert "index 0-9" in msg


def test_max_qa_and_no_filter(ds: LoCoMoDataset) -> None:
    (c,) = select(ds, conversations=["conv-26"], max_sessions=3, max_qa=4)
    assert [q.index for q in c.qa] == [q.index for q in select(ds, conversations=["conv-26"], max_sessions=3)[0].qa][:4]
    (c,) = select(ds, conversations=["conv-26"], max_sessions=3, evidence_inside=False)
    assert len(c.turns) == 58
    assert len(c.qa) == 199
    (c,) = select(ds, conversations=["conv-26"], max_qa=10)
    assert len(c.sessions) == 19
    assert [q.index for q in c.qa] == list(range(10))


def test_bad_limits(ds: LoCoMoDataset) -> None:
    for kw in ({"max_sessions": 0}, {"max_qa": -2}, {"max_sessions": True}):
        with pytest.raises(DataError, match="must be a positive integer"):
            select(ds, **kw)  # type: ignore[arg-type]


def test_empty_evidence_kept_only_without_cut(tmp_path: Path) -> None:
    def turn(d: str) -> dict[str, str]:
        return {"speaker": "A", "dia_id": d, "text": "x"}

    data = [
        {
            "sample_id": "c",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1_date_time": "1:00 pm on 1 May, 2023",
                "session_1": [turn("D1:1")],
                "session_2_date_time": "1:00 pm on 2 May, 2023",
                "session_2": [turn("D2:1")],
            },
            "qa": [
                {"question": "in s1", "answer": "a", "evidence": ["D1:1"], "category": 4},
                {"question": "spans", "answer": "a", "evidence": ["D1:1", "D2:1"], "category": 1},
                {"question": "none", "answer": "a", "evidence": [], "category": 3},
            ],
        }
    ]
    p = tmp_path / "f.json"
    p.write_text(json.dumps(data), encoding="utf-8")
    small = load_locomo(p)
    assert [q.question for q in select(small, max_sessions=1)[0].qa] == ["in s1"]
    assert [q.question for q in select(small, max_sessions=2)[0].qa] == ["in s1", "spans", "none"]
    assert [q.question for q in select(small)[0].qa] == ["in s1", "spans", "none"]


def _slice_config(**over: object) -> object:
    return OmegaConf.merge(OmegaConf.structured(DatasetConfig), over)


def test_item_ids_keep_only_the_named_items_in_dataset_order(locomo_path: Path) -> None:
    cfg = _slice_config(path=str(locomo_path), conversations=["conv-26"], max_sessions=3, evidence_inside=True)
    whole = load_slice(cfg)
    ids = [q.item_id for q in whole.conversations[0].qa]
    wanted = [ids[7], ids[0], ids[3]]  # the order given does not matter: dataset order is kept
    sub = load_slice(_slice_config(**{**cfg, "item_ids": wanted}))  # type: ignore[dict-item]
    assert [q.item_id for q in sub.conversations[0].qa] == [ids[0], ids[3], ids[7]]
    assert sub.n_items == 3


def test_item_ids_that_match_nothing_are_one_error_naming_why(locomo_path: Path) -> None:
    cfg = _slice_config(path=str(locomo_path), conversations=["conv-26"], max_sessions=1, evidence_inside=True)
    with pytest.raises(ConfigError) as info:
        load_slice(_slice_config(**{**cfg, "item_ids": ["conv-30#0", "conv-26#999", "conv-26#150"]}))  # type: ignore[dict-item]
    assert str(info.value) == (
        "dataset.item_ids selects no QA item of this slice: conv-30#0 (conversation conv-30 is not in the slice), "
        "conv-26#999 (not in the dataset; closest: conv-26#99), conv-26#150 (cut by the slice's sessions or QA limit)"
    )


def test_item_ids_that_match_in_part_keep_the_matches_with_one_warning(locomo_path: Path, caplog) -> None:
    cfg = _slice_config(path=str(locomo_path), conversations=["conv-26"], max_sessions=3, evidence_inside=True)
    ids = [q.item_id for q in load_slice(cfg).conversations[0].qa]
    with caplog.at_level(logging.WARNING, logger="memcore.pipeline.load"):
        sub = load_slice(_slice_config(**{**cfg, "item_ids": [ids[0], "26#0", ids[2]]}))  # type: ignore[dict-item]
    assert [q.item_id for q in sub.conversations[0].qa] == [ids[0], ids[2]]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warned == [
        "dataset.item_ids: 1 of 3 ids match no QA item of this slice and are left out: 26#0 (not in the "
        "dataset; ids look like 'conv-26#3')"
    ]


def test_a_category_filter_that_leaves_nothing_names_the_categories_there_are(locomo_path: Path) -> None:
    quick = _slice_config(
        name="locomo-quick", path=str(locomo_path), conversations=["conv-26"], max_sessions=1, evidence_inside=True
    )
    with pytest.raises(ConfigError) as info:
        load_slice(_slice_config(**{**quick, "categories": [5]}))  # type: ignore[dict-item]
    assert str(info.value) == (
        "dataset.categories=[5] selects no QA item of dataset locomo-quick: its 4 items are of categories 1, 2, 3"
    )


def test_cuts_that_together_leave_no_item_are_one_error(tmp_path: Path) -> None:
    data = minimal_locomo()
    data[0]["qa"] = [{**q, "evidence": ["D2:1"]} for q in data[0]["qa"]]  # session 1 alone answers none
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    cfg = _slice_config(name="s1", path=str(path), max_sessions=1, evidence_inside=True)
    with pytest.raises(ConfigError) as info:
        load_slice(cfg)
    assert str(info.value) == (
        "dataset s1 selects no QA item: dataset.max_sessions=1, dataset.evidence_inside=true leave none"
    )


@pytest.mark.parametrize(
    ("cut", "fragment"),
    [
        ({"item_ids": []}, "dataset.item_ids=[] is not allowed"),
        ({"conversations": []}, "dataset.conversations=[] is not allowed"),
        ({"categories": []}, "dataset.categories=[] is not allowed"),
        ({"max_qa": 0}, "dataset.max_qa=0 is not allowed (dataset x): allowed >= 1, or null for no cut (0 keeps no QA"),
        ({"max_sessions": 0}, "dataset.max_sessions=0 is not allowed"),
    ],
)
def test_a_cut_that_selects_nothing_by_itself_is_refused_before_the_file_is_read(cut: dict, fragment: str) -> None:
    cfg = _slice_config(name="x", path="/nonexistent/locomo10.json", **cut)
    with pytest.raises(ConfigError) as info:
        load_slice(cfg)  # the file does not exist: the cut is refused first
    assert fragment in str(info.value)
    assert check_cuts(_slice_config(name="x")) is None  # null: no cut, every item

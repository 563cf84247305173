"""The dataset registry: discovery of dataset packages, did-you-mean errors, the config checks made before any
work, and LoCoMo's declared categories against the facts of ../shared/data/locomo/PROVENANCE.md."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path

import pytest

from memcore.config import ConfigError
from memcore.datasets import DATASETS, CategoryInfo, DatasetCategories, dataset_kind, get_dataset
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.categories import Category
from memcore.datasets.registry import declared_datasets
from memcore.pipeline.load import load_slice
from memcore.registry import UnknownNameError
from memcore.validation import check_dataset
from tests.support import compose_config


def test_locomo_is_found_by_scanning_the_datasets_folder() -> None:
    assert "locomo" in DATASETS.names()
    spec = get_dataset("locomo")
    assert spec.kind == "locomo" and spec.audit is not None and spec.default_protocol == "amem"


def test_an_unknown_kind_is_one_did_you_mean_line() -> None:
    with pytest.raises(UnknownNameError) as info:
        get_dataset("locomoo")
    assert str(info.value) == "unknown dataset kind 'locomoo'. Did you mean 'locomo'? Known: locomo, longmemeval."
    with pytest.raises(ConfigError, match=r"^dataset.kind='locomoo': unknown dataset kind .* Did you mean 'locomo'\?"):
        check_dataset({"dataset": {"kind": "locomoo"}, "eval": {}, "protocol": {"name": "amem"}})


def test_a_config_without_kind_is_locomo() -> None:
    assert dataset_kind({"name": "locomo-mini"}) == "locomo"
    assert dataset_kind(compose_config([]).dataset) == "locomo"


def test_declarations_are_read_without_import(tmp_path: Path) -> None:
    init = tmp_path / "__init__.py"
    init.write_text('import does_not_exist\nDATASETS = {"toy": "pkg.loader:TOY"}\n')
    assert declared_datasets(init) == {"toy": "pkg.loader:TOY"}
    init.write_text('DATASETS = ["toy"]\n')
    with pytest.raises(TypeError, match="dict literal"):
        declared_datasets(init)


def test_config_checks_use_the_datasets_declarations() -> None:
    base = {"dataset": {"kind": "locomo"}, "eval": {"answer": True}, "protocol": {"name": "locomo"}}
    check_dataset(base)  # a fitting protocol, no category filter
    with pytest.raises(
        ConfigError, match=r"dataset.categories=\[6\] is not allowed: allowed a list of locomo categories 1-5"
    ):
        check_dataset({**base, "dataset": {"kind": "locomo", "categories": [6]}})
    with pytest.raises(ConfigError, match=r"protocol\.name='judge-v1'.*fits dataset 'locomo': amem, locomo"):
        check_dataset({**base, "protocol": {"name": "judge-v1"}})


def test_categories_reject_repeated_ids_and_name_the_known_ones() -> None:
    with pytest.raises(ValueError, match="repeat"):
        DatasetCategories((CategoryInfo(1, "a", "a"), CategoryInfo(1, "b", "b")))
    cats = DatasetCategories((CategoryInfo(1, "fact", "fact"), CategoryInfo(3, "none", "none", adversarial=True)))
    assert cats.ids == (1, 3) and cats.adversarial_ids == (3,) and cats.headline_ids == (1, 3)
    with pytest.raises(ValueError, match="this dataset's categories are 1 fact, 3 none"):
        cats.get(2)


def test_locomo_categories_match_the_provenance(locomo_path: Path) -> None:
    provenance = (locomo_path.parent / "PROVENANCE.md").read_text()
    names = re.search(r"^- Category names [^:]*: (.+?)\. ", provenance, re.M)
    counts = re.search(r"^- QA per category int: (.+?) \((\d[\d,]*) without category 5\)", provenance, re.M)
    assert names and counts, "PROVENANCE.md no longer states the category facts this test reads"
    spec = get_dataset("locomo")
    assert ", ".join(c.heading for c in spec.categories) == names.group(1)
    assert [c.name for c in spec.categories] == [c.label for c in Category]
    assert spec.categories.adversarial_ids == (5,) and spec.categories.headline_ids == (1, 2, 3, 4)

    data = load_slice(compose_config(["dataset=locomo"]).dataset)
    got = Counter(int(q.category) for c in data.conversations for q in c.qa)
    stated = {int(k): int(v) for k, v in re.findall(r"(\d) = (\d+)", counts.group(1))}
    assert dict(got) == stated
    assert sum(got[c] for c in spec.categories.headline_ids) == int(counts.group(2).replace(",", ""))


def test_a_dataset_without_audit_rejects_audited_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = get_dataset("locomo")
    bare = dataclasses.replace(spec, kind="bare", audit=None)
    DATASETS.names()  # discovery first, so the entry added below stays
    monkeypatch.setitem(DATASETS._items, "bare", bare)
    with pytest.raises(
        ConfigError, match=re.escape("eval.audited=True is not allowed: allowed false: dataset 'bare' has no audit")
    ):
        check_dataset({"dataset": {"kind": "bare"}, "eval": {"audited": True}, "protocol": {"name": "amem"}})
    with pytest.raises(
        DataError, match=re.escape("dataset 'bare' has no audit overlay: run it with eval.audited=false")
    ):
        load_slice(compose_config(["dataset=locomo-tiny", "dataset.kind=bare"]).dataset, audited=True)

"""One registry for every plugin kind: lazy entries, method discovery (source scan and entry points), protocol
objects, config schemas that own their build keys, MemCoRe's ablations declared once, and the harness naming no
method: what it needs to know of one comes from the spec."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import memcore.methods as methods_mod
from memcore.config import ablation_schema, default_ablation_schema
from memcore.datasets import DATASETS
from memcore.datasets.locomo.categories import Category
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.llm.factory import BACKBONE_KINDS, EMBEDDER_KINDS
from memcore.memory.ablations import ABLATIONS, SWITCHES, Switches
from memcore.methods import METHODS, declared_methods, get_method, method_names
from memcore.metrics import METRICS
from memcore.pipeline.rundir import ADDED_KEY_DEFAULTS, without_added_defaults
from memcore.registry import Registry, UnknownNameError, discover_declared, instance_check
from memcore.report.collect import paper_methods
from memcore.report.reference import PAPER_METHOD_NAMES, REIMPLEMENTED, ablation_order, method_order
from memcore.schema import build_keys, knob
from memcore.types import QAItem
from tests.support import REPO


def test_lazy_entry_is_imported_on_first_lookup_and_checked() -> None:
    reg: Registry[object] = Registry("thing")
    reg.add_lazy("dumps", "json:dumps")
    import json

    assert "dumps" in reg and reg.get("dumps") is json.dumps
    with pytest.raises(UnknownNameError, match=r"Did you mean 'dumps'"):
        reg.get("dump")

    def refuse(target: str, obj: object) -> None:
        raise TypeError(target)

    strict: Registry[object] = Registry("spec", check=refuse)
    strict.add_lazy("x", "json:loads")
    with pytest.raises(TypeError, match="json:loads"):
        strict.get("x")


def test_methods_are_declared_by_their_packages_and_match_the_yaml() -> None:
    yaml_names = {p.stem for p in (REPO / "configs" / "method").glob("*.yaml")}
    assert set(method_names()) == yaml_names
    assert declared_methods(REPO / "baselines" / "rag.py")["rag_bm25"] == "baselines.rag:RAG_BM25"
    for name in method_names():
        spec = get_method(name)
        assert spec.name == name and spec.validate_config is not None and spec.config_schema
        assert set(spec.construction_keys or ()) <= set(spec.config_keys())
    assert METHODS.kind == "method"


def test_backbone_and_embedder_kinds_are_registries() -> None:
    assert BACKBONE_KINDS.names() == ["llamacpp", "openai_compatible", "scripted"]
    assert EMBEDDER_KINDS.names() == ["hashing", "hub", "minilm", "openai"]
    with pytest.raises(UnknownNameError, match="Did you mean 'openai_compatible'"):
        BACKBONE_KINDS.get("openai_compat")


def _item(category: Category, answer: str | None, adversarial: str | None) -> QAItem:
    return QAItem(
        "c",
        0,
        "Where?",
        category,
        answer,
        (),
        metadata={} if adversarial is None else {"adversarial_answer": adversarial},
    )


def test_protocols_own_gold_refusal_prompt_and_scoring() -> None:
    assert PROTOCOLS.names() == ["amem", "locomo", "longmemeval"]
    amem, locomo = get_protocol("amem"), get_protocol("locomo")
    assert isinstance(amem, EvalProtocol) and get_protocol("amem") is amem
    adv = _item(Category.ADVERSARIAL, None, "Paris")
    assert amem.gold(adv) == "Paris" and locomo.gold(adv) == "Paris"
    assert locomo.expects_refusal(adv) and not amem.expects_refusal(adv)
    assert amem.json_reply and not locomo.json_reply
    assert (amem.max_tokens, locomo.max_tokens) == (1000, 32)
    assert [m["role"] for m in amem.messages(_item(Category.SINGLE_HOP, "x", None), "ctx", ())] == ["system", "user"]
    assert locomo.postprocess(" (b) ", ("A", "B")) == "B"
    assert locomo.postprocess("Answer: (b)", ("A", "B")) == "answer: (b)"  # the official mapping sees the reply as is
    assert locomo.score("not mentioned", "", Category.ADVERSARIAL)["f1"] == 1.0
    assert amem.table_notes(("5",)) and not amem.table_notes(("1",)) and not locomo.table_notes(("5",))
    with pytest.raises(ValueError, match="unknown protocol 'amen'"):
        get_protocol("amen")


def test_build_keys_come_from_field_metadata() -> None:
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        a: int = knob(1, build=True)
        b: int = 2
        c: str = knob("x", build=True)

    assert build_keys(Cfg) == ("a", "c")


def test_ablations_are_declared_once_and_match_their_yaml() -> None:
    schema = ablation_schema("memcore")
    assert [f.name for f in dataclasses.fields(schema)] == [f.name for f in dataclasses.fields(Switches)]
    assert get_method("memcore").ablations == ABLATIONS
    assert get_method("memcore").construction_switches == ("update", "merge", "link", "denoise")
    yaml_names = {p.stem for p in (REPO / "configs" / "ablation").glob("*.yaml")}
    assert yaml_names == set(ABLATIONS)
    for switch in SWITCHES:
        node = OmegaConf.load(REPO / "configs" / "ablation" / f"wo_{switch}.yaml")
        assert node.name == f"wo_{switch}" and node[switch] is False


def test_yaml_build_markers_follow_the_schema() -> None:
    """A ``# [build]`` comment in configs/method/<name>.yaml marks exactly the build keys that file sets."""
    import re

    marker = re.compile(r"^(\w+):.*#\s*\[build\]")
    for path in sorted((REPO / "configs" / "method").glob("*.yaml")):
        lines = path.read_text().splitlines()
        marked = {m.group(1) for line in lines if (m := marker.match(line))}
        if not marked:
            continue
        keys = {line.split(":", 1)[0] for line in lines if re.match(r"^\w+:", line)}
        assert marked == set(get_method(path.stem).construction_keys or ()) & keys, path.name


def test_a_method_without_switches_runs_under_the_default_ablation_preset() -> None:
    """config.py types the ablation node by the selected method: MemCoRe's switches, or for a method without
    any, the keys (and types) the default preset sets, so ``ablation=none`` composes for every method."""
    preset = OmegaConf.load(REPO / "configs" / "ablation" / "none.yaml")
    fields = [f.name for f in dataclasses.fields(ablation_schema("rag_dense"))]
    assert fields == list(preset) == [f.name for f in dataclasses.fields(default_ablation_schema())]


def test_methods_declared_by_installed_packages_are_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """A package outside the repository declares a method under the ``memcore.methods`` entry-point group."""
    import importlib.metadata

    seen_groups: list[str] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        seen_groups.append(group)
        return [importlib.metadata.EntryPoint("outside", "baselines.rag:RAG_BM25", group)]

    monkeypatch.setattr(methods_mod.importlib.metadata, "entry_points", entry_points)
    fresh = Registry("method", check=methods_mod._check_spec, loader=methods_mod._discover)
    assert seen_groups == [] and "outside" in fresh and seen_groups == [methods_mod.ENTRY_POINT_GROUP]
    assert fresh.get("outside") is get_method("rag_bm25")
    assert set(method_names()) < set(fresh.names())  # the repository's methods are still there

    def clashing(*, group: str) -> list[importlib.metadata.EntryPoint]:
        return [importlib.metadata.EntryPoint("rag_bm25", "elsewhere:SPEC", group)]

    monkeypatch.setattr(methods_mod.importlib.metadata, "entry_points", clashing)
    with pytest.raises(ValueError, match="method 'rag_bm25' is registered twice"):
        Registry("method", check=methods_mod._check_spec, loader=methods_mod._discover).names()


def test_discover_declared_reads_the_packages_literals_then_the_entry_points(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One loader for datasets, protocols, metrics and judges: each package's literal (read, not imported), in
    folder order, then the group's entry points; a name declared twice with another target is refused."""
    import importlib.metadata

    for pkg, body in {
        "a_pkg": 'import does_not_exist\nTHINGS = {"dumps": "json:dumps"}\nOTHER = {"x": "json:loads"}\n',
        "b_pkg": 'THINGS = {"loads": "json:loads"}\n',
        "c_pkg": "NOTHING = 1\n",
    }.items():
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text(body)
    groups: list[str] = []

    def entry_points(*, group: str) -> list[importlib.metadata.EntryPoint]:
        groups.append(group)
        return [importlib.metadata.EntryPoint("outside", "json:JSONDecoder", group)]

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    reg: Registry[object] = Registry("thing", loader=discover_declared("THINGS", "test.things", folder=tmp_path))
    assert groups == []  # nothing is read before the first lookup
    assert reg.names() == ["dumps", "loads", "outside"] and groups == ["test.things"]
    import json

    assert reg.get("dumps") is json.dumps and reg.get("outside") is json.JSONDecoder
    typed: Registry[object] = Registry(
        "thing", check=instance_check(int, "an int"), loader=discover_declared("THINGS", "x", folder=tmp_path)
    )
    with pytest.raises(TypeError, match=r"^json:dumps is not an int$"):
        typed.get("dumps")
    (tmp_path / "c_pkg" / "__init__.py").write_text('THINGS = {"dumps": "pickle:dumps"}\n')
    with pytest.raises(ValueError, match="thing 'dumps' is registered twice"):
        Registry("thing", loader=discover_declared("THINGS", "test.things", folder=tmp_path)).names()


def test_datasets_protocols_and_metrics_are_discovered_by_the_one_loader() -> None:
    assert {"locomo", "longmemeval"} <= set(DATASETS.names())
    assert {"amem", "locomo", "longmemeval"} <= set(PROTOCOLS.names())
    assert {"f1", "session_recall_all_5"} <= set(METRICS.names())


def test_the_report_reads_paper_rows_order_and_notes_from_the_specs() -> None:
    assert dict(PAPER_METHOD_NAMES) == {
        "amem": "amem",
        "locomo": "full_context",
        "lightmem": "lightmem",
        "mem0": "mem0-two-phase",
        "memcore": "memcore",
        "memgpt": "memgpt",
    }
    assert set(paper_methods()) == set(PAPER_METHOD_NAMES.values())
    assert dict(REIMPLEMENTED) == {"memgpt": "cpacker/MemGPT 0.2.6, baselines/memgpt/README.md"}
    assert method_order() == ("full_context", "memgpt", "amem", "mem0-two-phase", "mem0", "lightmem", "memcore")
    assert ablation_order() == get_method("memcore").ablations
    assert [s for s in method_names() if get_method(s).sweep_knob] == ["amem"]
    assert get_method("lightmem").setting_note is not None
    assert get_method("lightmem").setting_note({"preset": "no-such-preset"}) == ""  # an unreadable old section


def test_method_specific_added_keys_live_on_the_spec() -> None:
    """A run recorded before a method knob existed still resumes: the knob at its old-behaviour value is left
    out of the result fields, for that method only."""
    assert all(group != "method" for group, _ in ADDED_KEY_DEFAULTS)
    fields = {"method": {"name": "memcore", "ier_prompt": "v2", "k_final": 10}, "eval": {"answer_prompt": "harness"}}
    assert without_added_defaults(fields) == {"method": {"name": "memcore", "k_final": 10}, "eval": {}}
    other = {"method": {"name": "rag_dense", "ier_prompt": "v2"}}
    assert without_added_defaults(other) == other
    gone = {"method": {"name": "a-method-since-removed", "ier_prompt": "v2"}}
    assert without_added_defaults(gone) == gone


def test_a_lookup_while_another_thread_fills_the_registry_waits_for_it() -> None:
    """The loader runs once; a thread that asks for a name while another runs the loader sees the filled registry,
    not an empty one (runs score items in threads, and the first lookups of a run race)."""
    started = threading.Event()
    calls: list[int] = []

    def slow_loader(registry: Registry[int]) -> None:
        calls.append(1)
        started.set()
        time.sleep(0.2)
        registry.add("f1", 1)

    reg: Registry[int] = Registry("metric", loader=slow_loader)
    results: dict[str, object] = {}

    def first() -> None:
        results["first"] = reg.get("f1")

    def second() -> None:
        started.wait(5)
        try:
            results["second"] = reg.get("f1")
        except Exception as exc:  # the failure this test exists to catch: recorded, then asserted below
            results["second"] = exc

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results == {"first": 1, "second": 1} and calls == [1]

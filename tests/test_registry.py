"""One registry for every plugin kind: lazy entries, method discovery, protocol objects, config schemas
that own their build keys, and MemCoRe's ablations declared once."""

from __future__ import annotations

import dataclasses

import pytest
from omegaconf import OmegaConf

from memcore.datasets.locomo.categories import Category
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.llm.factory import BACKBONE_KINDS, EMBEDDER_KINDS
from memcore.methods import METHODS, declared_methods, get_method, method_names
from memcore.registry import Registry, UnknownNameError
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
    return QAItem("c", 0, "Where?", category, answer, adversarial, ())


def test_protocols_own_gold_refusal_prompt_and_scoring() -> None:
    assert PROTOCOLS.names() == ["amem", "locomo"]
    amem, locomo = get_protocol("amem"), get_protocol("locomo")
    assert isinstance(amem, EvalProtocol) and get_protocol("amem") is amem
    adv = _item(Category.ADVERSARIAL, None, "Paris")
    assert amem.gold(adv) == "Paris" and locomo.gold(adv) == "Paris"
    assert locomo.expects_refusal(adv) and not amem.expects_refusal(adv)
    assert amem.json_reply and not locomo.json_reply
    assert (amem.max_tokens, locomo.max_tokens) == (1000, 32)
    assert [m["role"] for m in amem.messages(_item(Category.SINGLE_HOP, "x", None), "ctx", ())] == ["system", "user"]
    assert locomo.postprocess("Answer: (b)", ("A", "B")) == "B"
    assert locomo.score("not mentioned", "", Category.ADVERSARIAL)["f1"] == 1.0
    assert amem.cat5_note and locomo.cat5_note is None
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
    from memcore.config import AblationConfig
    from memcore.memory.ablations import ABLATIONS, SWITCHES, Switches

    assert [f.name for f in dataclasses.fields(AblationConfig)] == [f.name for f in dataclasses.fields(Switches)]
    assert get_method("memcore").ablations == frozenset(ABLATIONS)
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

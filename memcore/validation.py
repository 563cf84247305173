"""Every knob checked before any work, so a bad value is one line, not a failure an hour in: the method section of
every method, the backbone and embedder presets, ``dataset.*``, ``protocol.*``, ``eval.*`` and the run-level switches.

:func:`validate_run` is called by the runner before it starts a server, loads data or builds anything. Each
problem is one :class:`memcore.config.ConfigError` whose message is one line naming the key, the bad value and
what is allowed; ``memcore-run`` prints it as ``error: …`` and exits 2. Type and unknown-key checks of the
top-level groups come from the typed schema (:func:`memcore.config.validate`); method sections are checked
by each method's own ``MethodSpec.validate_config`` (:func:`memcore.schema.method_validator`: its config
dataclass's types, unknown keys and the ranges marked on its fields, then the method's own constructor so its
cross-field checks run too).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import BackboneConfig, ConfigError, DatasetConfig, EmbedderConfig, EvalConfig, ProtocolConfig
from memcore.datasets.registry import DATASETS, DEFAULT_DATASET_KIND, get_dataset
from memcore.datasets.slicing import check_cuts
from memcore.eval.protocols import PROTOCOLS
from memcore.eval.upstream import check_answer_prompt, upstream_answer
from memcore.llm.cache_shards import check_cache_mode
from memcore.llm.factory import BACKBONE_KINDS, EMBEDDER_KINDS
from memcore.methods import METHODS, get_method, method_names
from memcore.pipeline.runlock import ON_LOCKED_RUN
from memcore.registry import unknown_name_message
from memcore.schema import NONNEG, POS, TEMPERATURE, MethodCheck, Rule, bad_value, check_fields

__all__ = [
    "METHOD_VALIDATORS",
    "Rule",
    "bad_value",
    "check_fields",
    "method_config_keys",
    "validate_method",
    "validate_run",
]


# ---------------------------------------------------------------------------------------------- methods
class _MethodValidators(Mapping[str, MethodCheck]):
    """method name → its ``MethodSpec.validate_config`` (read from the method registry; a view, not a table)."""

    def __getitem__(self, name: str) -> MethodCheck:
        check = get_method(name).validate_config
        if check is None:
            raise KeyError(name)
        return check

    def __iter__(self) -> Iterator[str]:
        return iter([n for n in method_names() if get_method(n).validate_config is not None])

    def __len__(self) -> int:
        return sum(1 for _ in self)


#: method name → validator(name, method section, ablation section); every registered method has one.
METHOD_VALIDATORS: Mapping[str, MethodCheck] = _MethodValidators()


def method_config_keys(name: str) -> list[str]:
    """The keys ``method=<name>`` accepts (for error messages), or [] for an unknown method."""
    return METHODS.get(name).config_keys() if name in METHODS else []


def validate_method(name: str, method_cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    """Check ``method=<name>``'s section (and the ablation it runs with) with the method's own
    ``validate_config``; raises ConfigError."""
    check = get_method(name).validate_config
    if check is None:
        raise ConfigError(f"method {name!r} has no config validator (MethodSpec.validate_config)")
    check(name, dict(method_cfg), dict(ablation))


# ---------------------------------------------------------------------------------------------- run-level
BACKBONE_RULES: dict[str, Rule] = {
    "n_ctx": Rule(lo=256),
    "server_threads": POS,
    "prompt_cache_mb": NONNEG,
    "prompt_token_cap": POS,
    "max_concurrency": POS,
    "timeout_s": Rule(lo=0, lo_open=True),
    "max_attempts": POS,
    "backoff_cap_s": NONNEG,
    "price_in_per_mtok": NONNEG,
    "price_out_per_mtok": NONNEG,
    "scripted_latency_s": NONNEG,
}
EMBEDDER_RULES: dict[str, Rule] = {
    "dim": POS,
    "batch_size": POS,
    "threads": POS,
    "pooling": Rule(choices=("mean", "cls")),
}
DATASET_RULES: dict[str, Rule] = {"max_sessions": POS, "max_qa": POS}
PROTOCOL_RULES: dict[str, Rule] = {
    "temperature": TEMPERATURE,
    "temperature_adversarial": TEMPERATURE,
    "max_tokens": POS,
}
EVAL_RULES: dict[str, Rule] = {
    "note_cap": POS,
    "token_cap": POS,
    "answer_prompt": Rule(choices=("harness", "upstream")),  # memcore.eval.upstream.ANSWER_PROMPTS
}
RUN_RULES: dict[str, Rule] = {"concurrency": POS, "build_processes": NONNEG}


def check_dataset(c: Mapping[str, Any]) -> None:
    """The dataset knobs of a resolved run config: ``dataset.kind`` names a registered dataset (did you mean …),
    ``dataset.categories`` are among its categories, ``eval.audited`` only for a dataset with an audit overlay,
    and a run that answers or judges uses a protocol the dataset declares."""
    kind = str(c["dataset"].get("kind") or DEFAULT_DATASET_KIND)
    if kind not in DATASETS:
        raise ConfigError(f"dataset.kind={kind!r}: " + DATASETS.unknown(kind))
    spec = get_dataset(kind)
    ids = spec.categories.ids
    for cat in c["dataset"].get("categories") or []:
        if cat not in ids:
            span = f"{ids[0]}-{ids[-1]}" if list(ids) == list(range(ids[0], ids[-1] + 1)) else ", ".join(map(str, ids))
            allowed = f"a list of {kind} categories {span} ({spec.categories.describe()})"
            raise bad_value("dataset.categories", c["dataset"]["categories"], allowed)
    ev = c.get("eval") or {}
    if ev.get("audited") and spec.audit is None:
        raise bad_value("eval.audited", True, f"false: dataset {kind!r} has no audit overlay of corrected gold")
    protocol = str((c.get("protocol") or {}).get("name"))
    if (ev.get("answer", True) or ev.get("judge")) and protocol not in spec.protocols:
        fits = ", ".join(spec.protocols) or "none: run it retrieval-only with eval.answer=false"
        raise bad_value("protocol.name", protocol, f"a protocol that fits dataset {kind!r}: {fits}")


def validate_run(cfg: DictConfig) -> None:
    """Check every knob of a schema-validated run config (``memcore.config.validate``) before any work:
    ranges of the backbone / embedder / dataset / protocol / eval sections (a cut that selects nothing by itself
    included) and the method section."""
    c = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(c, dict)
    for section, kinds in (("backbone", BACKBONE_KINDS), ("embedder", EMBEDDER_KINDS)):
        kind = c[section].get("kind")
        if kind not in kinds:
            raise ConfigError(
                f"{section}.kind={kind!r}: " + unknown_name_message(f"{section} kind", str(kind), list(kinds))
            )
    check_cuts(c["dataset"])  # before the ranges: an empty selection says so
    sections: tuple[tuple[str, type, dict[str, Rule]], ...] = (
        ("backbone", BackboneConfig, BACKBONE_RULES),
        ("embedder", EmbedderConfig, EMBEDDER_RULES),
        ("dataset", DatasetConfig, DATASET_RULES),
        ("protocol", ProtocolConfig, {**PROTOCOL_RULES, "name": Rule(choices=tuple(PROTOCOLS))}),
        ("eval", EvalConfig, EVAL_RULES),
    )
    for section, cls, rules in sections:
        where = f"{section} {c[section].get('name')}" if c[section].get("name") else section
        check_fields(cls, c[section], prefix=f"{section}.", where=where, rules=rules, default_numeric=None, ignore=())
    for key, rule in RUN_RULES.items():
        if not rule.ok(c.get(key)):
            raise bad_value(key, c.get(key), rule.describe())
    for key, value in (c["eval"].get("judge_server") or {}).items():  # the judge's own server: the backbone's ranges
        rule = BACKBONE_RULES.get(str(key))
        if rule is not None and not rule.ok(value):
            raise bad_value(f"eval.judge_server.{key}", value, rule.describe(), "eval")
    b = c["backbone"]
    if b["kind"] == "llamacpp" and b["prompt_token_cap"] >= b["n_ctx"]:
        raise bad_value(
            "backbone.prompt_token_cap",
            b["prompt_token_cap"],
            f"< backbone.n_ctx ({b['n_ctx']}): the answer prompt must fit the server's context",
            f"backbone {b['name']}",
        )
    for cap in c["eval"].get("report_token_caps") or []:
        if not POS.ok(cap):
            raise bad_value("eval.report_token_caps", c["eval"]["report_token_caps"], "a list of integers >= 1", "eval")
    check_dataset(c)
    check_cache_mode(c.get("cache_mode"))
    if c.get("on_locked_run") not in ON_LOCKED_RUN:
        value = c.get("on_locked_run")
        raise ConfigError(
            f"on_locked_run={value!r}: " + unknown_name_message("choice", str(value), list(ON_LOCKED_RUN))
        )
    validate_method(str(c["method"]["name"]), c["method"], c["ablation"])
    check_answer_prompt(c, upstream_answer(get_method(str(c["method"]["name"])).upstream_answer))

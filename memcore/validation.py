"""Every knob checked before any work (issue 16): the method section of every method, the backbone and
embedder presets, ``dataset.*``, ``protocol.*``, ``eval.*`` and the run-level switches.

:func:`validate_run` is called by the runner before it starts a server, loads data or builds anything. Each
problem is one :class:`memcore.config.ConfigError` whose message is one line naming the key, the bad value and
what is allowed; ``memcore-run`` prints it as ``error: …`` and exits 2. Type and unknown-key checks of the
top-level groups come from the typed schema (:func:`memcore.config.validate`); method sections are checked
here against each method's own config dataclass (types, unknown keys, ranges), then built with the method's
own constructor so its cross-field checks run too.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import ConfigError


@dataclass(frozen=True)
class Rule:
    """An allowed range or set of values for one numeric or string knob."""

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[Any, ...] | None = None

    def ok(self, value: Any) -> bool:
        if value is None:
            return True  # None is checked by the type (Optional or not)
        if self.choices is not None:
            return value in self.choices
        if isinstance(value, bool) or not isinstance(value, int | float):
            return True  # type errors are reported by the type check
        if self.lo is not None and (value <= self.lo if self.lo_open else value < self.lo):
            return False
        return not (self.hi is not None and (value >= self.hi if self.hi_open else value > self.hi))

    def describe(self) -> str:
        if self.choices is not None:
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.lo is not None and self.hi is not None:
            return f"in {'(' if self.lo_open else '['}{_num(self.lo)}, {_num(self.hi)}{')' if self.hi_open else ']'}"
        if self.lo is not None:
            return f"{'>' if self.lo_open else '>='} {_num(self.lo)}"
        if self.hi is not None:
            return f"{'<' if self.hi_open else '<='} {_num(self.hi)}"
        return "any value"


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


NONNEG = Rule(lo=0)
POS = Rule(lo=1)
UNIT = Rule(lo=0, hi=1)
TEMPERATURE = Rule(lo=0, hi=2)


def bad_value(key: str, value: Any, allowed: str, where: str = "") -> ConfigError:
    """The one-line error for ``key=value``: ``<key>=<value> is not allowed[ (where)]: allowed <allowed>``."""
    suffix = f" ({where})" if where else ""
    return ConfigError(f"{key}={value!r} is not allowed{suffix}: allowed {allowed}")


# ---------------------------------------------------------------------------------------------- types
def _type_name(hint: Any) -> str:
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(hint))
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        inner = " or ".join(_type_name(a) for a in args)
        return f"{inner} or null" if len(args) < len(typing.get_args(hint)) else inner
    if origin is not None:
        return {list: "a list", dict: "a mapping", tuple: "a list"}.get(origin, str(hint))
    return {bool: "true or false", int: "an integer", float: "a number", str: "a string"}.get(hint, str(hint))


def _type_ok(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if hint is Any:
        return True
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_type_ok(value, a) for a in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin in (list, tuple):
        (arg, *_) = typing.get_args(hint) or (Any,)
        return isinstance(value, list | tuple) and all(_type_ok(v, arg) for v in value)
    if origin is dict:
        return isinstance(value, Mapping)
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    return True


def check_fields(
    cls: type,
    raw: Mapping[str, Any],
    *,
    prefix: str,
    where: str,
    rules: Mapping[str, Rule] | None = None,
    default_numeric: Rule | None = NONNEG,
    ignore: tuple[str, ...] = ("name",),
) -> None:
    """Check ``raw`` against dataclass ``cls``: unknown keys, each value's type (from the field's annotation),
    then its range (``rules[key]``, else ``default_numeric`` for every int/float field). Raises ConfigError."""
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(raw) - known - set(ignore))
    if unknown:
        key = unknown[0]
        raise ConfigError(
            f"{prefix}{key}={raw[key]!r} is not allowed ({where}): unknown key; known keys: {', '.join(sorted(known))}"
        )
    rules = rules or {}
    for key, value in raw.items():
        if key in ignore or key not in known:
            continue
        hint = hints.get(key, Any)
        if not _type_ok(value, hint):
            raise bad_value(f"{prefix}{key}", value, _type_name(hint), where)
        rule = rules.get(key)
        if rule is None and _is_numeric(hint):
            rule = default_numeric
        if rule is not None and not rule.ok(value):
            raise bad_value(f"{prefix}{key}", value, rule.describe(), where)


def _is_numeric(hint: Any) -> bool:
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    return any(a in (int, float) for a in args)


def _construct(build: Callable[[], Any], prefix: str) -> Any:
    """Run a method's own config constructor; its ValueError / TypeError becomes one ConfigError line."""
    try:
        return build()
    except ConfigError:
        raise
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{prefix}{str(exc).splitlines()[0]}") from None


# ---------------------------------------------------------------------------------------------- methods
def _memcore(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from memcore.memory.config import MemCoReConfig, Switches
    from memcore.memory.system import _check_name

    where = f"method {name}"
    if name == "memcore-batched":
        from memcore.memory.batched import BATCH_KEYS, split_config

        check_fields(MemCoReConfig, {k: v for k, v in cfg.items() if k not in BATCH_KEYS}, prefix="method.", where=where, rules=MEMCORE_RULES)  # fmt: skip
        for key in BATCH_KEYS:
            if key in cfg and (isinstance(cfg[key], bool) or not isinstance(cfg[key], int) or cfg[key] < 1):
                raise bad_value(f"method.{key}", cfg[key], "an integer >= 1", where)
        mc, _ = split_config(cfg)
        if not mc.uses_llm:
            raise bad_value("method.judge", mc.judge, "llm (for judge=embedding use method=memcore-cheap)", where)
    else:
        check_fields(MemCoReConfig, cfg, prefix="method.", where=where, rules=MEMCORE_RULES)
        mc = MemCoReConfig.from_dict(cfg)
        _check_name(mc, expected_cheap=name == "memcore-cheap")
    Switches.from_dict(ablation)


MEMCORE_RULES: dict[str, Rule] = {
    "tau_merge": UNIT,
    "tau_link": UNIT,
    "strong_link": UNIT,
    "keyword_min_sim": Rule(lo=-1, hi=1),
    "hub_max_fraction": Rule(lo=0, hi=1, lo_open=True),
    "leiden_resolution": Rule(lo=0, lo_open=True),
    "temperature": TEMPERATURE,
    "max_tokens": POS,
    "format_version": POS,
    "candidates": POS,
    "merge_max_turns": POS,
    "max_keywords": POS,
    "cheap_keyword_ngram": POS,
    "topic_min": POS,
    "topic_max": POS,
    "k_topic": POS,
    "k_key": POS,
    "k_final": POS,
    "rrf_k": POS,
    "channel_depth": POS,
    "ier_max_rounds": POS,
    "ann_threshold": POS,
}


def _full_context(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.full_context import FullContextConfig

    check_fields(FullContextConfig, cfg, prefix="method.", where=f"method {name}", rules={"context_budget_tokens": POS})
    _construct(lambda: FullContextConfig(**cfg), "method.")


def _rag(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    import baselines.rag as rag

    where = f"method {name}"
    rules = {
        "retriever": Rule(choices=("dense", "bm25", "hybrid")),
        "top_k": POS,
        "rrf_k": POS,
        "bm25_b": UNIT,
    }
    if hasattr(rag, "CONTEXT_FORMATS"):
        rules["context_format"] = Rule(choices=tuple(rag.CONTEXT_FORMATS))
    check_fields(rag.RAGConfig, cfg, prefix="method.", where=where, rules=rules)
    expected = name.removeprefix("rag_")
    if expected in ("dense", "bm25", "hybrid") and cfg.get("retriever", expected) != expected:
        raise bad_value("method.retriever", cfg["retriever"], f"{expected} (use method=rag_{cfg['retriever']})", where)


def _amem(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.amem.system import AMemConfig, config_from_dict

    rules = {
        "format_version": POS,
        "evo_threshold": POS,
        "retrieve_k": POS,
        "max_tokens": POS,
        "temperature": TEMPERATURE,
        "query_temperature": TEMPERATURE,
    }
    check_fields(AMemConfig, cfg, prefix="method.", where=f"method {name}", rules=rules)
    _construct(lambda: config_from_dict(AMemConfig, cfg, name), "method.")


def _mem0(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.amem.system import config_from_dict
    from baselines.mem0.system import Mem0Config

    rules = {
        "format_version": POS,
        "batch_size": POS,
        "top_k": POS,
        "max_tokens": POS,
        "search_threshold": UNIT,
        "temperature": TEMPERATURE,
        "top_p": UNIT,
        "llm_route": Rule(choices=("backbone", "direct")),
        "embedder_route": Rule(choices=("auto", "mem0", "run")),
        "distance_strategy": Rule(choices=("euclidean", "cosine", "inner_product")),
    }
    check_fields(Mem0Config, cfg, prefix="method.", where=f"method {name}", rules=rules)
    _construct(lambda: config_from_dict(Mem0Config, cfg, name), "method.")


def _mem0_two_phase(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.amem.system import config_from_dict
    from baselines.mem0.two_phase import EXTRACTION_PROMPTS, Mem0TwoPhaseConfig

    rules = {key: POS for key in ("format_version", "batch_size", "top_k", "existing_per_fact", "max_tokens")}
    rules.update(temperature=TEMPERATURE, top_p=UNIT, extraction_prompt=Rule(choices=EXTRACTION_PROMPTS))
    check_fields(Mem0TwoPhaseConfig, cfg, prefix="method.", where=f"method {name}", rules=rules)
    _construct(lambda: config_from_dict(Mem0TwoPhaseConfig, cfg, name), "method.")


def _memgpt(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.memgpt.config import RECALL_SEARCH, MemGPTConfig, config_from_dict

    rules = {
        key: POS
        for key in (
            "format_version",
            "context_window_tokens",
            "core_block_chars",
            "max_steps_per_turn",
            "page_size",
            "function_result_chars",
            "summary_words",
            "summary_max_tokens",
            "max_tokens",
            "qa_max_steps",
        )
    }
    rules.update(
        warning_fraction=Rule(lo=0, hi=1, lo_open=True),
        evict_fraction=Rule(lo=0, hi=1, lo_open=True, hi_open=True),
        temperature=TEMPERATURE,
        recall_search=Rule(choices=RECALL_SEARCH),
    )
    check_fields(MemGPTConfig, cfg, prefix="method.", where=f"method {name}", rules=rules)
    _construct(lambda: config_from_dict(cfg), "method.")


def _lightmem(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.lightmem.config import COMPRESSORS, PROVENANCE, LightMemConfig, config_from_dict

    rules = {
        key: POS
        for key in (
            "format_version",
            "sensory_buffer_tokens",
            "stm_buffer_tokens",
            "extract_max_tokens",
            "queue_top_k",
            "queue_keep",
            "top_k",
            "update_max_tokens",
        )
    }
    rules.update(
        compressor=Rule(choices=COMPRESSORS),
        provenance=Rule(choices=PROVENANCE),
        compress_rate=Rule(lo=0, hi=1, lo_open=True),
        sim_threshold_start=Rule(lo=-1, hi=1),
        sim_threshold_max=Rule(lo=-1, hi=1),
        sim_threshold_step=Rule(lo=0, hi=1, lo_open=True),
        update_threshold=Rule(lo=-1, hi=1),
        temperature=TEMPERATURE,
    )
    check_fields(LightMemConfig, cfg, prefix="method.", where=f"method {name}", rules=rules)
    _construct(lambda: config_from_dict(cfg), "method.")


def _fluxmem(name: str, cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    from baselines.fluxmem.config import FluxMemConfig

    where = f"method {name}"
    forced = {"fluxmem-no-refine": {"refine": False}, "fluxmem-no-consolidate": {"consolidate": False}}.get(name, {})
    for key, value in forced.items():
        if key in cfg and cfg[key] != value:
            raise bad_value(f"method.{key}", cfg[key], f"{str(value).lower()} (use method=fluxmem to change it)", where)
    rules = {
        "format_version": POS,
        "assoc_min_sim": Rule(lo=-1, hi=1),
        "episode_min_sim": Rule(lo=-1, hi=1),
        "cluster_min_sim": Rule(lo=-1, hi=1),
        "pems_threshold": UNIT,
        "pems_target": UNIT,
        "w_dense": UNIT,
        "w_sparse": UNIT,
        "w_llm": UNIT,
    }
    check_fields(FluxMemConfig, cfg, prefix="method.", where=where, rules=rules)
    _construct(lambda: FluxMemConfig.from_dict({**cfg, **forced}), "method.")


#: method name → validator(name, method section, ablation section); every registered method has one.
METHOD_VALIDATORS: dict[str, Callable[[str, dict[str, Any], dict[str, Any]], None]] = {
    "memcore": _memcore,
    "memcore-cheap": _memcore,
    "memcore-batched": _memcore,
    "full_context": _full_context,
    "rag_dense": _rag,
    "rag_bm25": _rag,
    "rag_hybrid": _rag,
    "rag_locomo": _rag,
    "amem": _amem,
    "mem0": _mem0,
    "mem0-two-phase": _mem0_two_phase,
    "memgpt": _memgpt,
    "lightmem": _lightmem,
    "fluxmem": _fluxmem,
    "fluxmem-no-refine": _fluxmem,
    "fluxmem-no-consolidate": _fluxmem,
}


def method_config_keys(name: str) -> list[str]:
    """The keys ``method=<name>`` accepts (for error messages), or [] for an unknown method."""
    classes = {
        "memcore": "memcore.memory.config:MemCoReConfig",
        "full_context": "baselines.full_context:FullContextConfig",
        "rag": "baselines.rag:RAGConfig",
        "amem": "baselines.amem.system:AMemConfig",
        "mem0-two-phase": "baselines.mem0.two_phase:Mem0TwoPhaseConfig",
        "mem0": "baselines.mem0.system:Mem0Config",
        "memgpt": "baselines.memgpt.config:MemGPTConfig",
        "lightmem": "baselines.lightmem.config:LightMemConfig",
        "fluxmem": "baselines.fluxmem.config:FluxMemConfig",
    }
    family = next((f for f in classes if name == f or name.startswith(f + "-") or name.startswith(f + "_")), None)
    if family is None:
        return []
    import importlib

    module, attr = classes[family].split(":")
    keys = {f.name for f in dataclasses.fields(getattr(importlib.import_module(module), attr))} | {"name"}
    if name == "memcore-batched":
        from memcore.memory.batched import BATCH_KEYS

        keys |= set(BATCH_KEYS)
    return sorted(keys)


def validate_method(name: str, method_cfg: dict[str, Any], ablation: dict[str, Any]) -> None:
    """Check ``method=<name>``'s section (and the ablation it runs with); raises ConfigError."""
    validator = METHOD_VALIDATORS.get(name)
    if validator is None:
        raise ConfigError(f"method {name!r} has no config validator (memcore/validation.py METHOD_VALIDATORS)")
    validator(name, dict(method_cfg), dict(ablation))


# ---------------------------------------------------------------------------------------------- run-level
BACKBONE_RULES: dict[str, Rule] = {
    "n_ctx": Rule(lo=256),
    "server_threads": POS,
    "prompt_cache_mb": NONNEG,
    "context_budget_tokens": POS,
    "max_concurrency": POS,
    "timeout_s": Rule(lo=0, lo_open=True),
    "max_attempts": POS,
    "backoff_cap_s": NONNEG,
    "price_in_per_mtok": NONNEG,
    "price_out_per_mtok": NONNEG,
    "scripted_latency_s": NONNEG,
}
EMBEDDER_RULES: dict[str, Rule] = {"dim": POS, "batch_size": POS}
DATASET_RULES: dict[str, Rule] = {"max_sessions": POS, "max_qa": POS}
PROTOCOL_RULES: dict[str, Rule] = {
    "temperature": TEMPERATURE,
    "temperature_adversarial": TEMPERATURE,
    "max_tokens": POS,
}
EVAL_RULES: dict[str, Rule] = {"budget": POS}
RUN_RULES: dict[str, Rule] = {"concurrency": POS, "build_processes": NONNEG}


def validate_run(cfg: DictConfig) -> None:
    """Check every knob of a schema-validated run config (``memcore.config.validate``) before any work:
    ranges of the backbone / embedder / dataset / protocol / eval sections and the method section."""
    from memcore.config import BackboneConfig, DatasetConfig, EmbedderConfig, EvalConfig, ProtocolConfig
    from memcore.eval.protocols import PROTOCOLS
    from memcore.llm.factory import BACKBONE_KINDS, EMBEDDER_KINDS

    c = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(c, dict)
    from memcore.registry import unknown_name_message

    for section, kinds in (("backbone", BACKBONE_KINDS), ("embedder", EMBEDDER_KINDS)):
        kind = c[section].get("kind")
        if kind not in kinds:
            raise ConfigError(
                f"{section}.kind={kind!r}: " + unknown_name_message(f"{section} kind", str(kind), list(kinds))
            )
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
    b = c["backbone"]
    if b["kind"] == "llamacpp" and b["context_budget_tokens"] >= b["n_ctx"]:
        raise bad_value(
            "backbone.context_budget_tokens",
            b["context_budget_tokens"],
            f"< backbone.n_ctx ({b['n_ctx']}): the answer prompt must fit the server's context",
            f"backbone {b['name']}",
        )
    for budget in c["eval"].get("token_budgets") or []:
        if not POS.ok(budget):
            raise bad_value("eval.token_budgets", c["eval"]["token_budgets"], "a list of integers >= 1", "eval")
    for cat in c["dataset"].get("categories") or []:
        if cat not in (1, 2, 3, 4, 5):
            raise bad_value("dataset.categories", c["dataset"]["categories"], "a list of LoCoMo categories 1-5")
    validate_method(str(c["method"]["name"]), c["method"], c["ablation"])

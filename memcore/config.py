"""Typed schemas for the run configuration. Hydra composes YAML; ``validate`` checks it against
these dataclasses so a typo or a wrong type fails at start-up with the offending key named.
The ``method`` group is free-form here: each method validates its own section. The ``ablation`` group is typed by
the selected method's ``MethodSpec.ablation_schema`` (a method without one: the default ablation preset's keys)."""

from __future__ import annotations

import dataclasses
import logging
import threading
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memcore.config_aliases import RENAMED, RenameConflictError, rename_config_keys
from memcore.datasets.registry import DEFAULT_DATASET_KIND
from memcore.errors import ConfigError as ConfigError  # the one ConfigError, re-exported
from memcore.methods import METHODS

log = logging.getLogger(__name__)

#: The Hydra config tree (``configs/`` at the repository root): ``run.yaml`` and one directory per group.
CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


@dataclass
class BackboneConfig:
    name: str = "local"
    kind: str = "llamacpp"  # llamacpp | openai_compatible | scripted
    model: str = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    gguf: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    api_key_required: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)
    thinking: bool | None = None
    json_mode: bool = True
    n_ctx: int = 8192
    server_threads: int | None = None
    exclusive: bool = True  # one local llama.cpp server per machine at a time (they'd share the cores)
    prompt_cache_mb: int = 0  # llamacpp: RAM for KV states of past prompts (longest-prefix reuse); 0 = off
    prompt_token_cap: int = 6000  # tokens of one answer prompt (context + question), < n_ctx
    max_concurrency: int = 2
    timeout_s: float = 600.0
    max_attempts: int = 8
    backoff_cap_s: float = 30.0
    price_in_per_mtok: float = 0.0
    price_out_per_mtok: float = 0.0
    scripted_latency_s: float = 0.0


@dataclass
class EmbedderConfig:
    name: str = "minilm"
    kind: str = "minilm"  # minilm | openai | hashing | hub
    model: str = "all-MiniLM-L6-v2"
    dim: int = 384
    base_url: str | None = None
    api_key_env: str | None = None
    batch_size: int = 64
    query_model: str | None = None  # hub: a dual encoder's query side (DRAGON); None: ``model`` embeds both
    pooling: str = "mean"  # hub: mean (Contriever) | cls (DRAGON)
    # minilm: torch's threads for encoding; null: every core in the run's process (its encodes take turns behind
    # one lock, so they cannot oversubscribe), its share of the cores in a build worker process (cores ÷ workers)
    threads: int | None = None


@dataclass
class DatasetConfig:
    name: str = "locomo-mini"
    kind: str = DEFAULT_DATASET_KIND  # the dataset package (memcore.datasets registry) this slice is cut from
    id: str | None = None
    path: str | None = None
    conversations: list[str] | None = None
    max_sessions: int | None = None
    max_qa: int | None = None
    evidence_inside: bool = False
    categories: list[int] | None = None
    item_ids: list[str] | None = None  # keep only these QA item ids ("conv-26#3"), e.g. to answer a subset again


@dataclass
class ProtocolConfig:
    name: str = "amem"
    temperature: float = 0.7
    temperature_adversarial: float = 0.5
    max_tokens: int | None = None


def _mutable_schema(cls: type, name: str) -> type:
    """A plain (mutable, as OmegaConf's structured configs need) dataclass with the fields and defaults of ``cls``."""
    hints = typing.get_type_hints(cls)
    spec = [(f.name, hints[f.name], field(default=f.default, metadata=f.metadata)) for f in dataclasses.fields(cls)]
    return dataclasses.make_dataclass(name, spec)


#: The ablation every method runs under unless it declares switches (``configs/ablation/<name>.yaml``).
DEFAULT_ABLATION = "none"


def default_ablation_schema(config_dir: Path = CONFIG_DIR) -> type:
    """The ``ablation`` schema of a method without switches: the keys the default ablation preset sets, typed
    as it sets them (``name`` at least). Such a method runs under the preset as the run config composes it,
    and a key the preset does not set is a one-line error, as for any other section."""
    preset = OmegaConf.to_container(OmegaConf.load(config_dir / "ablation" / f"{DEFAULT_ABLATION}.yaml"))
    assert isinstance(preset, dict)
    values = {"name": DEFAULT_ABLATION, **{str(k): v for k, v in preset.items() if k != "defaults"}}
    return dataclasses.make_dataclass(
        "AblationConfig", [(k, type(v) if v is not None else Any, field(default=v)) for k, v in values.items()]
    )


def ablation_schema(method: str, config_dir: Path = CONFIG_DIR) -> type:
    """The structured schema of the ``ablation`` node under ``method=<method>``: its spec's ``ablation_schema``
    (as a mutable dataclass), else :func:`default_ablation_schema`. Named ``AblationConfig`` in either case, so
    an error reads the same for every method."""
    switches = METHODS.get(method).ablation_schema
    if switches is None:
        return default_ablation_schema(config_dir)
    return _mutable_schema(switches, "AblationConfig")


@dataclass
class EvalConfig:
    answer: bool = True
    judge: bool = False
    judge_preset: str | None = None  # null: the protocol's default judge; one of its EvalProtocol.judges
    judge_backbone: str | None = None  # null: the judge preset's default (mem0-judge: gpt-4o-mini), else the run's
    judge_runs: int | None = None  # null: the judge preset's default (judge-v1 1, mem0-judge 3)
    # transport settings of the judge's own backbone (memcore.eval.judge.JUDGE_SERVER_KEYS), e.g. server_threads=1
    judge_server: dict[str, Any] = field(default_factory=dict)
    audited: bool = False
    audit_path: str | None = None
    note_cap: int | None = None  # at most this many notes per question for every method; null: each method's own
    # the token caps the report's recall@cap prefixes are cut at (metrics.json recall_at_budget)
    report_token_caps: list[int] = field(default_factory=lambda: [500, 1000, 2000])
    # every method hands the answerer at most this many context tokens (memcore.packing.budget); null: no cap
    token_cap: int | None = None
    # harness: the run protocol's answer prompt for every method | upstream: each method's own (memcore.eval.upstream)
    answer_prompt: str = "harness"
    # registered metrics (memcore.metrics) scored for every item beyond the protocol's, e.g. [session_hit]
    metrics: list[str] = field(default_factory=list)


@dataclass
class PathsConfig:
    root: str = "results"
    runs: str = "results/runs"
    cache: str = "results/cache"
    snapshots: str = "results/snapshots"


@dataclass
class RunConfig:
    experiment_name: str = "default"
    seed: int = 42
    concurrency: int = 4
    build_processes: int | None = None
    resume: bool = True
    overwrite: bool = False
    print_table: bool = True
    progress: bool = True
    verbose: bool = False  # log every HTTP request of the LLM client (httpx / openai); off: warnings only
    table_note: str | None = None  # footnote under table.md and the printed table
    cache_llm: bool = True
    # auto | shared | sharded: how jobs share paths.cache (memcore.llm.cache_shards); auto: sharded on a network fs
    cache_mode: str = "auto"
    # skip | wait | error: what a run does when another process writes its run dir (memcore.pipeline.runlock)
    on_locked_run: str = "skip"
    # read the memories built by this backbone model (e.g. a stronger model retrieving over a small model's memory);
    # nothing is built: a missing memory is an error before any work. null: the run's backbone builds its own
    memory_backbone: str | None = None
    run_dir: str = ""
    backbone: BackboneConfig = field(default_factory=BackboneConfig)
    embedder: EmbedderConfig = field(default_factory=EmbedderConfig)
    dataset: DatasetConfig = field(default_factory=DatasetConfig)
    protocol: ProtocolConfig = field(default_factory=ProtocolConfig)
    ablation: dict[str, Any] = field(default_factory=lambda: {"name": DEFAULT_ABLATION})  # typed in ``validate``
    eval: EvalConfig = field(default_factory=EvalConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)
    method: dict[str, Any] = field(default_factory=dict)


_Section = TypeVar("_Section")


def typed_section(node: Any, schema: type[_Section]) -> _Section:
    """``node`` (a config section, typed or read back from a run's ``config.yaml``) as the dataclass ``schema``,
    its keys checked; ConfigError naming the key when one does not fit."""
    try:
        out = OmegaConf.to_object(OmegaConf.merge(OmegaConf.structured(schema), node))
    except OmegaConfBaseException as exc:
        raise _schema_error(exc) from None
    assert isinstance(out, schema)
    return out


def _schema_error(exc: OmegaConfBaseException, prefix: str = "") -> ConfigError:
    return ConfigError(
        f"invalid configuration: {exc}".splitlines()[0] + f" (key: {prefix}{getattr(exc, 'full_key', '?')})"
    )


def _schema_default(dotted: str) -> Any:
    """The schema default of a dotted ``eval.*`` / ``backbone.*`` key."""
    section, key = dotted.split(".")
    cls = {"eval": EvalConfig, "backbone": BackboneConfig}[section]
    f = next(f for f in dataclasses.fields(cls) if f.name == key)
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def with_new_key_names(cfg: DictConfig, *, warn: bool = True) -> DictConfig:
    """``cfg`` with every renamed key (:data:`memcore.config_aliases.RENAMED`) under its new name, one warning line
    per old spelling found when ``warn`` (a YAML preset written with the old names; a recorded run's
    ``config.yaml`` is read quietly); ``cfg`` itself when it has none."""
    tree = OmegaConf.to_container(cfg, resolve=False)
    assert isinstance(tree, dict)
    defaults = {new: _schema_default(new) for new in RENAMED.values() if new.split(".")[0] in ("eval", "backbone")}
    try:
        renamed, lines = rename_config_keys(tree, defaults)
    except RenameConflictError as exc:
        raise ConfigError(str(exc)) from None
    for line in lines if warn else ():
        log.warning(line)
    return OmegaConf.create(renamed) if lines else cfg


def validate(cfg: DictConfig) -> DictConfig:
    """Merge ``cfg`` (minus the ``hydra`` node; old key names renamed, :func:`with_new_key_names`) into the schema,
    the ``ablation`` node into the selected method's (:func:`ablation_schema`); raise ConfigError naming the key."""
    plain = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "hydra"]) if "hydra" in cfg else cfg
    plain = with_new_key_names(plain)
    try:
        merged = OmegaConf.merge(OmegaConf.structured(RunConfig), plain)
        OmegaConf.resolve(merged)
    except OmegaConfBaseException as exc:
        raise _schema_error(exc) from None
    if not merged.method or "name" not in merged.method:
        raise ConfigError("no method selected: pass method=<name> (see configs/method/)")
    method = str(merged.method.name)
    if method not in METHODS:
        raise ConfigError(f"method.name={method!r}: {METHODS.unknown(method)}")
    try:
        ablation = OmegaConf.merge(OmegaConf.structured(ablation_schema(method)), merged.ablation)
    except OmegaConfBaseException as exc:
        raise _schema_error(exc, "ablation.") from None
    merged.ablation = OmegaConf.to_container(ablation)  # checked and converted; the section itself stays a dict
    return merged


_COMPOSE_LOCK = threading.Lock()


def backbone_presets(config_dir: Path = CONFIG_DIR) -> list[str]:
    """The names of the backbone presets (``configs/backbone/*.yaml``)."""
    return sorted(p.stem for p in (config_dir / "backbone").glob("*.yaml"))


def load_backbone_preset(name: str, config_dir: Path = CONFIG_DIR) -> BackboneConfig:
    """The ``BackboneConfig`` of preset ``name``, composed by Hydra exactly as ``backbone=<name>`` composes it in a
    run (its ``defaults`` list merged) and checked against the schema. Inside a Hydra app (``memcore-run``, or a
    caller's ``initialize`` block) that app's config search path is used, else ``config_dir``.
    Raises :class:`ConfigError` for an unknown preset (naming the known ones) or an invalid one."""
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    overrides = [f"+backbone={name}"]
    try:
        with _COMPOSE_LOCK:
            if GlobalHydra.instance().is_initialized():
                node = compose(config_name=None, overrides=overrides)
            else:
                with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
                    node = compose(config_name=None, overrides=overrides)
    except HydraException as exc:
        if name not in backbone_presets(config_dir):
            known = ", ".join(backbone_presets(config_dir))
            raise ConfigError(
                f"no backbone preset {name!r} in {config_dir / 'backbone'}; known presets: {known}."
            ) from None
        raise ConfigError(f"backbone preset {name!r} does not compose: {exc}".splitlines()[0]) from None
    try:
        typed = OmegaConf.merge(OmegaConf.structured(BackboneConfig), node.backbone)
        bcfg = OmegaConf.to_object(typed)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"backbone preset {name!r} is not a valid backbone config: {exc}".splitlines()[0]) from None
    assert isinstance(bcfg, BackboneConfig)
    return bcfg

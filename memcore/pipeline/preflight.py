"""What a run will start, checked before any work: the API key of a remote backbone, judge or embedder and the
model file of a local backbone, for the resources the run will use (a run that never calls the LLM, a
retrieval-only method with ``eval.answer=false``, needs neither, so its backbone is not checked); and the
directories it writes besides its run dir (the snapshot store and the cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import BackboneConfig
from memcore.interfaces import MethodSpec
from memcore.llm.factory import BACKBONE_KINDS, read_api_key
from memcore.llm.local_model import ModelNotFoundError
from memcore.pipeline.runlock import RunDirError, unwritable_line


def uses_backbone(cfg: DictConfig, spec: MethodSpec) -> bool:
    """Whether the run calls its chat backbone: it answers, or the method's build or retrieval asks the LLM."""
    method_cfg = OmegaConf.to_container(cfg.method, resolve=True)
    ablation = OmegaConf.to_container(cfg.ablation, resolve=True)
    assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
    return (
        bool(cfg.eval.answer)
        or spec.ingest_uses_llm(method_cfg, ablation)
        or spec.retrieve_uses_llm(method_cfg, ablation)
    )


def check_backbone(bcfg: BackboneConfig, role: str) -> None:
    """The check a backbone of ``bcfg``'s kind makes when it is built, made now: a missing key
    (``MissingKeyError``) or an absent local model file (``ModelNotFoundError``, with the command that assembles it).
    ``role`` says what the run needs it for (in the message)."""
    kind = BACKBONE_KINDS.get(bcfg.kind)
    try:
        if bcfg.kind == "openai_compatible":
            read_api_key(bcfg.api_key_env, required=bcfg.api_key_required, what=f"backbone {bcfg.name} ({role})")
        elif kind.precheck is not None:
            kind.precheck(bcfg)
    except ModelNotFoundError as exc:
        fix = f" (or `make model MODEL={bcfg.model}`)" if "not assembled" in str(exc) else ""
        raise ModelNotFoundError(f"backbone {bcfg.name} ({role}): {exc}{fix}") from None


def check_resources(cfg: DictConfig, spec: MethodSpec, *, backbone_injected: bool, embedder_injected: bool) -> None:
    """Fail before any work when a resource the run will use cannot start (see the module doc). Injected
    backbones / embedders (tests, benchmarks) are not checked."""
    if not backbone_injected and uses_backbone(cfg, spec):
        role = "answers" if cfg.eval.answer else "builds or searches the memory"
        check_backbone(_backbone_config(cfg.backbone), f"the run {role} with it")
    if not backbone_injected and cfg.eval.judge and cfg.eval.answer:
        # the evaluation package (nltk, scikit-learn, pandas) is loaded only for a run that will be judged
        from memcore.eval.judge import judge_server_overrides, judge_settings, load_backbone_preset

        _, name, _ = judge_settings(cfg)
        if name is not None:
            check_backbone(load_backbone_preset(name, judge_server_overrides(cfg)), "the LLM judge")
    if not embedder_injected and str(cfg.embedder.kind) == "openai":
        read_api_key(cfg.embedder.get("api_key_env"), required=True, what=f"embedder {cfg.embedder.name}")


def _backbone_config(node: Any) -> BackboneConfig:
    out = OmegaConf.to_object(node)
    assert isinstance(out, BackboneConfig)
    return out


def check_dirs(cfg: DictConfig) -> None:
    """Create ``paths.snapshots`` and ``paths.cache`` (the run writes both); one
    :class:`~memcore.pipeline.runlock.RunDirError` line when one cannot be created or written."""
    for key in ("snapshots", "cache"):
        path = Path(str(cfg.paths[key]))
        try:
            path.mkdir(parents=True, exist_ok=True)
            if not path.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(path))
        except OSError as exc:
            raise RunDirError(
                unwritable_line(exc, path, what=f"paths.{key}", fix=f"paths.{key} (or paths.root)")
            ) from None

"""The run directory: the config-hash guard that keeps one run dir to one result-affecting configuration, and
the redacted ``config.yaml`` written beside the results."""

from __future__ import annotations

import json
import logging
import shutil
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config_aliases import rename_result_fields
from memcore.datasets.registry import DEFAULT_DATASET_KIND
from memcore.eval.judge import protocol_judge
from memcore.eval.protocols import get_protocol
from memcore.llm.cache import stable_hash
from memcore.methods import find_method
from memcore.pipeline.build import other_memory_backbone
from memcore.pipeline.report import write_json
from memcore.pipeline.runlock import LOCK_FILE
from memcore.redact import redact_config

log = logging.getLogger(__name__)

RUN_STATE = "run_state.json"

# Result-affecting harness keys added after runs were recorded, with the value that reproduces those runs. At that
# value a key is left out of the result fields, so a run recorded before the key existed still resumes; at any
# other value it counts. Add an entry whenever a new harness knob's default keeps the old behaviour; a method's
# own knobs are declared on its spec (``MethodSpec.added_key_defaults``).
ADDED_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("eval", "token_cap"): None,
    ("eval", "answer_prompt"): "harness",
    ("dataset", "kind"): DEFAULT_DATASET_KIND,
    ("eval", "metrics"): [],
}


class RunConflictError(RuntimeError):
    """The run dir holds results made under a different result-affecting config."""


def result_fields(cfg: DictConfig, dataset_sha256: str) -> dict[str, Any]:
    """The config values that change results. Transport settings (URLs, ports, concurrency,
    timeouts, prices) and paths are excluded, so a resumed run on a restarted server still matches."""
    c = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(c, dict)
    backbone = {
        k: c["backbone"].get(k)
        for k in ("name", "kind", "model", "extra_body", "thinking", "json_mode", "n_ctx", "prompt_token_cap")
    }
    # ``item_ids`` only when set, so runs made before it existed still resume
    dataset = {k: v for k, v in c["dataset"].items() if k != "path" and not (k == "item_ids" and v is None)}
    out = {
        "method": c["method"],
        "ablation": c["ablation"],
        "backbone": backbone,
        "embedder": {k: c["embedder"].get(k) for k in ("name", "kind", "model", "dim")},
        "dataset": dataset,
        "dataset_sha256": dataset_sha256,
        "protocol": c["protocol"],
        "seed": c["seed"],
        "eval": _eval_fields(c["eval"], str(c["protocol"]["name"])),
    }
    # only when it names another model, so runs made before it existed (or naming their own model) still resume
    memory_backbone = other_memory_backbone(cfg)
    if memory_backbone:
        out["memory_backbone"] = memory_backbone
    return without_added_defaults(out)


def added_key_defaults(fields: dict[str, Any]) -> dict[tuple[str, str], Any]:
    """The added keys that apply to ``fields``: the harness's (:data:`ADDED_KEY_DEFAULTS`) and those of the
    method the fields name (``MethodSpec.added_key_defaults``; none for a method no longer registered)."""
    method = fields.get("method")
    spec = find_method(str(method.get("name"))) if isinstance(method, dict) else None
    own = {("method", k): v for k, v in spec.added_key_defaults.items()} if spec is not None else {}
    return {**ADDED_KEY_DEFAULTS, **own}


def without_added_defaults(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without the added keys (:func:`added_key_defaults`) that hold their old-behaviour value."""
    out = dict(fields)
    for (group, key), value in added_key_defaults(fields).items():
        sub = out.get(group)
        if isinstance(sub, dict) and key in sub and sub[key] == value:
            out[group] = {k: v for k, v in sub.items() if k != key}
    return out


def _eval_fields(ev: dict[str, Any], protocol: str) -> dict[str, Any]:
    """The result-affecting ``eval`` keys; the judge preset (the one that judges: unset names the protocol's
    default) and its number of runs only when judging (so runs made before they existed still resume)."""
    keys = ("answer", "note_cap", "judge", "judge_backbone", "audited", "token_cap", "answer_prompt", "metrics")
    out = {k: ev.get(k) for k in keys}
    if ev.get("judge"):
        preset = ev.get("judge_preset") or protocol_judge(get_protocol(protocol)).name
        out.update(judge_preset=preset, judge_runs=ev.get("judge_runs"))
    return out


def guard_run_dir(run_dir: Path, fields: dict[str, Any], *, overwrite: bool, resume: bool) -> None:
    """Refuse to mix results: when ``run_dir`` holds a run whose ``fields`` (:func:`result_fields`) differ, raise
    :class:`RunConflictError` naming the changed groups, or with ``overwrite`` move the old run aside; when it
    holds the same run and ``resume`` is false, raise too. Then record ``fields`` in ``run_state.json`` (a run
    recorded under renamed key names, :mod:`memcore.config_aliases`, is the same run: its state is rewritten with
    the new names and hash)."""
    state_path = run_dir / RUN_STATE
    digest = stable_hash(fields)
    if state_path.exists():
        old = json.loads(state_path.read_text())
        # a run recorded while an added key was still written at its default, or under a key's old name, is the
        # same run
        respelled = rename_result_fields(old.get("fields", {}))
        recorded = without_added_defaults(respelled)
        same = old.get("result_hash") == digest or stable_hash(recorded) == digest
        if same and respelled != old.get("fields", {}):
            log.info("%s: run_state.json migrated to the renamed config keys (same run, resumed)", run_dir)
        if not same:
            if overwrite:
                aside = run_dir.with_name(f"{run_dir.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
                log.warning("overwrite=true: moving the previous run to %s", aside)
                move_run_aside(run_dir, aside)
            else:
                changed = sorted(k for k in fields if stable_hash(fields[k]) != stable_hash(recorded.get(k)))
                raise RunConflictError(
                    f"{run_dir} holds results of a different configuration (changed: {', '.join(changed) or 'unknown'}); "
                    "refusing to mix them. Start a fresh run with hydra.run.dir=<new dir>, or pass overwrite=true "
                    "(the old run is moved aside, not deleted)."
                )
        elif not resume:
            raise RunConflictError(
                f"{run_dir} already has results and resume=false; pass overwrite=true or a new hydra.run.dir."
            )
    run_dir.mkdir(parents=True, exist_ok=True)
    write_json(state_path, {"result_hash": digest, "fields": fields})


def move_run_aside(run_dir: Path, aside: Path) -> None:
    """Move everything in ``run_dir`` but its lock file into ``aside``: the run dir itself stays, so the lock this
    process holds on it keeps guarding it."""
    aside.mkdir(parents=True)
    for child in sorted(run_dir.iterdir()):
        if child.name != LOCK_FILE:
            shutil.move(str(child), aside / child.name)


def write_run_config(run_dir: Path, cfg: DictConfig) -> None:
    """``config.yaml``: the resolved config with secrets redacted."""
    plain = OmegaConf.to_container(cfg, resolve=True)
    (run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(redact_config(plain))))

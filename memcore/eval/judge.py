"""LLM judge (metric J): one CORRECT/WRONG call per answered item, on stage ``judge``.

The judge model is a pinned backbone preset (``eval.judge_backbone``, a file name under
``configs/backbone/``; default: the run's own backbone). The prompt text is hashed
(:func:`prompt_hash`) and the hash is part of the prompt version sent to the backbone, so the
response cache never hands back a verdict made under another wording; the runner records preset,
model, version and hash in ``metrics.json`` (``run.judge``).

Gold: the string the protocol scores against (``QAItem.gold(protocol)``), so J and F1 grade the
same target; under ``protocol=locomo`` category 5 expects a refusal and the judge is told so.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memcore.config import ConfigError
from memcore.interfaces import ChatBackbone, LazyResource, Message
from memcore.llm.json_reply import complete_json
from memcore.prompts import judge as prompts
from memcore.types import Category, QAItem

STAGE = "judge"
LABELS: tuple[str, str] = ("CORRECT", "WRONG")
FALLBACK_KIND = "judge_label_from_text_else_wrong"
_LABEL_WORD_RE = re.compile(r"\b(CORRECT|WRONG)\b")


class JudgeConfigError(ConfigError):
    """``eval.judge_backbone`` names no usable backbone preset."""


def prompt_hash() -> str:
    """sha256 (first 16 hex digits) of everything the judge prompt is made of."""
    blob = "\x1e".join([prompts.VERSION, prompts.SYSTEM, prompts.USER, prompts.ADVERSARIAL_NOTE, prompts.REFUSAL_GOLD])
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def prompt_version() -> str:
    """``judge-v1@<hash>``: the version string the backbone (and its response cache) sees."""
    return f"{prompts.VERSION}@{prompt_hash()}"


@dataclass(frozen=True)
class Verdict:
    """One judgement. ``parsed`` is False when the reply never parsed as JSON and the label was
    read from the raw text (or defaulted to WRONG); such cases are also counted as parse failures."""

    label: str
    reason: str = ""
    parsed: bool = True

    @property
    def score(self) -> float:
        return 1.0 if self.label == "CORRECT" else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "reason": self.reason, "parsed": self.parsed}


def judge_gold(item: QAItem, protocol: str) -> tuple[str, bool]:
    """The gold text shown to the judge and whether a refusal is the expected answer."""
    if protocol == "locomo" and Category(int(item.category)) is Category.ADVERSARIAL:
        return prompts.REFUSAL_GOLD, True
    return item.gold(protocol), False


def _validate(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError('expected {"reason": ..., "label": "CORRECT"|"WRONG"}')
    label = str(obj["label"]).strip().upper()
    if label not in LABELS:
        raise ValueError(f"label {obj['label']!r} is neither CORRECT nor WRONG")
    return label, str(obj.get("reason", "")).strip()


def label_from_text(raw: str) -> str | None:
    """The label when exactly one of CORRECT / WRONG appears (as a word) in ``raw``, else None."""
    found = set(_LABEL_WORD_RE.findall(raw.upper()))
    return found.pop() if len(found) == 1 else None


class Judge:
    """Grades answers with ``backbone`` (temperature 0, cacheable). Thread-safe: no mutable state."""

    def __init__(
        self, backbone: ChatBackbone, *, preset: str = "", max_tokens: int = 128, max_attempts: int = 2
    ) -> None:
        self.backbone = backbone
        self.preset = preset or str(getattr(backbone, "name", backbone.model))
        self.max_tokens = int(max_tokens)
        self.max_attempts = int(max_attempts)

    def messages(self, question: str, gold: str, answer: str, *, refusal: bool = False) -> list[Message]:
        user = prompts.USER.format(
            question=question, gold=gold, answer=answer, adversarial_note=prompts.ADVERSARIAL_NOTE if refusal else ""
        )
        return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": user}]

    def judge(self, question: str, gold: str, answer: str | None, *, refusal: bool = False) -> Verdict:
        """CORRECT/WRONG for ``answer``; an empty answer is WRONG without a call."""
        if answer is None or not str(answer).strip():
            return Verdict("WRONG", "empty answer")
        result = complete_json(
            self.backbone,
            self.messages(question, gold, str(answer), refusal=refusal),
            stage=STAGE,
            validate=_validate,
            fallback=("WRONG", ""),
            fallback_kind=FALLBACK_KIND,
            prompt_version=prompt_version(),
            max_attempts=self.max_attempts,
            temperature=0.0,
            max_tokens=self.max_tokens,
        )
        if result.ok:
            label, reason = result.value
            return Verdict(label, reason)
        return Verdict(label_from_text(result.raw) or "WRONG", "unparseable judge reply", parsed=False)

    def judge_item(
        self, item: QAItem, answer: str | None, protocol: str, *, gold_item: QAItem | None = None
    ) -> Verdict:
        """Judge ``answer`` to ``item`` against the protocol's gold of ``gold_item`` (default ``item``;
        pass the audited item to grade against corrected gold)."""
        gold, refusal = judge_gold(gold_item or item, protocol)
        return self.judge(item.question, gold, answer, refusal=refusal)

    def info(self) -> dict[str, str]:
        """What ``metrics.json`` records as ``run.judge``."""
        return {
            "preset": self.preset,
            "model": str(self.backbone.model),
            "prompt_version": prompt_version(),
            "prompt_hash": prompt_hash(),
        }


def backbone_preset_dir() -> Path:
    from memcore.cli import CONFIG_PATH

    return Path(CONFIG_PATH) / "backbone"


def _preset_node(name: str, directory: Path, seen: tuple[str, ...] = ()) -> DictConfig:
    path = directory / f"{name}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in directory.glob("*.yaml")))
        raise JudgeConfigError(f"eval.judge_backbone={name!r}: no backbone preset {path}; known presets: {known}.")
    if name in seen:
        raise JudgeConfigError(
            f"backbone preset {name!r} includes itself through its defaults list ({' -> '.join(seen)})."
        )
    node = OmegaConf.load(path)
    assert isinstance(node, DictConfig)
    defaults = list(node.pop("defaults", None) or ["_self_"])
    if "_self_" not in defaults:
        defaults.append("_self_")
    merged = OmegaConf.create({})
    for entry in defaults:
        part = node if entry == "_self_" else _preset_node(str(entry), directory, (*seen, name))
        merged = OmegaConf.merge(merged, part)
    assert isinstance(merged, DictConfig)
    return merged


def load_backbone_preset(name: str, directory: Path | None = None) -> Any:
    """The ``BackboneConfig`` of preset ``name`` (its ``defaults`` chain merged, interpolations resolved)."""
    from memcore.config import BackboneConfig

    node = _preset_node(name, directory or backbone_preset_dir())
    try:
        typed = OmegaConf.merge(OmegaConf.structured(BackboneConfig), node)
        return OmegaConf.to_object(typed)
    except OmegaConfBaseException as exc:
        raise JudgeConfigError(
            f"backbone preset {name!r} is not a valid backbone config: {exc}".splitlines()[0]
        ) from None


def build_judge(
    cfg: DictConfig,
    main_backbone: LazyResource,
    *,
    cache: Any,
    usage: Any,
    resources: contextlib.ExitStack,
    log_dir: Path,
) -> Judge:
    """The run's judge: the main backbone when ``eval.judge_backbone`` is null or names the run's
    backbone, else a client for that preset sharing the run's cache and usage tracker."""
    name = cfg.eval.judge_backbone
    if name is None or str(name) == str(cfg.backbone.name):
        return Judge(main_backbone.get(), preset=str(cfg.backbone.name))
    from memcore.llm.factory import build_backbone

    bcfg = load_backbone_preset(str(name))
    judge_log_dir = Path(log_dir) / "judge"
    judge_log_dir.mkdir(parents=True, exist_ok=True)
    client = build_backbone(bcfg, cache=cache, usage=usage, resources=resources, log_dir=judge_log_dir)
    return Judge(client, preset=str(name))


def judge_run_info(cfg: DictConfig) -> dict[str, str]:
    """``run.judge`` for ``metrics.json`` without starting anything: preset, model, prompt version and hash."""
    name = cfg.eval.judge_backbone
    if name is None or str(name) == str(cfg.backbone.name):
        preset, model = str(cfg.backbone.name), str(cfg.backbone.model)
    else:
        preset, model = str(name), str(load_backbone_preset(str(name)).model)
    return {"preset": preset, "model": model, "prompt_version": prompt_version(), "prompt_hash": prompt_hash()}

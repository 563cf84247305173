"""LLM judge (metric J): CORRECT/WRONG calls per answered item, on stage ``judge``.

Two judge presets (:data:`JUDGE_PRESETS`, ``eval.judge_preset``):

- ``judge-v1`` (default): the project's own prompt (:mod:`memcore.prompts.judge`), JSON reason + label,
  every category (a category-5 refusal is graded under ``protocol=locomo``), the run's backbone, 1 run.
- ``mem0-judge``: the protocol behind published LoCoMo J numbers: Mem0's ``ACCURACY_PROMPT`` verbatim
  (:mod:`memcore.prompts.judge_mem0`) as one user message, gpt-4o-mini, temperature 0, a JSON label only,
  CORRECT iff the label is exactly ``"CORRECT"`` (as Mem0's script), gold = the item's ``answer``,
  category 5 not judged, 3 runs.

The judge model is a pinned backbone preset (``eval.judge_backbone``, a file name under
``configs/backbone/``; default: the judge preset's, else the run's own backbone). The prompt text is
hashed (:func:`prompt_hash`) and the hash is part of the prompt version sent to the backbone, so the
response cache never hands back a verdict made under another wording. Repeated judging
(``eval.judge_runs=N``): run ``r > 0`` adds ``#run-r`` to the prompt version, so each run index is its
own cache entry (a rerun costs nothing) while the request itself is unchanged; on a deterministic server
(llama.cpp at temperature 0) repeated runs may therefore agree exactly, and ``metrics.json`` says how
often they did (``judge_agreement``).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memcore.config import BackboneConfig, ConfigError
from memcore.config import load_backbone_preset as compose_backbone_preset
from memcore.eval.protocols import EvalProtocol
from memcore.interfaces import ChatBackbone, LazyResource, Message
from memcore.llm.factory import build_backbone
from memcore.llm.json_reply import complete_json
from memcore.prompts import judge as prompts
from memcore.prompts import judge_mem0
from memcore.registry import Registry, unknown_name_message
from memcore.stopflag import StopCheck
from memcore.types import QAItem

if TYPE_CHECKING:
    from memcore.llm.cache import ResponseCache
    from memcore.llm.usage import UsageTracker

STAGE = "judge"
LABELS: tuple[str, str] = ("CORRECT", "WRONG")
FALLBACK_KIND = "judge_label_from_text_else_wrong"
_LABEL_WORD_RE = re.compile(r"\b(CORRECT|WRONG)\b")
DEFAULT_PRESET = "judge-v1"


#: ``eval.judge_backbone`` / ``eval.judge_runs`` name no usable judge setting: the run's one ConfigError.
JudgeConfigError = ConfigError


def _validate_v1(obj: Any) -> tuple[str, str]:
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError('expected {"reason": ..., "label": "CORRECT"|"WRONG"}')
    label = str(obj["label"]).strip().upper()
    if label not in LABELS:
        raise ValueError(f"label {obj['label']!r} is neither CORRECT nor WRONG")
    return label, str(obj.get("reason", "")).strip()


def _validate_mem0(obj: Any) -> tuple[str, str]:
    """Mem0's reading: ``json.loads(...)["label"]``, scored 1 iff it equals ``"CORRECT"`` (no stripping or
    case folding); a reply without a ``label`` key (a KeyError that stops Mem0's script) is retried here."""
    if not isinstance(obj, dict) or "label" not in obj:
        raise ValueError('expected {"label": "CORRECT"|"WRONG"}')
    return ("CORRECT" if obj["label"] == "CORRECT" else "WRONG"), ""


def _messages_v1(question: str, gold: str, answer: str, refusal: bool) -> list[Message]:
    user = prompts.USER.format(
        question=question, gold=gold, answer=answer, adversarial_note=prompts.ADVERSARIAL_NOTE if refusal else ""
    )
    return [{"role": "system", "content": prompts.SYSTEM}, {"role": "user", "content": user}]


def _messages_mem0(question: str, gold: str, answer: str, refusal: bool) -> list[Message]:
    content = judge_mem0.ACCURACY_PROMPT.format(question=question, gold_answer=gold, generated_answer=answer)
    return [{"role": "user", "content": content}]


@dataclass(frozen=True)
class JudgePreset:
    """A judge protocol: prompt, parsing, which categories it grades, its default model and number of runs.

    ``default_backbone`` None = the run's own backbone. ``gold_field`` ``"protocol"`` grades against the
    answer protocol's gold (so J and F1 share a target); ``"answer"`` against the item's ``answer``."""

    name: str
    version: str
    hash_parts: Callable[[], tuple[str, ...]]  # read at call time, so the hash follows the module's text
    build_messages: Callable[[str, str, str, bool], list[Message]]
    validate: Callable[[Any], tuple[str, str]]
    categories: tuple[int, ...]
    default_backbone: str | None
    default_runs: int
    gold_field: str
    max_tokens: int
    source: str

    def prompt_hash(self) -> str:
        """sha256 (first 16 hex digits) of everything the prompt is made of."""
        return hashlib.sha256("\x1e".join([self.version, *self.hash_parts()]).encode("utf-8")).hexdigest()[:16]

    def prompt_version(self, run: int = 0) -> str:
        """``<VERSION>@<hash>`` (+ ``#run-r`` for run index r > 0): what the response cache keys on."""
        base = f"{self.version}@{self.prompt_hash()}"
        return base if run == 0 else f"{base}#run-{run}"

    def judges(self, category: int) -> bool:
        return int(category) in self.categories


JUDGE_PRESETS: Registry[JudgePreset] = Registry("judge preset")
JUDGE_PRESETS.add(
    "judge-v1",
    JudgePreset(
        name="judge-v1",
        version=prompts.VERSION,
        hash_parts=lambda: (prompts.SYSTEM, prompts.USER, prompts.ADVERSARIAL_NOTE, prompts.REFUSAL_GOLD),
        build_messages=_messages_v1,
        validate=_validate_v1,
        categories=(1, 2, 3, 4, 5),
        default_backbone=None,
        default_runs=1,
        gold_field="protocol",
        max_tokens=128,
        source="memcore/prompts/judge.py (this project)",
    ),
)
JUDGE_PRESETS.add(
    "mem0-judge",
    JudgePreset(
        name="mem0-judge",
        version=judge_mem0.VERSION,
        hash_parts=lambda: (judge_mem0.ACCURACY_PROMPT,),
        build_messages=_messages_mem0,
        validate=_validate_mem0,
        categories=(1, 2, 3, 4),
        default_backbone="gpt-4o-mini",
        default_runs=3,
        gold_field="answer",
        max_tokens=256,
        source=f"{judge_mem0.SOURCE_REPO} {judge_mem0.SOURCE_PATH} @ {judge_mem0.SOURCE_COMMIT}",
    ),
)


def get_preset(name: str | None) -> JudgePreset:
    """The judge preset ``name`` (default ``judge-v1``); unknown names raise with the known ones."""
    return JUDGE_PRESETS.get(str(name or DEFAULT_PRESET))


def prompt_hash(preset: str | None = None) -> str:
    """sha256 (first 16 hex digits) of everything the judge prompt of ``preset`` is made of."""
    return get_preset(preset).prompt_hash()


def prompt_version(preset: str | None = None) -> str:
    """``judge-v1@<hash>``: the version string the backbone (and its response cache) sees for run 0."""
    return get_preset(preset).prompt_version()


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


def majority_label(verdicts: Sequence[Verdict]) -> str:
    """CORRECT when more than half of ``verdicts`` say so (a tie is WRONG)."""
    correct = sum(1 for v in verdicts if v.label == "CORRECT")
    return "CORRECT" if 2 * correct > len(verdicts) else "WRONG"


def verdict_scores(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """Per-item score fields of N runs: ``judge`` (mean over runs), ``judge_runs`` (each run's 1/0) and
    ``judge_majority`` (1/0 of :func:`majority_label`)."""
    runs = [v.score for v in verdicts]
    return {
        "judge": sum(runs) / len(runs),
        "judge_runs": runs,
        "judge_majority": 1.0 if majority_label(verdicts) == "CORRECT" else 0.0,
    }


def verdict_record(preset: str, verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """What ``items.jsonl`` keeps under ``judge``: the preset, every run's verdict and the majority label."""
    return {"preset": preset, "runs": [v.to_json() for v in verdicts], "majority": majority_label(verdicts)}


def judge_gold(item: QAItem, protocol: EvalProtocol, preset: str | None = None) -> tuple[str, bool]:
    """The gold text shown to the judge and whether a refusal is the expected answer (under the run's answer
    ``protocol``)."""
    if get_preset(preset).gold_field == "answer":
        return item.answer or protocol.gold(item), False
    if protocol.expects_refusal(item):
        return prompts.REFUSAL_GOLD, True
    return protocol.gold(item), False


def label_from_text(raw: str) -> str | None:
    """The label when exactly one of CORRECT / WRONG appears (as a word) in ``raw``, else None."""
    found = set(_LABEL_WORD_RE.findall(raw.upper()))
    return found.pop() if len(found) == 1 else None


class Judge:
    """Grades answers with ``backbone`` (temperature 0, cacheable) under judge preset ``judge_preset``.
    ``preset`` names the backbone preset (for ``metrics.json``). Thread-safe: no mutable state."""

    def __init__(
        self,
        backbone: ChatBackbone,
        *,
        preset: str = "",
        judge_preset: str = DEFAULT_PRESET,
        runs: int | None = None,
        max_tokens: int | None = None,
        max_attempts: int = 2,
    ) -> None:
        self.backbone = backbone
        self.protocol = get_preset(judge_preset)
        self.preset = preset or str(getattr(backbone, "name", backbone.model))
        self.runs = int(self.protocol.default_runs if runs is None else runs)
        if self.runs < 1:
            raise JudgeConfigError(f"eval.judge_runs must be >= 1, got {self.runs}.")
        self.max_tokens = int(self.protocol.max_tokens if max_tokens is None else max_tokens)
        self.max_attempts = int(max_attempts)

    def messages(self, question: str, gold: str, answer: str, *, refusal: bool = False) -> list[Message]:
        return self.protocol.build_messages(question, gold, answer, refusal)

    def judge(self, question: str, gold: str, answer: str | None, *, refusal: bool = False, run: int = 0) -> Verdict:
        """CORRECT/WRONG for ``answer`` (run index ``run``); an empty answer is WRONG without a call."""
        if answer is None or not str(answer).strip():
            return Verdict("WRONG", "empty answer")
        result = complete_json(
            self.backbone,
            self.messages(question, gold, str(answer), refusal=refusal),
            stage=STAGE,
            validate=self.protocol.validate,
            fallback=("WRONG", ""),
            fallback_kind=FALLBACK_KIND,
            prompt_version=self.protocol.prompt_version(run),
            max_attempts=self.max_attempts,
            temperature=0.0,
            max_tokens=self.max_tokens,
        )
        if result.ok:
            label, reason = result.value
            return Verdict(label, reason)
        return Verdict(label_from_text(result.raw) or "WRONG", "unparseable judge reply", parsed=False)

    def judge_item(
        self,
        item: QAItem,
        answer: str | None,
        protocol: EvalProtocol,
        *,
        gold_item: QAItem | None = None,
        run: int = 0,
    ) -> Verdict:
        """Judge ``answer`` to ``item`` against the gold of ``gold_item`` (default ``item``; pass the
        audited item to grade against corrected gold). Grades every category (see :meth:`judge_runs`)."""
        gold, refusal = judge_gold(gold_item or item, protocol, self.protocol.name)
        return self.judge(item.question, gold, answer, refusal=refusal, run=run)

    def judge_runs(
        self, item: QAItem, answer: str | None, protocol: EvalProtocol, *, gold_item: QAItem | None = None
    ) -> list[Verdict] | None:
        """``self.runs`` verdicts (run indices 0..N-1), or None when the preset does not grade the item's
        category (``mem0-judge``: category 5)."""
        if not self.protocol.judges(item.category):
            return None
        return [self.judge_item(item, answer, protocol, gold_item=gold_item, run=r) for r in range(self.runs)]

    def info(self) -> dict[str, Any]:
        """What ``metrics.json`` records as ``run.judge``."""
        return {
            "judge_preset": self.protocol.name,
            "preset": self.preset,
            "model": str(self.backbone.model),
            "prompt_version": self.protocol.prompt_version(),
            "prompt_hash": self.protocol.prompt_hash(),
            "prompt_source": self.protocol.source,
            "temperature": 0.0,
            "runs": self.runs,
            "categories": list(self.protocol.categories),
        }


#: The judge backbone's fields that ``eval.judge_server`` may set: how its server runs, never what it answers.
JUDGE_SERVER_KEYS = ("server_threads", "exclusive", "base_url", "max_concurrency", "timeout_s", "max_attempts")


def judge_server_overrides(cfg: DictConfig) -> dict[str, Any]:
    """``eval.judge_server`` as a plain dict, checked: a key outside :data:`JUDGE_SERVER_KEYS` raises
    :class:`JudgeConfigError` (with the closest key), as does a value of the wrong type for the field."""
    raw = cfg.eval.get("judge_server") or {}
    out = dict(OmegaConf.to_container(raw, resolve=True) if isinstance(raw, DictConfig) else raw)
    for key in out:
        if key not in JUDGE_SERVER_KEYS:
            raise JudgeConfigError(
                "eval.judge_server: " + unknown_name_message("setting", str(key), list(JUDGE_SERVER_KEYS))
            )
    return out


def load_backbone_preset(name: str, server: dict[str, Any] | None = None) -> BackboneConfig:
    """The ``BackboneConfig`` of backbone preset ``name`` (:func:`memcore.config.load_backbone_preset`: composed
    like ``backbone=<name>``) with ``server`` (checked :func:`judge_server_overrides`) applied; a bad name raises
    :class:`JudgeConfigError` naming the known presets, a bad server value one naming the key."""
    try:
        bcfg = compose_backbone_preset(name)
    except ConfigError as exc:
        raise JudgeConfigError(f"eval.judge_backbone={name!r}: {exc}") from None
    if not server:
        return bcfg
    try:
        typed = OmegaConf.merge(OmegaConf.structured(bcfg), server)
    except OmegaConfBaseException as exc:
        key = getattr(exc, "key", None) or "?"
        raise JudgeConfigError(f"eval.judge_server.{key}: {exc}".splitlines()[0]) from None
    out = OmegaConf.to_object(typed)
    assert isinstance(out, BackboneConfig)
    return out


def judge_settings(cfg: DictConfig) -> tuple[JudgePreset, str | None, int]:
    """The run's judge preset, judge backbone preset name (None = the run's backbone) and number of runs,
    from ``eval.judge_preset`` / ``eval.judge_backbone`` / ``eval.judge_runs`` and the preset's defaults.
    Raises :class:`~memcore.registry.UnknownNameError` / :class:`JudgeConfigError` for bad values."""
    ev = cfg.eval
    preset = get_preset(ev.get("judge_preset"))
    name = ev.get("judge_backbone")
    backbone = str(name) if name is not None else preset.default_backbone
    if backbone is not None and backbone == str(cfg.backbone.name):
        backbone = None
    runs_value = ev.get("judge_runs")
    runs = preset.default_runs if runs_value is None else int(runs_value)
    if runs < 1:
        raise JudgeConfigError(f"eval.judge_runs must be >= 1, got {runs}.")
    return preset, backbone, runs


def build_judge(
    cfg: DictConfig,
    main_backbone: LazyResource,
    *,
    cache: ResponseCache | None,
    usage: UsageTracker,
    resources: contextlib.ExitStack,
    log_dir: Path,
    stop_requested: StopCheck | None = None,
) -> Judge:
    """The run's judge: the main backbone when the judge backbone (``eval.judge_backbone``, else the judge
    preset's default) is null or the run's backbone, else that preset's stack, built like the run's
    (:func:`~memcore.llm.factory.build_backbone`) on the run's response cache and usage tracker."""
    preset, name, runs = judge_settings(cfg)
    if name is None:
        return Judge(main_backbone.get(), preset=str(cfg.backbone.name), judge_preset=preset.name, runs=runs)
    bcfg = load_backbone_preset(name, judge_server_overrides(cfg))
    judge_log_dir = Path(log_dir) / "judge"
    judge_log_dir.mkdir(parents=True, exist_ok=True)
    client = build_backbone(
        bcfg, cache=cache, usage=usage, resources=resources, log_dir=judge_log_dir, stop_requested=stop_requested
    )
    return Judge(client, preset=name, judge_preset=preset.name, runs=runs)


def judge_run_info(cfg: DictConfig, *, check_key: bool = False) -> dict[str, Any]:
    """``run.judge`` for ``metrics.json`` without starting anything: judge preset, backbone preset, model,
    prompt version, hash and source, runs. ``check_key``: fail now (one line) when the judge backbone
    needs an API key that is not in the environment, instead of after the answers."""
    preset, name, runs = judge_settings(cfg)
    server = judge_server_overrides(cfg)  # checked even when unused (the judge is the run's backbone)
    if name is None:
        backbone, model = str(cfg.backbone.name), str(cfg.backbone.model)
    else:
        bcfg = load_backbone_preset(name, server)
        backbone, model = name, str(bcfg.model)
        if check_key and bcfg.api_key_required and bcfg.api_key_env and not os.environ.get(bcfg.api_key_env):
            raise JudgeConfigError(
                f"eval.judge_preset={preset.name} judges with backbone {name!r}, which needs ${bcfg.api_key_env}; "
                "set it, or re-point the judge with eval.judge_backbone=<preset> (e.g. local)."
            )
    return {
        "judge_preset": preset.name,
        "preset": backbone,
        "model": model,
        "prompt_version": preset.prompt_version(),
        "prompt_hash": preset.prompt_hash(),
        "prompt_source": preset.source,
        "temperature": 0.0,
        "runs": runs,
        "categories": list(preset.categories),
    }

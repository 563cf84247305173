"""LLM judge (metric J): CORRECT/WRONG calls per answered item, on stage ``judge``.

What a judge sends and how its reply reads is a dataset's rule: a :class:`~memcore.datasets.judge.JudgePreset`
declared in its package's ``JUDGES`` literal (:data:`JUDGE_PRESETS` finds them, and installed packages add theirs
under the ``memcore.judges`` entry-point group). The run's answer protocol names the presets that grade its answers
(``EvalProtocol.judges``); ``eval.judge_preset`` picks one of them and, unset, the protocol's first (LoCoMo:
``judge-v1``, with ``mem0-judge`` the other; LongMemEval: ``longmemeval-judge``).

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
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memcore.config import BackboneConfig, ConfigError
from memcore.config import load_backbone_preset as compose_backbone_preset
from memcore.datasets.judge import JudgePreset
from memcore.eval.protocols import EvalProtocol, get_protocol
from memcore.interfaces import ChatBackbone, LazyResource, Message
from memcore.llm.factory import build_backbone
from memcore.llm.json_reply import complete_json
from memcore.registry import Registry, discover_declared, instance_check, unknown_name_message
from memcore.stopflag import StopCheck
from memcore.types import QAItem

if TYPE_CHECKING:
    from memcore.llm.cache import ResponseCache
    from memcore.llm.usage import UsageTracker

STAGE = "judge"
FALLBACK_KIND = "judge_label_from_text_else_wrong"
_LABEL_WORD_RE = re.compile(r"\b(CORRECT|WRONG)\b")
#: The entry-point group through which an installed package adds judge presets.
ENTRY_POINT_GROUP = "memcore.judges"


#: ``eval.judge_backbone`` / ``eval.judge_runs`` name no usable judge setting: the run's one ConfigError.
JudgeConfigError = ConfigError


JUDGE_PRESETS: Registry[JudgePreset] = Registry(
    "judge preset",
    check=instance_check(JudgePreset, "a JudgePreset"),
    loader=discover_declared("JUDGES", ENTRY_POINT_GROUP),
)


def get_preset(name: str) -> JudgePreset:
    """The judge preset ``name``; unknown names raise with the known ones."""
    return JUDGE_PRESETS.get(str(name))


def protocol_judge(protocol: EvalProtocol, name: str | None = None) -> JudgePreset:
    """The judge preset that grades ``protocol``'s answers: ``name`` (``eval.judge_preset``) or, when unset, the
    protocol's default (its first). An unknown name raises :class:`~memcore.registry.UnknownNameError`; a protocol
    without judges, or a preset it does not name, :class:`JudgeConfigError`."""
    if not protocol.judges:
        raise JudgeConfigError(
            f"protocol {protocol.name!r} names no judge preset (EvalProtocol.judges), so its answers cannot be "
            "judged; run with eval.judge=false."
        )
    preset = get_preset(str(name) if name else protocol.judges[0])
    if preset.name not in protocol.judges:
        raise JudgeConfigError(
            f"eval.judge_preset={preset.name} does not grade protocol {protocol.name}: its judge presets are "
            f"{', '.join(protocol.judges)} (leave eval.judge_preset unset for {protocol.judges[0]})."
        )
    return preset


def prompt_hash(preset: str) -> str:
    """sha256 (first 16 hex digits) of everything the judge prompt of ``preset`` is made of."""
    return get_preset(preset).prompt_hash()


def prompt_version(preset: str) -> str:
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
        judge_preset: str,
        preset: str = "",
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
        """The preset's prompt built from text alone (presets with ``text_messages``: LoCoMo's)."""
        if self.protocol.text_messages is None:
            raise ValueError(f"judge preset {self.protocol.name!r} grades items, not text: use judge_item")
        return self.protocol.text_messages(question, gold, answer, refusal)

    def judge(self, question: str, gold: str, answer: str | None, *, refusal: bool = False, run: int = 0) -> Verdict:
        """CORRECT/WRONG for ``answer`` from text alone (run index ``run``); an empty answer is WRONG without a
        call."""
        if answer is None or not str(answer).strip():
            return Verdict("WRONG", "empty answer")
        return self.grade(self.messages(question, gold, str(answer), refusal=refusal), run=run)

    def grade(self, messages: list[Message], *, run: int = 0) -> Verdict:
        """One judge call on ``messages`` (run index ``run``), read by the preset: a JSON reply through
        :func:`~memcore.llm.json_reply.complete_json` (retried, then the label read from the raw text or WRONG, a
        counted parse failure), a text reply as it comes."""
        preset = self.protocol
        if not preset.json_reply:
            completion = self.backbone.complete(
                messages,
                stage=STAGE,
                temperature=0.0,
                max_tokens=self.max_tokens,
                prompt_version=preset.prompt_version(run),
            )
            label, reason = preset.read(completion.text)
            return Verdict(label, reason)
        result = complete_json(
            self.backbone,
            messages,
            stage=STAGE,
            validate=preset.read,
            fallback=("WRONG", ""),
            fallback_kind=FALLBACK_KIND,
            prompt_version=preset.prompt_version(run),
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
        """Judge ``answer`` to ``item`` (answered under ``protocol``) against the gold of ``gold_item`` (default
        ``item``; pass the audited item to grade against corrected gold). Grades every category (see
        :meth:`judge_runs`); an empty answer is WRONG without a call."""
        if answer is None or not str(answer).strip():
            return Verdict("WRONG", "empty answer")
        return self.grade(self.protocol.messages(item, gold_item or item, str(answer), protocol), run=run)

    def judge_runs(
        self, item: QAItem, answer: str | None, protocol: EvalProtocol, *, gold_item: QAItem | None = None
    ) -> list[Verdict] | None:
        """``self.runs`` verdicts (run indices 0..N-1), or None when the preset does not grade the item's
        category (``mem0-judge``: LoCoMo's category 5)."""
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
    """The run's judge preset (:func:`protocol_judge` of the run's protocol), judge backbone preset name (None =
    the run's backbone) and number of runs, from ``eval.judge_preset`` / ``eval.judge_backbone`` /
    ``eval.judge_runs`` and the preset's defaults. Raises :class:`~memcore.registry.UnknownNameError` /
    :class:`JudgeConfigError` for bad values."""
    ev = cfg.eval
    preset = protocol_judge(get_protocol(str(cfg.protocol.name)), ev.get("judge_preset"))
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

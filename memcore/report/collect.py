"""Find run dirs and load what a report needs from each: metrics.json, cost.json, stats.json,
config.yaml and (lazily) items.jsonl."""

from __future__ import annotations

import glob
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memcore.config_aliases import rename_config_keys
from memcore.datasets.registry import DEFAULT_DATASET_KIND
from memcore.itemlog import ItemLogError, LoggedItem, read_finished_run, require_unique_ids
from memcore.llm.usage import updates_while_answering, whole_run_stages
from memcore.methods import find_method, method_names, method_specs
from memcore.report.reference import BACKBONE_ORDER, ablation_order, method_order

METRICS = "metrics.json"
# Runs moved aside by overwrite=true are named <dir>.old-<time>; they are history, not results.
_OLD_RUN_RE = re.compile(r"\.old-\d{8}-\d{6}$")


def paper_methods() -> tuple[str, ...]:
    """The registered methods that are one of the paper's (``MethodSpec.paper_row``), by name."""
    return tuple(s.name for s in method_specs() if s.paper_row)


class ReportInputError(ValueError):
    """A path given to the report holds no run, or a run dir is unreadable."""


def _is_old(path: Path) -> bool:
    return any(_OLD_RUN_RE.search(part) for part in path.parts)


def find_run_dirs(paths: Sequence[str | Path], *, include_old: bool = False) -> list[Path]:
    """Run dirs (dirs holding ``metrics.json``) named by ``paths``: a run dir, any dir (searched
    recursively, e.g. a sweep dir), a ``metrics.json`` file, or a glob of any of these. Sorted,
    without repeats; dirs moved aside by ``overwrite=true`` are skipped unless ``include_old``."""
    found: dict[Path, None] = {}
    for raw in paths:
        text = str(raw)
        matches = [Path(m) for m in sorted(glob.glob(text, recursive=True))] if glob.has_magic(text) else [Path(text)]
        if not matches:
            raise ReportInputError(f"{text}: no file or directory matches; pass run dirs, a sweep dir or a glob.")
        hits: list[Path] = []
        for m in matches:
            if m.is_file() and m.name == METRICS:
                hits.append(m.parent)
            elif m.is_dir():
                hits.extend(p.parent for p in sorted(m.rglob(METRICS)))
            elif not m.exists():
                raise ReportInputError(f"{m}: does not exist.")
        hits = [h for h in hits if include_old or not _is_old(h)]
        if not hits:
            raise ReportInputError(f"{text}: no run found (no {METRICS} below it); finished runs write one at the end.")
        for h in hits:
            found.setdefault(h.resolve(), None)
    return sorted(found)


def display_path(path: Path) -> str:
    """How a report names a run dir without naming the machine: relative to the working directory when inside
    it, else ``<root>/runs/…`` from the results' ``runs`` dir down, else ``<elsewhere>/<name>``."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(Path.cwd().resolve()))
    except ValueError:
        pass
    parts = path.parts
    if "runs" in parts:
        return str(Path("<root>", *parts[len(parts) - 1 - parts[::-1].index("runs") :]))
    return f"<elsewhere>/{path.name}"


def read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ReportInputError(f"{path} is not valid JSON ({exc}); rerun that configuration to rewrite it.") from None
    return data if isinstance(data, dict) else {}


def finished_items(path: Path, metrics: Mapping[str, Any]) -> list[LoggedItem]:
    """The items of the finished run at ``path`` whose ``metrics.json`` is ``metrics``: refused when torn or when
    they are not the ``n_items`` it counts (:func:`~memcore.itemlog.read_finished_run`)."""
    n = metrics.get("n_items")
    return read_finished_run(path, n if isinstance(n, int) else None)


@dataclass
class RunData:
    """One finished run. ``info`` is ``metrics["run"]`` (method, ablation, backbone, dataset, protocol,
    embedder, n_conversations, answered, optional judge); ``config`` the resolved config.yaml."""

    path: Path
    metrics: dict[str, Any]
    cost: dict[str, Any] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    _items: list[LoggedItem] | None = field(default=None, repr=False)

    @property
    def info(self) -> dict[str, Any]:
        return self.metrics.get("run", {})

    def _field(self, key: str, default: str = "?") -> str:
        return str(self.info.get(key) or default)

    @property
    def method(self) -> str:
        """The registered method (``MethodSpec.name``)."""
        return self._field("method")

    @property
    def method_label(self) -> str:
        """What the table prints: the method config's ``name`` (a variant such as ``memcore-cheap``
        names itself), else the registered method."""
        mcfg = self.config.get("method") or {}
        return str(mcfg.get("name") or self.method)

    @property
    def imported(self) -> bool:
        """A system imported from its published answers (``memcore-import``), not run by the harness."""
        return bool(self.info.get("published"))

    @property
    def variant_of(self) -> str | None:
        """The method this run is a variant of (``memcore-cheap`` → ``memcore``), or None."""
        label = self.method_label
        if self.is_paper_method or self.imported:
            return None
        bases = [m for m in method_names() if label != m and label.startswith(m + "-")]
        return max(bases, key=len) if bases else None

    @property
    def is_variant(self) -> bool:
        """A variant (e.g. memcore-cheap) is labelled as such and never compared with the paper."""
        return self.variant_of is not None

    @property
    def is_paper_method(self) -> bool:
        """One of the paper's methods (its own name, not a variant): gets the paper's numbers beside it."""
        spec = find_method(self.method_label)
        return bool(spec and spec.paper_row) and not self.imported

    @property
    def ablation(self) -> str:
        return self._field("ablation", "none")

    @property
    def backbone(self) -> str:
        """The backbone preset, or ``none`` for a run that called no LLM (it never used the preset)."""
        return self._field("backbone") if self.called_llm else "none"

    @property
    def called_llm(self) -> bool:
        """False for a retrieval-only run whose memory build and questions made no LLM call (cached calls count
        as calls): its build usage in ``stats.json`` and its items' usage in ``cost.json`` are empty."""
        if self.answered:
            return True
        convs = (self.stats.get("conversations") or {}).values()
        build = sum(int(((c.get("ingest_usage") or {}).get("total") or {}).get("calls", 0)) for c in convs)
        stages = ((self.cost.get("items_usage") or {}).get("by_stage") or {}).values()
        qa = sum(int(st.get("calls", 0)) for st in stages)
        mb = int((self.cost.get("memory_build") or {}).get("llm_calls") or 0)
        return bool(build or qa or mb) or not self.cost  # a run without cost.json: not known, keep the preset

    @property
    def dataset(self) -> str:
        return self._field("dataset")

    @property
    def dataset_kind(self) -> str:
        """The dataset kind (``dataset.kind``); a LoCoMo run's ``metrics.json`` names none."""
        return str(self.info.get("dataset_kind") or DEFAULT_DATASET_KIND)

    @property
    def protocol(self) -> str:
        return self._field("protocol")

    @property
    def embedder(self) -> str:
        return self._field("embedder")

    @property
    def experiment(self) -> str:
        return str(self.config.get("experiment_name") or "")

    @property
    def n_conversations(self) -> int:
        return int(self.info.get("n_conversations") or len(self.stats.get("conversations", {})) or 1)

    @property
    def answered(self) -> bool:
        return bool(self.info.get("answered", True))

    @property
    def has_audited(self) -> bool:
        return "audited" in self.metrics

    @property
    def items(self) -> list[LoggedItem]:
        """The run's items; a torn log or one holding another number of items than ``metrics.json`` counts is
        refused (:func:`~memcore.itemlog.read_finished_run`), so every number comes from one item set."""
        if self._items is None:
            self._items = finished_items(self.path, self.metrics)
        return self._items

    def audited_items(self) -> list[LoggedItem]:
        """Items with the audited scores/recall/hit in place of the original ones (as the runner
        aggregates ``metrics["audited"]``; :meth:`~memcore.itemlog.LoggedItem.under_audit`)."""
        return [r.under_audit() for r in self.items]

    @property
    def setting_note(self) -> str:
        """The part of a method's setting its row must name (``MethodSpec.setting_note``), or "", e.g.
        LightMem's published setting and the compressor that ran (``768-0.8, idf``)."""
        spec = find_method(self.method)
        if spec is None or spec.setting_note is None:
            return ""
        return spec.setting_note(dict(self.config.get("method") or {}))

    @property
    def packing_label(self) -> str:
        """How the run filled a context-token budget, as its method says it (``MethodSpec.packing_label``), or ""."""
        spec = find_method(self.method)
        if spec is None or spec.packing_label is None:
            return ""
        return spec.packing_label(dict(self.config.get("method") or {}))

    def label(self) -> str:
        """``method`` (+ ``(setting)`` when it has one, + ``[ablation]`` when not ``none``), e.g.
        ``memcore [wo_ier]``, ``lightmem (768-0.8, idf)``."""
        note = f" ({self.setting_note})" if self.setting_note else ""
        return self.method_label + note + ("" if self.ablation == "none" else f" [{self.ablation}]")


def qa_time_ingest(run: RunData) -> dict[str, int]:
    """Ingest-stage usage the run spent after building its memories: memory updates made while answering
    (FluxMem's consolidation). A reused snapshot's build is not in the run's usage, so only the builds made
    in this run are subtracted. Zeros for a run without per-conversation stats."""
    convs = list((run.stats.get("conversations") or {}).values())
    ingest = ((run.cost.get("usage") or {}).get("by_stage") or {}).get("ingest") or {}
    return updates_while_answering(ingest if convs else {}, convs)


def qa_stage_usage(run: RunData) -> tuple[dict[str, dict[str, Any]], int]:
    """Usage per QA stage (every stage but ``ingest``) of the whole run, and the number of questions it covers
    (:func:`~memcore.llm.usage.whole_run_stages`): ``cost.json → items_usage`` when items carry their usage (it
    then covers every invocation of a resumed run), else ``usage``, which holds only the last invocation's calls
    (runs made before items kept their usage)."""
    stages, n_questions = whole_run_stages(
        run.cost.get("items_usage") or {},
        int(run.metrics.get("n_items") or 0),
        (run.cost.get("usage") or {}).get("by_stage") or {},
    )
    return {name: st for name, st in stages.items() if name != "ingest"}, n_questions


def load_run(path: Path) -> RunData:
    """Load one run dir (must hold ``metrics.json``)."""
    path = Path(path)
    metrics = read_json(path / METRICS)
    if not metrics:
        raise ReportInputError(f"{path}: no {METRICS}; the run has not finished (rerun it to resume).")
    config: dict[str, Any] = {}
    cfg_path = path / "config.yaml"
    if cfg_path.is_file():
        loaded = OmegaConf.to_container(OmegaConf.load(cfg_path), resolve=False)
        config = rename_config_keys(loaded)[0] if isinstance(loaded, dict) else {}  # old runs: the new key names
    run = RunData(path, metrics, read_json(path / "cost.json"), read_json(path / "stats.json"), config)
    try:
        require_unique_ids(run.items, path)
    except ItemLogError as exc:
        raise ReportInputError(str(exc)) from None
    return run


def load_runs(paths: Iterable[str | Path], *, include_old: bool = False) -> list[RunData]:
    """Every run under ``paths`` (see :func:`find_run_dirs`), in a stable order:
    backbone, method, ablation, dataset, protocol, path."""
    runs = [load_run(p) for p in find_run_dirs(list(paths), include_old=include_old)]
    return sorted(runs, key=run_sort_key)


def run_sort_key(run: RunData) -> tuple[Any, ...]:
    def rank(order: Sequence[str], value: str) -> tuple[int, str]:
        return (order.index(value), "") if value in order else (len(order), value)

    return (
        rank(BACKBONE_ORDER, run.backbone),
        rank(method_order(), run.method_label),
        rank(ablation_order(), run.ablation),
        run.dataset,
        run.protocol,
        str(run.path),
    )

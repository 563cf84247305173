"""Write a published answer file as a run directory like any other: ``items.jsonl`` (one record per answered
item, scored by the run protocol's metrics against the original and, by default, the audited gold; the vendor's
grade in ``extra.published``), ``metrics.json``, ``table.md``, ``config.yaml``, ``stats.json`` and ``cost.json``.
``memcore-report``, ``memcore-rescore``, ``memcore-view`` and ``memcore-archive --verify`` read it as a run.

Every check runs before anything is written: the layout, each file (JSON, fields, indices, counts), the output dir
(an existing run is moved aside only with ``overwrite``) and, when re-judging, the judge's settings; then the
judge's calls and their price at list are printed before the first call."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import CONFIG_DIR, ConfigError, RunConfig
from memcore.datasets.errors import DataError
from memcore.eval.aggregate import format_table
from memcore.eval.judge import judge_run_info, judge_settings
from memcore.eval.judge_estimate import judge_estimate
from memcore.eval.protocols import PROTOCOLS, EvalProtocol, get_protocol
from memcore.eval.published import EXTRA_KEY, published_lines
from memcore.itemlog import ItemWriter, LoggedItem
from memcore.llm.usage import UsageTracker, item_usage, sum_item_usage, usage_scope
from memcore.pipeline.load import LoadedSlice, load_slice
from memcore.pipeline.predict import Prediction
from memcore.pipeline.report import RunResult, run_metrics, write_json
from memcore.pipeline.resources import open_resources
from memcore.pipeline.rundir import move_run_aside, write_run_config
from memcore.pipeline.score import score_item
from memcore.published.layouts import LAYOUTS, get_layout
from memcore.published.mapping import MappedItem, Mapping, map_records
from memcore.published.paths import published_dir
from memcore.published.records import ParsedFile, PublishedRecord
from memcore.published.sources import SOURCES, source_of_sha256
from memcore.types import Evidence

log = logging.getLogger(__name__)

#: The run's experiment name: imported runs are filed apart from the harness's own.
EXPERIMENT = "published"
#: The prompt version an imported item records: its answer was not produced by any harness prompt.
PROMPT_VERSION = "published"


@dataclass(frozen=True)
class ImportRequest:
    """What ``memcore-import`` was asked: the files, their layout, the system's name, the run dir, the scoring
    protocol, the audited gold (on by default), a re-judge (``judge``; preset, runs, backbone and server as in
    ``eval.*``) and what the files may not say (answer model, judge, source, answer prompt: found from a known
    file's sha256 otherwise)."""

    paths: tuple[Path, ...]
    layout: str | None
    system: str | None
    out: Path
    protocol: str = "amem"
    audited: bool = True
    overwrite: bool = False
    judge: bool = False
    judge_preset: str = "mem0-judge"
    judge_runs: int | None = None
    judge_backbone: str | None = None
    judge_server: dict[str, Any] | None = None
    answer_model: str | None = None
    vendor_judge: str | None = None
    source: str | None = None
    answer_prompt: str | None = None
    data_path: str | None = None


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def provenance(req: ImportRequest, parsed: ParsedFile, mapping: Mapping) -> dict[str, Any]:
    """The config's ``published`` node: system, answer model, vendor judge, answer prompt, source (repository @
    commit), layout, each file's name and sha256, and the question texts that differ from the dataset's. A value
    given on the command line wins, then what the files say, then the known source of a file's sha256."""
    files = [{"name": p.name, "sha256": sha256_of(p)} for p in req.paths]
    known = [k for f in files if (k := source_of_sha256(f["sha256"])) is not None]
    src = known[0][0] if known else None
    mismatched = [m.item.item_id for m in mapping.mismatched]

    def pick(*values: str | None) -> str:
        return next((str(v) for v in values if v), "not stated")

    return {
        "system": req.system,
        "layout": req.layout,
        "answer_model": pick(req.answer_model, parsed.answer_model, src and src.answer_model),
        "judge": pick(req.vendor_judge, parsed.judge, src and src.judge),
        "answer_prompt": pick(req.answer_prompt, parsed.answer_prompt, src and src.answer_prompt),
        "source": pick(req.source, src and src.source),
        "licence": src.licence if src else "not stated",
        "note": src.note if src else "",
        "files": files,
        "n_records": len(parsed.records),
        "question_mismatches": len(mismatched),
        "question_mismatch_items": mismatched,
        "categories": mapping.categories,
    }


def import_config(req: ImportRequest, mapping: Mapping, published: dict[str, Any]) -> DictConfig:
    """The run config of an imported run: the harness's defaults with the dataset slice the file answers, the
    scoring protocol, the eval switches, the system as ``method.name`` and the answer model as the backbone (kind
    ``published``: no client is ever built from it), plus the ``published`` node."""
    base = OmegaConf.to_container(OmegaConf.structured(RunConfig))
    assert isinstance(base, dict)
    dataset = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "dataset" / "locomo.yaml"))
    assert isinstance(dataset, dict)
    dataset.update(path=req.data_path, categories=mapping.categories)
    if len(mapping.conversations) < 10:
        dataset["conversations"] = list(mapping.conversations)
    protocol = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "protocol" / f"{req.protocol}.yaml"))
    base.update(
        experiment_name=EXPERIMENT,
        dataset=dataset,
        protocol=protocol,
        method={"name": req.system},
        ablation={"name": "none"},
        run_dir=str(req.out),
        published=published,
    )
    base["backbone"].update(name=published["answer_model"], kind="published", model=published["answer_model"])
    base["embedder"].update(name="none", kind="none", model="none", dim=0)
    base["eval"].update(
        audited=req.audited,
        judge=req.judge,
        judge_preset=req.judge_preset,
        judge_runs=req.judge_runs,
        judge_backbone=req.judge_backbone,
        judge_server=dict(req.judge_server or {}),
        report_token_caps=[],
    )
    return OmegaConf.create(base)


def check_out_dir(out: Path, overwrite: bool) -> None:
    """Refuse a run dir that already holds a run unless ``overwrite`` (then it is moved aside when writing)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; name a directory")
    held = [n for n in ("items.jsonl", "metrics.json", "config.yaml") if (out / n).exists()]
    if held and not overwrite:
        raise ConfigError(
            f"{out} already holds a run ({', '.join(held)}); pass --overwrite (the old run is moved aside) or a new --out"
        )


def _prediction(record: PublishedRecord) -> Prediction:
    return Prediction(
        answer=record.answer,
        evidence=Evidence(),
        prompt_version=PROMPT_VERSION,
        cached=False,
        retrieve_s=0.0,
        answer_s=0.0,
    )


def _published_extra(m: MappedItem) -> dict[str, Any]:
    rec = m.record
    out: dict[str, Any] = {"grade": rec.grade, "where": rec.where}
    if rec.judgements:
        out["judgements"] = list(rec.judgements)
    if rec.question is not None:
        out["question"] = rec.question
        out["question_differs"] = m.question_differs
    if rec.vendor_scores:
        out["vendor_scores"] = dict(rec.vendor_scores)
    return out


def resolve_request(req: ImportRequest) -> ImportRequest:
    """``req`` with its inputs found: a single PATH that names a known published file (``zep``, ``backboard``, …;
    ``scripts/get_published.py --list``) becomes that file's paths in the published data dir (``$MEMCORE_PUBLISHED``
    or ``../shared/data/published``), its layout and system the defaults; a PATH that is not a file here is looked
    for under the published data dir. A file that is not a known one needs ``--layout`` and ``--system``."""

    paths, layout, system = list(req.paths), req.layout, req.system
    if len(paths) == 1 and not paths[0].exists() and str(paths[0]) in SOURCES:
        src = SOURCES.get(str(paths[0]))
        data = published_dir()
        paths, layout, system = [data / f.local for f in src.files], layout or src.layout, system or src.system
    elif any(not p.exists() and not p.is_absolute() for p in paths):
        try:
            data = published_dir()
        except DataError:
            data = None
        if data is not None:
            paths = [p if p.exists() or p.is_absolute() or not (data / p).exists() else data / p for p in paths]
    if not layout:
        raise ConfigError(
            f"{paths[0]}: pass --layout (one of {', '.join(LAYOUTS.names())}); only a known published file's name "
            "(scripts/get_published.py --list) implies it"
        )
    if not system:
        raise ConfigError(f"{paths[0]}: pass --system, the system's name in tables")
    return dataclasses.replace(req, paths=tuple(paths), layout=layout, system=system)


def parse_and_map(req: ImportRequest, conversations: Sequence[Any]) -> tuple[ParsedFile, Mapping]:
    """The files parsed by the request's layout and mapped to the dataset's items (every check, nothing written)."""
    missing = [p for p in req.paths if not p.is_file()]
    if missing:
        raise ConfigError(f"{missing[0]}: no such file")
    layout = get_layout(req.layout)
    parsed = layout.parse(list(req.paths))
    return parsed, map_records(req.paths[0], parsed, conversations)


def import_published(
    req: ImportRequest, *, backbone_override: Any = None, usage: UsageTracker | None = None, say: Any = print
) -> RunResult:
    """Import ``req``'s files as a run into ``req.out`` (see the module doc). ``backbone_override`` replaces the
    judge's backbone and ``usage`` counts its calls (tests); ``say`` prints the judge's estimate."""
    t0 = time.perf_counter()
    if req.protocol not in ("amem", "locomo"):
        raise ConfigError(f"--protocol: {PROTOCOLS.unknown(req.protocol)}")
    req = resolve_request(req)
    get_layout(req.layout)  # an unknown layout fails before the dataset loads
    check_out_dir(req.out, req.overwrite)
    whole = load_slice(OmegaConf.create({**_locomo_node(req.data_path)}))
    parsed, mapping = parse_and_map(req, whole.conversations)
    published = provenance(req, parsed, mapping)
    cfg = import_config(req, mapping, published)
    if req.judge:
        if judge_settings(cfg)[1] is None:
            raise ConfigError(
                "an imported run has no backbone of its own to judge with: name one with --judge-backbone "
                "(mem0-judge's default is gpt-4o-mini)"
            )
        judge_run_info(cfg, check_key=backbone_override is None)
    data = load_slice(cfg.dataset, audited=bool(cfg.eval.audited), audit_path=cfg.eval.audit_path)
    by_id = {q.item_id: q for c in data.conversations for q in c.qa}
    if len(by_id) != len(mapping.items) or any(m.item.item_id not in by_id for m in mapping.items):
        raise ConfigError(f"{req.paths[0]}: the answered items do not form the slice the config names")  # a bug
    if req.judge:
        say(judge_estimate(cfg, data.audited, [(m.item, m.record.answer) for m in mapping.items]))
    if req.out.exists() and any(req.out.iterdir()):
        aside = req.out.with_name(f"{req.out.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
        log.warning("--overwrite: moving the previous run to %s", aside)
        move_run_aside(req.out, aside)
    req.out.mkdir(parents=True, exist_ok=True)
    protocol = get_protocol(req.protocol)
    usage = usage if usage is not None else UsageTracker()
    items = _score_all(cfg, data, mapping, protocol, usage, backbone_override)
    metrics = run_metrics(cfg, req.system, data, items, protocol)
    title = f"{req.system} (published answers) / {published['answer_model']} / {data.n_items} items ({req.protocol} protocol)"
    table = "\n\n".join([format_table(metrics, title), *published_lines(metrics)])
    used = usage.to_json()
    cost = {
        "backbone": {"name": published["answer_model"], "model": published["answer_model"]},
        "usage": used,
        "items_usage": sum_item_usage(items),  # the judge's calls, when re-judged
        "memory_build": {"llm_calls": 0, "prompt_tokens": 0, "completion_tokens": 0},
        "wall_s": {"total": round(time.perf_counter() - t0, 3)},
    }
    stats = {
        "method": req.system,
        "conversations": {},
        "published": {
            k: published[k] for k in ("files", "n_records", "question_mismatches", "question_mismatch_items")
        },
    }
    write_json(req.out / "metrics.json", metrics)
    write_json(req.out / "cost.json", cost)
    write_json(req.out / "stats.json", stats)
    (req.out / "table.md").write_text(table + "\n")
    write_run_config(req.out, cfg)
    return RunResult(req.out, metrics, cost, len(items), table, stats)


def _locomo_node(path: str | None) -> dict[str, Any]:
    node = OmegaConf.to_container(OmegaConf.load(CONFIG_DIR / "dataset" / "locomo.yaml"))
    assert isinstance(node, dict)
    return {**node, "path": path}


def _score_all(
    cfg: DictConfig,
    data: LoadedSlice,
    mapping: Mapping,
    protocol: EvalProtocol,
    usage: UsageTracker,
    backbone_override: Any,
) -> list[LoggedItem]:
    names = {c.id: c.title for c in data.categories}
    by_id = {q.item_id: q for c in data.conversations for q in c.qa}
    items: list[LoggedItem] = []
    with contextlib.ExitStack() as stack:
        res = open_resources(cfg, Path(cfg.run_dir), usage, stack, backbone_override=backbone_override)
        writer = stack.enter_context(ItemWriter(Path(cfg.run_dir) / "items.jsonl"))
        for m in mapping.items:
            item = by_id[m.item.item_id]
            spent = UsageTracker()
            with usage_scope(spent):
                record = score_item(
                    item,
                    _prediction(m.record),
                    protocol,
                    category_name=names[int(item.category)],
                    audited=data.audited.get(item.item_id),
                    judge=res.judge if cfg.eval.judge else None,
                )
            record.extra = {EXTRA_KEY: _published_extra(m)}
            record.usage = item_usage(spent) if cfg.eval.judge else None
            line = LoggedItem(record.to_json())
            writer.write(line)
            items.append(line)
    return items

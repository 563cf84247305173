"""Re-score a finished run's ``items.jsonl`` without re-answering: stages 4–5 of the pipeline (score, report)
applied to the answers and retrieved evidence already logged (the command: ``memcore-rescore``,
:mod:`memcore.commands.rescore`).

What changes is only the scoring: the metric protocol (token-set F1 and BLEU-1 of A-MEM, or the official stemmed
F1 and refusal check), the gold variant (the audit overlay) and, with ``--judge``, the LLM judge (its calls go
through the response cache, so re-judging with a preset already used costs nothing). The answers stay those
produced under the run's own answer prompt and sampling: ``metrics.json`` records both protocols
(``run.rescored``), because scoring amem-prompted answers with the official metric is not the same as running
``protocol=locomo``. Writes ``OUT_DIR/items.jsonl``, ``metrics.json``, ``table.md`` and ``config.yaml``; the
source run is never modified. A run whose items do not cover its slice (fewer items, a torn last line) is scored,
marked INCOMPLETE in its table and ``metrics.json`` (``run.incomplete``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf, open_dict

from memcore.config import CONFIG_DIR, ConfigError, with_new_key_names
from memcore.eval.aggregate import format_table
from memcore.eval.judge import judge_run_info
from memcore.eval.judge_estimate import judge_estimate
from memcore.eval.protocols import PROTOCOLS, get_protocol
from memcore.eval.published import published_lines
from memcore.itemlog import ItemWriter, LoggedItem, read_log, require_unique_ids
from memcore.llm.usage import UsageTracker, item_usage, usage_scope
from memcore.pipeline.load import load_slice
from memcore.pipeline.record import ItemRecord
from memcore.pipeline.report import RunResult, run_metrics, write_json
from memcore.pipeline.resources import open_resources
from memcore.pipeline.rundir import write_run_config
from memcore.pipeline.score import run_extra_metrics, score_variants

log = logging.getLogger(__name__)


def rescored_config(
    cfg: DictConfig,
    *,
    protocol: str | None = None,
    audited: bool | None = None,
    judge: bool = False,
    judge_preset: str | None = None,
    judge_runs: int | None = None,
    judge_backbone: str | None = None,
    judge_server: dict[str, Any] | None = None,
) -> DictConfig:
    """A copy of a run's ``config.yaml`` with the scoring settings replaced; the answer settings the run
    used stay under ``protocol`` (``answered_protocol``) for the answer disclosure."""
    out = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    with open_dict(out):
        out.answered_protocol = OmegaConf.create(OmegaConf.to_container(cfg.protocol))
        if protocol is not None and protocol != str(cfg.protocol.name):
            if protocol not in PROTOCOLS:
                raise ConfigError(PROTOCOLS.unknown(protocol))
            out.protocol = OmegaConf.load(CONFIG_DIR / "protocol" / f"{protocol}.yaml")
        if audited is not None:
            out.eval.audited = bool(audited)
        out.eval.judge = bool(judge)
        if judge_preset is not None:
            out.eval.judge_preset = judge_preset
        if judge_runs is not None:
            out.eval.judge_runs = int(judge_runs)
        if judge_backbone is not None:
            out.eval.judge_backbone = judge_backbone
        if judge_server:
            out.eval.judge_server = dict(judge_server)
    return out


def rescore(
    run_dir: Path,
    out_dir: Path,
    *,
    protocol: str | None = None,
    audited: bool | None = None,
    judge: bool = False,
    judge_preset: str | None = None,
    judge_runs: int | None = None,
    judge_backbone: str | None = None,
    judge_server: dict[str, Any] | None = None,
    backbone_override: Any = None,
    usage: UsageTracker | None = None,
) -> RunResult:
    """Score every record of ``run_dir/items.jsonl`` again under the given settings into ``out_dir`` (which
    must not hold items yet). Without ``judge`` the judge's keys are dropped (a verdict made against another
    gold would be stale). ``backbone_override`` replaces the judge's backbone and ``usage`` is the tracker its
    calls are counted in (tests)."""
    run_dir, out_dir = Path(run_dir), Path(out_dir)
    src_items, src_cfg = run_dir / "items.jsonl", run_dir / "config.yaml"
    if not src_items.exists() or not src_cfg.exists():
        raise ConfigError(f"{run_dir} is not a finished run (it needs items.jsonl and config.yaml)")
    if out_dir.resolve() == run_dir.resolve():
        raise ConfigError("--out must be another directory: the source run is never modified")
    if (out_dir / "items.jsonl").exists():
        raise ConfigError(f"{out_dir} already holds items.jsonl; pick an empty --out directory")
    out_dir.mkdir(parents=True, exist_ok=True)  # an unwritable --out fails here, before any work
    old = with_new_key_names(OmegaConf.load(src_cfg), warn=False)
    assert isinstance(old, DictConfig)
    cfg = rescored_config(
        old,
        protocol=protocol,
        audited=audited,
        judge=judge,
        judge_preset=judge_preset,
        judge_runs=judge_runs,
        judge_backbone=judge_backbone,
        judge_server=judge_server,
    )
    if cfg.eval.judge:
        judge_run_info(cfg, check_key=backbone_override is None)
    data = load_slice(cfg.dataset, audited=bool(cfg.eval.audited), audit_path=cfg.eval.audit_path)
    by_id = {q.item_id: q for c in data.conversations for q in c.qa}
    source = read_log(src_items)
    torn = source.torn_bytes
    require_unique_ids(source.items, run_dir)
    records = [ItemRecord.from_json(r) for r in source.items]
    missing = [r.item_id for r in records if r.item_id not in by_id]
    if missing:
        raise ConfigError(
            f"{len(missing)} items of {run_dir} are not in the dataset slice of its config.yaml (first: {missing[0]}); "
            "was the data file replaced?"
        )
    new_protocol = str(cfg.protocol.name)
    scoring = get_protocol(new_protocol)
    if cfg.eval.judge:  # what the judge will cost, before its first call
        print(judge_estimate(cfg, data.audited, [(by_id[r.item_id], r.answer) for r in records]), flush=True)
    extra_metrics = run_extra_metrics(cfg)  # the source run's eval.metrics are scored again too
    out_dir.mkdir(parents=True, exist_ok=True)
    usage = usage if usage is not None else UsageTracker()
    with contextlib.ExitStack() as stack:
        res = open_resources(cfg, out_dir, usage, stack, backbone_override=backbone_override)
        writer = stack.enter_context(ItemWriter(out_dir / "items.jsonl"))
        items: list[LoggedItem] = []
        for rec in records:
            item = by_id[rec.item_id]
            spent = UsageTracker()
            with usage_scope(spent):
                original, audited_scores, judge_record = score_variants(
                    item,
                    rec.answer,
                    rec.retrieved_dia_ids,
                    scoring,
                    metrics=extra_metrics,
                    audited=data.audited.get(rec.item_id),
                    judge=res.judge if cfg.eval.judge else None,
                )
            # the record's usage: how its answer was made, plus this judging in place of the original's
            spent_all = (
                None if rec.usage is None else {k: v for k, v in rec.usage.items() if k != "judge"} | item_usage(spent)
            )
            items.append(
                LoggedItem(
                    dataclasses.replace(
                        rec, original=original, audited=audited_scores, judge=judge_record, usage=spent_all
                    ).to_json()
                )
            )
            writer.write(items[-1])
    order = {q.item_id: i for i, q in enumerate(q for c in data.conversations for q in c.qa)}
    items.sort(key=lambda r: order[r.item_id])  # dataset order, as the runner's report
    scoring_cfg = OmegaConf.create(OmegaConf.to_container(cfg))
    with open_dict(scoring_cfg):
        scoring_cfg.protocol = cfg.answered_protocol  # the answer disclosure describes how answers were made
    metrics = run_metrics(scoring_cfg, str(cfg.method.name), data, items, scoring, extra_metrics)
    metrics["run"]["protocol"] = new_protocol
    metrics["run"]["rescored"] = {
        "from": str(run_dir),
        "answered_protocol": str(cfg.answered_protocol.name),
        "scored_protocol": new_protocol,
        "judge_calls": usage.to_json()["total"]["calls"],
    }
    title = (
        f"{cfg.method.name} / {cfg.ablation.name} / {cfg.backbone.name} / {cfg.dataset.name} "
        f"(answered under {cfg.answered_protocol.name}, scored under {new_protocol} protocol)"
    )
    table = "\n\n".join([format_table(metrics, title), *published_lines(metrics)])
    incomplete = incompleteness(len(items), data.n_items, torn)
    if incomplete:
        metrics["run"]["incomplete"] = incomplete
        table += (
            f"\n\nINCOMPLETE: {incomplete['reason']}; these scores are not the slice's. Finish the source run "
            "(rerun its memcore-run command) and rescore it."
        )
    write_json(out_dir / "metrics.json", metrics)
    (out_dir / "table.md").write_text(table + "\n")
    write_run_config(out_dir, cfg)
    return RunResult(out_dir, metrics, {"usage": usage.to_json()}, len(items), table)


def incompleteness(n_items: int, n_slice: int, torn_bytes: int) -> dict[str, Any] | None:
    """Why a run's items do not cover its slice (fewer items, a torn last line), or None when they do."""
    reasons = []
    if n_items < n_slice:
        reasons.append(f"{n_items} of the slice's {n_slice} items")
    if torn_bytes:
        reasons.append(f"a torn last line ({torn_bytes} bytes) was dropped")
    if not reasons:
        return None
    return {"n_items": n_items, "n_slice": n_slice, "torn_bytes": torn_bytes, "reason": ", ".join(reasons)}

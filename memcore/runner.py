"""The pipeline of DESIGN §1: load → build (or reuse) memory per conversation → retrieve → answer →
score → items.jsonl → metrics.json, cost.json, stats.json, table.md.

Resumable: items already in items.jsonl are skipped; a conversation whose items are all done is not
even rebuilt. A rerun whose result-affecting config differs is refused (config-hash guard).
"""

from __future__ import annotations

import contextlib
import json
import logging
import multiprocessing
import os
import shutil
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.buildproc import BuildJob, build_in_worker, build_memory, method_context
from memcore.config import ConfigError
from memcore.interfaces import LazyResource, MemorySystem, MethodSpec, SelfAnsweringMemory
from memcore.itemlog import ItemWriter, read_items
from memcore.llm.cache import ResponseCache, stable_hash
from memcore.llm.limiter import RequestLimiter
from memcore.llm.scoped import ScopedBackbone
from memcore.llm.usage import UsageTracker, updates_while_answering
from memcore.methods import get_method
from memcore.redact import redact_config
from memcore.snapshots import SnapshotStore, construction_fields
from memcore.stopflag import StopFlag
from memcore.text import count_tokens
from memcore.types import Conversation, QAItem
from memcore.validation import validate_run

log = logging.getLogger(__name__)

RUN_STATE = "run_state.json"


class RunStopped(RuntimeError):
    """Raised in a worker between turns or items once the run is stopping (Ctrl-C or a fatal error elsewhere)."""


class RunConflictError(RuntimeError):
    """The run dir holds results made under a different result-affecting config."""


@dataclass
class RunResult:
    run_dir: Path
    metrics: dict[str, Any]
    cost: dict[str, Any]
    n_items: int
    table: str = ""
    stats: dict[str, Any] = field(default_factory=dict)


def result_fields(cfg: DictConfig, dataset_sha256: str) -> dict[str, Any]:
    """The config values that change results. Transport settings (URLs, ports, concurrency,
    timeouts, prices) and paths are excluded, so a resumed run on a restarted server still matches."""
    c = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(c, dict)
    backbone = {
        k: c["backbone"].get(k)
        for k in ("name", "kind", "model", "extra_body", "thinking", "json_mode", "n_ctx", "context_budget_tokens")
    }
    dataset = {k: v for k, v in c["dataset"].items() if k != "path"}
    return {
        "method": c["method"],
        "ablation": c["ablation"],
        "backbone": backbone,
        "embedder": {k: c["embedder"].get(k) for k in ("name", "kind", "model", "dim")},
        "dataset": dataset,
        "dataset_sha256": dataset_sha256,
        "protocol": c["protocol"],
        "seed": c["seed"],
        "eval": _eval_fields(c["eval"]),
    }


def _eval_fields(ev: dict[str, Any]) -> dict[str, Any]:
    """The result-affecting ``eval`` keys; the judge preset and its number of runs only when judging (so runs
    made before they existed still resume)."""
    out = {k: ev.get(k) for k in ("answer", "budget", "judge", "judge_backbone", "audited")}
    if ev.get("judge"):
        out.update(judge_preset=ev.get("judge_preset"), judge_runs=ev.get("judge_runs"))
    return out


class Runner:
    """Runs one configuration into ``run_dir``. ``backbone_override`` / ``embedder_override`` let
    tests and benchmarks inject a scripted backbone or a hashing embedder."""

    def __init__(
        self,
        cfg: DictConfig,
        run_dir: Path,
        *,
        backbone_override: Any = None,
        embedder_override: Any = None,
    ) -> None:
        self.cfg = cfg
        self.run_dir = Path(run_dir)
        self.backbone_override = backbone_override
        self.embedder_override = embedder_override
        self.usage = UsageTracker()
        self.spec: MethodSpec = get_method(str(cfg.method.name))
        self._pbar_lock = threading.Lock()
        self.timings: dict[str, float] = {}
        self.conv_stats: dict[str, Any] = {}
        self.data_cleaning: dict[str, Any] = {}
        self._judge: LazyResource | None = None  # LLM judge (issue 5), built on first use when eval.judge
        self.audit_changed: dict[str, str] = {}  # eval.audited: item_id -> the audit's error_type (gold ceiling)
        self.audit_items: dict[str, Any] = {}
        # Set on the first fatal error, Ctrl-C or SIGTERM: the other workers stop taking turns and items.
        self._stop = StopFlag()

    # ---------------------------------------------------------------- setup
    def _check_ablation(self) -> None:
        name = str(self.cfg.ablation.name)
        if name not in self.spec.ablations:
            raise ConfigError(
                f"method {self.spec.name!r} does not support ablation {name!r} (it supports: {', '.join(sorted(self.spec.ablations))}); "
                "ablations are switches of memcore."
            )

    def _load_conversations(self) -> tuple[list[Conversation], str, dict[str, Any]]:
        from memcore.data import load_locomo, resolve_locomo_path, select

        d = self.cfg.dataset
        path = resolve_locomo_path(d.path)
        dataset = load_locomo(path)
        if dataset.report.counts:
            log.info("LoCoMo cleaning applied: %s", ", ".join(f"{k}={v}" for k, v in dataset.report.counts.items()))
        self.data_cleaning = dataset.report.to_dict()
        convs = select(
            dataset,
            conversations=list(d.conversations) if d.conversations else None,
            max_sessions=d.max_sessions,
            max_qa=d.max_qa,
            evidence_inside=bool(d.evidence_inside),
        )
        if d.categories:
            keep = {int(c) for c in d.categories}
            convs = [_with_qa(c, tuple(q for q in c.qa if int(q.category) in keep)) for c in convs]
        audit: dict[str, Any] = {}
        if self.cfg.eval.audited:
            from memcore.data import apply_audit, load_audit, resolve_audit_path

            audited, report = apply_audit(convs, load_audit(resolve_audit_path(self.cfg.eval.audit_path)))
            for conv in audited:
                for q in conv.qa:
                    audit[q.item_id] = q
            log.info("audited overlay: %s", report.to_dict())
            self.audit_changed, self.audit_items = dict(report.changed), audit
        return convs, dataset.sha256, audit

    def _guard(self, fields: dict[str, Any]) -> None:
        state_path = self.run_dir / RUN_STATE
        digest = stable_hash(fields)
        if state_path.exists():
            old = json.loads(state_path.read_text())
            if old.get("result_hash") != digest:
                if self.cfg.overwrite:
                    aside = self.run_dir.with_name(f"{self.run_dir.name}.old-{time.strftime('%Y%m%d-%H%M%S')}")
                    log.warning("overwrite=true: moving the previous run to %s", aside)
                    shutil.move(str(self.run_dir), aside)
                    self.run_dir.mkdir(parents=True)
                else:
                    changed = sorted(
                        k for k in fields if stable_hash(fields[k]) != stable_hash(old.get("fields", {}).get(k))
                    )
                    raise RunConflictError(
                        f"{self.run_dir} holds results of a different configuration (changed: {', '.join(changed) or 'unknown'}); "
                        "refusing to mix them. Start a fresh run with hydra.run.dir=<new dir>, or pass overwrite=true "
                        "(the old run is moved aside, not deleted)."
                    )
            elif not self.cfg.resume:
                raise RunConflictError(
                    f"{self.run_dir} already has results and resume=false; pass overwrite=true or a new hydra.run.dir."
                )
        self.run_dir.mkdir(parents=True, exist_ok=True)
        _write_json(state_path, {"result_hash": digest, "fields": fields})

    def _write_config(self) -> None:
        plain = OmegaConf.to_container(self.cfg, resolve=True)
        (self.run_dir / "config.yaml").write_text(OmegaConf.to_yaml(OmegaConf.create(redact_config(plain))))

    # ---------------------------------------------------------------- run
    def run(self) -> RunResult:
        t_start = time.perf_counter()
        self._check_ablation()
        validate_run(self.cfg)  # every knob (method, backbone, embedder, eval, …) before any work (issue 16)
        # LLM judge (issues 5, 15): a bad judge preset / backbone / runs value or a missing key fails here, before any work
        from memcore.eval.judge import get_preset, judge_run_info

        get_preset(self.cfg.eval.get("judge_preset"))
        if self.cfg.eval.judge:
            judge_run_info(self.cfg, check_key=True)
        convs, data_sha, audit = self._load_conversations()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._guard(result_fields(self.cfg, data_sha))
        self._write_config()
        items_path = self.run_dir / "items.jsonl"
        done = {rec["item_id"] for rec in read_items(items_path, repair=True)}
        pending_convs = [c for c in convs if any(q.item_id not in done for q in c.qa)]
        n_pending = sum(1 for c in convs for q in c.qa if q.item_id not in done)
        log.info(
            "%s: %d conversations, %d QA items (%d already done)",
            self.run_dir,
            len(convs),
            sum(len(c.qa) for c in convs),
            len(done),
        )

        with contextlib.ExitStack() as resources:
            paths = self.cfg.paths
            cache = ResponseCache(Path(paths.cache) / "llm.sqlite") if self.cfg.cache_llm else None
            backbone = LazyResource(lambda: self._make_backbone(cache, resources))
            embedder = LazyResource(self._make_embedder)
            answerer = LazyResource(lambda: self._make_answerer(backbone.get()))
            self._judge = LazyResource(lambda: self._make_judge(backbone, cache, resources))  # LLM judge (issue 5)
            store = SnapshotStore(Path(paths.snapshots))
            n_turns = sum(len(c.turns) for c in pending_convs)
            bars = _Bars(self.cfg.progress, n_turns, n_pending, staged=self.spec.staged_ingest)
            writer = resources.enter_context(ItemWriter(items_path))
            resources.enter_context(self._stop.watch_signals())  # workers see Ctrl-C/SIGTERM on delivery
            build_pool = self._build_pool(len(pending_convs))
            if build_pool is not None:
                resources.enter_context(build_pool)
            errors: list[BaseException] = []

            def process(conv: Conversation) -> None:
                try:
                    self._process_conversation(
                        conv, done, backbone, embedder, answerer, store, writer, bars, audit, build_pool
                    )
                except BaseException as exc:  # collected and re-raised in the main thread after the pool drains
                    errors.append(exc)
                    self._stop.set()
                    raise

            t0 = time.perf_counter()
            workers = max(1, min(int(self.cfg.concurrency), len(pending_convs) or 1))
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="conv") as pool:
                futures = [pool.submit(process, c) for c in pending_convs]
                try:
                    _wait_for_conversations(futures)
                except KeyboardInterrupt:
                    # Threads cannot be killed: workers stop at their next turn or item, after the LLM call in
                    # flight; every finished item is already in items.jsonl, so a rerun resumes from there.
                    self._stop.set()  # before logging: a log call releases the GIL to the workers
                    log.warning("interrupted: stopping after the LLM calls in flight; rerun the command to resume")
                    for other in futures:
                        other.cancel()
                    raise
            bars.close()
            self.timings["conversations_s"] = time.perf_counter() - t0
            if errors:
                raise errors[0]
            built = {"backbone_started": backbone.built, "embedder_loaded": embedder.built}

        return self._report(convs, t_start, built)

    def _process_conversation(
        self,
        conv: Conversation,
        done: set[str],
        backbone: LazyResource,
        embedder: LazyResource,
        answerer: LazyResource,
        store: SnapshotStore,
        writer: ItemWriter,
        bars: _Bars,
        audit: dict[str, Any],
        build_pool: ProcessPoolExecutor | None = None,
    ) -> None:
        method_cfg = OmegaConf.to_container(self.cfg.method, resolve=True)
        ablation = OmegaConf.to_container(self.cfg.ablation, resolve=True)
        assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
        scope = UsageTracker()
        scoped_backbone = LazyResource(lambda: ScopedBackbone(backbone.get(), scope))
        fields = construction_fields(
            self.spec,
            method_cfg,
            ablation,
            backbone_model=str(self.cfg.backbone.model),
            embedder_name=str(self.cfg.embedder.name),
            conversation=conv,
            seed=int(self.cfg.seed),
        )

        extras = {"context_budget_tokens": int(self.cfg.backbone.context_budget_tokens)}

        def make(workdir: Path) -> MemorySystem:
            ctx = method_context(
                method_cfg=method_cfg,
                ablation=ablation,
                conversation=conv,
                run_seed=int(self.cfg.seed),
                workdir=workdir,
                backbone=scoped_backbone,
                embedder=embedder,
                extras=extras,
            )
            return self.spec.factory(ctx)

        def build(system: MemorySystem) -> dict[str, Any]:
            def stop_check() -> None:
                if self._stop.is_set():
                    raise RunStopped(f"{conv.conv_id}: memory build stopped (run interrupted or failed elsewhere)")

            def on_turn() -> None:
                bars.build(1)
                stop_check()

            def on_ingested(n: int) -> None:
                bars.ingested(n)
                stop_check()

            return build_memory(system, conv, scope, on_turn=on_turn, on_ingested=on_ingested)

        built_in_worker = False
        if build_pool is not None:
            job = BuildJob(
                method=self.spec.name,
                method_cfg=method_cfg,
                ablation=ablation,
                conversation=conv,
                run_seed=int(self.cfg.seed),
                fields=fields,
                snapshots=str(self.cfg.paths.snapshots),
                embedder=OmegaConf.to_object(self.cfg.embedder),  # type: ignore[arg-type]
                embedder_cache=str(Path(self.cfg.paths.cache) / "embeddings.sqlite"),
                extras=extras,
            )
            built_in_worker = build_pool.submit(build_in_worker, job).result()
        snap = store.build_or_load(method=self.spec.name, fields=fields, make=make, build=build)
        if snap.reused:
            bars.build(len(conv.turns), reused=True)
        self.conv_stats[conv.conv_id] = {
            "snapshot": str(snap.path),
            "reused": snap.reused and not built_in_worker,
            "turns": len(conv.turns),
            "ingest_usage": snap.manifest.get("ingest_usage", {}),
            "ingest_seconds": snap.manifest.get("ingest_seconds"),
            "memory": snap.manifest.get("stats", {}),
        }
        system = snap.system
        pending = [q for q in conv.qa if q.item_id not in done]

        def one(item: QAItem) -> None:
            if self._stop.is_set():  # a fatal error elsewhere (e.g. the backbone is down): rerun resumes here
                return
            try:
                record = self._answer_item(system, item, answerer, audit.get(item.item_id))
            except BaseException:
                self._stop.set()
                raise
            writer.write(record)
            bars.qa(1)

        if self.spec.sequential_qa or isinstance(system, SelfAnsweringMemory):
            for item in pending:
                one(item)
        else:
            with ThreadPoolExecutor(
                max_workers=max(1, int(self.cfg.concurrency)), thread_name_prefix=f"qa-{conv.conv_id}"
            ) as pool:
                futures = [pool.submit(one, q) for q in pending]
                try:
                    for fut in futures:
                        fut.result()
                except BaseException:
                    self._stop.set()
                    for fut in futures:
                        fut.cancel()
                    raise
        if isinstance(system, SelfAnsweringMemory):
            system.after_qa()
        with contextlib.suppress(AttributeError):
            self.conv_stats[conv.conv_id]["memory_after_qa"] = system.stats()

    def _answer_item(
        self, system: MemorySystem, item: QAItem, answerer: LazyResource, audited: QAItem | None
    ) -> dict[str, Any]:
        from memcore.eval.metrics import evidence_scores, score_answer

        protocol = str(self.cfg.protocol.name)
        budget = self.cfg.eval.budget
        t0 = time.perf_counter()
        answer_text: str | None = None
        prompt_version = ""
        cached = False
        if isinstance(system, SelfAnsweringMemory):
            if not self.cfg.eval.answer:
                raise ConfigError(
                    f"method {self.spec.name} answers as part of retrieval; eval.answer=false is not available for it"
                )
            bound = answerer.get()

            def answer_fn(context: str) -> str:
                return bound.answer(item, context).text

            answer_text, evidence = system.answer(item, answer_fn)
            t_retrieve = time.perf_counter() - t0
            t_answer = 0.0
        else:
            evidence = system.retrieve(item.question, budget=budget)
            t_retrieve = time.perf_counter() - t0
            t_answer = 0.0
            if self.cfg.eval.answer:
                t1 = time.perf_counter()
                res = answerer.get().answer(item, evidence.render())
                t_answer = time.perf_counter() - t1
                answer_text, prompt_version, cached = res.text, res.prompt_version, res.cached
        gold = item.gold(protocol)
        scores = score_answer(answer_text, gold, item.category, protocol) if answer_text is not None else {}
        ev = evidence_scores(item.evidence, evidence.dia_ids)
        # --- LLM judge (issues 5, 15): scores["judge"] = mean over runs of 1.0 CORRECT / 0.0 WRONG,
        # scores["judge_runs"] per run, scores["judge_majority"]; None when the preset skips the category ---
        from memcore.eval.judge import verdict_record, verdict_scores

        verdicts = None
        if self.cfg.eval.judge and answer_text is not None and self._judge is not None:
            verdicts = self._judge.get().judge_runs(item, answer_text, protocol)
            if verdicts is not None:
                scores.update(verdict_scores(verdicts))
        # --- end LLM judge ---
        context = evidence.render()
        record: dict[str, Any] = {
            "item_id": item.item_id,
            "conv_id": item.conv_id,
            "qa_index": item.index,
            "category": int(item.category),
            "category_name": item.category.label,
            "question": item.question,
            "gold": gold,
            "answer": answer_text,
            "evidence": list(item.evidence),
            "retrieved_dia_ids": evidence.dia_ids,
            "notes": [dict(n.to_json(), tokens=count_tokens(n.text)) for n in evidence.notes],
            "context_tokens": count_tokens(context),
            "rounds": evidence.rounds,
            "scores": scores,
            "recall": None if ev is None else ev["recall"],
            "hit": None if ev is None else ev["hit"],
            "prompt_version": prompt_version,
            "cached": {"answer": cached},
            "latency_s": {"retrieve": round(t_retrieve, 4), "answer": round(t_answer, 4)},
            "extra": _jsonable(evidence.extra),
        }
        if audited is not None:
            a_gold = audited.gold(protocol)
            a_ev = evidence_scores(audited.evidence, evidence.dia_ids)
            record["audited"] = {
                "gold": a_gold,
                "evidence": list(audited.evidence),
                "scores": score_answer(answer_text, a_gold, item.category, protocol) if answer_text is not None else {},
                "recall": None if a_ev is None else a_ev["recall"],
                "hit": None if a_ev is None else a_ev["hit"],
            }
            if verdicts is not None and self._judge is not None:  # LLM judge (issue 5) against the audited gold
                same = audited.answer == item.answer and a_gold == gold
                a_verdicts = (
                    verdicts if same else self._judge.get().judge_runs(item, answer_text, protocol, gold_item=audited)
                )
                if a_verdicts is not None:
                    record["audited"]["scores"].update(verdict_scores(a_verdicts))
        if verdicts is not None and self._judge is not None:
            record["judge"] = verdict_record(self._judge.get().protocol.name, verdicts)
        return record

    # ---------------------------------------------------------------- builders
    def _make_backbone(self, cache: ResponseCache | None, resources: contextlib.ExitStack) -> Any:
        """The run's backbone behind one bound: at most ``concurrency`` requests in flight (issue 7)."""
        if self.backbone_override is not None:
            return RequestLimiter(self.backbone_override, int(self.cfg.concurrency))
        from memcore.config import BackboneConfig
        from memcore.llm.factory import build_backbone

        bcfg = OmegaConf.to_object(self.cfg.backbone)
        assert isinstance(bcfg, BackboneConfig)
        client = build_backbone(bcfg, cache=cache, usage=self.usage, resources=resources, log_dir=self.run_dir)
        return RequestLimiter(client, int(self.cfg.concurrency))

    def _build_pool(self, n_convs: int) -> ProcessPoolExecutor | None:
        """Worker processes for CPU-bound builds that call no LLM (threads would share one core under the GIL).
        None unless the method declares ``build_cpu_bound``; also None when its ingestion uses the LLM, an
        embedder is injected (it could not reach a worker), fewer than two builds can overlap, or
        ``build_processes=0``."""
        setting = self.cfg.build_processes
        method_cfg = OmegaConf.to_container(self.cfg.method, resolve=True)
        ablation = OmegaConf.to_container(self.cfg.ablation, resolve=True)
        assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
        if (
            not self.spec.build_cpu_bound
            or self.embedder_override is not None
            or self.spec.ingest_uses_llm(method_cfg, ablation)
        ):
            return None
        cap = int(self.cfg.concurrency) if setting is None else int(setting)
        workers = min(cap, os.cpu_count() or 1, n_convs)
        if workers < 2:
            return None
        log.info("building %d memories in %d worker processes (ingestion uses no LLM)", n_convs, workers)
        # spawn, not fork: the runner already has threads (and faiss/torch thread pools) at this point.
        return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))

    def _make_embedder(self) -> Any:
        if self.embedder_override is not None:
            return self.embedder_override
        from memcore.config import EmbedderConfig
        from memcore.llm.factory import build_embedder

        ecfg = OmegaConf.to_object(self.cfg.embedder)
        assert isinstance(ecfg, EmbedderConfig)
        return build_embedder(ecfg, cache_path=Path(self.cfg.paths.cache) / "embeddings.sqlite")

    def _make_judge(self, backbone: LazyResource, cache: ResponseCache | None, resources: contextlib.ExitStack) -> Any:
        from memcore.eval.judge import build_judge  # LLM judge (issue 5)

        return build_judge(self.cfg, backbone, cache=cache, usage=self.usage, resources=resources, log_dir=self.run_dir)

    def _make_answerer(self, backbone: Any) -> Any:
        from memcore.eval.answerer import Answerer

        p = self.cfg.protocol
        return Answerer(
            backbone,
            str(p.name),
            seed=int(self.cfg.seed),
            temperature_default=float(p.temperature),
            temperature_adversarial=float(p.temperature_adversarial),
            max_tokens=None if p.max_tokens is None else int(p.max_tokens),
        )

    # ---------------------------------------------------------------- report
    def _report(self, convs: list[Conversation], t_start: float, built: dict[str, bool]) -> RunResult:
        from memcore.eval.aggregate import aggregate, budget_recall, format_table

        items = read_items(self.run_dir / "items.jsonl")
        # Dataset order, not completion order: float sums then do not depend on threads or on resuming.
        order = {q.item_id: i for i, q in enumerate(q for c in convs for q in c.qa)}
        items = sorted((r for r in items if r["item_id"] in order), key=lambda r: order[r["item_id"]])
        metrics = aggregate(items)
        if self.cfg.eval.token_budgets:
            metrics["recall_at_budget"] = budget_recall(items, list(self.cfg.eval.token_budgets))
        metrics["run"] = {
            "method": self.spec.name,
            "ablation": str(self.cfg.ablation.name),
            "backbone": str(self.cfg.backbone.name),
            "embedder": str(self.cfg.embedder.name),
            "dataset": str(self.cfg.dataset.name),
            "protocol": str(self.cfg.protocol.name),
            "n_conversations": len(convs),
            "answered": bool(self.cfg.eval.answer),
        }
        if self.cfg.eval.judge:  # LLM judge (issue 5): pinned preset, model and prompt hash
            from memcore.eval.judge import judge_run_info

            metrics["run"]["judge"] = judge_run_info(self.cfg)
        if self.cfg.eval.answer:  # issue 15: the answer prompt moves J more than the memory does; disclose it
            from memcore.eval.disclosure import answer_disclosure

            metrics["run"]["answer"] = answer_disclosure(self.cfg.protocol, items)
        if self.audit_changed:  # issue 15: the best score a perfect system reaches against the original gold
            from memcore.eval.ceiling import gold_ceiling

            metrics["gold_ceiling"] = gold_ceiling(
                convs, self.audit_changed, self.audit_items, str(self.cfg.protocol.name)
            )
        if any("audited" in r for r in items):
            audited_items = [
                dict(r, scores=r["audited"]["scores"], recall=r["audited"]["recall"], hit=r["audited"]["hit"])
                if "audited" in r
                else r
                for r in items
            ]
            metrics["audited"] = aggregate(audited_items)
        cost = self._cost(convs, t_start, built)
        metrics["parse_failures"] = cost["usage"]["parse_failures_by_kind"]
        stats = {"conversations": self.conv_stats, "method": self.spec.name, "data_cleaning": self.data_cleaning}
        title = f"{self.spec.name} / {self.cfg.ablation.name} / {self.cfg.backbone.name} / {self.cfg.dataset.name} ({self.cfg.protocol.name} protocol)"
        table = format_table(metrics, title)
        if self.cfg.get("table_note"):
            table += f"\n\nNote: {self.cfg.table_note}"
        _write_json(self.run_dir / "metrics.json", metrics)
        _write_json(self.run_dir / "cost.json", cost)
        _write_json(self.run_dir / "stats.json", stats)
        (self.run_dir / "table.md").write_text(table + "\n" + _cost_lines(cost) + "\n")
        return RunResult(self.run_dir, metrics, cost, len(items), table, stats)

    def _cost(self, convs: list[Conversation], t_start: float, built: dict[str, bool]) -> dict[str, Any]:
        usage = self.usage.to_json()
        b = self.cfg.backbone
        build_turns = sum(v["turns"] for v in self.conv_stats.values())
        # Calls the method needs, cached or not (like the tokens below): a warm cache must not make a
        # method look cheaper. ``llm_calls_uncached`` is what this run actually sent.
        build_calls = sum(v["ingest_usage"].get("total", {}).get("calls", 0) for v in self.conv_stats.values())
        build_uncached = sum(v["ingest_usage"].get("total", {}).get("llm_calls", 0) for v in self.conv_stats.values())
        build_prompt = sum(v["ingest_usage"].get("total", {}).get("prompt_tokens", 0) for v in self.conv_stats.values())
        build_completion = sum(
            v["ingest_usage"].get("total", {}).get("completion_tokens", 0) for v in self.conv_stats.values()
        )
        n_items = sum(len(c.qa) for c in convs)
        updates = updates_while_answering(usage["by_stage"].get("ingest", {}), self.conv_stats.values())
        prices = (float(b.price_in_per_mtok), float(b.price_out_per_mtok))
        return {
            "backbone": {
                "name": str(b.name),
                "model": str(b.model),
                "price_in_per_mtok": prices[0],
                "price_out_per_mtok": prices[1],
            },
            "usage": usage,
            "usd_estimate_this_run": round(_usd(usage, prices), 4),
            "memory_build": {
                "turns": build_turns,
                "llm_calls": build_calls,
                "llm_calls_uncached": build_uncached,
                "prompt_tokens": build_prompt,
                "completion_tokens": build_completion,
                "llm_calls_per_turn": round(build_calls / build_turns, 4) if build_turns else None,
                "tokens_per_turn": round((build_prompt + build_completion) / build_turns, 1) if build_turns else None,
                "snapshots_reused": sum(1 for v in self.conv_stats.values() if v["reused"]),
                "snapshots_built": sum(1 for v in self.conv_stats.values() if not v["reused"]),
            },
            "per_question": {
                stage: round(calls / n_items, 4) if n_items else None
                for stage, calls in (
                    *((s, usage["by_stage"].get(s, {}).get("calls", 0)) for s in ("retrieve", "answer", "judge")),
                    ("memory_update", updates["calls"]),
                )
            },
            "wall_s": {
                "total": round(time.perf_counter() - t_start, 3),
                **{k: round(v, 3) for k, v in self.timings.items()},
            },
            "resources": built,
        }


def _usd(usage: dict[str, Any], prices: tuple[float, float]) -> float:
    """Estimated spend of this run's non-cached calls, pro-rated by the non-cached share per stage."""
    total = 0.0
    for s in usage["by_stage"].values():
        share = (s["llm_calls"] / s["calls"]) if s["calls"] else 0.0
        total += share * (s["prompt_tokens"] * prices[0] + s["completion_tokens"] * prices[1]) / 1e6
    return total


def _cost_lines(cost: dict[str, Any]) -> str:
    mb = cost["memory_build"]
    u = cost["usage"]["total"]
    return (
        f"LLM calls this run: {u['calls']} ({u['cached_calls']} from cache), tokens in/out {u['prompt_tokens']}/{u['completion_tokens']}, "
        f"parse fallbacks {u['parse_failures']}; memory build: {mb['llm_calls_per_turn']} LLM calls/turn over {mb['turns']} turns "
        f"({mb['snapshots_reused']} snapshots reused); wall {cost['wall_s']['total']:.1f}s"
    )


def _wait_for_conversations(futures: list[Future[None]], poll_s: float = 0.5) -> None:
    """Wait in the main thread until every conversation is done; on the first failure cancel those not started
    (running ones see the stop flag). The wait wakes every ``poll_s``: a signal the kernel delivered to a worker
    thread runs its Python handler (KeyboardInterrupt) only when the main thread runs bytecode."""
    pending: set[Future[None]] = set(futures)
    while pending:
        done, pending = wait(pending, timeout=poll_s, return_when=FIRST_EXCEPTION)
        if any(not f.cancelled() and f.exception() is not None for f in done):
            for other in futures:
                other.cancel()  # conversations not started yet; running ones see the stop flag


def _with_qa(conv: Conversation, qa: tuple[QAItem, ...]) -> Conversation:
    from dataclasses import replace

    return replace(conv, qa=qa)


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=str))


def _write_json(path: Path, obj: Any) -> None:
    """Write atomically (temp file + rename), so a crash never leaves half a metrics file."""
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n")
    os.replace(tmp, path)


class _Bars:
    """Progress per stage, thread-safe: ``ingest`` (turns a staged method such as MemCoRe has ingested, before
    its gate; only when ``staged``), ``build`` (turns in the memory) and ``qa`` (items answered), as tqdm bars
    with rate and ETA. With the bars off (``progress=false``: logs, batch jobs) one INFO line reports the counts
    at most every ``log_every_s`` seconds instead."""

    def __init__(self, enabled: bool, turns: int, items: int, log_every_s: float = 60.0, staged: bool = False) -> None:
        self._lock = threading.Lock()
        stages = {**({"ingest": ("turn", turns)} if staged else {}), "build": ("turn", turns), "qa": ("item", items)}
        self._total = {k: total for k, (_, total) in stages.items()}
        self._done = dict.fromkeys(stages, 0)
        self._bars: dict[str, Any] = {}
        self._t0 = self._last_log = time.monotonic()
        self._log_every_s = log_every_s
        if enabled:
            from tqdm import tqdm

            for pos, (name, (unit, total)) in enumerate(stages.items()):
                self._bars[name] = tqdm(total=total, desc=f"{name:<6}", unit=unit, position=pos, dynamic_ncols=True)

    def _update(self, kind: str, n: int) -> None:
        if kind not in self._done:
            return
        with self._lock:
            self._done[kind] += n
            bar = self._bars.get(kind)
            if bar is not None:
                bar.update(n)
                return
            now = time.monotonic()
            if now - self._last_log < self._log_every_s:
                return
            self._last_log = now
            done, total = dict(self._done), self._total
        counts = ", ".join(
            f"{k} {done[k]}/{total[k]} {'items' if k == 'qa' else 'turns'}"
            for k in ("ingest", "build", "qa")
            if k in done
        )
        log.info("progress: %s, %.0f s elapsed", counts, now - self._t0)

    def ingested(self, n: int) -> None:
        """``n`` more turns passed a staged method's ingestion (ignored unless ``staged``)."""
        self._update("ingest", n)

    def build(self, n: int, reused: bool = False) -> None:
        """``n`` more turns are in the memory (``reused``: a snapshot was loaded, so they were ingested too)."""
        if reused:
            self._update("ingest", n)
        self._update("build", n)

    def qa(self, n: int) -> None:
        self._update("qa", n)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def run_config(cfg: DictConfig, run_dir: Path, **overrides: Any) -> RunResult:
    """Validate ``cfg`` and run it into ``run_dir``."""
    from memcore.config import validate

    return Runner(validate(cfg), run_dir, **overrides).run()

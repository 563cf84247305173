"""How much of a run happens at once. Each concurrency knob is refused below its range before any work
(:mod:`memcore.validation`) and bound here at what can help, with one log line naming the value given, the value
used and why:

- ``concurrency``: conversations at once, QA items at once within a conversation, and backbone requests in flight
  (the request limiter, :mod:`memcore.llm.limiter`). No more threads can run than the slice has conversations or
  its largest conversation has QA items, so the value is capped at the larger of the two; requests in flight are
  also bound by the backbone's limit. A run that calls no LLM takes its conversations and their QA items one at
  a time: its retrieval is CPU-bound Python, and more threads would only contend for the GIL (all of LoCoMo warm
  with memcore-cheap: 25 s with four conversations and four QA items at once, 20 s one at a time). When its
  builds go to worker processes, each worker also retrieves for its conversation
  (:mod:`memcore.pipeline.worker_retrieval`), so the retrieval runs side by side as well, and the runner's
  process only scores and writes.
- ``backbone.max_concurrency`` (and the judge's own backbone's): the most requests the backbone serves at once,
  the preset's documented limit; a kind whose server answers a fixed number (llama.cpp's: one) caps it there
  (:func:`memcore.llm.factory.backbone_limit`).
- ``build_processes``: worker processes for CPU-bound builds without an LLM (null: as many as ``concurrency``);
  capped at the machine's CPU cores and the slice's conversations.

None of them changes a result (they are not part of the run key, :mod:`memcore.pipeline.rundir`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from memcore.config import BackboneConfig, typed_section
from memcore.eval.judge import judge_server_overrides, judge_settings, load_backbone_preset
from memcore.interfaces import MethodSpec
from memcore.llm.factory import backbone_limit
from memcore.pipeline.build import no_worker_processes
from memcore.pipeline.load import LoadedSlice

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Concurrency:
    """What a run does at once: ``threads`` conversations, and as many QA items within each (1 for a run that
    calls no LLM); at most ``requests`` backbone requests in flight; ``build_processes`` worker processes for
    builds (0: builds run in the conversation threads); ``retrieval_in_workers``: those workers also prefetch and
    retrieve for their conversation (a run that calls no LLM). ``lines``: one per knob whose value was capped, saying
    the value used and why."""

    threads: int
    requests: int
    build_processes: int
    lines: tuple[str, ...] = ()
    retrieval_in_workers: bool = False

    def log(self) -> None:
        """Log :attr:`lines` (INFO)."""
        for line in self.lines:
            log.info("%s", line)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def plan_concurrency(
    cfg: DictConfig,
    spec: MethodSpec,
    data: LoadedSlice,
    *,
    calls_llm: bool,
    cpus: int,
    backbone_injected: bool = False,
    embedder_injected: bool = False,
) -> Concurrency:
    """The run's :class:`Concurrency` for the slice ``data`` (see the module doc). ``calls_llm``: whether the run
    calls its backbone; ``cpus``: the machine's CPU cores. An injected backbone or embedder (tests, benchmarks)
    is not described by ``cfg``: an injected backbone is bound by ``concurrency`` alone, an injected embedder keeps
    builds in the threads."""
    given = int(cfg.concurrency)
    convs = [c for c in data.conversations if c.qa]
    n_convs = len(convs)
    most_items = 1 if spec.sequential_qa else max((len(c.qa) for c in convs), default=1)
    threads = max(1, min(given, max(n_convs, most_items)))
    lines: list[str] = []
    parts: list[str] = []
    if threads < given:
        items = "QA items answered one at a time" if spec.sequential_qa else f"at most {most_items} QA items in one"
        parts.append(f" capped at {threads} (the slice has {_plural(n_convs, 'conversation')} and {items})")
    requests = threads
    if calls_llm and not backbone_injected:
        bcfg = typed_section(cfg.backbone, BackboneConfig)
        limit, why = backbone_limit(bcfg)
        if bcfg.max_concurrency > limit:
            lines.append(f"backbone.max_concurrency={bcfg.max_concurrency} capped at {limit}: {why}")
        if limit < threads:
            requests = limit
            parts.append(f"{':' if not parts else ';'} at most {_plural(limit, 'backbone request')} in flight ({why})")
    one_at_a_time = not calls_llm and threads > 1  # said in its own line below
    if parts and not one_at_a_time:
        lines.append(f"concurrency={given}" + "".join(parts))
    judge_line = _judge_line(cfg) if calls_llm and not backbone_injected else None
    if judge_line is not None:
        lines.append(judge_line)
    processes, process_line = _build_processes(cfg, spec, n_convs, cpus, embedder_injected)
    if process_line is not None:
        lines.append(process_line)
    in_workers = not calls_llm and processes >= 2
    if one_at_a_time or in_workers:
        where = (
            f"each conversation built or loaded, and its QA items retrieved, in one of {processes} worker processes;"
            " this process scores and writes them"
            if in_workers
            else "one conversation and one QA item at a time"
        )
        lines.append(
            f"concurrency={given}: {where} (the run calls no LLM: its work holds the GIL, and threads would only "
            "contend for it)"
        )
        threads = requests = 1
    return Concurrency(threads, requests, processes, tuple(lines), retrieval_in_workers=in_workers)


def _judge_line(cfg: DictConfig) -> str | None:
    """The line for the judge's own backbone when its kind caps its ``max_concurrency``, else None."""
    if not cfg.eval.judge:
        return None
    _, name, _ = judge_settings(cfg)
    if name is None:  # the run's backbone judges: its bound is the run's
        return None
    server = judge_server_overrides(cfg)
    bcfg = load_backbone_preset(name, server)
    limit, why = backbone_limit(bcfg)
    if bcfg.max_concurrency <= limit:
        return None
    key = "eval.judge_server.max_concurrency" if "max_concurrency" in server else f"backbone {name}'s max_concurrency"
    return f"{key}={bcfg.max_concurrency} capped at {limit} for the judge: {why}"


def _build_processes(
    cfg: DictConfig, spec: MethodSpec, n_convs: int, cpus: int, embedder_injected: bool
) -> tuple[int, str | None]:
    """Worker processes for the slice's builds (0: none) and the line saying why a set ``build_processes`` was
    not used as given (None when it was, or was left to the default)."""
    setting: Any = cfg.get("build_processes")
    method_cfg = OmegaConf.to_container(cfg.method, resolve=True)
    ablation = OmegaConf.to_container(cfg.ablation, resolve=True)
    assert isinstance(method_cfg, dict) and isinstance(ablation, dict)
    reason = no_worker_processes(spec, method_cfg, ablation, embedder_injected=embedder_injected)
    explicit = setting is not None and int(setting) >= 2
    if reason is not None:
        return 0, (f"build_processes={setting} not used: {reason}" if explicit and not embedder_injected else None)
    wanted = int(cfg.concurrency) if setting is None else int(setting)
    processes = min(wanted, cpus, n_convs)
    line = None
    if explicit and processes < int(setting):
        bound = (
            f"the machine's {_plural(cpus, 'CPU core')}"
            if cpus <= n_convs
            else f"the slice's {_plural(n_convs, 'conversation')}"
        )
        rest = "" if processes >= 2 else "; the builds run in the conversation threads"
        line = f"build_processes={setting} capped at {processes} ({bound}){rest}"
    return (processes if processes >= 2 else 0), line

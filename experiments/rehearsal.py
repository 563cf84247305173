"""Rehearse the paper's sweep against the simulator before spending money on it.

``python -m experiments.rehearsal --scale quick|full`` starts ``memcore-simulate`` (a free port, injected faults,
a time-scaled latency model), runs ``experiment=paper_main`` (every method of the main table) and
``experiment=paper_ablation`` (``none`` + the eight switches) with the ``gpt-4o-mini`` preset pointed at it, the
judge on (``mem0-judge``, 3 runs), through ``hydra/launcher=submitit_local`` with ``--jobs`` jobs at once
(``hydra.sweeper.max_batch_size``: Hydra launches the sweep in batches of that many jobs), then ``memcore-report``
in the main and ablation layouts, and writes ``summary.json`` / ``summary.md`` with these checks, each pass/fail:

- ``jobs``: every job of both sweeps finished (its ``metrics.json`` written by this invocation or an earlier one);
- ``items``: per run, items answered = items of the loaded slice, 0 lost (expected ids missing from
  ``items.jsonl``), 0 duplicated (ids written twice);
- ``faults``: the simulator injected each kind (429, 500, 503, drop, timeout, wrong JSON) and the runs survived
  them: transport retries the runs counted per kind (``retries_by_kind``) = transport faults injected per kind
  (in all, ``errors_retried``, for runs whose client did not count kinds), and JSON parse
  retries + fallbacks >= wrong-JSON replies sent that reached a run (a cached reply is reused without a new draw);
- ``wall``: measured wall of the two sweeps against the prediction ``calls × latency / concurrency`` within
  ±20 %, defined in :func:`predicted_wall`;
- ``estimate``: ``memcore.report.estimate``'s per-method token estimate made from a smaller rehearsal
  (``--estimate-from``; by default the next smaller scale's summary dir when present) against the tokens this
  rehearsal's runs really sent, within ±15 % per method;
- ``resume`` (with ``--kill-at F``): the sweep is killed with SIGKILL (its whole process group: driver, launcher,
  jobs, simulator) once a fraction F of all expected items is written, the same command is run again and
  completes, and every run's ``metrics.json`` equals that of an uninterrupted reference rehearsal, except
  :data:`VOLATILE_METRICS` (see :func:`comparable_metrics`).

Progress is one line per finished job (sweep, method, ablation, items, wall, calls, USD at the preset's list
price) and a sweep-level line with items done, rate and ETA; the jobs' own logs go to files (the submitit folder
and ``logs/``). Warnings only when something needs a person: a fault rate far above the configured one, a method
falling back on more than 5 % of its replies. Replies mean nothing: the rehearsal checks plumbing, cost and
time, never scores. Exit 0 when the :data:`FATAL_CHECKS` pass, 1 when one fails, 2 on a bad option or a sweep
that cannot run (one line naming what to fix).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memcore.processes import stop_process

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = REPO / "results" / "rehearsal"
EXPERIMENTS = ("paper_main", "paper_ablation")
BACKBONE = "gpt-4o-mini"
#: Dummy key for the sweep's processes only: the preset requires one and the simulator accepts any.
DUMMY_KEY = "sk-rehearsal-not-a-key"
FAULT_KINDS = ("429", "500", "503", "drop", "timeout")
DEFAULT_RATES = {"429": 0.02, "500": 0.02, "503": 0.01, "drop": 0.01, "timeout": 0.005, "wrong_json": 0.02}
#: metrics.json keys that are not a function of the items: ``parse_failures`` counts the parse fallbacks of every
#: invocation of the run (items a killed invocation answered but did not write are answered, and counted, again).
VOLATILE_METRICS = ("parse_failures",)
FALLBACK_WARN = 0.05
#: Checks whose failure makes the exit status 1; ``wall`` and ``estimate`` are measurements of this machine and of
#: the estimator, marked pass/fail in the summary but not fatal.
FATAL_CHECKS = ("jobs", "items", "faults", "resume")
WALL_TOLERANCE = 0.20
ESTIMATE_TOLERANCE = 0.15


@dataclass(frozen=True)
class Scale:
    """One rehearsal size: the dataset overrides, the jobs of each sweep (None: the experiment's own list), the
    simulator's latency time scale and fault rates, extra run overrides, and the scale whose rehearsal estimates
    this one's tokens."""

    name: str
    dataset: dict[str, Any]
    methods: tuple[str, ...] | None = None
    ablations: tuple[str, ...] | None = None
    time_scale: float = 0.05
    rates: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RATES))
    run_overrides: tuple[str, ...] = ()
    smaller: str | None = None

    def overrides(self) -> list[str]:
        return [*(f"dataset.{k}={_hydra_value(v)}" for k, v in self.dataset.items()), *self.run_overrides]


#: tiny: the test's scale (conv-26's first session, 4 QA, two methods and two ablation settings, the hashing
#: embedder, fault rates high enough that every kind occurs in ~150 requests). quick: conv-26's first three
#: sessions (58 turns, the 25 QA whose evidence lies in them: locomo-mini's slice), every method and ablation;
#: a whole conversation does not fit the few minutes quick is for on a 2-core machine (every job is one
#: process that loads the embedder). conv: one whole conversation (conv-26: 419 turns, 199 QA) for the methods
#: whose cost per turn grows with their memory and full_context: what quick's estimate must extrapolate to, at a
#: tenth of full's work (LoCoMo's conversations are independent, so full's cost is the sum of ten such).
#: full: all 10 conversations, 1,986 QA per run.
SCALES: dict[str, Scale] = {
    "tiny": Scale(
        "tiny",
        {
            "name": "rehearsal-tiny",
            "conversations": ["conv-26"],
            "max_sessions": 1,
            "max_qa": 4,
            "evidence_inside": True,
        },
        methods=("full_context", "memcore"),
        ablations=("none", "wo_ier"),
        time_scale=0.02,
        rates={"429": 0.05, "500": 0.05, "503": 0.05, "drop": 0.05, "timeout": 0.03, "wrong_json": 0.05},
        run_overrides=("embedder=hashing", "build_processes=0"),
    ),
    "quick": Scale(
        "quick",
        {"name": "rehearsal-quick", "conversations": ["conv-26"], "max_sessions": 3, "evidence_inside": True},
        time_scale=0.02,
        smaller="tiny",
    ),
    "conv": Scale(
        "conv",
        {"name": "rehearsal-conv", "conversations": ["conv-26"]},
        methods=("full_context", "amem", "mem0", "memcore"),
        ablations=("none",),
        time_scale=0.02,
        smaller="quick",
    ),
    "full": Scale("full", {}, time_scale=0.05, smaller="quick"),
}


def _hydra_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | tuple):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


# ------------------------------------------------------------------------------------------------ the plan
@dataclass(frozen=True)
class Job:
    """One run of a sweep and where it writes."""

    experiment: str
    method: str
    ablation: str
    run_dir: Path
    expected_ids: tuple[str, ...]

    @property
    def label(self) -> str:
        return f"{self.experiment} {self.method}/{self.ablation}"


@dataclass
class Plan:
    """What a rehearsal runs: the jobs, the slice's size, the simulator's options."""

    scale: Scale
    root: Path
    jobs: list[Job]
    turns: int
    questions: int
    conversations: int
    sim: dict[str, float]
    time_scale: float
    concurrency: int
    parallel_jobs: int
    timeout_s: float
    ttft_s: float = 0.4
    tokens_per_s: float = 80.0
    retry_after_s: int = 1
    extra: list[str] = field(default_factory=list)

    @property
    def expected_items(self) -> int:
        return sum(len(j.expected_ids) for j in self.jobs)


def sweep_values(experiment: str, key: str) -> tuple[str, ...]:
    """The comma list ``hydra.sweeper.params.<key>`` of ``configs/experiment/<experiment>.yaml``."""
    from omegaconf import OmegaConf

    from memcore.config import CONFIG_DIR

    cfg = OmegaConf.load(CONFIG_DIR / "experiment" / f"{experiment}.yaml")
    return tuple(v.strip() for v in str(cfg.hydra.sweeper.params[key]).split(",") if v.strip())


def load_scale_slice(scale: Scale) -> Any:
    """The slice a scale's runs evaluate, loaded the way a run loads it (``configs/dataset/locomo.yaml`` + the
    scale's dataset overrides)."""
    from omegaconf import OmegaConf

    from memcore.config import CONFIG_DIR
    from memcore.data.slice import load_slice

    ds = OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "dataset" / "locomo.yaml"), scale.dataset)
    return load_slice(ds)


def make_plan(scale: Scale, root: Path, args: argparse.Namespace) -> Plan:
    data = load_scale_slice(scale)
    ids = tuple(q.item_id for c in data.conversations for q in c.qa)
    ds_name = str(scale.dataset.get("name", "locomo"))
    runs = root / "runs"
    methods = scale.methods or sweep_values("paper_main", "method")
    ablations = scale.ablations or sweep_values("paper_ablation", "ablation")
    base = lambda exp, m, a: runs / exp / ds_name / BACKBONE / "amem" / m / a  # noqa: E731
    jobs = [Job("paper_main", m, "none", base("paper_main", m, "none"), ids) for m in methods]
    jobs += [Job("paper_ablation", "memcore", a, base("paper_ablation", "memcore", a), ids) for a in ablations]
    rates = dict(scale.rates)
    for spec in args.fault or []:
        kind, _, value = spec.partition("=")
        if kind not in rates:
            raise ValueError(f"--fault {spec}: unknown kind {kind!r}; kinds: {', '.join(rates)}")
        rates[kind] = float(value)
    time_scale = scale.time_scale if args.time_scale is None else float(args.time_scale)
    return Plan(
        scale=scale,
        root=root,
        jobs=jobs,
        turns=sum(len(c.turns) for c in data.conversations),
        questions=len(ids),
        conversations=len(data.conversations),
        sim=rates,
        time_scale=time_scale,
        concurrency=int(args.concurrency),
        parallel_jobs=int(args.jobs),
        timeout_s=float(args.timeout_s) if args.timeout_s is not None else default_timeout_s(time_scale),
        extra=list(args.override or []),
    )


#: The longest reply the client must wait for without a timeout (the default ``--timeout-s`` covers it).
LONGEST_REPLY_TOKENS = 4000


def default_timeout_s(time_scale: float, ttft_s: float = 0.4, tokens_per_s: float = 80.0) -> float:
    """The client read timeout: at least 5 s, and longer than the simulator takes for a
    :data:`LONGEST_REPLY_TOKENS`-token reply at ``time_scale``. A timeout below the endpoint's real latency turns
    every long reply into a timeout and, retried, into a failed run (found at ``--time-scale 1``, where LightMem's
    extraction replies take more than 5 s)."""
    return max(5.0, round((ttft_s + LONGEST_REPLY_TOKENS / tokens_per_s) * time_scale, 1))


# ------------------------------------------------------------------------------------------------ processes
def child_env() -> dict[str, str]:
    """The sweep's environment: this checkout first on the path, the dummy key, one thread per library pool."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env["OPENAI_API_KEY"] = DUMMY_KEY
    env.pop("MEMCORE_RESULTS", None)  # paths.root is passed explicitly
    return env


def simulator_command(plan: Plan, port_file: Path, stats_file: Path) -> list[str]:
    s = plan.sim
    cmd = [sys.executable, "-m", "memcore.testing.simulator", "--port-file", str(port_file)]
    cmd += ["--stats-out", str(stats_file), "--time-scale", str(plan.time_scale)]
    cmd += ["--ttft-s", str(plan.ttft_s), "--tokens-per-s", str(plan.tokens_per_s)]
    cmd += ["--retry-after-s", str(plan.retry_after_s), "--hang-s", str(plan.timeout_s + 2.0)]
    for kind in FAULT_KINDS:
        cmd += [f"--rate-{kind}", str(s[kind])]
    return [*cmd, "--wrong-json", str(s["wrong_json"])]


def sweep_command(plan: Plan, experiment: str, base_url: str) -> list[str]:
    """``memcore-run -m experiment=<experiment>`` at the plan's scale against ``base_url``."""
    cmd = [sys.executable, "-m", "memcore.cli", "-m", f"experiment={experiment}", f"backbone={BACKBONE}"]
    cmd += [f"backbone.base_url={base_url}", f"backbone.timeout_s={plan.timeout_s}", "++backbone.backoff_cap_s=0.5"]
    cmd += ["eval.judge=true", "eval.judge_preset=mem0-judge", "eval.judge_runs=3"]
    cmd += [f"concurrency={plan.concurrency}", "progress=false", "print_table=false", f"paths.root={plan.root}"]
    cmd += ["hydra/launcher=submitit_local", f"hydra.sweeper.max_batch_size={plan.parallel_jobs}"]
    cmd += plan.scale.overrides()
    if experiment == "paper_main" and plan.scale.methods:
        cmd.append("method=" + ",".join(plan.scale.methods))
    if experiment == "paper_ablation" and plan.scale.ablations:
        cmd.append("ablation=" + ",".join(plan.scale.ablations))
    return [*cmd, *plan.extra]


class RehearsalError(RuntimeError):
    """The sweep cannot run or did not finish: one line saying what happened and what to do."""


def start_simulator(plan: Plan, work: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    port_file, stats_file = work / "simulator.port", work / "simulator_stats.json"
    port_file.unlink(missing_ok=True)
    log = open(work / "logs" / "simulator.log", "ab")  # noqa: SIM115 (closed with the process)
    proc = subprocess.Popen(
        simulator_command(plan, port_file, stats_file), cwd=REPO, env=child_env(), stdout=log, stderr=log
    )
    log.close()
    deadline = time.monotonic() + 60
    while not port_file.exists():
        if proc.poll() is not None:
            raise RehearsalError(f"memcore-simulate exited {proc.returncode}; see {work / 'logs' / 'simulator.log'}")
        if time.monotonic() > deadline:
            proc.kill()
            raise RehearsalError("memcore-simulate did not start listening within 60 s")
        time.sleep(0.05)
    return proc, f"http://127.0.0.1:{port_file.read_text().strip()}/v1", stats_file


def stop_simulator(proc: subprocess.Popen[bytes]) -> None:
    stop_process(proc, timeout_s=30)


def simulator_stats(base_url: str) -> dict[str, Any] | None:
    """The live ``/stats`` of the simulator, or None when it does not answer."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=5) as resp:
            return json.loads(resp.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None


# ------------------------------------------------------------------------------------------------ progress
def count_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def run_spend(cost: dict[str, Any], price_in: float, price_out: float) -> dict[str, float]:
    """A run's whole LLM spend over every invocation: memory build (from ``stats.json`` via ``cost.json``) plus
    the items' own usage; calls and tokens the endpoint really served (cache hits removed pro rata) and the USD
    they cost at list price."""
    from memcore.report.estimate import usd

    mb = cost.get("memory_build") or {}
    share = (mb.get("llm_calls_uncached", 0) / mb["llm_calls"]) if mb.get("llm_calls") else 0.0
    calls = float(mb.get("llm_calls_uncached", 0))
    prompt = share * mb.get("prompt_tokens", 0)
    completion = share * mb.get("completion_tokens", 0)
    for s in ((cost.get("items_usage") or {}).get("by_stage") or {}).values():
        frac = (s["llm_calls"] / s["calls"]) if s.get("calls") else 0.0
        calls += s.get("llm_calls", 0)
        prompt += frac * s.get("prompt_tokens", 0)
        completion += frac * s.get("completion_tokens", 0)
    return {
        "calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "usd": usd({"prompt_tokens": prompt, "completion_tokens": completion}, price_in, price_out),
    }


class Progress:
    """Polls the run dirs: one line per finished job, a sweep line with rate and ETA, warnings that need a person."""

    def __init__(self, plan: Plan, out: Callable[[str], None], every_s: float = 30.0) -> None:
        from memcore.config import load_backbone_preset

        b = load_backbone_preset(BACKBONE)
        self.prices = (float(b.price_in_per_mtok), float(b.price_out_per_mtok))
        self.plan, self.out, self.every_s = plan, out, every_s
        self.t0 = time.monotonic()
        self.start_items = self.items_done()
        self.finished: set[Path] = set()
        self.warned: set[str] = set()
        self.last_line = 0.0
        self.started_at = time.time()

    def items_done(self) -> int:
        return sum(min(count_lines(j.run_dir / "items.jsonl"), len(j.expected_ids)) for j in self.plan.jobs)

    def poll(self, sim: dict[str, Any] | None, force: bool = False) -> None:
        for job in self.plan.jobs:
            if job.run_dir in self.finished:
                continue
            metrics = job.run_dir / "metrics.json"
            if metrics.exists() and metrics.stat().st_mtime >= self.started_at - 1:
                cost = read_json(job.run_dir / "cost.json")
                if cost is None:
                    continue
                self.finished.add(job.run_dir)
                self.job_line(job, cost)
        self.fault_warnings(sim)
        now = time.monotonic()
        if force or now - self.last_line >= self.every_s:
            self.last_line = now
            self.out(self.sweep_line(now))

    def job_line(self, job: Job, cost: dict[str, Any]) -> None:
        spend = run_spend(cost, *self.prices)
        items = count_lines(job.run_dir / "items.jsonl")
        wall = (cost.get("wall_s") or {}).get("total", 0.0)
        self.out(
            f"done  {job.experiment:<14} {job.method:<13} {job.ablation:<11} items {items:>5}/{len(job.expected_ids):<5} "
            f"wall {wall:7.1f} s  calls {spend['calls']:>7,.0f}  USD {spend['usd']:8.4f}"
        )
        total = (cost.get("usage") or {}).get("total") or {}
        calls, fallbacks = int(total.get("calls", 0)), int(total.get("parse_failures", 0))
        if calls and fallbacks / calls > FALLBACK_WARN:
            self.out(
                f"WARNING {job.label}: {fallbacks} of {calls} replies ({100 * fallbacks / calls:.1f} %) fell back "
                f"(unparseable after retries; by kind: {(cost.get('usage') or {}).get('parse_failures_by_kind')}); "
                "check the prompts or the model before the paid sweep"
            )

    def fault_warnings(self, sim: dict[str, Any] | None) -> None:
        if not sim or sim.get("requests", 0) < 200:
            return
        for kind in FAULT_KINDS:
            rate = sim["faults"].get(kind, 0) / sim["requests"]
            configured = self.plan.sim[kind]
            if rate > max(3 * configured, 0.05) and kind not in self.warned:
                self.warned.add(kind)
                self.out(
                    f"WARNING faults {kind}: {100 * rate:.1f} % of requests (configured {100 * configured:.1f} %); "
                    "a real endpoint failing this often needs a person (rate limit, quota, outage)"
                )

    def sweep_line(self, now: float) -> str:
        done, total = self.items_done(), self.plan.expected_items
        elapsed = now - self.t0
        rate = (done - self.start_items) / elapsed if elapsed > 0 else 0.0
        left = total - done
        eta = f"{left / rate / 60:.1f} min" if rate > 0 else "?"
        width = 30
        fill = int(width * done / total) if total else width
        return (
            f"sweep [{'#' * fill}{'.' * (width - fill)}] {done}/{total} items ({100 * done / max(total, 1):.0f} %), "
            f"{len(self.finished)}/{len(self.plan.jobs)} jobs, {rate:.2f} items/s, {elapsed / 60:.1f} min, ETA {eta}"
        )


# ------------------------------------------------------------------------------------------------ one rehearsal
def run_sweeps(plan: Plan, work: Path, out: Callable[[str], None], poll_s: float = 2.0) -> dict[str, Any]:
    """Start the simulator, run both sweeps one after the other, stop the simulator; returns wall times and the
    simulator's final stats. Raises :class:`RehearsalError` when a sweep exits non-zero."""
    (work / "logs").mkdir(parents=True, exist_ok=True)
    sim, base_url, stats_file = start_simulator(plan, work)
    progress = Progress(plan, out)
    walls: dict[str, float] = {}
    proc: subprocess.Popen[bytes] | None = None
    try:
        out(f"simulator at {base_url}: faults {plan.sim}, time scale {plan.time_scale}")
        for experiment in EXPERIMENTS:
            log_path = work / "logs" / f"{experiment}.log"
            t0 = time.monotonic()
            with open(log_path, "ab") as log:
                proc = subprocess.Popen(
                    sweep_command(plan, experiment, base_url), cwd=REPO, env=child_env(), stdout=log, stderr=log
                )
                while proc.poll() is None:
                    time.sleep(poll_s)
                    progress.poll(simulator_stats(base_url))
            walls[experiment] = time.monotonic() - t0
            progress.poll(simulator_stats(base_url), force=True)
            if proc.returncode != 0:
                raise RehearsalError(f"{experiment}: {sweep_failure(log_path, proc.returncode)}")
    except BaseException:
        if proc is not None and proc.poll() is None:  # Ctrl-C / SIGTERM: stop the jobs the way memcore-run stops
            terminate_tree(proc.pid)
            proc.wait()
        raise
    finally:
        stop_simulator(sim)
    stats = read_json(stats_file) or {}
    return {"wall_s": walls, "simulator": stats, "resumed": progress.start_items > 0}


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (Linux ``/proc``), children first."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # the process ended while we read
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def terminate_tree(pid: int) -> None:
    """SIGTERM ``pid`` and its descendants (memcore-run stops after the calls in flight, keeping every item)."""
    for p in [pid, *descendants(pid)]:
        try:
            os.kill(p, signal.SIGTERM)
        except ProcessLookupError:
            continue


def sweep_failure(log_path: Path, rc: int) -> str:
    """One line for a failed sweep: the first ``error:`` line a job printed, else the log's last line."""
    root = log_path.parent.parent
    lines: list[str] = []
    for f in [log_path, *sorted(root.glob("root/runs/*/.submitit/*/*_log.err"))]:
        lines += [ln.strip() for ln in f.read_text(errors="replace").splitlines() if ln.strip()]
    said = next((ln for ln in lines if ln.startswith("error:")), None) or next(
        (ln for ln in reversed(lines) if "Error" in ln), lines[-1] if lines else "no output"
    )
    return f"the sweep exited {rc}: {said} (logs: {log_path})"


# ------------------------------------------------------------------------------------------------ checks
def check_items(plan: Plan) -> list[dict[str, Any]]:
    """Per run: items answered vs expected, lost and duplicated ids."""
    from memcore.itemlog import read_run_items

    rows = []
    for job in plan.jobs:
        ids = [r["item_id"] for r in read_run_items(job.run_dir)]
        seen: set[str] = set()
        dups = sorted({i for i in ids if i in seen or seen.add(i)})  # type: ignore[func-returns-value]
        lost = sorted(set(job.expected_ids) - seen)
        extra = sorted(seen - set(job.expected_ids))
        rows.append(
            {
                "run": job.label,
                "finished": (job.run_dir / "metrics.json").is_file(),
                "expected": len(job.expected_ids),
                "answered": len(seen & set(job.expected_ids)),
                "lost": len(lost),
                "duplicated": len(dups),
                "unexpected": len(extra),
                "ok": (job.run_dir / "metrics.json").is_file() and not lost and not dups and not extra,
            }
        )
    return rows


def run_usage(job: Job) -> dict[str, Any]:
    """Transport retries (in all and by kind), parse retries and fallbacks a run counted (its last invocation's
    ``cost.json``). ``retries_by_kind`` is None for a run whose client did not count kinds (before it did)."""
    cost = read_json(job.run_dir / "cost.json") or {}
    stages = ((cost.get("usage") or {}).get("by_stage") or {}).values()
    return {
        "errors_retried": sum(int(s.get("errors_retried", 0)) for s in stages),
        "retries_by_kind": retries_by_kind(stages),
        "parse_retries": sum(int(s.get("parse_retries", 0)) for s in stages),
        "parse_failures": sum(int(s.get("parse_failures", 0)) for s in stages),
        "calls": sum(int(s.get("calls", 0)) for s in stages),
    }


def retries_by_kind(stages: Any) -> dict[str, int] | None:
    """The transport retries of ``stages`` (``UsageTracker.to_json()["by_stage"]`` values) summed per fault kind;
    None when a stage has no ``retries_by_kind`` (a client that did not count kinds: its zero is not a count)."""
    out: dict[str, int] = {}
    for s in stages:
        if "retries_by_kind" not in s:
            return None
        for kind, n in s["retries_by_kind"].items():
            out[kind] = out.get(kind, 0) + int(n)
    return out


def check_faults(plan: Plan, sim: dict[str, Any], counted_by_runs: bool = True) -> dict[str, Any]:
    """Faults injected per kind (simulator) against what the runs counted. ``counted_by_runs`` false (a resumed
    rehearsal: a killed invocation's retries are not in any ``cost.json``) checks only that faults were injected."""
    usage = [run_usage(j) for j in plan.jobs]
    injected = {k: int((sim.get("faults") or {}).get(k, 0)) for k in FAULT_KINDS}
    transport = sum(injected.values())
    retried = sum(u["errors_retried"] for u in usage)
    kinds = [u["retries_by_kind"] for u in usage]
    by_kind: dict[str, int] | None = None
    if all(k is not None for k in kinds):
        by_kind = {k: sum(int((u or {}).get(k, 0)) for u in kinds) for k in sorted({k for u in kinds for k in u or {}})}
    parse = sum(u["parse_retries"] + u["parse_failures"] for u in usage)
    wrong = int(sim.get("wrong_json", 0))
    every_kind = all(injected[k] > 0 for k in FAULT_KINDS if plan.sim[k] > 0) and (
        wrong > 0 or plan.sim["wrong_json"] == 0
    )
    # per kind when every run counted kinds: a 429 the client took for a timeout is a miscount, not a pass
    counted = (by_kind == {k: n for k, n in injected.items() if n}) if by_kind is not None else retried == transport
    ok = (every_kind and counted and parse >= wrong) if counted_by_runs else None
    return {
        "injected": {**injected, "wrong_json": wrong},
        "requests": int(sim.get("requests", 0)),
        "replies": int(sim.get("replies", 0)),
        "transport_retries_counted": retried,
        "transport_retries_by_kind": by_kind,
        "parse_retries_and_fallbacks_counted": parse,
        "fallbacks": sum(u["parse_failures"] for u in usage),
        "counted_by_runs": counted_by_runs,
        "ok": ok,
    }


#: The client's mean backoff before retrying a 500 / 503 / dropped connection (``backbone.backoff_cap_s=0.5``).
BACKOFF_S = 0.4


def fault_waits(plan: Plan) -> dict[str, float]:
    """The wait one fault of each kind adds to its call: a 429's ``Retry-After``, a read timeout's ``timeout_s``
    (the simulator hangs past it) and a backoff, a backoff after anything else (a 5xx, a dropped connection, a
    malformed body). Not scaled by the time scale: the client's timeout and backoff are real seconds."""
    return {
        "429": float(plan.retry_after_s),
        "timeout": plan.timeout_s + BACKOFF_S,
        **{k: BACKOFF_S for k in ("500", "503", "drop", "malformed", "other")},
    }


def fault_wait_per_call(plan: Plan) -> float:
    """The expected wait faults add to one call at the plan's rates (:func:`fault_waits` per kind)."""
    w = fault_waits(plan)
    return sum(plan.sim[k] * w[k] for k in FAULT_KINDS)


def measured_fault_wait(job: Job) -> float:
    """The time the faults a run met really cost its client (failed attempts plus backoff, ``retry_wait_s``
    over stages; 0 for a run whose client did not time them)."""
    stages = (((read_json(job.run_dir / "cost.json") or {}).get("usage") or {}).get("by_stage") or {}).values()
    return sum(float(s.get("retry_wait_s", 0.0)) for s in stages)


def counted_fault_wait(plan: Plan, kinds: dict[str, int]) -> float:
    """The wait the faults a run met add up to: each counted retry's kind at its :func:`fault_waits` wait."""
    w = fault_waits(plan)
    return sum(n * w.get(k, BACKOFF_S) for k, n in kinds.items())


def longest_fault_wait(plan: Plan, kinds: dict[str, int]) -> float:
    """The longest single wait among the faults counted in ``kinds`` (0 when there are none)."""
    w = fault_waits(plan)
    return max((w.get(k, BACKOFF_S) for k, n in kinds.items() if n), default=0.0)


def phase_wall(latency: float, waits: float, longest: float, lanes: int, units: int) -> float:
    """The wall of a job phase (its memory build, or its QA) whose ``units`` independent chains of calls
    (conversations, questions) take ``latency`` in all, plus ``waits`` of faults, on ``lanes`` at once: the work
    shared over the lanes, but never less than the one chain that met the ``longest`` fault (a 50 s timeout in a
    QA phase of a few seconds a lane holds that question's lane past the others)."""
    return max((latency + waits) / max(1, lanes), longest + latency / max(1, units))


def batched_wall(times: Sequence[float], parallel_jobs: int) -> float:
    """The wall of jobs taking ``times`` that Hydra launches in batches of ``parallel_jobs``, starting the next
    batch when the whole batch is done: the sum over batches of the batch's slowest job."""
    return sum(max(times[i : i + parallel_jobs]) for i in range(0, len(times), parallel_jobs))


def sweep_walls(plan: Plan, per_job: dict[str, float]) -> dict[str, float]:
    """Each sweep's wall from its jobs' times (:func:`batched_wall`)."""
    return {
        exp: batched_wall([per_job[j.label] for j in plan.jobs if j.experiment == exp], plan.parallel_jobs)
        for exp in EXPERIMENTS
    }


def predicted_wall(plan: Plan) -> dict[str, Any]:
    """The wall time the sweeps should take if LLM latency is what bounds them.

    Each call's simulated latency is ``(ttft_s + completion_tokens / tokens_per_s) × time_scale`` (the simulator's
    model), summed over the calls the endpoint served (cache hits excluded) per stage, plus each call's expected
    fault wait (:func:`fault_wait_per_call`). Within a job the memory build is sequential per conversation (each
    turn sees the notes before it) and conversations build at once, so the build takes ``build time /
    min(concurrency, conversations)``; a conversation whose snapshot another job already built (an ablation that
    does not change the build) takes none. QA runs ``concurrency`` requests in flight
    (``min(concurrency, conversations)`` for a method that answers its items in order). A phase never takes less
    than its one chain (conversation, question) that met the longest counted fault (:func:`phase_wall`). Hydra launches a sweep in
    batches of ``--jobs`` jobs and starts the next batch when the whole batch is done, so a sweep takes the sum
    over its batches of the batch's slowest job (:func:`sweep_walls`). CPU time and process start-up are not in the
    model: the check fails, honestly, when the machine rather than the endpoint bounds the sweep
    (:func:`harness_overhead` measures them)."""
    from memcore.methods import get_method

    c, n_conv = plan.concurrency, plan.conversations
    wait = fault_wait_per_call(plan)
    per_job: dict[str, float] = {}
    waits: dict[str, float] = {}
    counted_jobs = 0
    for job in plan.jobs:
        cost = read_json(job.run_dir / "cost.json") or {}
        stages = (cost.get("usage") or {}).get("by_stage") or {}
        build_kinds = retries_by_kind([v for k, v in stages.items() if k == "ingest"])
        qa_kinds = retries_by_kind([v for k, v in stages.items() if k != "ingest"])
        mb = cost.get("memory_build") or {}
        share = (mb.get("llm_calls_uncached", 0) / mb["llm_calls"]) if mb.get("llm_calls") else 0.0
        built, reused = int(mb.get("snapshots_built", 1)), int(mb.get("snapshots_reused", 0))
        built_share = built / (built + reused) if built + reused else 1.0
        lat = lambda calls, completion: (calls * plan.ttft_s + completion / plan.tokens_per_s) * plan.time_scale  # noqa: E731
        if stages and all("llm_completion_tokens" in v for v in stages.values()):
            # the invocation's own count of what the endpoint served (a whole run: the wall is only checked for
            # a sweep that was not resumed): exact where cached calls' replies differ in length from the rest
            ingest = stages.get("ingest") or {}
            build_calls = float(ingest.get("llm_calls", 0))
            build = lat(build_calls, ingest.get("llm_completion_tokens", 0))
            qa_stages = [v for k, v in stages.items() if k != "ingest"]
            qa = sum(lat(v.get("llm_calls", 0), v["llm_completion_tokens"]) for v in qa_stages)
            qa_calls = float(sum(v.get("llm_calls", 0) for v in qa_stages))
        else:  # runs from before: the served calls' completion tokens taken as the cached and served calls' mean
            build_calls = mb.get("llm_calls_uncached", 0) * built_share
            build = lat(build_calls, share * mb.get("completion_tokens", 0) * built_share)
            qa, qa_calls = 0.0, 0.0
            for s in ((cost.get("items_usage") or {}).get("by_stage") or {}).values():
                frac = (s["llm_calls"] / s["calls"]) if s.get("calls") else 0.0
                qa += lat(s.get("llm_calls", 0), frac * s.get("completion_tokens", 0))
                qa_calls += s.get("llm_calls", 0)
        build_longest = qa_longest = 0.0
        if stages and build_kinds is not None and qa_kinds is not None:
            # the faults this job met (its client counted each retry's kind): a rare 50 s timeout lands on the
            # job that met it, which the expected rate spreads thin over all of them
            build_wait, qa_wait = counted_fault_wait(plan, build_kinds), counted_fault_wait(plan, qa_kinds)
            build_longest, qa_longest = longest_fault_wait(plan, build_kinds), longest_fault_wait(plan, qa_kinds)
            counted_jobs += 1
        else:
            build_wait, qa_wait = build_calls * wait, qa_calls * wait
        qa_c = min(c, n_conv) if get_method(job.method).sequential_qa else c
        per_job[job.label] = phase_wall(build, build_wait, build_longest, min(c, n_conv), n_conv) + phase_wall(
            qa, qa_wait, qa_longest, qa_c, len(job.expected_ids)
        )
        waits[job.label] = build_wait + qa_wait
    return {
        "per_job_s": per_job,
        "per_sweep_s": sweep_walls(plan, per_job),
        "fault_waits_s": sum(waits.values()),
        "fault_waits_from": {len(plan.jobs): "counted", 0: "expected"}.get(counted_jobs, "mixed"),
    }


def harness_overhead(plan: Plan, source: Path) -> dict[str, float]:
    """Per job: the harness's own time (start-up, CPU work), measured by a rehearsal of the same scale at a small
    time scale (``source``: its dir, e.g. the default 0.02): that job's wall minus the latency
    :func:`predicted_wall` gives it there. Empty when ``source`` has no summary or another scale."""
    summary = read_json(source / "summary.json") or {}
    if summary.get("scale") != plan.scale.name or "time_scale" not in summary:
        return {}
    small = replace(
        plan,
        root=source / "root",
        jobs=[rebase(j, plan.root, source / "root") for j in plan.jobs],
        time_scale=float(summary["time_scale"]),
    )
    latency = predicted_wall(small)["per_job_s"]
    out = {}
    for job in small.jobs:
        wall = (read_json(job.run_dir / "cost.json") or {}).get("wall_s", {}).get("total")
        if wall is not None:
            out[job.label] = max(0.0, float(wall) - latency[job.label])
    return out


def check_wall(
    plan: Plan, walls: dict[str, float], sim: dict[str, Any], overhead_from: Path | None = None
) -> dict[str, Any]:
    """Measured sweep wall against :func:`predicted_wall`: the latency model alone, and with ``overhead_from``
    (a rehearsal of this scale at a small time scale) plus each job's measured harness time; ``ok`` judges the
    fuller prediction when there is one."""
    pred = predicted_wall(plan)
    predicted = sum(pred["per_sweep_s"].values())
    measured = sum(walls.values())
    ratio = measured / predicted if predicted else math.inf
    out: dict[str, Any] = {
        "measured_s": round(measured, 1),
        "predicted_s": round(predicted, 1),
        "fault_waits_s": round(pred["fault_waits_s"], 1),
        "fault_waits_from": pred["fault_waits_from"],
        "fault_waits_measured_s": round(sum(measured_fault_wait(j) for j in plan.jobs), 1),
        "per_sweep_measured_s": {k: round(v, 1) for k, v in walls.items()},
        "per_sweep_predicted_s": {k: round(v, 1) for k, v in pred["per_sweep_s"].items()},
        "per_job_predicted_s": {k: round(v, 1) for k, v in pred["per_job_s"].items()},
        "per_job_measured_s": {
            j.label: (read_json(j.run_dir / "cost.json") or {}).get("wall_s", {}).get("total") for j in plan.jobs
        },
        "ratio": round(ratio, 3),
        "ok": abs(ratio - 1.0) <= WALL_TOLERANCE,
    }
    overhead = harness_overhead(plan, overhead_from) if overhead_from is not None else {}
    if overhead:
        with_overhead = {k: v + overhead.get(k, 0.0) for k, v in pred["per_job_s"].items()}
        full = sum(sweep_walls(plan, with_overhead).values())
        out["overhead_from"] = overhead_from.name
        out["overhead_s"] = {k: round(v, 1) for k, v in overhead.items()}
        out["predicted_with_overhead_s"] = round(full, 1)
        out["ratio_with_overhead"] = round(measured / full, 3) if full else math.inf
        out["ok"] = abs(out["ratio_with_overhead"] - 1.0) <= WALL_TOLERANCE
    return out


def extrapolate_full_wall(plan: Plan) -> dict[str, Any]:
    """The wall a ``--scale full`` rehearsal would take on this machine at this load, from this one's: each job's
    measured wall (``cost.json``) scaled by (LoCoMo's turns + questions) / (this slice's), the sweeps' batches of
    ``--jobs`` summed by :func:`batched_wall`. Linear in the work: right when CPU bounds the jobs (as on a
    busy 2-core machine), pessimistic when LLM latency does (full LoCoMo's ten conversations build at once)."""
    from memcore.report.estimate import LOCOMO_QUESTIONS, LOCOMO_TURNS

    factor = (LOCOMO_TURNS + LOCOMO_QUESTIONS) / max(1, plan.turns + plan.questions)
    total = 0.0
    for exp in EXPERIMENTS:
        times = [
            float((read_json(j.run_dir / "cost.json") or {}).get("wall_s", {}).get("total") or 0.0) * factor
            for j in plan.jobs
            if j.experiment == exp
        ]
        total += batched_wall(times, plan.parallel_jobs)
    return {"factor": round(factor, 2), "wall_s": round(total), "hours": round(total / 3600, 1)}


def needed_tokens(rates: Any, turns: int, questions: int) -> float:
    """Tokens (prompt + completion) a run of ``turns`` turns and ``questions`` questions needed, from its
    :class:`memcore.report.estimate.Rates` (their mean per-turn and per-question rates)."""
    per_turn = rates.prompt_per_turn + rates.completion_per_turn
    per_question = rates.prompt_per_question + rates.completion_per_question
    return per_turn * turns + per_question * questions


def check_estimate(plan: Plan, source: Path | None) -> dict[str, Any]:
    """Per run: the token estimate :func:`memcore.report.estimate.estimate` makes from the same run of the
    ``source`` (smaller) rehearsal for this rehearsal's conversations and questions, against the tokens this
    rehearsal's run needed (build + QA calls, cache hits included on both sides: the estimate counts what a method
    needs; a run of a sweep whose calls another run already made is served by the shared cache). The build is
    estimated growth-aware from the source's per-turn trace (each target conversation: the source's measured
    prefix, then its tail rate), ``full_context``'s prompt with the mean whole-conversation context of the
    target; for ``--scale full`` that is exactly what the estimate prints for all of LoCoMo."""
    from memcore.config import load_backbone_preset
    from memcore.report.collect import load_run
    from memcore.report.estimate import (
        estimate,
        estimated_as,
        full_conversation_tokens,
        measured_rates,
        run_image_captions,
    )

    if source is None or not (source / "root" / "runs").is_dir():
        return {"ok": None, "note": "no smaller rehearsal to estimate from (--estimate-from DIR)"}
    budget = int(load_backbone_preset(BACKBONE).context_budget_tokens)
    conversations = load_scale_slice(plan.scale).conversations
    lengths = [len(c.turns) for c in conversations]
    rows = []
    fc_tokens: float | None = None
    for job in plan.jobs:
        pattern = f"{job.experiment}/*/{BACKBONE}/amem/{job.method}/{job.ablation}"
        src_dir = next(iter(sorted((source / "root" / "runs").glob(pattern))), None)
        if src_dir is None or not (src_dir / "metrics.json").is_file() or not (job.run_dir / "metrics.json").is_file():
            continue
        rates = measured_rates(load_run(src_dir))
        if job.method == "full_context" and fc_tokens is None:
            fc_tokens = full_conversation_tokens(
                budget, conversations, run_image_captions(load_run(job.run_dir).config)
            )
        target = {
            "method": estimated_as(job.method, load_run(job.run_dir).config),
            "full_context_tokens": fc_tokens if job.method == "full_context" else None,
            "conversation_turns": lengths,
            "questions": plan.questions,
        }
        est = estimate(rates, **target)
        est_tokens = est["prompt_tokens"] + est["completion_tokens"]
        flat_est = estimate(replace(rates, curves=()), **target)  # the mean per-turn rate, as before the trace
        flat = flat_est["prompt_tokens"] + flat_est["completion_tokens"]
        actual = measured_rates(load_run(job.run_dir))
        act_tokens = needed_tokens(actual, actual.turns, actual.questions)
        err = est_tokens / act_tokens - 1 if act_tokens else math.inf
        rows.append(
            {
                "run": job.label,
                "estimated_tokens": round(est_tokens),
                "estimated_tokens_upper": round(est["prompt_tokens_upper"] + est["completion_tokens_upper"]),
                "flat_rate_tokens": round(flat),
                "build_growth": "traced" if rates.curves else "flat",
                "actual_tokens": round(act_tokens),
                "error": round(err, 4),
                "flat_rate_error": round(flat / act_tokens - 1, 4) if act_tokens else None,
                "ok": abs(err) <= ESTIMATE_TOLERANCE,
            }
        )
    return {"source": source.name, "rows": rows, "ok": bool(rows) and all(r["ok"] for r in rows)}


def comparable_metrics(run_dir: Path) -> dict[str, Any]:
    """A run's ``metrics.json`` without :data:`VOLATILE_METRICS` (the rest is a function of the items)."""
    m = read_json(run_dir / "metrics.json") or {}
    return {k: v for k, v in m.items() if k not in VOLATILE_METRICS}


def compare_runs(plan: Plan, reference_root: Path) -> dict[str, Any]:
    """Every run's comparable metrics against the same run of the reference rehearsal."""
    rows = []
    for job in plan.jobs:
        ref = reference_root / job.run_dir.relative_to(plan.root)
        a, b = comparable_metrics(job.run_dir), comparable_metrics(ref)
        differ = sorted(
            k for k in set(a) | set(b) if json.dumps(a.get(k), sort_keys=True) != json.dumps(b.get(k), sort_keys=True)
        )
        rows.append({"run": job.label, "identical": bool(a) and not differ, "differing_keys": differ})
    return {"rows": rows, "excluded": list(VOLATILE_METRICS), "ok": all(r["identical"] for r in rows)}


def write_reports(plan: Plan, work: Path) -> dict[str, str]:
    """``memcore-report`` in the main layout over paper_main and the ablation layout over paper_ablation."""
    from memcore.report.cli import main as report_main

    out = {}
    for exp, layout in (("paper_main", "main"), ("paper_ablation", "ablation")):
        dest = work / "report" / exp
        args = [str(plan.root / "runs" / exp), "--layout", layout, "--out", str(dest), "--quiet", "--n-boot", "200"]
        rc = report_main([*args, "--no-plots"])
        if rc != 0:
            raise RehearsalError(f"memcore-report {' '.join(args)} exited {rc}")
        out[exp] = str(dest.relative_to(work))
    return out


# ------------------------------------------------------------------------------------------------ summary
def summary_markdown(s: dict[str, Any]) -> str:
    mark = lambda ok: "pass" if ok else ("n/a" if ok is None else "FAIL")  # noqa: E731
    lines = [f"# Rehearsal of the paper sweep, scale `{s['scale']}`", ""]
    lines += [f"Command: `{s['command']}`", ""]
    lines += [
        f"Slice: {s['slice']['conversations']} conversation(s), {s['slice']['turns']} turns, "
        f"{s['slice']['questions']} QA per run; {len(s['items'])} runs; simulator time scale {s['time_scale']}, "
        f"faults {s['fault_rates']}; {s['parallel_jobs']} jobs at once, concurrency {s['concurrency']} per job.",
        "",
        "| check | result | numbers |",
        "|---|---|---|",
    ]
    items = s["items"]
    c = s["checks"]
    lines.append(f"| every job finished | {mark(c['jobs'])} | {sum(r['finished'] for r in items)}/{len(items)} |")
    lines.append(
        f"| items answered = expected, 0 lost, 0 duplicated | {mark(c['items'])} | "
        f"{sum(r['answered'] for r in items)}/{sum(r['expected'] for r in items)} answered, "
        f"{sum(r['lost'] for r in items)} lost, {sum(r['duplicated'] for r in items)} duplicated |"
    )
    f = s["faults"]
    lines.append(
        f"| faults survived and counted | {mark(f['ok'])} | injected {f['injected']} over {f['requests']} requests; "
        f"transport retries counted {f['transport_retries_counted']}"
        + (f" {f['transport_retries_by_kind']}" if f.get("transport_retries_by_kind") is not None else "")
        + ", parse retries + fallbacks "
        f"{f['parse_retries_and_fallbacks_counted']} (fallbacks {f['fallbacks']}) |"
    )
    w = s.get("wall")
    if w and "measured_s" not in w:
        lines.append(f"| wall vs calls × latency / concurrency | n/a | {w.get('note', '')} |")
    elif w:
        lines.append(
            f"| wall vs calls × latency / concurrency (±{int(WALL_TOLERANCE * 100)} %) | {mark(w['ok'])} | "
            f"measured {w['measured_s']} s, predicted {w['predicted_s']} s (ratio {w['ratio']}; fault waits "
            f"{w['fault_waits_s']} s from the {w.get('fault_waits_from', 'expected')} faults"
            + (f", {w['fault_waits_measured_s']} s timed by the client" if w.get("fault_waits_measured_s") else "")
            + ")"
            + (
                f"; with each job's harness time from `{w['overhead_from']}`: {w['predicted_with_overhead_s']} s "
                f"(ratio {w['ratio_with_overhead']})"
                if "predicted_with_overhead_s" in w
                else ""
            )
            + " |"
        )
    if w and w.get("ratio", 0) > 1 + WALL_TOLERANCE and not w.get("ok"):
        lines.append(
            "| (reading) | | the sweep took longer than its LLM latency explains: the jobs' start-up and the "
            "harness's own CPU work, not the endpoint, bound it on this machine (raise --time-scale to rehearse a "
            "latency-bound sweep) |"
        )
    e = s.get("estimate") or {}
    lines.append(
        f"| token estimate vs actual, per method (±{int(ESTIMATE_TOLERANCE * 100)} %) | {mark(e.get('ok'))} | "
        + (
            "; ".join(
                f"{r['run']}: {100 * r['error']:+.1f} %"
                + (f" (flat rate {100 * r['flat_rate_error']:+.1f} %)" if r.get("build_growth") == "traced" else "")
                for r in e.get("rows", [])
            )
            if e.get("rows")
            else e.get("note", "")
        )
        + " |"
    )
    r = s.get("resume")
    if r:
        lines.append(
            f"| kill -9 at {r['kill_at']} of the items, rerun, metrics = uninterrupted | {mark(r['ok'])} | "
            f"killed at {r['items_at_kill']}/{r['items_expected']} items; resumed rc {r['resume_rc']}; "
            f"{sum(x['identical'] for x in r['compare']['rows'])}/{len(r['compare']['rows'])} runs identical "
            f"(excluded: {', '.join(r['compare']['excluded'])}) |"
        )
    fw = s.get("full_wall_extrapolated")
    if fw:
        lines += [
            "",
            f"Full LoCoMo on this machine at this load, extrapolated linearly from these jobs' walls (x{fw['factor']}): "
            f"about {fw['hours']} h.",
        ]
    lines += ["", "## Runs", "", "| run | answered / expected | lost | duplicated | calls | USD (list price) |"]
    lines.append("|---|---:|---:|---:|---:|---:|")
    for row in items:
        sp = s["spend"].get(row["run"], {})
        lines.append(
            f"| {row['run']} | {row['answered']}/{row['expected']} | {row['lost']} | {row['duplicated']} | "
            f"{sp.get('calls', 0):,.0f} | {sp.get('usd', 0):.4f} |"
        )
    lines += [
        "",
        f"Total at list price: USD {s['usd_total']:.2f}. Replies are the simulator's: scores mean nothing.",
        "",
    ]
    return "\n".join(lines)


def rehearse(
    plan: Plan,
    work: Path,
    out: Callable[[str], None],
    *,
    estimate_from: Path | None,
    overhead_from: Path | None = None,
) -> dict[str, Any]:
    """One rehearsal into ``work`` (resumes whatever is there); the summary dict (not yet written)."""
    from memcore.config import load_backbone_preset

    ran = run_sweeps(plan, work, out)
    sim = ran["simulator"]
    items = check_items(plan)
    b = load_backbone_preset(BACKBONE)
    spend = {
        j.label: run_spend(
            read_json(j.run_dir / "cost.json") or {}, float(b.price_in_per_mtok), float(b.price_out_per_mtok)
        )
        for j in plan.jobs
    }
    resumed = bool(ran["resumed"])
    faults = check_faults(plan, sim, counted_by_runs=not resumed)
    summary: dict[str, Any] = {
        "scale": plan.scale.name,
        "slice": {"conversations": plan.conversations, "turns": plan.turns, "questions": plan.questions},
        "time_scale": plan.time_scale,
        "fault_rates": plan.sim,
        "parallel_jobs": plan.parallel_jobs,
        "concurrency": plan.concurrency,
        "items": items,
        "faults": faults,
        "spend": spend,
        "usd_total": sum(v["usd"] for v in spend.values()),
        "resumed": resumed,
        "wall": check_wall(plan, ran["wall_s"], sim, overhead_from)
        if not resumed
        else {"ok": None, "note": "resumed: not timed"},
        "estimate": check_estimate(plan, estimate_from),
        "simulator": {k: v for k, v in sim.items() if k != "config"},
    }
    if not resumed and plan.scale.name != "full":
        summary["full_wall_extrapolated"] = extrapolate_full_wall(plan)
    summary["report"] = write_reports(plan, work)
    return summary


def finish_checks(summary: dict[str, Any]) -> dict[str, Any]:
    items = summary["items"]
    checks = {
        "jobs": all(r["finished"] for r in items),
        "items": all(r["ok"] for r in items),
        "faults": summary["faults"]["ok"],
        "wall": (summary.get("wall") or {}).get("ok"),
        "estimate": (summary.get("estimate") or {}).get("ok"),
    }
    if summary.get("resume"):
        checks["resume"] = summary["resume"]["ok"]
    summary["checks"] = checks
    summary["ok"] = all(checks[k] is not False for k in FATAL_CHECKS if k in checks)
    return summary


# ------------------------------------------------------------------------------------------------ kill -9
def child_command(args: argparse.Namespace, work_name: str) -> list[str]:
    """This rehearsal without ``--kill-at``, into ``<results>/<work_name>``: what the kill check runs, kills and
    reruns."""
    cmd = [sys.executable, "-m", "experiments.rehearsal", "--scale", args.scale, "--results", str(args.results)]
    cmd += ["--jobs", str(args.jobs), "--concurrency", str(args.concurrency)]
    if args.timeout_s is not None:
        cmd += ["--timeout-s", str(args.timeout_s)]
    if args.time_scale is not None:
        cmd += ["--time-scale", str(args.time_scale)]
    for f in args.fault or []:
        cmd += ["--fault", f]
    for o in args.override or []:
        cmd += ["--override", o]
    return [*cmd, "--no-estimate", "--quiet", "--work-name", work_name]


def kill_check(plan: Plan, args: argparse.Namespace, out: Callable[[str], None]) -> dict[str, Any]:
    """Run the rehearsal into ``<results>/<scale>-killed`` in its own process group, SIGKILL the whole group
    (driver, simulator, Hydra launcher, submitit jobs) once ``--kill-at`` of all expected items are written, run
    the same command again; then compare every run with the uninterrupted rehearsal's (:func:`compare_runs`)."""
    name = f"{args.scale}-killed"
    killed = Path(args.results).resolve() / name
    shutil.rmtree(killed, ignore_errors=True)
    killed.mkdir(parents=True)
    kplan = Plan(
        **{**plan.__dict__, "root": killed / "root", "jobs": [rebase(j, plan.root, killed / "root") for j in plan.jobs]}
    )
    cmd = child_command(args, name)
    target = max(1, math.ceil(args.kill_at * kplan.expected_items))
    t0 = time.monotonic()
    with open(killed / "first_invocation.log", "ab") as log:
        proc = subprocess.Popen(cmd, cwd=REPO, env=child_env(), stdout=log, stderr=log, start_new_session=True)
        try:
            while sum(count_lines(j.run_dir / "items.jsonl") for j in kplan.jobs) < target and proc.poll() is None:
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    at_kill = sum(count_lines(j.run_dir / "items.jsonl") for j in kplan.jobs)
    first_s = time.monotonic() - t0
    out(
        f"kill -9 of the whole sweep at {at_kill}/{kplan.expected_items} items after {first_s:.0f} s; same command again"
    )
    t1 = time.monotonic()
    with open(killed / "second_invocation.log", "ab") as log:
        again = subprocess.run(cmd, cwd=REPO, env=child_env(), stdout=log, stderr=log, check=False)
    compare = compare_runs(kplan, plan.root)
    items = check_items(kplan)
    resumed = read_json(killed / "summary.json") or {}
    was_killed = proc.returncode == -signal.SIGKILL
    ok = was_killed and 0 < at_kill < kplan.expected_items and again.returncode == 0 and compare["ok"]
    ok = ok and all(r["ok"] for r in items)
    return {
        "kill_at": args.kill_at,
        "items_at_kill": at_kill,
        "items_expected": kplan.expected_items,
        "killed_by_sigkill": was_killed,
        "first_invocation_s": round(first_s, 1),
        "second_invocation_s": round(time.monotonic() - t1, 1),
        "resume_rc": again.returncode,
        "resumed_checks": resumed.get("checks"),
        "resumed_items_ok": all(r["ok"] for r in items),
        "compare": compare,
        "ok": ok,
    }


def rebase(job: Job, old: Path, new: Path) -> Job:
    return Job(job.experiment, job.method, job.ablation, new / job.run_dir.relative_to(old), job.expected_ids)


# ------------------------------------------------------------------------------------------------ CLI
def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m experiments.rehearsal", description=__doc__.split("\n\n")[0])
    p.add_argument("--scale", choices=sorted(SCALES), default="quick", help="tiny (tests), quick, conv or full")
    p.add_argument("--results", type=Path, default=DEFAULT_RESULTS, help=f"results dir (default {DEFAULT_RESULTS})")
    p.add_argument("--jobs", type=int, default=2, help="jobs at once (hydra.sweeper.max_batch_size; >= 2)")
    p.add_argument("--concurrency", type=int, default=4, help="LLM requests in flight per job")
    p.add_argument("--time-scale", type=float, default=None, help="simulator latency scale (default: the scale's)")
    p.add_argument(
        "--timeout-s",
        type=float,
        default=None,
        help="client read timeout (the timeout fault outlasts it; default: max(5 s, a 4,000-token reply's latency))",
    )
    p.add_argument(
        "--fault",
        action="append",
        default=None,
        metavar="KIND=RATE",
        help=f"a fault rate (kinds {', '.join(DEFAULT_RATES)}; defaults {DEFAULT_RATES})",
    )
    p.add_argument("--kill-at", type=float, default=None, help="also run the kill -9 / resume check at this fraction")
    p.add_argument("--estimate-from", type=Path, default=None, help="a smaller rehearsal's dir to estimate tokens from")
    p.add_argument("--no-estimate", action="store_true", help="skip the token estimate check")
    p.add_argument(
        "--overhead-from",
        type=Path,
        default=None,
        help="a rehearsal of this scale at a small time scale: adds each job's harness time to the wall prediction",
    )
    p.add_argument("--fresh", action="store_true", help="delete this scale's earlier results first (else resume)")
    p.add_argument("--override", action="append", default=None, help="an extra memcore-run override (repeat)")
    p.add_argument("--quiet", action="store_true", help="no progress lines (the summary is still written)")
    p.add_argument("--work-name", default=None, help=argparse.SUPPRESS)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    out: Callable[[str], None] = (lambda _: None) if args.quiet else (lambda line: print(line, flush=True))
    if args.jobs < 2 or args.concurrency < 1:
        print("error: --jobs must be >= 2 and --concurrency >= 1", file=sys.stderr)
        return 2
    if args.kill_at is not None and not 0.0 < args.kill_at < 1.0:
        print("error: --kill-at must be in (0, 1)", file=sys.stderr)
        return 2
    scale = SCALES[args.scale]
    work = Path(args.results).resolve() / (args.work_name or args.scale)
    if args.fresh:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    try:
        plan = make_plan(scale, work / "root", args)
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    estimate_from = None
    if not args.no_estimate:
        estimate_from = args.estimate_from or (Path(args.results).resolve() / scale.smaller if scale.smaller else None)
    command = "python -m experiments.rehearsal " + " ".join(
        a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith(str(REPO))
    )
    out(f"rehearsal {scale.name}: {len(plan.jobs)} runs × {plan.questions} QA = {plan.expected_items} items -> {work}")
    earlier = read_json(work / "summary.json")
    try:
        if args.kill_at is not None and earlier and (earlier.get("checks") or {}).get("items"):
            out(f"{work / 'summary.json'}: the rehearsal is complete; adding the kill -9 check against it")
            summary = {k: v for k, v in earlier.items() if k not in ("checks", "ok", "resume")}
        else:
            summary = rehearse(plan, work, out, estimate_from=estimate_from, overhead_from=args.overhead_from)
        if args.kill_at is not None:
            summary["resume"] = kill_check(plan, args, out)
    except RehearsalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    summary.setdefault("command", command.strip())
    if args.kill_at is not None:
        summary["resume_command"] = command.strip()
    summary = finish_checks(summary)
    (work / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    md = summary_markdown(summary)
    (work / "summary.md").write_text(md)
    if not args.quiet:
        print(md)
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

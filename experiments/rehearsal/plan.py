"""What a rehearsal runs: its scales (slice, methods, ablations, simulator time scale and fault rates), the jobs of
both sweeps and where each writes, and the client timeout the simulator's latency model needs."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from memcore.config import CONFIG_DIR
from memcore.pipeline.load import load_slice

#: The repository root: the sweeps run from it, with it first on PYTHONPATH.
REPO = Path(__file__).resolve().parents[2]
DEFAULT_RESULTS = REPO / "results" / "rehearsal"
EXPERIMENTS = ("paper_main", "paper_ablation")
BACKBONE = "gpt-4o-mini"
FAULT_KINDS = ("429", "500", "503", "drop", "timeout")
DEFAULT_RATES = {"429": 0.02, "500": 0.02, "503": 0.01, "drop": 0.01, "timeout": 0.005, "wrong_json": 0.02}


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
    """``v`` as a Hydra override value (booleans lower case, sequences as ``[a,b]``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list | tuple):
        return "[" + ",".join(str(x) for x in v) + "]"
    return str(v)


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
    cfg = OmegaConf.load(CONFIG_DIR / "experiment" / f"{experiment}.yaml")
    return tuple(v.strip() for v in str(cfg.hydra.sweeper.params[key]).split(",") if v.strip())


def load_scale_slice(scale: Scale) -> Any:
    """The slice a scale's runs evaluate, loaded the way a run loads it (``configs/dataset/locomo.yaml`` + the
    scale's dataset overrides)."""
    ds = OmegaConf.merge(OmegaConf.load(CONFIG_DIR / "dataset" / "locomo.yaml"), scale.dataset)
    return load_slice(ds)


def make_plan(scale: Scale, root: Path, args: argparse.Namespace) -> Plan:
    """The plan of a rehearsal at ``scale`` into ``root``: both sweeps' jobs over the scale's slice, with the fault
    rates, time scale, concurrency, jobs at once and timeout of ``args`` (the CLI's options). Raises ValueError on a
    bad ``--fault``."""
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


def rebase(job: Job, old: Path, new: Path) -> Job:
    """``job`` with its run dir moved from under ``old`` to the same place under ``new``."""
    return Job(job.experiment, job.method, job.ablation, new / job.run_dir.relative_to(old), job.expected_ids)

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

Modules, one responsibility each: :mod:`.plan` (scales, jobs, the plan), :mod:`.sweep` (the simulator and the sweep
processes), :mod:`.progress` (progress lines), :mod:`.runs` (what a run dir says: items, spend, retries),
:mod:`.checks` (items, faults, estimate, resume comparison), :mod:`.wall` (the wall-time model and check),
:mod:`.report` (``memcore-report`` and ``summary.md``), :mod:`.run` (one rehearsal), :mod:`.killcheck` (kill -9 and
resume), :mod:`.cli` (the command line). Their public names are re-exported here.
"""

from experiments.rehearsal.checks import (
    ESTIMATE_TOLERANCE,
    FATAL_CHECKS,
    VOLATILE_METRICS,
    check_estimate,
    check_faults,
    check_items,
    comparable_metrics,
    compare_runs,
    finish_checks,
    needed_tokens,
)
from experiments.rehearsal.cli import build_parser, main
from experiments.rehearsal.killcheck import child_command, kill_check
from experiments.rehearsal.plan import (
    BACKBONE,
    DEFAULT_RATES,
    DEFAULT_RESULTS,
    EXPERIMENTS,
    FAULT_KINDS,
    LONGEST_REPLY_TOKENS,
    REPO,
    SCALES,
    Job,
    Plan,
    Scale,
    default_timeout_s,
    load_scale_slice,
    make_plan,
    rebase,
    sweep_values,
)
from experiments.rehearsal.progress import FALLBACK_WARN, Progress
from experiments.rehearsal.report import summary_markdown, write_reports
from experiments.rehearsal.run import rehearse
from experiments.rehearsal.runs import count_lines, read_json, retries_by_kind, run_spend, run_usage
from experiments.rehearsal.sweep import (
    DUMMY_KEY,
    RehearsalError,
    child_env,
    descendants,
    run_sweeps,
    simulator_command,
    simulator_stats,
    start_simulator,
    stop_simulator,
    sweep_command,
    sweep_failure,
    terminate_tree,
)
from experiments.rehearsal.wall import (
    BACKOFF_S,
    WALL_TOLERANCE,
    batched_wall,
    check_wall,
    counted_fault_wait,
    extrapolate_full_wall,
    fault_wait_per_call,
    fault_waits,
    harness_overhead,
    longest_fault_wait,
    measured_fault_wait,
    phase_wall,
    predicted_wall,
    sweep_walls,
)

__all__ = [
    "BACKBONE",
    "BACKOFF_S",
    "DEFAULT_RATES",
    "DEFAULT_RESULTS",
    "DUMMY_KEY",
    "ESTIMATE_TOLERANCE",
    "EXPERIMENTS",
    "FALLBACK_WARN",
    "FATAL_CHECKS",
    "FAULT_KINDS",
    "LONGEST_REPLY_TOKENS",
    "REPO",
    "SCALES",
    "VOLATILE_METRICS",
    "WALL_TOLERANCE",
    "Job",
    "Plan",
    "Progress",
    "RehearsalError",
    "Scale",
    "batched_wall",
    "build_parser",
    "check_estimate",
    "check_faults",
    "check_items",
    "check_wall",
    "child_command",
    "child_env",
    "comparable_metrics",
    "compare_runs",
    "count_lines",
    "counted_fault_wait",
    "default_timeout_s",
    "descendants",
    "extrapolate_full_wall",
    "fault_wait_per_call",
    "fault_waits",
    "finish_checks",
    "harness_overhead",
    "kill_check",
    "load_scale_slice",
    "longest_fault_wait",
    "main",
    "make_plan",
    "measured_fault_wait",
    "needed_tokens",
    "phase_wall",
    "predicted_wall",
    "read_json",
    "rebase",
    "rehearse",
    "retries_by_kind",
    "run_spend",
    "run_sweeps",
    "run_usage",
    "simulator_command",
    "simulator_stats",
    "start_simulator",
    "stop_simulator",
    "summary_markdown",
    "sweep_command",
    "sweep_failure",
    "sweep_values",
    "sweep_walls",
    "terminate_tree",
    "write_reports",
]

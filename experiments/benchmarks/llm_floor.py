"""LLM-mode runs against their token floor: the installed llama.cpp build's prompt and generation rates for each
shipped model, measured on this machine in the same session as the run they judge.

- **rates**: for each model, a llama.cpp server started as a run starts it (all cores, ``logits_all`` off)
  evaluates prompts of about 128, 512 and 1,536 tokens (one new token each, a distinct first token so that no
  prefix is reused) and generates 64 tokens, plainly and under the JSON grammar a run's ``json`` requests use.
  Every figure comes from the server's own accounting (the ``llama_perf_context_print`` lines of its log): prompt
  tokens evaluated and their milliseconds, tokens generated and theirs, and the request's total, whose excess over
  the two is sampling (the grammar included) and bookkeeping.
- **run**: ``memcore-run experiment=quickstart`` (locomo-quick, MemCoRe's LLM gate, the 0.5B model) into an empty
  results root (``--run``), or a finished run dir (``--run-dir``). Its **token floor** is the time its own
  requests need at the measured rates: every request's evaluated prompt tokens (after prefix reuse, from the
  run's ``llama_server.log``) at the prompt rate for that length, plus its generated tokens at the generation
  rate. The wall (``stats.json`` ``timing``) is reported against it, and the time outside the model is split:
  by stage (each stage's seconds minus its LLM calls' latency, ``cost.json``), and inside the LLM calls into
  model compute, sampling and bookkeeping in the server, and the rest of each request's latency (HTTP, chat
  template, tokenisation, the client).

Rates are measured before and after the run and averaged, with the load average beside each: the ratio of a run
to a floor measured in the same session is what holds on a shared machine.

    python -m experiments.benchmarks.llm_floor                          # rates of both models
    python -m experiments.benchmarks.llm_floor --run                    # + a cold locomo-quick run (~10 min idle)
    python -m experiments.benchmarks.llm_floor --run-dir <run dir>      # + a finished run
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from experiments.benchmarks.common import RESULTS_DIR, machine_state, md_table, write_result
from memcore.llm.local_model import GGUF_MODELS, ModelNotFoundError, resolve_gguf
from memcore.llm.local_server import LlamaCppServer

MODELS = ("qwen2.5-coder-0.5b-instruct-q4_k_m", "qwen2.5-coder-1.5b-instruct-q4_k_m")
PROMPT_SIZES = (128, 512, 1536)
GEN_TOKENS = 64
TARGET_RATIO = 1.2
#: the CPU flags that decide which llama.cpp kernels can run
KEY_FLAGS = ("avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f", "avx512bw", "avx512vl", "avx512_vnni")
KEY_FLAGS += ("avx512vbmi", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16")
#: a run's usage stage -> the timing stage its calls happen in
USAGE_STAGE_OF = {"ingest": "build", "retrieve": "retrieve", "answer": "answer", "judge": "score"}

_PERF = re.compile(r"llama_perf_context_print:\s+(prompt eval|eval|total) time =\s*([\d.]+) ms /\s*(\d+)")
_FILLER = (
    "Caroline went to the LGBTQ support group on Tuesday and told Melanie about the painting she started, a sunset"
    " over the lake near her grandmother's house, which she wants to finish before the summer camping trip. "
)


@dataclass(frozen=True)
class Request:
    """One completion in a llama.cpp server's log: prompt tokens evaluated (after any prefix reuse) and their
    milliseconds, tokens generated and theirs, and the request's total milliseconds."""

    prompt_tokens: int
    prompt_ms: float
    gen_tokens: int
    gen_ms: float
    total_ms: float

    @property
    def other_ms(self) -> float:
        """Server time that is neither prompt evaluation nor generation: sampling (a grammar's too), bookkeeping."""
        return max(0.0, self.total_ms - self.prompt_ms - self.gen_ms)


def parse_server_log(text: str) -> list[Request]:
    """Every request of a llama.cpp server log, from its ``llama_perf_context_print`` lines (one group per
    completion: prompt eval, eval, total). A group without its total (a log cut short) is dropped."""
    out: list[Request] = []
    current: dict[str, tuple[float, int]] = {}
    for m in _PERF.finditer(text):
        kind, ms, n = m.group(1), float(m.group(2)), int(m.group(3))
        current[kind] = (ms, n)
        if kind == "total":
            p_ms, p_n = current.get("prompt eval", (0.0, 0))
            g_ms, g_n = current.get("eval", (0.0, 0))
            out.append(Request(p_n, p_ms, g_n, g_ms, ms))
            current = {}
    return out


@dataclass(frozen=True)
class Rates:
    """A model's measured rates: prompt tokens per second by prompt length (``prompt_curve``: (tokens, rate)
    sorted by tokens), generated tokens per second, and the server's other time per generated token with and
    without the JSON grammar."""

    prompt_curve: tuple[tuple[int, float], ...]
    gen_rate: float
    other_ms_per_token_plain: float
    other_ms_per_token_json: float

    def prompt_rate(self, tokens: int) -> float:
        """The prompt rate at ``tokens``: linear in log(tokens) between measured lengths, the nearest outside."""
        sizes = [s for s, _ in self.prompt_curve]
        rates = [r for _, r in self.prompt_curve]
        if tokens <= sizes[0]:
            return rates[0]
        if tokens >= sizes[-1]:
            return rates[-1]
        i = bisect.bisect_left(sizes, tokens)
        lo, hi = sizes[i - 1], sizes[i]
        w = (math.log(tokens) - math.log(lo)) / (math.log(hi) - math.log(lo))
        return rates[i - 1] + w * (rates[i] - rates[i - 1])


def token_floor_s(requests: Iterable[Request], rates: Rates) -> float:
    """Seconds the requests need at ``rates``: each one's evaluated prompt tokens at the prompt rate for its
    length, plus its generated tokens at the generation rate."""
    total = 0.0
    for r in requests:
        if r.prompt_tokens:
            total += r.prompt_tokens / rates.prompt_rate(r.prompt_tokens)
        total += r.gen_tokens / rates.gen_rate
    return total


def mean_rates(measured: Sequence[Rates]) -> Rates:
    """The mean of rate measurements of one model (before and after a run)."""
    sizes = [s for s, _ in measured[0].prompt_curve]
    curve = tuple((s, sum(m.prompt_rate(s) for m in measured) / len(measured)) for s in sizes)
    return Rates(
        curve,
        sum(m.gen_rate for m in measured) / len(measured),
        sum(m.other_ms_per_token_plain for m in measured) / len(measured),
        sum(m.other_ms_per_token_json for m in measured) / len(measured),
    )


# -- the machine and the build ---------------------------------------------------------------------------------


def cpu_info() -> dict[str, Any]:
    """The CPU's model name, family, core count and the instruction-set flags that matter to llama.cpp."""
    info: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, sep, value = line.partition(":")
            if sep and key.strip() not in info:
                info[key.strip()] = value.strip()
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    return {
        "model_name": info.get("model name", "unknown"),
        "vendor": info.get("vendor_id", "unknown"),
        "family": info.get("cpu family", "unknown"),
        "cores": os.cpu_count(),
        "flags": [f for f in KEY_FLAGS if f in flags],
    }


def build_info(python: str) -> dict[str, str]:
    """The installed llama-cpp-python's version and its library's own system-info line (what it was built for)."""
    code = "import llama_cpp; print(llama_cpp.__version__); print(llama_cpp.llama_print_system_info().decode())"
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    return {"llama_cpp_python": out[0].strip(), "system_info": " ".join(out[1:]).strip()}


# -- rates -----------------------------------------------------------------------------------------------------


def _post(base_url: str, path: str, body: dict[str, Any], timeout_s: float = 900.0) -> dict[str, Any]:
    req = urllib.request.Request(
        f"{base_url}{path}", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout_s) as resp:
        return json.loads(resp.read())


def _prompt(tokens: int, salt: int) -> str:
    """About ``tokens`` tokens of conversation-like text whose first token differs with ``salt`` (no prefix reuse)."""
    words = f"{salt * 7919 % 100003} " + _FILLER * max(1, round(tokens / 44))
    return words


def measure_rates(model: str, log_path: Path, reps: int, threads: int | None) -> tuple[Rates, dict[str, Any]]:
    """Start a server on ``model`` as a run does and measure its rates (see the module doc); returns them with
    the raw per-request figures."""

    log_path.unlink(missing_ok=True)
    server = LlamaCppServer(resolve_gguf(model), n_ctx=4096, threads=threads, alias=model, log_path=log_path)
    load_before = machine_state()["loadavg_1_5_15"]
    with server:
        base = server.base_url
        _post(base, "/completions", {"prompt": "Hello", "max_tokens": 1, "temperature": 0})  # warm-up
        salt = 0
        for size in PROMPT_SIZES:
            for _ in range(reps):
                salt += 1
                _post(base, "/completions", {"prompt": _prompt(size, salt), "max_tokens": 1, "temperature": 0})
        ask = 'List the numbers from one to three hundred, in words, as a JSON object {"numbers": [...]}.'
        for json_mode in (False, True):
            for _ in range(reps):
                salt += 1
                body: dict[str, Any] = {
                    "messages": [{"role": "user", "content": f"({salt}) {ask}"}],
                    "max_tokens": GEN_TOKENS,
                    "temperature": 0,
                }
                if json_mode:
                    body["response_format"] = {"type": "json_object"}
                _post(base, "/chat/completions", body)
    reqs = parse_server_log(log_path.read_text(errors="replace"))[1:]  # the warm-up is not counted
    n_prompt = len(PROMPT_SIZES) * reps
    if len(reqs) != n_prompt + 2 * reps:
        raise RuntimeError(f"{log_path}: expected {n_prompt + 2 * reps} timed requests, found {len(reqs)}")
    prompt_reqs, plain, as_json = reqs[:n_prompt], reqs[n_prompt : n_prompt + reps], reqs[n_prompt + reps :]
    curve = []
    for i in range(len(PROMPT_SIZES)):
        group = prompt_reqs[i * reps : (i + 1) * reps]
        tokens = sum(r.prompt_tokens for r in group)
        curve.append((round(tokens / reps), tokens / (sum(r.prompt_ms for r in group) / 1000)))
    gen = plain + as_json
    rates = Rates(
        tuple(curve),
        sum(r.gen_tokens for r in gen) / (sum(r.gen_ms for r in gen) / 1000),
        sum(r.other_ms for r in plain) / max(1, sum(r.gen_tokens for r in plain)),
        sum(r.other_ms for r in as_json) / max(1, sum(r.gen_tokens for r in as_json)),
    )
    raw = {
        "load_before": load_before,
        "load_after": machine_state()["loadavg_1_5_15"],
        "threads": server.threads,
        "requests": [asdict(r) for r in reqs],
    }
    return rates, raw


# -- a run -----------------------------------------------------------------------------------------------------


def run_quickstart(root: Path, python: str, extra: Sequence[str]) -> tuple[Path, float]:
    """``memcore-run experiment=quickstart`` (plus ``extra``) into the empty results root ``root``; its run dir
    and wall seconds."""
    exe = Path(python).with_name("memcore-run")
    cmd = [str(exe), "experiment=quickstart", "experiment_name=llm_floor", "progress=false", *extra]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env={**os.environ, "MEMCORE_RESULTS": str(root)}, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {tail}")
    found = sorted(root.glob("runs/llm_floor/**/stats.json"))
    if not found:
        raise RuntimeError(f"no finished run under {root}")
    return found[0].parent, wall


def run_model(run_dir: Path) -> str:
    """The backbone model a run used (its ``cost.json``)."""
    return str(json.loads((run_dir / "cost.json").read_text())["backbone"]["model"])


def analyse_run(run_dir: Path, rates: Rates) -> dict[str, Any]:
    """A finished run's wall against its token floor at ``rates``, and where the rest went (see the module doc)."""
    stats = json.loads((run_dir / "stats.json").read_text())
    cost = json.loads((run_dir / "cost.json").read_text())
    timing = stats.get("timing") or {}
    log = run_dir / "llama_server.log"
    reqs = parse_server_log(log.read_text(errors="replace")) if log.exists() else []
    wall = float(timing.get("wall_s", 0.0))
    floor = token_floor_s(reqs, rates)
    by_stage = (cost.get("usage") or {}).get("by_stage") or {}
    llm_s_by_timing: dict[str, float] = {}
    calls = cached = 0
    for ustage, u in by_stage.items():
        where = USAGE_STAGE_OF.get(ustage, ustage)
        llm_s_by_timing[where] = llm_s_by_timing.get(where, 0.0) + float(u.get("latency_s_total", 0.0))
        calls += int(u.get("calls", 0))
        cached += int(u.get("cached_calls", 0))
    stages = timing.get("stages_s") or {}
    split = {
        s: {
            "stage_s": round(float(v), 2),
            "llm_calls_s": round(llm_s_by_timing.get(s, 0.0), 2),
            "outside_llm_s": round(float(v) - llm_s_by_timing.get(s, 0.0), 2),
        }
        for s, v in stages.items()
    }
    llm_s = sum(llm_s_by_timing.values())
    compute = sum(r.prompt_ms + r.gen_ms for r in reqs) / 1000
    server_total = sum(r.total_ms for r in reqs) / 1000
    return {
        "run_dir_name": run_dir.name,
        "model": run_model(run_dir),
        "wall_s": round(wall, 2),
        "token_floor_s": round(floor, 2),
        "wall_over_floor": round(wall / floor, 3) if floor else None,
        "requests": len(reqs),
        "llm_calls": calls,
        "cached_calls": cached,
        "prompt_tokens_evaluated": sum(r.prompt_tokens for r in reqs),
        "tokens_generated": sum(r.gen_tokens for r in reqs),
        "prompt_tokens_sent": sum(int(u.get("prompt_tokens", 0)) for u in by_stage.values()),
        "model_compute_s": round(compute, 2),
        "server_sampling_and_other_s": round(server_total - compute, 2),
        "llm_call_latency_s": round(llm_s, 2),
        "request_overhead_s": round(llm_s - server_total, 2),
        "outside_llm_calls_s": round(wall - llm_s, 2),
        "stages": split,
        "embed_s": timing.get("embed_s"),
        "note": (
            "stage and LLM seconds are summed over threads (QA items run in parallel threads, their requests one at"
            " a time), so they can exceed the wall; model compute, server and request seconds are per request"
        ),
    }


# -- report ----------------------------------------------------------------------------------------------------


def render(result: dict[str, Any]) -> str:
    """The markdown report of a result."""
    cpu = result["cpu"]
    lines = [
        "# LLM-mode runs against their token floor",
        "",
        f"`{result['command']}`. CPU: {cpu['model_name']} (vendor {cpu['vendor']}, family {cpu['family']},"
        f" {cpu['cores']} cores), flags {' '.join(cpu['flags']) or 'none of the listed'}; llama-cpp-python"
        f" {result['build']['llama_cpp_python']}, built for `{result['build']['system_info']}`. Load average"
        f" (1 / 5 / 15 min) at start {result['machine_at_start']['loadavg_1_5_15']}, at end"
        f" {result['machine_at_end']['loadavg_1_5_15']}.",
        "",
        "## Rates (the server's own accounting; prompts with no reused prefix)",
        "",
    ]
    rows = []
    for model, m in result["rates"].items():
        r = m["mean"]
        for i, (size, rate) in enumerate(r["prompt_curve"]):
            each = " / ".join(f"{x['prompt_curve'][i][1]:.1f}" for x in m["measurements"])
            rows.append([model, f"prompt, {size} tokens", f"{rate:.1f}", each, ""])
        each = " / ".join(f"{x['gen_rate']:.1f}" for x in m["measurements"])
        rows.append([model, f"generation ({GEN_TOKENS} tokens)", f"{r['gen_rate']:.1f}", each, ""])
        rows.append(
            [
                model,
                "server time beside the model, per generated token",
                "",
                "",
                f"{r['other_ms_per_token_plain']:.1f} ms plain, {r['other_ms_per_token_json']:.1f} ms JSON grammar",
            ]
        )
        loads = "; ".join(f"{x['load_before']} → {x['load_after']}" for x in m["raw"])
        rows.append([model, "load average during the measurements", "", "", loads])
    lines.append(md_table(["model", "what", "tokens/s (mean)", "each measurement", "note"], rows))
    run = result.get("run")
    if run:
        lines += [
            "",
            f"## The run ({run['model']}): wall against its token floor",
            "",
            md_table(
                [
                    "wall s",
                    "token floor s",
                    "÷ floor",
                    "target",
                    "requests",
                    "prompt tokens sent / evaluated",
                    "generated",
                ],
                [
                    [
                        run["wall_s"],
                        run["token_floor_s"],
                        run["wall_over_floor"],
                        f"≤ {TARGET_RATIO} idle",
                        run["requests"],
                        f"{run['prompt_tokens_sent']} / {run['prompt_tokens_evaluated']}",
                        run["tokens_generated"],
                    ]
                ],
            ),
            "",
            "Inside the LLM calls (summed over requests): model compute"
            f" {run['model_compute_s']} s (the floor at the measured rates: {run['token_floor_s']} s), the server's"
            f" sampling and bookkeeping {run['server_sampling_and_other_s']} s, request overhead outside the server"
            f" (HTTP, chat template, tokenising, client) {run['request_overhead_s']} s; {run['llm_call_latency_s']} s"
            " of call latency in all; outside the LLM calls (the wall minus their latency: one request is in flight"
            f" at a time) {run.get('outside_llm_calls_s')} s. The wall beyond the floor"
            f" ({run['wall_s'] - run['token_floor_s']:.1f} s) is the model computing"
            f" {run['model_compute_s'] - run['token_floor_s']:+.1f} s against the rates measured around the run, plus"
            " the three parts above.",
            "",
            md_table(
                ["stage", "seconds", "in LLM calls", "outside LLM calls"],
                [[s, v["stage_s"], v["llm_calls_s"], v["outside_llm_s"]] for s, v in run["stages"].items()],
            ),
            "",
            f"{run['note']}; the embedding model's share (inside build, prefetch and retrieve): {run['embed_s']} s.",
        ]
    if result.get("run_load"):
        lines += ["", f"Load average before / after the run: {result['run_load'][0]} / {result['run_load'][1]}."]
    lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="llm_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=list(MODELS), help="models whose rates to measure")
    p.add_argument("--reps", type=int, default=2, help="requests per prompt length and generation kind")
    p.add_argument("--threads", type=int, default=None, help="server threads (default: all cores, as a run)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--run", action="store_true", help="also run the quickstart cold and judge it")
    group.add_argument("--run-dir", type=Path, default=None, help="judge this finished run")
    p.add_argument("--run-arg", action="append", default=[], help="an override for --run (repeatable)")
    p.add_argument("--keep", type=Path, default=None, help="results root of --run, kept (default: a temp dir)")
    p.add_argument("--out", type=Path, default=RESULTS_DIR)
    p.add_argument("--name", default="llm_floor")
    args = p.parse_args(argv)

    unknown = sorted(set(args.models) - set(GGUF_MODELS))
    if unknown:
        print(f"error: unknown model(s) {unknown}; known: {sorted(GGUF_MODELS)}", file=sys.stderr)
        return 2
    for model in args.models:
        try:
            resolve_gguf(model)
        except ModelNotFoundError:
            print(
                f"error: {model} is not assembled; run python scripts/get_local_model.py --model {model}",
                file=sys.stderr,
            )
            return 2
    if args.run_dir is not None and not (args.run_dir / "stats.json").is_file():
        print(f"error: {args.run_dir} has no stats.json (not a finished run dir)", file=sys.stderr)
        return 2
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"error: cannot write {args.out} ({exc}); pass --out DIR", file=sys.stderr)
        return 2
    start = machine_state()
    print(f"load average at start {start['loadavg_1_5_15']}", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="llm_floor-"))
    measured: dict[str, list[tuple[Rates, dict[str, Any]]]] = {m: [] for m in args.models}

    def measure_all(tag: str) -> None:
        for model in args.models:
            rates, raw = measure_rates(model, work / f"{model}-{tag}.log", args.reps, args.threads)
            measured[model].append((rates, raw))
            print(f"{model} ({tag}): prompt {rates.prompt_curve}, generation {rates.gen_rate:.1f}", file=sys.stderr)

    result: dict[str, Any] = {"cpu": cpu_info(), "build": build_info(sys.executable), "machine_at_start": start}
    try:
        measure_all("before")
        run_dir, run_load = args.run_dir, None
        if args.run:
            load_before = machine_state()["loadavg_1_5_15"]
            run_dir, wall = run_quickstart(args.keep or work / "results", sys.executable, args.run_arg)
            run_load = (load_before, machine_state()["loadavg_1_5_15"])
            print(f"run: {wall:.1f} s", file=sys.stderr)
            measure_all("after")
        result["rates"] = {
            m: {
                "mean": asdict(mean_rates([r for r, _ in got])),
                "measurements": [asdict(r) for r, _ in got],
                "raw": [raw for _, raw in got],
            }
            for m, got in measured.items()
        }
        if run_dir is not None:
            model = run_model(run_dir)
            if model not in measured:
                measured[model] = [measure_rates(model, work / f"{model}-run.log", args.reps, args.threads)]
            result["run"] = analyse_run(run_dir, mean_rates([r for r, _ in measured[model]]))
            result["run_load"] = run_load
    finally:
        shutil.rmtree(work, ignore_errors=True)
    path = write_result(args.name, result, args.out)
    (args.out / f"{args.name}.md").write_text(render(json.loads(path.read_text())))
    print(f"wrote {path} and {args.out / (args.name + '.md')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

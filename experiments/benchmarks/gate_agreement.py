"""Agreement of MemCoRe's construction gate with the labelled pairs in ``tests/data/gate_pairs.jsonl``.

For every pair the gate is asked exactly one question: the new note against a candidate list of one note,
with the gate's own prompt module (``memcore.memory.prompts.gate``), its own reply validation and its own decision
rule (``memcore.memory.construction``: ``_validate_gate`` and ``Constructor.decide`` on a one-note store),
whatever version of them is importable at run time. So the same script measures the old gate (run it with
``PYTHONPATH`` pointing at a worktree of the old commit) and the new one. The decision is mapped to the
labels: merge ↔ redundant, link ↔ complementary, append ↔ novel; the gate's own ``relation`` field
(redundant / complementary / unrelated→novel) is scored beside it.

Each note is one turn's cleaned raw text (the wo_denoise / memcore-cheap context, ``c = r``) in a store of
its own, and the gate's own ``Constructor.judge`` renders the prompt: ``Speaker: text`` in
``memcore-gate-v1`` (no dates anywhere), ``(session date) Speaker: text`` for both notes from v2 on (its
``judge`` takes the new turn's ``date``). So each gate version is measured on exactly the input it builds.

    python -m experiments.benchmarks.gate_agreement --model qwen2.5-coder-0.5b-instruct-q4_k_m
    # the old gate, from a worktree of 6caa7ed:
    PYTHONPATH=<worktree of 6caa7ed> python experiments/benchmarks/gate_agreement.py --model ...
    # a stronger backbone from configs/backbone/ (needs its server or key):
    python -m experiments.benchmarks.gate_agreement --backbone qwen3-8b --limit 60

Writes ``results/benchmarks/gate_agreement_<model>_<gate version>.json`` and appends a row to
``results/benchmarks/gate_agreement.md``. Needs the LoCoMo data file (turn text is read from it) and the
assembled GGUF (``python scripts/get_local_model.py --model <name>``).
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import platform
import random
import shlex
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

import memcore
from memcore.config import BackboneConfig, ConfigError, load_backbone_preset
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.backbone import BackboneError
from memcore.llm.factory import build_backbone
from memcore.llm.local_model import ModelNotFoundError
from memcore.llm.local_server import LocalServerError
from memcore.llm.usage import UsageTracker
from memcore.memory.config import MemCoReConfig, Switches
from memcore.memory.construction import Constructor
from memcore.memory.ingestion import clean_text
from memcore.memory.keywords import KeywordIndex
from memcore.memory.notes import Note, NoteStore, RawTurn
from memcore.memory.prompts import gate, gate_binary

LABELS = ("redundant", "complementary", "novel")
ACTION_LABEL = {"merge": "redundant", "link": "complementary", "append": "novel"}
RELATION_LABEL = {"redundant": "redundant", "complementary": "complementary", "unrelated": "novel", "novel": "novel"}
REPO = Path(__file__).resolve().parents[2]
PAIRS = REPO / "tests" / "data" / "gate_pairs.jsonl"
RESULTS = REPO / "results" / "benchmarks"


# ---------------------------------------------------------------------------------------------- metrics
def confusion(gold: list[str], pred: list[str]) -> dict[str, dict[str, int]]:
    m = {g: dict.fromkeys(LABELS, 0) for g in LABELS}
    for g, p in zip(gold, pred, strict=True):
        m[g][p] += 1
    return m


def cohen_kappa(gold: list[str], pred: list[str]) -> float:
    n = len(gold)
    if n == 0:
        return float("nan")
    po = sum(g == p for g, p in zip(gold, pred, strict=True)) / n
    cg, cp = Counter(gold), Counter(pred)
    pe = sum(cg[lab] * cp[lab] for lab in LABELS) / (n * n)
    return 1.0 if pe == 1.0 else (po - pe) / (1.0 - pe)


def scores(gold: list[str], pred: list[str]) -> dict[str, Any]:
    cm = confusion(gold, pred)
    recall = {lab: (cm[lab][lab] / sum(cm[lab].values()) if sum(cm[lab].values()) else None) for lab in LABELS}
    col = {lab: sum(cm[g][lab] for g in LABELS) for lab in LABELS}
    precision = {lab: (cm[lab][lab] / col[lab] if col[lab] else None) for lab in LABELS}
    return {
        "n": len(gold),
        "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold) if gold else None,
        "cohen_kappa": cohen_kappa(gold, pred),
        "recall": recall,
        "balanced_accuracy": sum(r for r in recall.values() if r is not None)
        / max(1, sum(r is not None for r in recall.values())),
        "precision": precision,
        "predicted": dict(Counter(pred)),
        "confusion_gold_rows_pred_cols": cm,
    }


# ---------------------------------------------------------------------------------------------- the gate
def load_pairs(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def gate_version(gate_form: str = "scale") -> str:
    """The version of the gate prompt a build with ``method.gate_form`` uses."""
    if gate_form == "binary":
        return str(gate_binary.VERSION)
    return str(gate.VERSION)


def make_note(turn: Any, nid: int = 0) -> Any:
    """A one-turn, non-denoised note holding ``turn`` (context = cleaned raw text, as with c = r)."""
    raw = RawTurn(turn.dia_id, turn.speaker, turn.text, turn.session_time_raw)
    return Note(nid=nid, raws=[raw], context=clean_text(turn.render()), keywords=[turn.speaker.lower()], denoised=False)


def build_constructor(backbone: Any, cand: Any, gate_form: str = "scale") -> Any:
    """A Constructor over a store holding only ``cand``: its ``judge`` renders the gate's input and its
    ``decide`` applies the gate's rule (merge cap, merge_min_cosine, thresholds) exactly as in a build."""
    store = NoteStore(dim=4)
    store.add(cand.raws, cand.context, cand.keywords, np.full(4, 0.5, dtype=np.float32), denoised=False)
    kw = {"store": store, "keywords": KeywordIndex(), "embedder": None, "backbone": backbone}
    cfg = MemCoReConfig(gate_form=gate_form) if gate_form != "scale" else MemCoReConfig()
    kw |= {"cfg": cfg, "switches": Switches(), "seed": 42}
    accepted = inspect.signature(Constructor).parameters
    return Constructor(**{k: v for k, v in kw.items() if k in accepted})


def judges_dates() -> bool:
    """Whether this gate shows dates: its ``judge`` takes the new turn's date (v2 on), v1's does not."""
    return "date" in inspect.signature(Constructor.judge).parameters


def judge_pair(backbone: Any, new: Any, cand: Any, cosine: float, gate_form: str = "scale") -> dict[str, Any]:
    """The gate's own ``judge`` (prompt, rendering, validation) on one new note vs a one-note candidate list,
    then its own ``decide``."""
    cons = build_constructor(backbone, cand, gate_form)
    kw = {"date": new.raws[0].time} if judges_dates() else {}
    (j,) = cons.judge(new.context, [(0, cosine)], **kw)
    decision = cons.decide([j])
    return {
        "action": decision.action,
        "relation": j.relation,
        "strength": round(float(j.strength), 3),
        "edge": j.edge,
        "disagreed": getattr(j, "disagreed", None),
        "ok": cons.counters.fallbacks.get("gate:append", 0) == 0,
        "attempts": cons.counters.llm_calls,
    }


# ---------------------------------------------------------------------------------------------- run
def local_backbone_config(model: str, threads: int | None) -> Any:
    """The ``BackboneConfig`` of a llama.cpp server on the assembled GGUF ``model`` (the ``--model`` path)."""
    return BackboneConfig(
        name="local",
        kind="llamacpp",
        model=model,
        n_ctx=4096,
        server_threads=threads,
        exclusive=False,  # do not queue behind another process's server lock
        prompt_cache_mb=256,
        max_concurrency=1,
    )


def start_backbone(cfg: Any, stack: contextlib.ExitStack, log_dir: Path) -> Any:
    return build_backbone(cfg, cache=None, usage=UsageTracker(), resources=stack, log_dir=log_dir)


def command_line() -> str:
    """How this script was invoked (from the repository root), with PYTHONPATH when set."""
    env = f"PYTHONPATH={shlex.quote(os.environ['PYTHONPATH'])} " if os.environ.get("PYTHONPATH") else ""
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    if spec is not None:
        head = f"python -m {spec.name}"
    else:
        script = Path(sys.argv[0]).resolve()
        head = f"python {script.relative_to(REPO) if script.is_relative_to(REPO) else script}"
    return env + " ".join([head, *map(shlex.quote, sys.argv[1:])])


def md_row(payload: dict[str, Any]) -> str:
    d, r = payload["decision"], payload["relation_field"]
    rec = d["recall"]

    def f(x: float | None) -> str:
        return "–" if x is None else f"{x:.2f}"

    cm = d["confusion_gold_rows_pred_cols"]
    cm_s = " / ".join(",".join(str(cm[g][p]) for p in LABELS) for g in LABELS)
    return (
        f"| {payload['time'][:16]} | {payload['model']} | {payload['gate_version']} | {payload['render']} "
        f"| {d['n']} of {payload['pairs_total']} "
        f"| {f(d['accuracy'])} | {f(d['balanced_accuracy'])} | {f(d['cohen_kappa'])} | {f(rec['redundant'])} / {f(rec['complementary'])} / "
        f"{f(rec['novel'])} | {cm_s} | {f(r['accuracy'])} | {payload['calls']} ({payload['parse_failures']}) "
        f"| {payload['wall_s']:.0f} | `{payload['command']}` |"
    )


MD_HEAD = """# Gate agreement with the labelled pairs

Pairs: `tests/data/gate_pairs.jsonl` (how they were drawn and labelled: `tests/data/gate_pairs.md`). Gate
decision mapped merge ↔ redundant, link ↔ complementary, append ↔ novel; *relation acc* scores the gate's own
`relation` field instead. Confusion rows = gold redundant / complementary / novel, columns = predicted in
the same order. Calls include format retries (parse failures → the gate's append fallback, in brackets).
Script: `experiments/benchmarks/gate_agreement.py`.

| time (UTC) | model | gate | render | n judged | accuracy | balanced acc | kappa | recall red / comp / novel | confusion | relation acc | calls (fail) | wall s | command |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
"""


def balanced_order(pairs: list[dict[str, Any]], seed: int = 14) -> list[dict[str, Any]]:
    """Pairs interleaved round-robin over the labels (each label's pairs seeded-shuffled), so that any prefix
    of the run (``--limit``, or a run stopped early and resumed) holds the labels about equally."""
    rng = random.Random(seed)
    by: dict[str, list[dict[str, Any]]] = {lab: [p for p in pairs if p["label"] == lab] for lab in LABELS}
    for v in by.values():
        rng.shuffle(v)
    out: list[dict[str, Any]] = []
    while any(by.values()):
        for lab in LABELS:
            if by[lab]:
                out.append(by[lab].pop())
    return out


def key(p: dict[str, Any]) -> str:
    return f"{p['sample_id']} {p['new']} {p['candidate']}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model",
        default="qwen2.5-coder-0.5b-instruct-q4_k_m",
        help="local GGUF name, or 'embedding' for the cheap gate (s = pre-screen cosine; no LLM)",
    )
    ap.add_argument(
        "--backbone",
        default=None,
        help="a backbone preset of configs/backbone/ (gpt-4o-mini, qwen3-8b, ...) instead of --model's local GGUF;"
        " rows and files are named by the preset's model",
    )
    ap.add_argument("--pairs", type=Path, default=PAIRS)
    ap.add_argument("--limit", type=int, default=0, help="the first N pairs of the label-balanced order only")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: all cores)")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument(
        "--checkpoint",
        type=Path,
        default=None,
        help="per-pair results, appended as they come; pairs already in it are not asked again "
        "(default: results/benchmarks/gate_agreement_<model>_<gate>.rows.jsonl)",
    )
    ap.add_argument("--report-only", action="store_true", help="score what the checkpoint holds; no LLM")
    ap.add_argument("--gate-form", choices=("scale", "binary"), default="scale", help="method.gate_form to measure")
    args = ap.parse_args(argv)

    bcfg = None
    if args.backbone:
        try:
            bcfg = load_backbone_preset(args.backbone)
        except ConfigError as exc:
            print(f"error: --backbone {args.backbone}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None
        args.model = str(bcfg.model).replace("/", "_")  # names the checkpoint and result files
    version = gate_version(args.gate_form)
    mode = "cosine, no LLM" if args.model == "embedding" else "dated" if judges_dates() else "undated"
    print(f"memcore from {Path(next(iter(memcore.__path__)))}; gate prompt {version}; render {mode}", flush=True)
    all_pairs = load_pairs(args.pairs)
    pairs = balanced_order(all_pairs)
    if args.limit:
        pairs = pairs[: args.limit]
    ckpt = args.checkpoint or args.out_dir / f"gate_agreement_{args.model}_{version}.rows.jsonl"
    done: dict[str, dict[str, Any]] = {}
    if ckpt.exists():
        for line in ckpt.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                done[key(r)] = r
    todo = [p for p in pairs if key(p) not in done]
    print(f"{len(pairs)} pairs, {len(pairs) - len(todo)} already in {ckpt}", flush=True)

    wall = 0.0
    if todo and not args.report_only:
        ds = load_locomo(resolve_locomo_path(None))
        turns = {(c.conv_id, t.dia_id): t for c in ds.conversations for s in c.sessions for t in s.turns}
        ckpt.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory() as tmp, ckpt.open("a") as fh:
            cheap = args.model == "embedding"
            if cheap:
                backbone = None
            else:
                cfg = bcfg if bcfg is not None else local_backbone_config(args.model, args.threads)
                try:
                    backbone = start_backbone(cfg, stack, Path(tmp))
                except (BackboneError, ModelNotFoundError, LocalServerError) as exc:
                    print(f"error: backbone {cfg.name!r}: {exc}".splitlines()[0], file=sys.stderr)
                    raise SystemExit(2) from None
            for i, p in enumerate(todo, start=1):
                t0 = time.perf_counter()
                new = make_note(turns[(p["sample_id"], p["new"])], 1)
                cand = make_note(turns[(p["sample_id"], p["candidate"])], 0)
                out = judge_pair(backbone, new, cand, float(p["cosine"]), args.gate_form)
                dt = time.perf_counter() - t0
                wall += dt
                row = {k: p[k] for k in ("sample_id", "new", "candidate", "cosine", "label")} | out
                row |= {"pred": ACTION_LABEL[out["action"]], "wall_s": round(dt, 2)}
                fh.write(json.dumps(row) + "\n")
                fh.flush()
                done[key(row)] = row
                print(
                    f"[{i}/{len(todo)}] {p['sample_id']} {p['new']} vs {p['candidate']}: gold {p['label']:13s} "
                    f"gate {out['action']:6s} ({out['relation']}, s={out['strength']}) {dt:.1f}s",
                    flush=True,
                )

    rows = [done[key(p)] for p in pairs if key(p) in done]
    if not rows:
        raise SystemExit("no judged pairs yet")
    gold = [r["label"] for r in rows]
    payload: dict[str, Any] = {
        "model": args.model,
        "gate_version": version,
        "render": mode,
        # Which checkout ran (this repo's, or another worktree's), without naming the machine's paths.
        "memcore_path": (
            "memcore"
            if Path(next(iter(memcore.__path__))).resolve() == (REPO / "memcore").resolve()
            else "<another worktree>/memcore"
        ),
        "pairs_file": str(args.pairs.relative_to(REPO) if args.pairs.is_relative_to(REPO) else args.pairs),
        "pairs_total": len(all_pairs),
        "pairs_judged": len(rows),
        "gold_counts": dict(Counter(gold)),
        "decision": scores(gold, [r["pred"] for r in rows]),
        "relation_field": scores(gold, [RELATION_LABEL.get(str(r["relation"]), "novel") for r in rows]),
        "calls": sum(int(r["attempts"]) for r in rows),
        "parse_failures": sum(not r["ok"] for r in rows),
        "label_strength_disagreements": sum(bool(r.get("disagreed")) for r in rows),
        "wall_s": round(sum(float(r["wall_s"]) for r in rows), 1),
        "wall_s_this_invocation": round(wall, 1),
        "s_per_pair": round(sum(float(r["wall_s"]) for r in rows) / len(rows), 2),
        "threads": args.threads,
        # the command that runs (or resumes) this measurement; --report-only only re-scores the checkpoint
        "command": command_line().replace(" --report-only", ""),
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg_1_5_15": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "rows": rows,
    }
    d = payload["decision"]
    print(json.dumps({k: d[k] for k in ("n", "accuracy", "balanced_accuracy", "cohen_kappa", "recall")}, indent=1))
    print("confusion (gold rows, predicted cols):", json.dumps(d["confusion_gold_rows_pred_cols"]))
    args.out_dir.mkdir(parents=True, exist_ok=True)
    out_path = args.out_dir / f"gate_agreement_{args.model}_{version}.json"
    out_path.write_text(json.dumps(payload, indent=1) + "\n")
    md = args.out_dir / "gate_agreement.md"
    if not md.exists():
        md.write_text(MD_HEAD)
    with md.open("a") as fh:
        fh.write(md_row(payload) + "\n")
    print(f"wrote {out_path} and a row of {md}")


if __name__ == "__main__":
    main()

"""LightMem's build cost on all of LoCoMo without a model: LLM calls and prompt / completion tokens of the
extraction and sleep-time update calls, for the code on ``PYTHONPATH`` and the given knobs.

    python -m experiments.benchmarks.lightmem_cost --label after-768-0.8 --out <dir>
    python -m experiments.benchmarks.lightmem_cost --label after-512-0.7 --knob preset=512-0.7 --out <dir>
    PYTHONPATH=<checkout of an older commit> python -m experiments.benchmarks.lightmem_cost --label before --out <dir>

Replies come from the simulator's content-free, schema-valid responder (``memcore.testing.sim_replies``), so the
extraction calls (set by the buffers, the compression rate and the prompt's length) are what LightMem would send;
the update calls depend on how many near-duplicate entries the replies make, so they are plumbing, not a
prediction. Tokens are the scripted backbone's approximation. MiniLM embeddings (topic segmentation and the
update queues). Writes ``<out>/<label>.json``.
"""

from __future__ import annotations

import argparse
import inspect
import json
import time
from pathlib import Path
from typing import Any

from baselines.lightmem.config import config_from_dict
from baselines.lightmem.system import LightMem
from memcore.config import EmbedderConfig
from memcore.datasets.locomo.loader import load_locomo
from memcore.datasets.locomo.paths import resolve_locomo_path
from memcore.llm.factory import build_embedder
from memcore.llm.scripted import ScriptedBackbone
from memcore.testing.sim_replies import structured_responder

ROOT = Path(__file__).resolve().parents[2]


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", required=True)
    ap.add_argument("--knob", action="append", default=[], help="key=value of configs/method/lightmem.yaml (repeat)")
    ap.add_argument(
        "--prompt-token-cap", type=int, default=120000, help="the backbone's prompt_token_cap (gpt-4o-mini's)"
    )
    ap.add_argument("--conversations", type=int, default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)

    knobs = {k: _value(v) for k, v in (kv.split("=", 1) for kv in args.knob)}
    cfg = config_from_dict(knobs)
    convs = list(load_locomo(resolve_locomo_path(None)).conversations)[: args.conversations]
    embedder = build_embedder(EmbedderConfig(), cache=None)
    extra = (
        {"prompt_token_cap": args.prompt_token_cap}
        if "prompt_token_cap" in inspect.signature(LightMem).parameters
        else {}
    )
    per_conv: dict[str, Any] = {}
    totals: dict[str, float] = {}
    t0 = time.perf_counter()
    for conv in convs:
        bb = ScriptedBackbone(structured_responder)
        mem = LightMem(cfg, lambda bb=bb: bb, lambda: embedder, **extra)
        for t in conv.turns:
            mem.ingest(t)
        mem.finalize()
        usage = bb.usage.to_json()["by_stage"].get("ingest", {})
        stats = mem.stats()
        row = {
            "turns": stats["turns"],
            "entries": stats["entries"],
            "extraction_calls": stats["extraction_calls"],
            "update_calls": stats["update_calls"],
            "calls": usage.get("calls", 0),
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
            "parse_failures": usage.get("parse_failures", 0),
            "compression_ratio": stats["compression_ratio"],
        }
        per_conv[conv.conv_id] = row
        for k, v in row.items():
            if isinstance(v, int | float) and k != "compression_ratio":
                totals[k] = totals.get(k, 0) + v
    n = max(len(convs), 1)
    result = {
        "label": args.label,
        "knobs": knobs,
        "setting": getattr(cfg, "setting", lambda: "before: paraphrased prompts, th 512, rate 0.6")(),
        "conversations": len(convs),
        "per_conversation_mean": {k: round(v / n, 1) for k, v in totals.items()},
        "calls_per_turn": round(totals.get("calls", 0) / max(totals.get("turns", 1), 1), 4),
        "totals": totals,
        "per_conversation": per_conv,
        "wall_s": round(time.perf_counter() - t0, 1),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.label}.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("label", "setting", "per_conversation_mean", "calls_per_turn")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

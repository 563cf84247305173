"""The shipped all-MiniLM-L6-v2 under ONNX Runtime beside torch, on the retrieval_speed floor's texts (every LoCoMo
turn as the RAG baselines index it, and every question).

The torch model the runs use (:class:`memcore.llm.embedders.MiniLMEmbedder`) is exported to ONNX (opset 17, the
TorchScript exporter, into a temporary directory) and run with onnxruntime's CPU provider; both sides tokenise
with the model's own tokenizer, take batches of 64 texts in the same longest-first order, mean-pool under the
attention mask and L2-normalise. Each thread count is timed on both sides in this one process, with the load
average beside it. The rule the table is read against: an encoder is adopted only if every text's cosine to the
torch vector is >= 0.9999 and it is faster.

Needs the ``onnx`` extra (``pip install -e '.[onnx]'``); without it the script says so and exits 2.

    python -m experiments.benchmarks.onnx_encoder                 # all 7,868 texts, 1 and 2 threads, ~10 min
    python -m experiments.benchmarks.onnx_encoder --limit 200 --threads 1
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.benchmarks.common import RESULTS_DIR, machine_state, md_table, write_result
from memcore.datasets.errors import DataError
from memcore.datasets.locomo.paths import resolve_locomo_path

NEEDS = ("onnxruntime", "onnx")
COSINE_RULE = 0.9999
BATCH = 64


def missing_packages() -> list[str]:
    """The packages of the ``onnx`` extra this interpreter cannot import."""
    return [name for name in NEEDS if importlib.util.find_spec(name) is None]


def floor_texts(data: str, limit: int) -> list[str]:
    """retrieval_speed's floor texts: every turn rendered, then every question (the first ``limit``; 0 = all)."""
    from memcore.datasets.locomo.loader import load_locomo  # after the argument checks: loading is work

    convs = load_locomo(data).conversations
    texts = [t.render() for c in convs for t in c.turns] + [q.question for c in convs for q in c.qa]
    return texts[:limit] if limit else texts


def export(model: Any, path: Path) -> float:
    """Export the transformer of the sentence-transformers ``model`` to ``path``; returns the seconds it took."""
    import torch

    bert = model[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        """The transformer's last hidden state from keyword inputs (its forward takes more positional ones)."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            out = self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
            return out.last_hidden_state

    sample = model.tokenizer(["an example text"], return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    t0 = time.perf_counter()
    torch.onnx.export(
        Hidden(bert),
        tuple(sample[n] for n in names),
        str(path),
        input_names=names,
        output_names=["last_hidden_state"],
        dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
        opset_version=17,
        dynamo=False,
    )
    return time.perf_counter() - t0


def onnx_encode(session: Any, tokenizer: Any, max_len: int, texts: Sequence[str]) -> np.ndarray:
    """Mean-pooled, L2-normalised vectors of ``texts`` from the ONNX ``session``, in batches of :data:`BATCH`
    taken longest first (as sentence-transformers takes them)."""
    order = np.argsort([-len(t) for t in texts], kind="stable")
    out = np.zeros((len(texts), 384), dtype=np.float32)
    for lo in range(0, len(order), BATCH):
        idx = order[lo : lo + BATCH]
        enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=max_len, return_tensors="np")
        feeds = {n: enc[n].astype(np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")}
        hidden = session.run(None, feeds)[0]
        mask = enc["attention_mask"][..., None].astype(np.float32)
        vecs = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        out[idx] = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    return out


def measure(texts: Sequence[str], threads: Sequence[int], workdir: Path) -> dict[str, Any]:
    """Export once, then per thread count: torch and ONNX wall seconds over ``texts`` and the cosines."""
    import onnxruntime as ort
    import torch

    from memcore.llm.embedders import MiniLMEmbedder  # torch loads with it

    embedder = MiniLMEmbedder(threads=max(threads))
    embedder.load()
    model = embedder.sentence_transformer()
    path = workdir / "all-MiniLM-L6-v2.onnx"
    export_s = export(model, path)
    rows: list[dict[str, Any]] = []
    for n in threads:
        torch.set_num_threads(n)
        options = ort.SessionOptions()
        options.intra_op_num_threads = n
        options.inter_op_num_threads = 1
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        embedder.encode(list(texts[:BATCH]))  # warm both sides on one batch before timing
        onnx_encode(session, model.tokenizer, model.max_seq_length, texts[:BATCH])
        before = machine_state()["loadavg_1_5_15"]
        t0 = time.perf_counter()
        ref = embedder.encode(list(texts))
        t_torch = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = onnx_encode(session, model.tokenizer, model.max_seq_length, texts)
        t_onnx = time.perf_counter() - t0
        cos = (got * ref).sum(axis=1)
        rows.append(
            {
                "threads": n,
                "texts": len(texts),
                "torch_s": round(t_torch, 2),
                "onnx_s": round(t_onnx, 2),
                "speedup": round(t_torch / t_onnx, 3),
                "cosine_min": float(cos.min()),
                "cosine_p0.1": float(np.quantile(cos, 0.001)),
                "below_rule": int((cos < COSINE_RULE).sum()),
                "load_before": before,
                "load_after": machine_state()["loadavg_1_5_15"],
            }
        )
    versions = {"onnxruntime": ort.__version__, "torch": torch.__version__, "model": embedder.version}
    return {"export_s": round(export_s, 2), "versions": versions, "rows": rows}


def render(result: dict[str, Any]) -> str:
    rows = result["rows"]
    table = md_table(
        ["threads", "texts", "torch s", "ONNX s", "torch ÷ ONNX", "min cosine", "0.1 % cosine", "< 0.9999", "load"],
        [
            [
                r["threads"], r["texts"], r["torch_s"], r["onnx_s"], r["speedup"], f"{r['cosine_min']:.7f}",
                f"{r['cosine_p0.1']:.7f}", r["below_rule"], r["load_before"],
            ]
            for r in rows
        ],
    )  # fmt: skip
    agree = all(r["below_rule"] == 0 for r in rows)
    faster = [r["threads"] for r in rows if r["speedup"] > 1.0]
    v = result["versions"]
    return (
        "# The shipped MiniLM under ONNX Runtime beside torch\n\n"
        f"`python -m experiments.benchmarks.onnx_encoder`; onnxruntime {v['onnxruntime']}, torch {v['torch']}, "
        f"weights {v['model']}; export {result['export_s']} s; load average (1 / 5 / 15 min) before each row.\n\n"
        f"{table}\n\n"
        f"Vectors agree by the rule (every cosine >= {COSINE_RULE}): {'yes' if agree else 'no'}. "
        f"Faster at: {', '.join(f'{t} thread(s)' for t in faster) if faster else 'no thread count'}.\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=None, help="locomo10.json (default: MEMCORE_DATA's, as the runs resolve it)")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    p.add_argument("--limit", type=int, default=0, help="the first N texts only (0: all)")
    p.add_argument("--out", default=str(RESULTS_DIR), help="where onnx_encoder.{json,md} go")
    args = p.parse_args(argv)
    missing = missing_packages()
    if missing:
        print(
            f"error: this benchmark needs {' and '.join(missing)}: pip install -e '.[onnx]'",
            file=sys.stderr,
        )
        return 2
    try:
        threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        threads = []
    if not threads or min(threads) < 1:
        print(f"error: --threads must be positive integers, got {args.threads!r}", file=sys.stderr)
        return 2
    try:
        data = str(resolve_locomo_path(args.data))
    except DataError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out)
    texts = floor_texts(data, args.limit)
    with tempfile.TemporaryDirectory(prefix="memcore-onnx-") as tmp:
        result = {"machine_at_start": machine_state(), **measure(texts, threads, Path(tmp))}
    write_result("onnx_encoder", result, out)
    (out / "onnx_encoder.md").write_text(render(result))
    print(render(result))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())

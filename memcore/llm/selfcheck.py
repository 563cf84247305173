"""Check the installed llama.cpp build on this machine: start its server on a local model, ask for one token.

``python -m memcore.llm.selfcheck --model qwen2.5-coder-0.5b-instruct-q4_k_m``. ``make install`` runs it right
after building llama-cpp-python and CI runs it before the end-to-end tests, so a build that crashes on its first
forward pass (AMX kernels on a virtualized CPU do that) is one clear line, not a chain of connection errors.
Exit 0 when the server answered, 1 when it crashed or did not answer (the line says how and where its log is),
2 for bad arguments or a missing model.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path

from memcore.llm.backbone import BackboneError, OpenAITransport
from memcore.llm.local_model import GGUF_MODELS, ModelNotFoundError, resolve_gguf
from memcore.llm.local_server import LlamaCppServer, LocalServerError

#: The instruction-set features of a build that decide whether it runs on a given CPU (``llama_print_system_info``).
RISKY_FEATURES = ("AMX_INT8", "AMX_BF16", "AVX512")


def build_features() -> str:
    """What the installed llama.cpp library was compiled for, from its own system-info line."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    return raw.decode(errors="replace").strip() if isinstance(raw, bytes) else str(raw).strip()


def one_token(server: LlamaCppServer, timeout_s: float) -> float:
    """Seconds one single-token chat completion took on ``server``; raises BackboneError when it fails."""
    transport = OpenAITransport(
        model=server.alias,
        base_url=server.base_url,
        api_key="sk-no-key-required",
        timeout_s=timeout_s,
        max_attempts=2,
        backoff_base_s=0.5,
        exit_reason=server.exit_reason,
    )
    t0 = time.perf_counter()
    transport.complete([{"role": "user", "content": "Say OK."}], stage="selfcheck", max_tokens=1)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m", choices=sorted(GGUF_MODELS))
    ap.add_argument("--threads", type=int, default=None, help="server threads (default: all cores)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds for the completion")
    ap.add_argument("--log", type=Path, default=None, help="server log (default: a file in the temp directory)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    try:
        gguf = resolve_gguf(args.model)
    except ModelNotFoundError as exc:
        print(f"llama.cpp self-check: {exc}", file=sys.stderr)
        return 2
    log_path = args.log or Path(tempfile.gettempdir()) / "memcore-llama-selfcheck.log"
    log_path.unlink(missing_ok=True)
    features = build_features()
    risky = [f for f in RISKY_FEATURES if f"{f} = 1" in features]
    server = LlamaCppServer(gguf, n_ctx=512, threads=args.threads, alias=args.model, log_path=log_path)
    try:
        with server:
            seconds = one_token(server, args.timeout)
    except (LocalServerError, BackboneError) as exc:
        print(
            f"llama.cpp self-check FAILED: {exc}\n  build: {features}\n  Rebuild with AVX2 only: rm -rf .venv && make "
            'install LLAMA_CMAKE_ARGS="$(python3 scripts/llama_cmake_args.py --max avx2)" (the default build names '
            "each instruction set the CPU reports, AVX-512 included, never AMX).",
            file=sys.stderr,
        )
        return 1
    note = f"; built with {', '.join(risky)}" if risky else ""
    print(f"llama.cpp self-check: {args.model} answered a one-token completion in {seconds:.1f} s{note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``memcore-simulate``: an OpenAI-compatible chat server on 127.0.0.1 with a latency model and injected faults, for
rehearsing sweeps (:mod:`memcore.testing.simulator`; its replies mean nothing). Serves until SIGINT / SIGTERM."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from memcore.testing.simulator import BODY_MODES, DEFAULT_MODELS, FAULT_KINDS, SimulatorConfig, SimulatorServer


def _parser() -> argparse.ArgumentParser:
    d = SimulatorConfig()
    p = argparse.ArgumentParser(
        prog="memcore-simulate",
        description="An OpenAI-compatible chat server on 127.0.0.1 with a latency model and injected faults, "
        "for rehearsing sweeps (its replies mean nothing).",
    )
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one, printed)")
    p.add_argument("--port-file", type=Path, default=None, help="also write the port to this file once listening")
    p.add_argument(
        "--model",
        action="append",
        default=None,
        help=f"a served model name (repeat; default: {', '.join(DEFAULT_MODELS)})",
    )
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--ttft-s", type=float, default=d.ttft_s, help="time to first token, seconds")
    p.add_argument("--tokens-per-s", type=float, default=d.tokens_per_s, help="decoding speed")
    p.add_argument(
        "--time-scale", type=float, default=d.time_scale, help="multiply every latency by this (0.01: 100× faster)"
    )
    for kind in FAULT_KINDS:
        p.add_argument(
            f"--rate-{kind}", type=float, default=0.0, help=f"fraction of requests answered with fault {kind}"
        )
    p.add_argument(
        "--wrong-json", type=float, default=d.wrong_json, help="fraction of JSON-mode requests answered with no JSON"
    )
    p.add_argument("--max-faults-per-request", type=int, default=d.max_faults_per_request)
    p.add_argument("--retry-after-s", type=int, default=d.retry_after_s, help="Retry-After of a 429")
    p.add_argument("--hang-s", type=float, default=d.hang_s, help="how long a read-timeout fault holds the connection")
    p.add_argument("--api-key", default=None, help="require this bearer key (else any key is accepted)")
    p.add_argument("--body-mode", default=d.body_mode, choices=BODY_MODES, help="every chat reply as this body")
    p.add_argument("--stats-out", type=Path, default=None, help="write the /stats JSON here on exit")
    return p


def config_from_args(args: argparse.Namespace) -> SimulatorConfig:
    """The :class:`SimulatorConfig` of parsed ``memcore-simulate`` arguments (validated)."""
    return replace(
        SimulatorConfig(),
        models=tuple(args.model) if args.model else DEFAULT_MODELS,
        seed=args.seed,
        ttft_s=args.ttft_s,
        tokens_per_s=args.tokens_per_s,
        time_scale=args.time_scale,
        rate_429=args.rate_429,
        rate_500=args.rate_500,
        rate_503=args.rate_503,
        rate_drop=args.rate_drop,
        rate_timeout=args.rate_timeout,
        wrong_json=args.wrong_json,
        max_faults_per_request=args.max_faults_per_request,
        retry_after_s=args.retry_after_s,
        hang_s=args.hang_s,
        api_key=args.api_key,
        body_mode=args.body_mode,
    ).validate()


def main(argv: Sequence[str] | None = None) -> int:
    """``memcore-simulate``: serve until SIGINT / SIGTERM; exit 2 on a bad option."""
    args = _parser().parse_args(argv)
    try:
        config = config_from_args(args)
        server = SimulatorServer(config, port=args.port)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: cannot listen on 127.0.0.1:{args.port} ({exc.strerror}); pick another --port", file=sys.stderr)
        return 2
    thread = threading.Thread(target=server.serve_forever, name="memcore-simulate", daemon=True)
    thread.start()
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    print(f"memcore-simulate: serving {', '.join(config.models)} at {server.base_url}", flush=True)
    if args.port_file is not None:
        tmp = args.port_file.with_name(args.port_file.name + ".partial")
        tmp.write_text(str(server.server_address[1]))
        tmp.replace(args.port_file)
    done.wait()
    server.stop()
    stats = server.stats_json()
    if args.stats_out is not None:
        args.stats_out.write_text(json.dumps(stats, indent=1) + "\n")
    print(
        f"memcore-simulate: {stats['requests']} requests, {stats['replies']} replies, faults {stats['faults']}, "
        f"wrong JSON {stats['wrong_json']}",
        flush=True,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

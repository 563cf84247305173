"""The judge's command-line flags, for the commands that judge a finished run's answers again (``memcore-rescore``,
``memcore-import``): one builder, one reading. ``--judge-server KEY=VALUE`` and ``memcore-judge-probe --set
KEY=VALUE`` give settings of the judge's backbone; :func:`key_values` reads them."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from memcore.config import ConfigError


@dataclass(frozen=True)
class JudgeFlags:
    """What the judge flags ask for: ``judge`` is set by ``--judge`` or by any other judge flag (each implies it);
    ``None`` leaves a setting at its default."""

    judge: bool = False
    preset: str | None = None
    runs: int | None = None
    backbone: str | None = None
    server: dict[str, Any] = field(default_factory=dict)


def add_judge_flags(parser: argparse.ArgumentParser, *, judge_help: str, preset_default: str) -> None:
    """Add ``--judge``, ``--judge-preset``, ``--judge-runs``, ``--judge-backbone`` and ``--judge-server`` to
    ``parser``; ``preset_default`` says in the help which preset applies without ``--judge-preset``."""
    parser.add_argument("--judge", action="store_true", help=judge_help)
    parser.add_argument(
        "--judge-preset", help=f"judge preset (judge-v1, mem0-judge; default: {preset_default}); implies --judge"
    )
    parser.add_argument("--judge-runs", type=int, help="judge runs per item; implies --judge")
    parser.add_argument("--judge-backbone", help="backbone preset of the judge (configs/backbone/); implies --judge")
    parser.add_argument(
        "--judge-server",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a transport setting of the judge's own backbone (eval.judge_server), e.g. server_threads=1; repeatable",
    )


def judge_flags(args: argparse.Namespace) -> JudgeFlags:
    """The judge flags of parsed ``args``; a malformed ``--judge-server`` raises :class:`ConfigError`."""
    server = key_values(args.judge_server, flag="--judge-server", example="server_threads=1")
    return JudgeFlags(
        judge=bool(args.judge or args.judge_preset or args.judge_runs or args.judge_backbone or server),
        preset=args.judge_preset,
        runs=args.judge_runs,
        backbone=args.judge_backbone,
        server=server,
    )


def key_values(pairs: Sequence[str], *, flag: str, example: str) -> dict[str, Any]:
    """``["server_threads=1", "exclusive=false"]`` → ``{"server_threads": 1, "exclusive": False}`` (each value read
    as YAML); a pair without ``=`` or a value YAML cannot read raises :class:`ConfigError` naming ``flag``."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {pair!r}: expected KEY=VALUE, e.g. {flag} {example}")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{flag} {pair!r}: the value is not readable ({str(exc).splitlines()[0]})") from None
    return out

"""``memcore-judge-probe``: grade answers whose verdict is known and report the judge's false-accept and false-reject
rates (the cases and their rates: :mod:`memcore.eval.probe`).

``memcore-judge-probe --preset judge-v1 --preset mem0-judge --backbone local`` writes
``results/measured/judge_probe.{json,md}``; results of other (preset, model) pairs already in the json are kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from memcore.commands.shared import start_logging
from memcore.config import BackboneConfig, ConfigError
from memcore.datasets.errors import DataError
from memcore.datasets.registry import get_dataset
from memcore.eval.judge import Judge, get_preset, load_backbone_preset
from memcore.eval.judge_flags import key_values
from memcore.eval.probe import (
    DEFAULT_OUT,
    PROBE_DATASET,
    ProbeCase,
    build_cases,
    probe_table,
    run_probe,
    save_probe,
    summarize_probe,
)
from memcore.llm.backbone import BackboneError
from memcore.llm.cache import ResponseCache
from memcore.llm.factory import build_backbone
from memcore.llm.local_model import ModelNotFoundError
from memcore.llm.local_server import LocalServerError
from memcore.llm.usage import UsageTracker
from memcore.registry import UnknownNameError


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="memcore-judge-probe",
        description="Grade known-wrong and known-right answers built from LoCoMo; print the judge's false-accept"
        " and false-reject rates.",
    )
    p.add_argument("--preset", action="append", default=None, help="judge preset (repeatable; default judge-v1)")
    p.add_argument(
        "--backbone", default=None, help="backbone preset of configs/backbone/ (default: the judge preset's)"
    )
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a backbone field, e.g. --set exclusive=false",
    )
    p.add_argument("--n", type=int, default=150, help="cases per preset, half wrong, half right (default 150)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", default=None, help="locomo10.json (default: dataset.path resolution, $MEMCORE_DATA)")
    p.add_argument("--cache", type=Path, default=Path("results/cache/llm.sqlite"), help="LLM response cache")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output stem (.json and .md)")
    p.add_argument("--dry-run", action="store_true", help="build and print the cases; no LLM")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Console entry point; bad presets and values print one line and exit 2 before any LLM work."""
    args = _parser().parse_args(argv)
    start_logging(logging.INFO)
    try:
        presets = [get_preset(name) for name in (args.preset or ["judge-v1"])]
        for preset in presets:
            if preset.text_messages is None:
                raise ConfigError(
                    f"--preset {preset.name}: it grades its own dataset's items, not text; the probe's cases are "
                    "LoCoMo's, for LoCoMo's judge presets (judge-v1, mem0-judge)."
                )
        if args.n < 2:
            raise ConfigError(f"--n must be >= 2, got {args.n}.")
        backbone_names = {args.backbone or p.default_backbone or "local" for p in presets}
        if len(backbone_names) > 1:
            raise ConfigError(
                f"presets {', '.join(p.name for p in presets)} default to different backbones; pass --backbone."
            )
        backbone_name = backbone_names.pop()
        node = OmegaConf.structured(load_backbone_preset(backbone_name))
        try:
            bcfg = OmegaConf.to_object(
                OmegaConf.merge(node, key_values(args.set, flag="--set", example="exclusive=false"))
            )
        except OmegaConfBaseException as exc:
            raise ConfigError(f"--set: {exc}".splitlines()[0]) from None
        assert isinstance(bcfg, BackboneConfig)
        locomo = get_dataset(PROBE_DATASET)
        dataset = locomo.load(locomo.locate(args.data))
    except (ConfigError, UnknownNameError, DataError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cases = build_cases(dataset, n_wrong=args.n // 2, n_right=args.n - args.n // 2, seed=args.seed)
    if args.dry_run:
        for c in cases:
            print(json.dumps(asdict(c), ensure_ascii=False))
        return 0
    command = "memcore-judge-probe " + " ".join(argv if argv is not None else sys.argv[1:])
    try:
        results = _grade(presets, cases, bcfg, backbone_name, args, command)
    except (BackboneError, LocalServerError, ModelNotFoundError) as exc:
        print(f"error: judge backbone {backbone_name!r}: {exc}".splitlines()[0], file=sys.stderr)
        return 2
    save_probe(args.out, results, command)
    print(probe_table(results))
    print(f"written: {args.out.with_suffix('.json')}, {args.out.with_suffix('.md')}")
    return 0


def _grade(
    presets: Sequence[Any], cases: Sequence[ProbeCase], bcfg: Any, backbone_name: str, args: Any, command: str
) -> list[dict[str, Any]]:
    """Start the backbone once and grade ``cases`` with every preset; the result records of :func:`save_probe`."""
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as resources:
        usage = UsageTracker()
        log_dir = args.cache.parent / "judge_probe_logs"  # the server log; results/cache is not committed
        log_dir.mkdir(parents=True, exist_ok=True)
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        client = build_backbone(
            bcfg, cache=ResponseCache(args.cache), usage=usage, resources=resources, log_dir=log_dir
        )
        for preset in presets:
            t0 = time.perf_counter()
            judge = Judge(client, preset=backbone_name, judge_preset=preset.name, runs=1)
            labels, unparsed = run_probe(judge, cases)
            results.append(
                {
                    "judge_preset": preset.name,
                    "prompt_version": preset.prompt_version(),
                    "backbone": backbone_name,
                    "model": str(bcfg.model),
                    "seed": args.seed,
                    "n_cases": len(cases),
                    "rates": summarize_probe(cases, labels),
                    "unparsed": unparsed,
                    "wall_s": round(time.perf_counter() - t0, 1),
                    "command": command,
                    # no answer text: the cases are LoCoMo excerpts (rebuild them with --dry-run and the same seed)
                    "labels": [
                        {"item_id": c.item_id, "kind": c.kind, "expected": c.expected, "label": lab}
                        for c, lab in zip(cases, labels, strict=True)
                    ],
                }
            )
    return results


if __name__ == "__main__":
    sys.exit(main())

"""memcore.eval.judge_flags: the judge's command-line flags, declared and read once for every command that judges."""

from __future__ import annotations

import argparse

import pytest

from memcore.config import ConfigError
from memcore.eval.judge_flags import JudgeFlags, add_judge_flags, judge_flags, key_values


def _parse(*argv: str) -> JudgeFlags:
    parser = argparse.ArgumentParser()
    add_judge_flags(parser, judge_help="judge", preset_default="mem0-judge")
    return judge_flags(parser.parse_args(argv))


def test_no_flag_asks_for_no_judge() -> None:
    assert _parse() == JudgeFlags()


@pytest.mark.parametrize(
    "argv",
    [["--judge"], ["--judge-preset", "mem0-judge"], ["--judge-runs", "3"], ["--judge-backbone", "local"],
     ["--judge-server", "server_threads=1"]],
)  # fmt: skip
def test_every_judge_flag_implies_judging(argv: list[str]) -> None:
    assert _parse(*argv).judge


def test_the_flags_are_read_with_their_types() -> None:
    got = _parse("--judge-runs", "3", "--judge-server", "server_threads=1", "--judge-server", "exclusive=false")
    assert got == JudgeFlags(judge=True, runs=3, server={"server_threads": 1, "exclusive": False})


def test_the_preset_default_is_named_in_the_help() -> None:
    parser = argparse.ArgumentParser()
    add_judge_flags(parser, judge_help="judge", preset_default="the run's")
    preset = next(a for a in parser._actions if "--judge-preset" in a.option_strings)
    assert "default: the run's" in str(preset.help)


def test_a_bad_pair_is_one_error_naming_its_flag() -> None:
    with pytest.raises(ConfigError, match=r"--set 'exclusive': expected KEY=VALUE, e\.g\. --set exclusive=false"):
        key_values(["exclusive"], flag="--set", example="exclusive=false")
    with pytest.raises(ConfigError, match="--judge-server"):
        _parse("--judge-server", "=1")

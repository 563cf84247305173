"""memcore.commands names every console command, as pyproject.toml installs them; each entry point exists and is a
module of the memcore.commands package."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from memcore.commands import COMMANDS

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_every_console_command_is_named_in_one_place() -> None:
    section = PYPROJECT.read_text().split("[project.scripts]", 1)[1].split("\n[", 1)[0]
    assert dict(re.findall(r'^(memcore-[a-z-]+) = "([^"]+)"', section, re.M)) == COMMANDS
    for target in COMMANDS.values():
        module, _, function = target.partition(":")
        assert module.startswith("memcore.commands."), target
        assert callable(getattr(importlib.import_module(module), function)), target

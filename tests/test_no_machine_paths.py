"""No committed result, note or doc names a machine's paths: a reader's machine has none of them."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support import REPO

MACHINE_PATH = re.compile(r"(?<![\w<>.~-])/(?:tmp|work|root|home)/[A-Za-z0-9_.+-]")
CHECKED = ("results", "README.md", "docs", "experiments", "memcore", "baselines", "scripts", "configs")


def _tracked_text_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", *CHECKED], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in out.stdout.split() if not f.endswith((".gz", ".png", ".pdf", ".sqlite"))]


def test_no_committed_file_names_a_machine_path() -> None:
    offenders = []
    for name in _tracked_text_files():
        try:
            text = (REPO / name).read_text()
        except (UnicodeDecodeError, FileNotFoundError):
            continue
        offenders += [
            f"{name}:{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}" for m in MACHINE_PATH.finditer(text)
        ]
    assert not offenders, "machine paths in committed files:\n" + "\n".join(offenders[:20])

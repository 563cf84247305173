"""Code, configs, tests and docs say why, not which ticket: no comment cites a tracker issue or the design brief's
sections (a document outside the repository). Upstream references (``owner/repo#N``) are sources and stay allowed;
``results/`` is out of scope, since a measurement note may tell its own history."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.support import REPO

#: A tracker issue ("issue 7", "issues 5, 15", "Issue #3") or the brief ("DESIGN", then a section sign or ".md").
HISTORY_REF = re.compile(r"\b[Ii]ssues? #?[0-9]|\bDESIGN(?:[ ]§|\.md)")
#: ``results/`` may tell its history; this file holds examples of the pattern.
NOT_CHECKED = ("results/", "tests/test_no_history_refs.py")
BINARY_SUFFIXES = (".gz", ".png", ".pdf", ".sqlite", ".npy", ".npz", ".pkl", ".ico", ".woff", ".woff2")


def _tracked_text_files() -> dict[str, str]:
    """Every tracked text file outside ``NOT_CHECKED``, by repository-relative path."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    texts: dict[str, str] = {}
    for name in out.stdout.splitlines():
        if name.startswith(NOT_CHECKED) or name.endswith(BINARY_SUFFIXES):
            continue
        try:
            texts[name] = (REPO / name).read_text()
        except (UnicodeDecodeError, FileNotFoundError):  # binary, or deleted in the work tree
            continue
    return texts


def _references(text: str) -> list[str]:
    return [f"{text[: m.start()].count(chr(10)) + 1}: {m.group(0)}" for m in HISTORY_REF.finditer(text)]


def test_the_pattern_finds_what_it_is_meant_to() -> None:
    cited = ["(issue 7)", "Issue 28: ties", "issues 5, 15", "issue #3", "DESIGN \u00a74", "DESIGN.md"]
    allowed = ["WujiangXu/A-mem#20", "a known issue with", "issues in the data", "REDESIGN"]
    assert all(HISTORY_REF.search(s) for s in cited)
    assert not any(HISTORY_REF.search(s) for s in allowed)


def test_no_tracked_file_cites_a_ticket_or_the_brief() -> None:
    offenders = [f"{name}:{ref}" for name, text in sorted(_tracked_text_files().items()) for ref in _references(text)]
    assert not offenders, "say why instead of citing history:\n" + "\n".join(offenders[:30])

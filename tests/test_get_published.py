"""scripts/get_published.py: every known file is fetched from a source (here a local copy, as from GitHub's raw URL
at the pinned commit) and checked against its sha256; a wrong copy is refused and nothing unverified is left."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from memcore.published.sources import SOURCES
from tests.support import REPO, published_dir_or_skip


def get_published():
    spec = importlib.util.spec_from_file_location("get_published", REPO / "scripts" / "get_published.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def published() -> Path:
    return published_dir_or_skip()


def test_every_known_file_is_pinned_to_a_commit_and_a_raw_github_url() -> None:
    for name in SOURCES.names():
        src = SOURCES.get(name)
        assert len(src.commit) == 40 and src.files
        for f in src.files:
            assert len(f.sha256) == 64
            assert src.raw_url(f) == f"https://raw.githubusercontent.com/{src.repo}/{src.commit}/{f.repo_path}"


def test_all_files_are_fetched_from_a_local_copy_and_checked(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dest = tmp_path / "published"
    assert get_published().main(["all", "--from", str(published), "--dest", str(dest)]) == 0
    n_files = sum(len(SOURCES.get(n).files) for n in SOURCES.names())
    assert len([p for p in dest.rglob("*.json")]) == n_files == 19
    assert f"export MEMCORE_PUBLISHED={dest}" in capsys.readouterr().out


def test_a_copy_with_another_sha256_is_refused_and_not_kept(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "copy"
    shutil.copytree(published / "zep", src / "zep")
    grades = src / "zep" / "zep_locomo_grades.json"
    grades.write_bytes(grades.read_bytes()[:-2] + b" }")
    dest = tmp_path / "dest"
    assert get_published().main(["zep", "--from", str(src), "--dest", str(dest)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "sha256" in err and "2ecb7010" in err
    assert not list(dest.rglob("*.json")) and not list(dest.rglob("*.part"))


def test_an_unknown_name_says_what_it_meant(capsys: pytest.CaptureFixture[str]) -> None:
    assert get_published().main(["memobase-071"]) == 2
    assert "memobase-0710" in capsys.readouterr().err

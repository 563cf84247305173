"""sha256 verification, atomic download (over file:// URLs: no network here) and the get_locomo CLI."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.download import (
    LOCOMO_SHA256,
    default_locomo_destination,
    download_locomo,
    sha256_file,
    verify_locomo,
)
from memcore.datasets.paths import repo_root

SCRIPT = repo_root() / "scripts" / "get_locomo.py"


@pytest.fixture(scope="module")
def real(locomo_path: Path) -> Path:
    return locomo_path


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".part"))


def test_default_destination(tmp_path: Path) -> None:
    assert default_locomo_destination({"MEMCORE_HOME": str(tmp_path)}) == tmp_path / "data" / "locomo10.json"
    assert default_locomo_destination({}) == Path.home() / ".cache" / "memcore" / "data" / "locomo10.json"


def test_sha256_file(tmp_path: Path) -> None:
    p = tmp_path / "f"
    p.write_bytes(b"abc" * 1_000_000)
    assert sha256_file(p) == sha(b"abc" * 1_000_000)


def test_verify_real_and_tampered(real: Path, tmp_path: Path) -> None:
    assert verify_locomo(real) == LOCOMO_SHA256
    bad = tmp_path / "locomo10.json"
    bad.write_bytes(real.read_bytes()[:-2] + b"]\n")
    with pytest.raises(DataError, match=r"sha256 is [0-9a-f]{64}, expected 79fa87e9") as info:
        verify_locomo(bad)
    assert "--force" in str(info.value)
    with pytest.raises(DataError, match=r"file not found"):
        verify_locomo(tmp_path / "absent.json")


def test_download_writes_verified_file(tmp_path: Path) -> None:
    src = tmp_path / "src.json"
    src.write_bytes(b'[{"x": 1}]')
    dest = tmp_path / "out" / "locomo10.json"
    got = download_locomo(dest, url=src.as_uri(), expected_sha256=sha(src.read_bytes()))
    assert got == dest
    assert dest.read_bytes() == src.read_bytes()
    assert leftovers(dest.parent) == []


def test_download_mismatch_deletes_and_keeps_old(tmp_path: Path) -> None:
    src = tmp_path / "src.json"
    src.write_bytes(b"tampered")
    dest = tmp_path / "locomo10.json"
    with pytest.raises(DataError, match=r"expected 0{64}; it was deleted"):
        download_locomo(dest, url=src.as_uri(), expected_sha256="0" * 64)
    assert not dest.exists()
    assert leftovers(tmp_path) == []
    dest.write_bytes(b"old")
    with pytest.raises(DataError):
        download_locomo(dest, url=src.as_uri(), expected_sha256="0" * 64, force=True)
    assert dest.read_bytes() == b"old"
    assert leftovers(tmp_path) == []


def test_download_skips_verified_copy_and_reports_network_errors(tmp_path: Path) -> None:
    dest = tmp_path / "locomo10.json"
    dest.write_bytes(b"good")
    unreachable = (tmp_path / "no-such-source").as_uri()
    assert download_locomo(dest, url=unreachable, expected_sha256=sha(b"good")) == dest  # no fetch attempted
    with pytest.raises(DataError, match=r"download of .* failed") as info:
        download_locomo(dest, url=unreachable, expected_sha256=sha(b"good"), force=True)
    assert "MEMCORE_DATA" in str(info.value)
    assert dest.read_bytes() == b"good"
    assert leftovers(tmp_path) == []


def run_script(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MEMCORE_HOME": str(home)}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_script_check(real: Path, tmp_path: Path) -> None:
    ok = run_script("--check", str(real), home=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"export MEMCORE_DATA={real.resolve()}"
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    fail = run_script("--check", str(bad), home=tmp_path)
    assert fail.returncode == 1
    assert fail.stdout == ""
    assert fail.stderr.startswith(f"error: {bad}: sha256 is {sha(b'[]')}")


@pytest.mark.e2e  # launches processes: make test, not make test-fast
def test_script_download_to_default_destination(real: Path, tmp_path: Path) -> None:
    done = run_script("--url", real.as_uri(), home=tmp_path)
    dest = tmp_path / "data" / "locomo10.json"
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"export MEMCORE_DATA={dest.resolve()}"
    assert sha256_file(dest) == LOCOMO_SHA256

"""resolve_locomo_path / resolve_audit_path: explicit → env → ../shared → download default → DataError."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.datasets.errors import DataError
from memcore.datasets.locomo.paths import resolve_audit_path, resolve_locomo_path
from memcore.datasets.paths import repo_root, report_fetched


def touch(p: Path) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("[]", encoding="utf-8")
    return p


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """<tmp>/repo (a fake checkout), <tmp>/shared/data/{locomo,locomo-audit}, <tmp>/home (MEMCORE_HOME)."""
    return {
        "repo": (tmp_path / "repo").resolve(),
        "shared": touch(tmp_path / "shared" / "data" / "locomo" / "locomo10.json").resolve(),
        "audit": touch(tmp_path / "shared" / "data" / "locomo-audit" / "errors.json").resolve(),
        "home": tmp_path / "home",
        "tmp": tmp_path,
    }


def test_repo_root_is_the_checkout() -> None:
    assert (repo_root() / "memcore" / "datasets" / "paths.py").is_file()


def test_explicit_file_or_folder(tmp_path: Path) -> None:
    f = touch(tmp_path / "a" / "locomo10.json")
    nested = touch(tmp_path / "b" / "locomo" / "locomo10.json")
    custom = touch(tmp_path / "c" / "my.json")
    env = {"MEMCORE_DATA": str(custom)}
    assert resolve_locomo_path(str(f), env=env) == f
    assert resolve_locomo_path(str(tmp_path / "a"), env=env) == f
    assert resolve_locomo_path(tmp_path / "b", env=env) == nested
    assert resolve_locomo_path(None, env=env) == custom  # env when nothing explicit


def test_env_folder(tmp_path: Path) -> None:
    nested = touch(tmp_path / "d" / "locomo" / "locomo10.json")
    assert resolve_locomo_path(None, env={"MEMCORE_DATA": str(tmp_path / "d")}, bases=[]) == nested


def test_explicit_or_env_pointing_nowhere_fails(layout: dict[str, Path]) -> None:
    with pytest.raises(DataError, match=r"dataset.path .* is neither locomo10.json") as info:
        resolve_locomo_path(str(layout["tmp"] / "missing.json"), env={}, bases=[layout["repo"]])
    assert "python scripts/get_locomo.py" in str(info.value)
    with pytest.raises(DataError, match=r"MEMCORE_DATA=.* is neither"):
        resolve_locomo_path(None, env={"MEMCORE_DATA": str(layout["tmp"] / "nope")}, bases=[layout["repo"]])


def test_shared_next_to_repo_or_cwd(layout: dict[str, Path], tmp_path: Path) -> None:
    env = {"MEMCORE_HOME": str(layout["home"])}
    assert resolve_locomo_path(None, env=env, bases=[layout["repo"]]) == layout["shared"]
    elsewhere = tmp_path / "x" / "y"
    elsewhere.mkdir(parents=True)
    assert resolve_locomo_path(None, env=env, bases=[elsewhere, layout["repo"]]) == layout["shared"]


def test_download_destination_is_last_resort(tmp_path: Path) -> None:
    home = tmp_path / "home"
    got = touch(home / "data" / "locomo10.json")
    assert resolve_locomo_path(None, env={"MEMCORE_HOME": str(home)}, bases=[tmp_path / "r"]) == got


def test_not_found_names_the_script(tmp_path: Path) -> None:
    env = {"MEMCORE_HOME": str(tmp_path / "home")}
    with pytest.raises(DataError) as info:
        resolve_locomo_path(None, env=env, bases=[tmp_path / "repo"])
    msg = str(info.value)
    assert "locomo10.json not found" in msg
    assert str(tmp_path / "shared" / "data" / "locomo" / "locomo10.json") in msg
    assert str(tmp_path / "home" / "data" / "locomo10.json") in msg
    assert "`python scripts/get_locomo.py`" in msg
    assert "MEMCORE_DATA" in msg


def test_default_search_finds_shared_copy() -> None:
    shared = repo_root().parent / "shared" / "data" / "locomo" / "locomo10.json"
    if not shared.is_file():
        pytest.skip(f"{shared} not present")
    # Like with like: ../shared may be a symlink, so compare the files both paths resolve to.
    assert resolve_locomo_path(None, env={}).resolve() == shared.resolve()


def test_audit_path(layout: dict[str, Path], tmp_path: Path) -> None:
    assert resolve_audit_path(None, env={}, bases=[layout["repo"]]) == layout["audit"]
    own = touch(tmp_path / "mine" / "errors.json")
    assert resolve_audit_path(None, env={"MEMCORE_AUDIT": str(tmp_path / "mine")}, bases=[layout["repo"]]) == own
    assert resolve_audit_path(str(own), env={"MEMCORE_AUDIT": "/nonexistent"}) == own
    nested = touch(tmp_path / "n" / "locomo-audit" / "errors.json")
    assert resolve_audit_path(tmp_path / "n", env={}) == nested
    with pytest.raises(DataError, match=r"MEMCORE_AUDIT=.* is neither errors.json"):
        resolve_audit_path(None, env={"MEMCORE_AUDIT": str(tmp_path / "void")})
    with pytest.raises(DataError, match=r"errors.json not found") as info:
        resolve_audit_path(None, env={}, bases=[tmp_path / "mine" / "deeper"])
    assert "dial481/locomo-audit" in str(info.value)


def test_report_fetched_says_each_file_then_the_export_line(capsys: pytest.CaptureFixture[str]) -> None:
    files = [(Path("/d/a b.json"), "(sha256 verified)"), (Path("/d/c.json"), "(sha256 verified)")]
    assert report_fetched(iter(files), "MEMCORE_DATA", error_code=1) == 0
    out = capsys.readouterr()
    assert out.err.splitlines() == ["ok: /d/a b.json (sha256 verified)", "ok: /d/c.json (sha256 verified)"]
    assert out.out == "export MEMCORE_DATA=/d/c.json\n"  # the last file unless another path is exported
    assert report_fetched(iter(files), "X", exported=Path("/d/a b"), error_code=1) == 0
    assert capsys.readouterr().out == "export X='/d/a b'\n"


def test_report_fetched_turns_a_data_error_into_one_line_and_the_scripts_code(
    capsys: pytest.CaptureFixture[str],
) -> None:
    def fetched() -> Iterator[tuple[Path, str]]:
        yield Path("/d/a.json"), "(sha256 verified)"
        raise DataError("b.json has another sha256", hint="fetch it again")

    assert report_fetched(fetched(), "MEMCORE_DATA", error_code=2) == 2
    out = capsys.readouterr()
    assert out.out == "" and "\nerror: b.json has another sha256" in out.err

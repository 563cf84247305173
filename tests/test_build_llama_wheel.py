"""scripts/build_llama_wheel.py: the pinned sdist, its check, the CMake edit and the unpacking, without a build."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile
import tomllib
from pathlib import Path

import pytest

from scripts import build_llama_wheel as blw

ROOT = Path(__file__).resolve().parents[1]
#: the shape of the binding's CMakeLists around the forced option (a stand-in, not the upstream file)
CMAKELISTS = f"""project(binding)
if (LLAMA_BUILD)
    {blw.FORCED_COMMON}
    if (EMSCRIPTEN)
        {blw.UNFORCED_COMMON}
    endif()
    add_subdirectory(vendor/llama.cpp)
endif()
"""


def make_sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_edit_turns_only_the_forced_line_off() -> None:
    edited = blw.without_common(CMAKELISTS)
    assert blw.FORCED_COMMON not in edited
    assert edited.count(blw.UNFORCED_COMMON) == 2
    assert edited.replace(blw.UNFORCED_COMMON, blw.FORCED_COMMON, 1) == CMAKELISTS


@pytest.mark.parametrize("text", [CMAKELISTS.replace(blw.FORCED_COMMON, ""), CMAKELISTS + blw.FORCED_COMMON])
def test_the_edit_refuses_a_file_it_was_not_written_for(text: str) -> None:
    with pytest.raises(blw.BuildError, match="not the one"):
        blw.without_common(text)


def test_the_sdist_check_compares_the_sha256(tmp_path: Path) -> None:
    sdist = tmp_path / "pkg.tar.gz"
    sdist.write_bytes(b"sdist bytes")
    blw.check_sdist(sdist, hashlib.sha256(b"sdist bytes").hexdigest())
    with pytest.raises(blw.BuildError, match="expected 00"):
        blw.check_sdist(sdist, "00" * 32)


def test_unpack_returns_the_single_source_directory(tmp_path: Path) -> None:
    sdist = make_sdist(tmp_path / "s.tar.gz", {"pkg-1/CMakeLists.txt": "x", "pkg-1/vendor/a.c": "y"})
    source = blw.unpack(sdist, tmp_path / "src")
    assert source == tmp_path / "src" / "pkg-1"
    assert (source / "vendor" / "a.c").read_text() == "y"


def test_unpack_refuses_two_top_level_entries_and_paths_out_of_its_directory(tmp_path: Path) -> None:
    with pytest.raises(blw.BuildError, match="2 top-level entries"):
        blw.unpack(make_sdist(tmp_path / "two.tar.gz", {"a/x": "1", "b/y": "2"}), tmp_path / "two")
    with pytest.raises(blw.BuildError, match="outside a plain source tree"):
        blw.unpack(make_sdist(tmp_path / "out.tar.gz", {"p/a": "1", "../escaped": "1"}), tmp_path / "out")
    assert not (tmp_path / "escaped").exists() and list((tmp_path / "out").iterdir()) == []


def test_unsafe_members_names_absolute_paths_parent_parts_and_links() -> None:
    link = tarfile.TarInfo("p/link")
    link.type = tarfile.SYMTYPE
    members = [tarfile.TarInfo(n) for n in ("p/ok.c", "/etc/x", "p/../../up")] + [link]
    assert blw.unsafe_members(members) == ["/etc/x", "p/../../up", "p/link"]


def test_the_pinned_version_is_the_one_the_project_requires() -> None:
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (pin,) = [r for r in extras["local"] if r.startswith(blw.PACKAGE)]
    version = pin.split("==", 1)[1]
    make_pin = re.search(r"^LLAMA_CPP_VERSION \?= (\S+)$", (ROOT / "Makefile").read_text(), re.M)
    assert make_pin is not None and make_pin.group(1) == version
    assert re.fullmatch(r"[0-9a-f]{64}", blw.SDIST_SHA256[version])


def test_an_unpinned_version_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert blw.main(["--out", str(tmp_path), "--version", "9.9.9"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no pinned sha256") and err.count("\n") == 1


def test_a_tampered_sdist_is_refused_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sdist = make_sdist(tmp_path / "llama_cpp_python-0.3.36.tar.gz", {"p/CMakeLists.txt": CMAKELISTS})
    monkeypatch.setattr(blw, "build_wheel", lambda *a: pytest.fail("built a tampered sdist"))
    assert blw.main(["--out", str(tmp_path / "out"), "--sdist", str(sdist), "--work", str(tmp_path)]) == 2
    assert "sha256" in capsys.readouterr().err


def test_main_builds_the_edited_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sdist = make_sdist(tmp_path / "llama_cpp_python-0.3.36.tar.gz", {"p/CMakeLists.txt": CMAKELISTS})
    monkeypatch.setitem(blw.SDIST_SHA256, "0.3.36", blw.sha256_of(sdist))
    built: list[str] = []

    def fake_build(pip: list[str], source: Path, out: Path) -> Path:
        built.append((source / "CMakeLists.txt").read_text())
        return out / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"

    monkeypatch.setattr(blw, "build_wheel", fake_build)
    assert blw.main(["--out", str(tmp_path / "out"), "--sdist", str(sdist), "--work", str(tmp_path)]) == 0
    assert built == [blw.without_common(CMAKELISTS)]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("llama-wheel-")] == []  # scratch removed

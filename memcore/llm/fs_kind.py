"""Which kind of file system a path lives on, read from the mount table (``/proc/mounts``).

SQLite's WAL mode keeps its index in shared memory (an mmap of the ``-shm`` file), which only works when every
process using the database is on one host; over a network file system it can corrupt the database or lock. The
response cache asks :func:`network_fs_of` before it uses WAL (:mod:`memcore.llm.cache_shards`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MOUNTS_FILE = Path("/proc/mounts")

#: File-system types whose files are shared between hosts (``/proc/mounts`` spelling).
NETWORK_FS_TYPES: frozenset[str] = frozenset(
    {
        "nfs",
        "nfs4",
        "cifs",
        "smbfs",
        "smb3",
        "ncpfs",
        "afs",
        "lustre",
        "gpfs",
        "beegfs",
        "fuse.beegfs",
        "fuse.sshfs",
        "sshfs",
        "9p",
        "ceph",
        "fuse.ceph",
        "fuse.cephfs",
        "glusterfs",
        "fuse.glusterfs",
        "panfs",
        "ocfs2",
        "gfs2",
        "fuse.s3fs",
        "fuse.gcsfuse",
        "fuse.juicefs",
        "fuse.rclone",
        "wekafs",
        "quobyte",
    }
)


@dataclass(frozen=True)
class Mount:
    """One line of the mount table: where it is mounted and its file-system type."""

    point: str
    fs_type: str


def _unescape(field: str) -> str:
    """A mount-table field with its octal escapes (``\\040`` for a space, ``\\011``, ``\\012``, ``\\134``) decoded."""
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and all(c in "01234567" for c in code):
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mounts(text: str) -> list[Mount]:
    """The mounts of a ``/proc/mounts`` text (``device point type options dump pass`` per line); malformed lines
    are skipped."""
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mounts.append(Mount(_unescape(fields[1]), fields[2]))
    return mounts


def _existing_ancestor(path: Path) -> Path:
    """``path`` resolved, or its nearest existing ancestor (a cache directory may not exist yet)."""
    p = path.absolute()
    while not p.exists() and p.parent != p:
        p = p.parent
    return p.resolve()


def mount_of(path: Path, mounts: list[Mount]) -> Mount | None:
    """The mount holding ``path``: the longest mount point that is ``path`` or one of its ancestors (the last such
    line wins, as the kernel's later mounts shadow earlier ones); None when no line matches."""
    target = _existing_ancestor(path)
    best: Mount | None = None
    for m in mounts:
        point = Path(m.point)
        if (target == point or point in target.parents) and (best is None or len(m.point) >= len(best.point)):
            best = m
    return best


def network_fs_of(path: Path, mounts_text: str | None = None) -> str | None:
    """The network file-system type ``path`` lives on (``"nfs4"``, ``"lustre"``, …), or None for a local one.
    ``mounts_text`` is the mount table (default: read ``/proc/mounts``; where it cannot be read, e.g. not Linux,
    the path counts as local)."""
    if mounts_text is None:
        try:
            mounts_text = MOUNTS_FILE.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None
    mount = mount_of(path, parse_mounts(mounts_text))
    if mount is None:
        return None
    kind = mount.fs_type.lower()
    return kind if kind in NETWORK_FS_TYPES or kind.split(".", 1)[0] in {"nfs", "cifs", "smb3"} else None

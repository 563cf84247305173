"""The harness's turn id: ``D<session>:<turn>`` (``Turn.dia_id``), the one place it is written and read.

Every dataset names its turns this way (LoCoMo's own ids are already of this form; a dataset whose file names
sessions otherwise keeps its own session ids in its metadata), so the packer's session windows and the
session-level metrics can tell a turn's session and position from its id alone. Reading is lenient, as the
packer and the metrics have always read ids: an id without ``:`` is its own session at turn 0.
"""

from __future__ import annotations


def turn_id(session: int, turn: int) -> str:
    """``D<session>:<turn>``."""
    return f"D{int(session)}:{int(turn)}"


def session_key(dia_id: str) -> str:
    """The session part of a turn id: ``D12:3`` → ``D12`` (an id without ``:`` is its own session)."""
    return str(dia_id).split(":", 1)[0]


def session_number(dia_id: str) -> int:
    """The session number of a turn id: ``D12:3`` → 12 (0 when it has none)."""
    return int(session_key(dia_id).lstrip("D") or 0)


def turn_number(dia_id: str) -> int | None:
    """The turn number of a turn id: ``D12:3`` → 3; None when the id has no numeric turn part."""
    _, sep, turn = str(dia_id).partition(":")
    return int(turn) if sep and turn.isdigit() else None


def neighbour_ids(dia_id: str, width: int) -> list[tuple[str, int]]:
    """The ids within ``width`` turns of ``dia_id`` in its session, nearest first, each with its distance
    (``D12:3``, 1 → ``[("D12:2", 1), ("D12:4", 1)]``); none when the id has no numeric turn part."""
    session, sep, turn = str(dia_id).partition(":")
    if not (sep and turn.isdigit()):
        return []
    t = int(turn)
    return [(f"{session}:{n}", dist) for dist in range(1, width + 1) for n in (t - dist, t + dist)]

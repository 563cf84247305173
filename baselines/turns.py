"""Shared storage of raw turns for the flat baselines (full context, RAG)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path

from memcore.types import EvidenceNote, Turn


def turn_note(turn: Turn, score: float = 0.0, channels: tuple[str, ...] = ()) -> EvidenceNote:
    return EvidenceNote(
        note_id=turn.dia_id,
        text=turn.render(),
        dia_ids=(turn.dia_id,),
        score=score,
        channels=channels,
        timestamp=turn.session_time_raw,
    )


def text_without_caption(turn: Turn) -> str:
    """The turn's own words: ``Turn.text`` without the ``[shares an image: <caption>]`` tag the loader appends."""
    tag = f"[shares an image: {turn.image_caption}]" if turn.image_caption else ""
    return turn.text[: -len(tag)].rstrip() if tag and turn.text.endswith(tag) else turn.text


def save_turns(turns: list[Turn], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for t in turns:
            d = asdict(t)
            d["session_time"] = t.session_time.isoformat()
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")


def load_turns(path: Path) -> list[Turn]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            d["session_time"] = datetime.fromisoformat(d["session_time"])
            out.append(Turn(**d))
    return out

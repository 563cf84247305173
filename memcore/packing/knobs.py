"""The knob group of every method that packs raw turns into a context-token budget, declared once: the frame the
packed turns are written in, the re-ranking cues and the session windows (:mod:`memcore.packing.turns`).

A method's config dataclass inherits :class:`TurnPackingKnobs`, so its ``method`` section has the eight flat
``pack_frame`` / ``pack_cue_*`` / ``pack_window_*`` keys with one set of defaults and allowed ranges;
:func:`turn_packing_label` says in a table row what a run's group did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from memcore.packing.turns import FRAMES, Cues, Windows
from memcore.schema import POS, Rule, knob

#: The cue knobs (any of them non-zero: the packed turns are re-ranked).
CUE_KEYS: tuple[str, ...] = ("pack_cue_speaker", "pack_cue_date", "pack_cue_filler", "pack_cue_neighbors")
#: The window knobs that fuse a ranked list into the turn ranking (either non-zero: the windows are on).
WINDOW_LIST_KEYS: tuple[str, ...] = ("pack_window_bm25", "pack_window_dense")


@dataclass(frozen=True)
class TurnPackingKnobs:
    """Frame, cues and windows of the packed turns (a base of a method's config dataclass)."""

    # the packed turns' frame and re-ranking cues (memcore/packing/turns.py)
    pack_frame: Literal["line", "session", "session_rank"] = knob("line", rule=Rule(choices=FRAMES))
    pack_cue_speaker: float = knob(0.0, rule=Rule(lo=0))  # RRF weight of the named speaker's turns
    pack_cue_date: float = knob(0.0, rule=Rule(lo=0))  # RRF weight of the turns of the question's stated date
    pack_cue_filler: int = knob(0, rule=Rule(lo=0))  # turns with fewer content words go last (0: off)
    pack_cue_neighbors: int = knob(0, rule=Rule(lo=0))  # ±1 neighbours of the first N turns follow them
    # session windows (memcore/packing/turns.py): each turn also ranked by the turns around it
    pack_window_bm25: float = knob(0.0, rule=Rule(lo=0))  # BM25 over each turn's window of turns
    pack_window_dense: float = knob(0.0, rule=Rule(lo=0))  # cosine to each turn's window vector
    pack_window_width: int = knob(2, rule=POS)  # turns on each side of a turn, in its session

    def cues_fused_with(self, rrf_k: int) -> Cues:
        """The cue knobs, their lists fused with the RRF constant ``rrf_k``."""
        return Cues(self.pack_cue_speaker, self.pack_cue_date, self.pack_cue_filler, self.pack_cue_neighbors, rrf_k)

    @property
    def windows(self) -> Windows:
        return Windows(self.pack_window_bm25, self.pack_window_dense, self.pack_window_width)


#: Each knob of the group with its default (the value that reproduces runs recorded before the group existed).
TURN_KNOB_DEFAULTS: dict[str, Any] = {f.name: f.default for f in dataclasses.fields(TurnPackingKnobs)}


def turn_packing_label(method: Mapping[str, Any], lists: Sequence[tuple[Sequence[str], str]] = ()) -> str:
    """What a run's ``method`` section did with the group, as a table row says it: a non-default frame
    (``, session frame``), re-ranking cues (`` + cues``) and the ranked lists fused into the turn ranking
    (`` + windows``, then the method's own ``lists``: (its knobs, its name), named when a knob is non-zero)."""
    label = ""
    frame = method.get("pack_frame") or "line"
    if frame != "line":
        label += ", session frame" + (" (rank order)" if frame == "session_rank" else "")
    if any(method.get(k) for k in CUE_KEYS):
        label += " + cues"
    fused = [name for keys, name in ((WINDOW_LIST_KEYS, "windows"), *lists) if any(method.get(k) for k in keys)]
    if fused:
        label += " + " + ", ".join(fused)
    return label

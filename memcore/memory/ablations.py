"""MemCoRe's ablations: its eight component switches, declared once (:class:`Switches`), and the ablation names.

Under a MemCoRe method the run config's ``ablation`` node is typed by this dataclass (it is the specs'
``ablation_schema``), so a switch is added here and in ``configs/ablation/``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from memcore.errors import ConfigError
from memcore.schema import build_keys, knob


@dataclass(frozen=True)
class Switches:
    """The eight ablation switches, one per component (all true = the full model). ``build``: the switch changes the
    built memory (part of the snapshot key); the others only change retrieval."""

    name: str = "none"
    update: bool = knob(True, build=True)
    merge: bool = knob(True, build=True)
    link: bool = knob(True, build=True)
    denoise: bool = knob(True, build=True)
    topic: bool = True
    keyword: bool = True
    neighbor: bool = True
    ier: bool = True

    @classmethod
    def from_dict(cls, raw: dict[str, Any] | None) -> Switches:
        raw = dict(raw or {})
        unknown = sorted(set(raw) - {"name", *SWITCHES})
        if unknown:
            raise ConfigError(f"unknown ablation key(s) {unknown}; known: name, {', '.join(SWITCHES)}")
        for key in SWITCHES:
            if key in raw and not isinstance(raw[key], bool):
                raise ConfigError(f"ablation.{key} must be true or false, got {raw[key]!r}")
        if not raw.get("topic", True) and not raw.get("keyword", True):
            raise ConfigError(
                "ablation turns off both retrieval channels (topic and keyword); nothing could be retrieved"
            )
        return cls(**raw)

    def construction(self) -> dict[str, bool]:
        return {k: getattr(self, k) for k in CONSTRUCTION_SWITCHES}


#: The switch names (every field of :class:`Switches` but ``name``) and those that change the built memory.
SWITCHES: tuple[str, ...] = tuple(f.name for f in fields(Switches) if f.name != "name")
CONSTRUCTION_SWITCHES: tuple[str, ...] = build_keys(Switches)
#: MemCoRe's ablations: ``none`` (the full model) and one ``wo_<switch>`` per switch, in the paper's order
#: (configs/ablation/<name>.yaml sets exactly that switch to false).
ABLATIONS: tuple[str, ...] = ("none", *(f"wo_{switch}" for switch in SWITCHES))

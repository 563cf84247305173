"""The shared MemCoRe test builders (``tests/support.py``, ``tests/fakes.py``) do what the other tests assume."""

from __future__ import annotations

from tests.fakes import tag_strength
from tests.support import conversation_of


def test_make_conversation_alternates_speakers_and_sessions() -> None:
    conv = conversation_of(["a", "b", "c"], per_session=2)
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D2:1"]
    assert [t.speaker for t in conv.turns] == ["Alice", "Bob", "Alice"]
    assert conv.sessions[1].time_raw == "1:00 pm on 2 May, 2023"


def test_tag_strength_rule() -> None:
    assert tag_strength("tagA dup: x", "tagA: y") == 0.9
    assert tag_strength("tagA: x", "tagA: y") == 0.6
    assert tag_strength("tagA: x", "tagB: y") == 0.1

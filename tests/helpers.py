"""Tiny hand-made conversations for unit tests (no data file needed)."""

from __future__ import annotations

from datetime import datetime

from memcore.types import Category, Conversation, QAItem, Session, Turn


def make_conversation(conv_id: str = "conv-x", n_sessions: int = 2) -> Conversation:
    texts = [
        [
            ("Alice", "I adopted a puppy named Rex last week."),
            ("Bob", "Congrats! What breed is Rex?"),
            ("Alice", "Rex is a beagle."),
        ],
        [
            ("Bob", "I started learning the violin in March."),
            ("Alice", "Nice, how is the violin going?"),
            ("Bob", "Slowly, I practise daily."),
        ],
        [
            ("Alice", "We moved to Lisbon in the summer."),
            ("Bob", "Lisbon is lovely."),
            ("Alice", "Rex loves the beach there."),
        ],
    ]
    sessions = []
    for s in range(n_sessions):
        when = datetime(2023, 5, 1 + 7 * s, 13, 0)
        raw = f"1:00 pm on {1 + 7 * s} May, 2023"
        turns = tuple(
            Turn(
                dia_id=f"D{s + 1}:{i + 1}",
                speaker=sp,
                text=tx,
                session_index=s + 1,
                session_time=when,
                session_time_raw=raw,
            )
            for i, (sp, tx) in enumerate(texts[s % len(texts)])
        )
        sessions.append(Session(index=s + 1, time=when, time_raw=raw, turns=turns))
    qa = (
        QAItem(conv_id, 0, "What breed is Rex?", Category.SINGLE_HOP, "beagle", None, ("D1:3",)),
        QAItem(conv_id, 1, "When did Bob start the violin?", Category.TEMPORAL, "March", None, ("D2:1",)),
        QAItem(conv_id, 2, "What did Alice name her cat?", Category.ADVERSARIAL, None, "Rex", ("D1:1",)),
    )
    return Conversation(conv_id=conv_id, speaker_a="Alice", speaker_b="Bob", sessions=tuple(sessions), qa=qa)

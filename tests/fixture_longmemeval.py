"""A LongMemEval file in the official release format, written by the project (the release is not reachable
from the test machines): a few questions of every type, two abstention questions, each with its own haystack of
dated user-assistant sessions, evidence turns marked ``has_answer`` and answer sessions named ``answer_*`` as in
the release. ``python -m tests.fixture_longmemeval OUT.json`` writes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

FILLER = [
    ("Can you suggest a quick pasta recipe?", "Try garlic, olive oil and chili flakes with spaghetti."),
    ("What is a good stretch for a stiff neck?", "Slow neck rolls and chin tucks help most people."),
    ("How do I keep basil alive indoors?", "Give it six hours of sun and water when the soil is dry."),
    ("Any tips for learning to touch type?", "Practice ten minutes a day on home-row drills."),
    ("Recommend a board game for four players.", "Catan is a classic choice for four."),
    ("How long should I steep green tea?", "About two to three minutes at 80 degrees Celsius."),
]


def _session(user: str, assistant: str, *, evidence: str | None = None, on: str = "user") -> list[dict[str, Any]]:
    """A session of two turns, or with ``evidence`` a session whose ``on`` side states it (marked has_answer)."""
    if evidence is None:
        return [{"role": "user", "content": user}, {"role": "assistant", "content": assistant}]
    if on == "assistant":
        return [
            {"role": "user", "content": user, "has_answer": False},
            {"role": "assistant", "content": evidence, "has_answer": True},
        ]
    return [
        {"role": "user", "content": user, "has_answer": False},
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": evidence, "has_answer": True},
        {"role": "assistant", "content": "Thanks for sharing that with me."},
    ]


def _question(
    qid: str, qtype: str, question: str, answer: str, evidence: list[tuple[str, str]], *, on: str = "user"
) -> dict[str, Any]:
    """One question: filler sessions around one answer session per evidence sentence."""
    ids, dates, sessions, answer_ids = [], [], [], []
    n = len(FILLER)
    for s in range(n + len(evidence)):
        day = 1 + s
        dates.append(f"2023/05/{day:02d} (Mon) {9 + s % 8:02d}:{(7 * s) % 60:02d}")
        if s % 3 == 1 and evidence:
            opener, fact = evidence.pop(0)
            sid = f"answer_{qid}_{len(answer_ids) + 1}"
            answer_ids.append(sid)
            sessions.append(_session(opener, "Sounds good.", evidence=fact, on=on))
        else:
            u, a = FILLER[s % n]
            sid = f"sharegpt_{qid}_{s}"
            sessions.append(_session(u, a))
        ids.append(sid)
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": question,
        "answer": answer,
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ids,
        "haystack_dates": dates,
        "haystack_sessions": sessions,
        "answer_session_ids": answer_ids,
    }


def fixture_records() -> list[dict[str, Any]]:
    """The fixture's questions, in file order."""
    return [
        _question(
            "q-ssu-1",
            "single-session-user",
            "What breed is my dog Rex?",
            "beagle",
            [("I want to talk about my pets.", "My dog Rex is a beagle I adopted in spring.")],
        ),
        _question(
            "q-ssa-1",
            "single-session-assistant",
            "Which museum did you recommend for Sunday?",
            "the Maritime Museum",
            [("Where should I go on Sunday?", "I recommend the Maritime Museum near the harbour.")],
            on="assistant",
        ),
        _question(
            "q-ssp-1",
            "single-session-preference",
            "Can you suggest a dinner for tonight?",
            "The user would prefer vegetarian Thai dishes.",
            [("Let us plan meals.", "I am vegetarian and I love Thai curries with tofu.")],
        ),
        _question(
            "q-ms-1",
            "multi-session",
            "How many musical instruments do I play?",
            "2",
            [
                ("Music chat.", "I started learning the violin last month."),
                ("More music.", "I have played the piano since I was seven."),
            ],
        ),
        _question(
            "q-ku-1",
            "knowledge-update",
            "Where does my sister live now?",
            "Lisbon",
            [
                ("Family news.", "My sister lives in Porto with her husband."),
                ("An update.", "My sister just moved from Porto to Lisbon for work."),
            ],
        ),
        _question(
            "q-tr-1",
            "temporal-reasoning",
            "How many days before my marathon did I buy running shoes?",
            "10 days",
            [
                ("Running gear.", "I bought new running shoes on May 2nd."),
                ("Race day.", "I ran my first marathon on May 12th."),
            ],
        ),
        _question(
            "q-ssu-2_abs",
            "single-session-user",
            "What breed is my cat?",
            "You did not mention a cat; you only mentioned your dog Rex.",
            [("I want to talk about my pets.", "My dog Rex is a beagle I adopted in spring.")],
        ),
        _question(
            "q-tr-2_abs",
            "temporal-reasoning",
            "How many days after my marathon did I run a half marathon?",
            "You never mentioned a half marathon.",
            [("Race day.", "I ran my first marathon on May 12th.")],
        ),
    ]


def write_fixture(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(fixture_records(), indent=1), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write_fixture(Path(sys.argv[1])))

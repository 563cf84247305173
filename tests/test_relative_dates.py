"""Relative date expressions resolved against the session date, on expressions taken from LoCoMo
turns: each row names the turn (conversation, dia_id), its session date, the expression and its reading. The
table pins the rules; ``test_the_table_matches_locomo`` checks each row against the LoCoMo file when present
(no LoCoMo text is committed: only the expression, which the turn must contain)."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from memcore.datasets.locomo.loader import LoCoMoDataset
from memcore.memory.relative_dates import annotate, find_relative_dates, fmt_range

# (conversation, dia_id, session date as LoCoMo writes it, expression, reading, resolved)
LOCOMO_TABLE: list[tuple[str, str, str, str, str, bool]] = [
    ("conv-26", "D1:3", "1:56 pm on 8 May, 2023", "yesterday", "7 May 2023", True),
    ("conv-30", "D3:2", "12:48 am on 1 February, 2023", "today", "1 February 2023", True),
    ("conv-42", "D8:20", "6:44 pm on 17 April, 2022", "tonight", "17 April 2022", True),
    ("conv-30", "D15:5", "10:04 am on 19 June, 2023", "tomorrow", "20 June 2023", True),
    ("conv-26", "D11:1", "2:24 pm on 14 August, 2023", "last night", "13 August 2023", True),
    ("conv-26", "D3:1", "7:55 pm on 9 June, 2023", "last week", "the week of 29 May 2023", True),
    ("conv-26", "D8:6", "1:51 pm on 15 July, 2023", "last weekend", "8–9 July 2023", True),  # a Saturday
    ("conv-26", "D9:6", "2:31 pm on 17 July, 2023", "last month", "June 2023", True),
    ("conv-26", "D1:14", "1:56 pm on 8 May, 2023", "last year", "2022", True),
    ("conv-26", "D2:7", "1:14 pm on 25 May, 2023", "next month", "June 2023", True),
    ("conv-26", "D4:13", "10:37 am on 27 June, 2023", "last Friday", "23 June 2023", True),
    ("conv-26", "D2:1", "1:14 pm on 25 May, 2023", "last Saturday", "20 May 2023", True),
    ("conv-41", "D26:4", "1:59 pm on 31 July, 2023", "last Sunday", "30 July 2023", True),
    ("conv-42", "D21:4", "1:43 pm on 14 September, 2022", "last Monday", "12 September 2022", True),
    ("conv-44", "D23:1", "4:22 pm on 13 October, 2023", "last Tuesday", "10 October 2023", True),
    ("conv-42", "D14:19", "5:44 pm on 3 June, 2022", "this weekend", "4–5 June 2022", True),
    ("conv-26", "D5:13", "1:36 pm on 3 July, 2023", "this month", "July 2023", True),
    ("conv-26", "D7:1", "4:33 pm on 12 July, 2023", "two days ago", "10 July 2023", True),
    ("conv-47", "D8:11", "2:36 pm on 29 April, 2022", "three days ago", "26 April 2022", True),
    ("conv-41", "D30:1", "12:10 am on 11 August, 2023", "two weeks ago", "the week of 24 July 2023", True),
    ("conv-26", "D3:1", "7:55 pm on 9 June, 2023", "three years ago", "2020", True),
    ("conv-41", "D27:4", "6:20 pm on 3 August, 2023", "a year ago", "2022", True),
    ("conv-26", "D15:21", "3:19 pm on 28 August, 2023", "five years ago", "2018", True),
    ("conv-41", "D4:16", "7:06 pm on 9 January, 2023", "next week", "the week of 16 January 2023", True),
    ("conv-47", "D1:36", "3:47 pm on 17 March, 2022", "next Saturday", "19 March 2022", True),
    ("conv-47", "D6:16", "9:32 pm on 20 April, 2022", "next year", "2023", True),
    ("conv-41", "D30:6", "12:10 am on 11 August, 2023", "last summer", "summer 2022", True),
    ("conv-26", "D13:1", "3:31 pm on 23 August, 2023", "this week", "the week of 21 August 2023", True),
    ("conv-26", "D18:1", "6:55 pm on 20 October, 2023", "this past weekend", "14–15 October 2023", True),
    ("conv-30", "D1:13", "4:04 pm on 20 January, 2023", "next Friday", "27 January 2023", True),
    ("conv-44", "D23:12", "4:22 pm on 13 October, 2023", "last winter", "winter 2022–2023", True),
    ("conv-49", "D19:11", "1:45 pm on 9 December, 2023", "next summer", "summer 2024", True),
    ("conv-26", "D12:16", "1:50 pm on 17 August, 2023", "this summer", "summer 2023", True),
    ("conv-49", "D25:14", "9:37 pm on 11 January, 2024", "last spring", "spring 2023", True),
    ("conv-49", "D12:2", "3:09 pm on 8 October, 2023", "one year ago", "2022", True),
    ("conv-42", "D8:2", "6:44 pm on 17 April, 2022", "the past week", "10–17 April 2022", True),
    ("conv-47", "D30:2", "5:20 pm on 5 November, 2022", "this Tuesday", "1 November 2022", True),
    # vague: anchored to the session day, not resolved
    ("conv-26", "D14:25", "1:33 pm on 25 August, 2023", "the other day", "a few days before 25 August 2023", False),
    ("conv-47", "D3:6", "12:40 am on 27 March, 2022", "a few days ago", "a few days before 27 March 2022", False),
]


def _day(raw: str) -> date:
    return datetime.strptime(raw.split(" on ", 1)[1], "%d %B, %Y").date()


@pytest.mark.parametrize(("conv", "dia", "when", "expr", "reading", "resolved"), LOCOMO_TABLE)
def test_locomo_expressions_resolve(conv: str, dia: str, when: str, expr: str, reading: str, resolved: bool) -> None:
    (m,) = find_relative_dates(f"Well, {expr}, I did it.", _day(when))
    assert (m.text, m.value, m.resolved) == (expr, reading, resolved)


def test_the_table_has_twenty_resolved_locomo_expressions() -> None:
    assert len({row[3].lower() for row in LOCOMO_TABLE if row[5]}) >= 20


def test_the_table_matches_locomo(locomo: LoCoMoDataset) -> None:
    """Each row's turn exists, has that session date and contains the expression, which resolves as listed."""
    for conv, dia, when, expr, reading, _ in LOCOMO_TABLE:
        turn = next(t for t in locomo.conversation(conv).turns if t.dia_id == dia)
        assert turn.session_time_raw == when, (conv, dia)
        found = {m.text.lower(): m.value for m in find_relative_dates(turn.text, turn.session_time)}
        assert found.get(expr.lower()) == reading, (conv, dia, expr, found)


def test_annotate_keeps_every_word_and_is_idempotent() -> None:
    text = "I ran a race last Saturday and yesterday I rested; next month I start again."
    out = annotate(text, date(2023, 5, 25))
    assert out == (
        "I ran a race last Saturday [= 20 May 2023] and yesterday [= 24 May 2023] I rested; "
        "next month [= June 2023] I start again."
    )
    assert annotate(out, date(2023, 5, 25)) == out
    assert (
        annotate("Nothing relative here, on 8 May 2023.", date(2023, 5, 8)) == "Nothing relative here, on 8 May 2023."
    )


@pytest.mark.parametrize(
    ("text", "when", "reading"),
    [
        ("last weekend", date(2023, 5, 8), "6–7 May 2023"),  # a Monday: the weekend just past
        ("last weekend", date(2023, 5, 7), "29–30 April 2023"),  # a Sunday: the one before
        ("this weekend", date(2023, 5, 7), "6–7 May 2023"),
        ("next weekend", date(2023, 5, 8), "20–21 May 2023"),
        ("last Monday", date(2023, 5, 8), "1 May 2023"),  # the same weekday: a week back
        ("next Monday", date(2023, 5, 8), "15 May 2023"),
        ("last month", date(2023, 1, 15), "December 2022"),
        ("the day before yesterday", date(2023, 3, 1), "27 February 2023"),
        ("3 months ago", date(2023, 2, 10), "November 2022"),
        ("earlier this week", date(2023, 5, 10), "the week of 8 May 2023"),
        ("last winter", date(2024, 1, 20), "winter 2022–2023"),  # the current winter has not ended
        ("this winter", date(2024, 1, 20), "winter 2023–2024"),
        ("next spring", date(2023, 4, 1), "spring 2024"),
        ("a couple of weeks ago", date(2023, 5, 8), "a few weeks before 8 May 2023"),
        ("the last few weeks", date(2023, 5, 8), "the few weeks before 8 May 2023"),
        ("last Fri", date(2023, 5, 8), "5 May 2023"),
        ("a while ago", date(2023, 5, 8), "some time before 8 May 2023"),
    ],
)
def test_rules_at_their_edges(text: str, when: date, reading: str) -> None:
    (m,) = find_relative_dates(text, when)
    assert m.value == reading


def test_ranges_across_months_and_years() -> None:
    assert fmt_range(date(2023, 9, 30), date(2023, 10, 1)) == "30 September – 1 October 2023"
    assert fmt_range(date(2022, 12, 31), date(2023, 1, 1)) == "31 December 2022 – 1 January 2023"


def test_words_that_only_look_relative_are_left_alone() -> None:
    assert find_relative_dates("Todays and yesterdays; lastly, next-door weekly news", date(2023, 5, 8)) == []
    assert find_relative_dates("when I last sat down, this wed dress", date(2023, 5, 8)) == []

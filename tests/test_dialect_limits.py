"""What any dialect's text may hold (oracle/dialects/limits.py) and the refusals
a newcomer's hostile input found (issue 25): each a clear error naming the
place, never a traceback of Python's own limits."""

from __future__ import annotations

import pytest

from oracle import parse
from oracle.errors import InvalidSpec, WindowSyntaxError

HUGE = "9" * 5000
TERMS = " + ".join(["1"] * 600)

ROWS = [
    # (dialect, text, error class, words in the message)
    ("esper", f"#length({HUGE})", WindowSyntaxError, "at most 4,000 are read at column 1"),
    ("ccl", f"KEEP {'9' * 50} ROWS", WindowSyntaxError, "a number of more than 40 digits at column 6"),
    ("apama", f"retain {'9' * 50}", WindowSyntaxError, "a number of more than 40 digits at column 8"),
    ("kuiper", f"SELECT count(*) FROM demo GROUP BY COUNTWINDOW({'9' * 50})", WindowSyntaxError,
     "a number of more than 40 digits at column 48"),
    ("kuiper", f"SELECT count(*) FROM demo WHERE v > {'9' * 41} GROUP BY COUNTWINDOW(2)", WindowSyntaxError,
     "more than 40 digits at column 37"),
    ("esper", f"#expr({TERMS} > 0)", WindowSyntaxError, "too many terms for the parser"),
    ("kuiper", "SELECT count(*) FROM demo GROUP BY COUNTWINDOW(2) HAVING " + "(" * 60 + "1" + ")" * 60 + " > 0",
     WindowSyntaxError, "brackets nest more than 50 deep at column 108"),
    ("ccl", "KEEP 2 ROWS PER(" + "(" * 60, WindowSyntaxError, "brackets nest more than 50 deep"),
    ("esper", "#length(2)" * 3000, WindowSyntaxError, "30,000 characters long"),
    ("esper", "#length(１２)", WindowSyntaxError, "'１' is not an ASCII digit; numbers are written with 0-9 at column 9"),
    ("ccl", "KEEP ２ ROWS", WindowSyntaxError, "'２' is not an ASCII digit; numbers are written with 0-9 at column 6"),
    ("apama", "retain ٣", WindowSyntaxError, "'٣' is not an ASCII digit"),
    ("kuiper", "SELECT count(*) FROM demo GROUP BY COUNTWINDOW(２)", WindowSyntaxError, "at column 48"),
    ("esper", "#unique(a, a)", InvalidSpec, "a property is named twice in ['a', 'a'] (the view at column 1)"),
    ("esper", "#length(2)#unique(b, b)", InvalidSpec, "(the view at column 11)"),
    ("kuiper", "SELECT count(*) AS c, sum(v) AS c FROM demo GROUP BY COUNTWINDOW(5)", InvalidSpec,
     "the alias 'c' names two select items at column 30"),
    ("kuiper", "SELECT color, count(*) FROM demo GROUP BY COUNTWINDOW(5), color, color", InvalidSpec,
     "the GROUP BY key 'color' at column 66 is named twice"),
    ("kuiper", "SELECT count(*) FROM demo GROUP BY TUMBLINGWINDOW(dd, 3000000)", InvalidSpec,
     "must be at most 253,402,300,800,000 ms"),
]


@pytest.mark.parametrize(("dialect", "text", "error", "words"), ROWS, ids=[f"{d}-{i}" for i, (d, *_) in enumerate(ROWS)])
def test_hostile_text_is_a_clear_error(dialect, text, error, words):
    with pytest.raises(error) as caught:
        parse(text, dialect)
    assert words in str(caught.value)


@pytest.mark.parametrize(("dialect", "text"), [
    ("kuiper", "SELECT count(*) FROM demo WHERE s = '１２' GROUP BY COUNTWINDOW(2)"),  # text in a string is text
    ("esper", "#expr(" + " + ".join(["price"] * 200) + " > 0)"),  # a long expression within the limits
    ("esper", "#length(2147483647)"),
])
def test_text_within_the_limits_parses(dialect, text):
    assert parse(text, dialect) is not None

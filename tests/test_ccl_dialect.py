"""The CCL dialect: table-driven parse, error and render rows, and round trips.

Each parse row is a clause and the spec it means (every other spelling of a
spec beside its canonical text); each error row a clause, the error class and
fragments of the message, the column among them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given

from difftest.strategies import implemented_kinds, windows
from oracle.cases import case_files, load_case
from oracle.dialects import ccl, parse, render, writes
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    GroupWin,
    Intersection,
    JumpingLength,
    JumpingTime,
    KeepAll,
    Keyed,
    LastEvent,
    Length,
    LengthBatch,
    SlackLength,
    Time,
)

CCL_KINDS = implemented_kinds("ccl")
CORPUS = Path(__file__).resolve().parent.parent / "corpus"

PARSE_ROWS = [
    # count policies (ccl-keep-clause.txt, ccl-retention.txt)
    ("KEEP 100 ROWS", Length(100)),
    ("KEEP 1 ROW", Length(1)),
    ("keep 3 Rows", Length(3)),
    ("KEEP 3 ROW", Length(3)),
    ("KEEP LAST ROW", Length(1)),
    ("KEEP LAST", Length(1)),
    ("KEEP 100 ROWS SLACK 10", SlackLength(100, 10)),
    ("KEEP 100 ROWS SLACK 1", Length(100)),
    ("KEEP EVERY 10 ROWS", JumpingLength(10)),
    ("KEEP ALL", KeepAll()),
    ("KEEP ALL ROWS", KeepAll()),
    ("keep all row", KeepAll()),
    # PER
    ("KEEP 2 ROWS PER(Symbol)", GroupWin(("Symbol",), Length(2))),
    ("KEEP 2 ROWS PER (Symbol, Venue)", GroupWin(("Symbol", "Venue"), Length(2))),
    ("KEEP 2 ROWS SLACK 3 PER(Symbol)", GroupWin(("Symbol",), SlackLength(2, 3))),
    ("KEEP EVERY 5 ROWS PER(Symbol)", GroupWin(("Symbol",), JumpingLength(5))),
    ("KEEP 5 SECONDS PER(Symbol)", Time(5000)),  # a time policy "regardless of their grouping"
    ("KEEP EVERY 5 SECONDS PER(Symbol)", JumpingTime(5000)),
    # intervals (ESP 5.1 CCL Reference, Intervals)
    ("KEEP 10 MINS", Time(600_000)),
    ("KEEP 10 MINUTES", Time(600_000)),
    ("KEEP 10 MIN", Time(600_000)),
    ("KEEP 1 MINUTE", Time(60_000)),
    ("KEEP EVERY 100 SECONDS", JumpingTime(100_000)),
    ("KEEP 2 SEC", Time(2000)),
    ("KEEP 1 SECOND", Time(1000)),
    ("KEEP 2 HOURS", Time(7_200_000)),
    ("KEEP 1 HR", Time(3_600_000)),
    ("KEEP 1 DAY", Time(86_400_000)),
    ("KEEP 2 DAYS", Time(172_800_000)),
    ("KEEP 250 MILLISECONDS", Time(250)),
    ("KEEP 250 MILLIS", Time(250)),
    ("KEEP 1 MILLISECOND", Time(1)),
    ("KEEP 3000 MICROSECONDS", Time(3)),
    ("KEEP 3000 MICROS", Time(3)),
    ("KEEP 5000", Time(5)),  # a bare number is microseconds
    ("KEEP 1 SECOND 500 MILLISECONDS", Time(1500)),
    ("KEEP 500 MILLIS 1 SECOND", Time(1500)),  # any order, each unit once
    ("KEEP 3 DAYS, 1 HOUR, 54 MINUTES", Time((3 * 24 * 60 + 60 + 54) * 60_000)),
    ("KEEP 2 SECONDS, 12 MILLISECONDS, 1000 MICROSECONDS", Time(2013)),
    # PRIMARY KEY
    ("PRIMARY KEY (Sym) KEEP ALL", Keyed(("Sym",), KeepAll())),
    ("PRIMARY KEY (Sym)", Keyed(("Sym",), KeepAll())),
    ("primary key(Id) keep 2 rows per(Symbol)", Keyed(("Id",), GroupWin(("Symbol",), Length(2)))),
    ("PRIMARY KEY(Id) KEEP EVERY 5 SECONDS PER(Symbol)", Keyed(("Id",), JumpingTime(5000))),
    ("PRIMARY KEY (a, b) KEEP 1 ROW SLACK 2", Keyed(("a", "b"), SlackLength(1, 2))),
    ("PRIMARY KEY (Id) KEEP 2 ROWS PER(Id)", Keyed(("Id",), GroupWin(("Id",), Length(2)))),  # a warning in ESP
    ("PRIMARY KEY DEDUCED KEEP 100 ROWS", Length(100)),
    ("PRIMARY KEY DEDUCED", KeepAll()),
]


@pytest.mark.parametrize("text, expected", PARSE_ROWS, ids=[row[0] for row in PARSE_ROWS])
def test_parse(text, expected):
    assert ccl.parse(text) == expected
    assert parse(text, "ccl") == expected


ERROR_ROWS = [
    # what the documentation forbids, named by column
    ("KEEP EVERY 10 ROWS SLACK 2", InvalidSpec, ["SLACK (column 20)", "EVERY (column 6)"]),
    ("KEEP 10 SECONDS SLACK 2", InvalidSpec, ["SLACK (column 17)", "time policy"]),
    ("KEEP EVERY 10 SECONDS SLACK 2", InvalidSpec, ["SLACK (column 23)", "EVERY"]),
    ("KEEP 2 ROWS PER(a, b, a)", InvalidSpec, ["PER", "'a' is named twice", "columns 17 and 23"]),
    ("KEEP 5 SECONDS PER(a, a)", InvalidSpec, ["PER", "'a' is named twice"]),
    ("PRIMARY KEY (a, a) KEEP ALL", InvalidSpec, ["PRIMARY KEY", "'a' is named twice", "columns 14 and 17"]),
    ("KEEP 2 ROWS PER(time)", InvalidSpec, ["reserved", "column 17"]),
    ("PRIMARY KEY (seq) KEEP ALL", InvalidSpec, ["reserved", "column 14"]),
    ("KEEP 0 ROWS", InvalidSpec, ["row count must be 1 or more", "column 6"]),
    ("KEEP 2 ROWS SLACK 0", InvalidSpec, ["SLACK must be 1 or more", "column 19"]),
    ("KEEP 2147483648 ROWS", InvalidSpec, ["32-bit", "column 6"]),
    ("KEEP 0 SECONDS", InvalidSpec, ["above 0", "column 6"]),
    ("KEEP 5", InvalidSpec, ["microseconds", "not whole milliseconds", "column 6"]),
    ("KEEP 1 MICROSECOND", InvalidSpec, ["not whole milliseconds"]),
    ("KEEP 1 SECOND 2 SECONDS", InvalidSpec, ["SECONDS is given twice", "columns 8 and 17"]),
    ("KEEP 1 MIN 2 MINUTES", InvalidSpec, ["MINUTES is given twice"]),
    ("KEEP 106751991167301 DAYS", InvalidSpec, ["longer than 2**62 ms"]),
]


@pytest.mark.parametrize("text, error, fragments", ERROR_ROWS, ids=[row[0] for row in ERROR_ROWS])
def test_error(text, error, fragments):
    with pytest.raises(error) as caught:
        ccl.parse(text)
    for fragment in fragments:
        assert fragment in str(caught.value)


SYNTAX_ERROR_ROWS = [
    ("", "unexpected end", 1),
    ("KEEP", "unexpected end", 5),
    ("KEEP ALL PER(a)", "unexpected 'PER'", 10),
    ("KEEP 2 ROWZ", "unexpected 'ROWZ'", 8),
    ("KEEP 1.5 SECONDS", "unexpected '.'", 7),
    ("KEEP -1 SECONDS", "unexpected '-'", 6),
    ("KEEP 2 ROWS PER()", "expected a column name", 17),
    ("KEEP 2 ROWS PER(a) SLACK 2", "unexpected 'SLACK'", 20),
    ("KEEP n ROWS", "unexpected 'n'", 6),  # a count given by a parameter or expression: not supported
    ("KEEP 2 SECS", "unexpected 'SECS'", 8),
    ("PRIMARY KEY Sym KEEP ALL", "unexpected 'Sym'", 13),
    ("KEEP ALL PRIMARY KEY (a)", "unexpected 'PRIMARY'", 10),
    ("#length(2)", "unexpected character '#'", 1),
]


@pytest.mark.parametrize("text, fragment, column", SYNTAX_ERROR_ROWS, ids=[row[0] or "<empty>" for row in SYNTAX_ERROR_ROWS])
def test_syntax_error(text, fragment, column):
    with pytest.raises(WindowSyntaxError) as caught:
        ccl.parse(text)
    assert fragment in caught.value.message
    assert caught.value.column == column


RENDER_ROWS = [
    (Length(1), "KEEP 1 ROW"),
    (Length(100), "KEEP 100 ROWS"),
    (SlackLength(100, 10), "KEEP 100 ROWS SLACK 10"),
    (JumpingLength(10), "KEEP EVERY 10 ROWS"),
    (KeepAll(), "KEEP ALL"),
    (Time(600_000), "KEEP 10 MINUTES"),
    (Time(1000), "KEEP 1 SECOND"),
    (Time(1500), "KEEP 1500 MILLISECONDS"),
    (Time(86_400_000), "KEEP 1 DAY"),
    (JumpingTime(7_200_000), "KEEP EVERY 2 HOURS"),
    (GroupWin(("Symbol", "Venue"), Length(2)), "KEEP 2 ROWS PER(Symbol, Venue)"),
    (Keyed(("Id",), GroupWin(("Symbol",), SlackLength(2, 3))), "PRIMARY KEY (Id) KEEP 2 ROWS SLACK 3 PER(Symbol)"),
    (Keyed(("a", "b"), KeepAll()), "PRIMARY KEY (a, b) KEEP ALL"),
]


@pytest.mark.parametrize("spec, text", RENDER_ROWS, ids=[row[1] for row in RENDER_ROWS])
def test_render(spec, text):
    assert ccl.render(spec) == text
    assert ccl.parse(text) == spec


@pytest.mark.parametrize("spec", [LastEvent(), LengthBatch(2), Intersection((Length(1), KeepAll())),
                                  GroupWin(("a",), Time(1000)), GroupWin(("a",), KeepAll())])
def test_what_ccl_cannot_write_is_unsupported(spec):
    assert not writes(spec, "ccl")
    with pytest.raises(UnsupportedWindow, match="ccl dialect cannot write"):
        render(spec, "ccl")


def test_esper_cannot_write_the_ccl_kinds():
    for spec in (SlackLength(1, 2), JumpingLength(1), JumpingTime(1000), Keyed(("a",), KeepAll())):
        assert not writes(spec, "esper")


@given(windows("ccl", CCL_KINDS))
def test_parse_of_render_is_identity(spec):
    assert ccl.parse(ccl.render(spec)) == spec


def test_names_are_file_safe_and_in_ccl_words():
    assert ccl.name(Keyed(("Id",), GroupWin(("Symbol",), SlackLength(2, 3)))) == "primary_key-rows-slack-per"
    assert ccl.name(JumpingTime(1000)) == "every-interval"
    assert ccl.name(KeepAll()) == "all"


def _corpus_windows() -> list[str]:
    return sorted({load_case(p).window for p in case_files([CORPUS / "ccl"])})


@pytest.mark.parametrize("text", _corpus_windows())
def test_corpus_windows_parse_and_round_trip(text):
    spec = ccl.parse(text)
    assert ccl.parse(ccl.render(spec)) == spec

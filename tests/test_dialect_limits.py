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
    # what the text alone shows cannot be evaluated: Esper's compiler refuses it
    ("esper", "#expr(current_count <= 'abc')", InvalidSpec,
     "(\"current_count <= 'abc'\" at column 7): current_count <= \"abc\" orders a number with a string"),
    ("esper", "#expr(true < false)", InvalidSpec, "orders a boolean; only numbers and strings are ordered"),
    ("esper", "#expr(true = 1)", InvalidSpec, "compares a boolean with a number"),
    ("esper", "#expr(-'a' < 1)", InvalidSpec, "- applies to a number, and \"a\" is a string"),
    ("esper", "#expr(sum('a') < current_count)", InvalidSpec, "sum applies to a number"),
    ("esper", "#expr(newest_event.price > 0 and 'x')", InvalidSpec, "and applies to a boolean, and \"x\" is a string"),
    ("esper", "#length(1)" * 20000, WindowSyntaxError, "200,000 characters long"),  # a 20,000-member intersection
    # eKuiper pushes this WHERE into the window's filter, where its aggregate has no value yet
    ("kuiper", "SELECT * FROM demo WHERE a > avg(a) GROUP BY TUMBLINGWINDOW(ss, 1)", InvalidSpec,
     "the WHERE condition (column 26): an aggregate in WHERE is computed over each pane after the window"),
    ("kuiper", "SELECT * FROM demo WHERE a > sum(avg(a)) GROUP BY COUNTWINDOW(3)", InvalidSpec,
     "the argument of sum may read the events' properties and literals only (column 30)"),
    # Esper statements: each refusal names its place
    ("esper", "select sum(price) from E#length(3) where sum(price) > 2", InvalidSpec,
     "WHERE (column 42) is evaluated for one event; it cannot aggregate"),
    ("esper", "select sum(price) from E(sum(price) > 1)#length(3)", InvalidSpec, "a filter (column 26)"),
    ("esper", "select foo(price) from E#length(3)", InvalidSpec, "unknown function 'foo' at column 8"),
    ("esper", "select sum(price) from E#length(3) group by sum(price)", InvalidSpec,
     "the GROUP BY key 'sum(price)' at column 45 aggregates"),
    ("esper", "select symbol, count(*) from E#length(3) group by symbol, symbol", InvalidSpec,
     "the GROUP BY key 'symbol' at column 59 is named twice"),
    ("esper", "select sum(price) as a, count(*) as a from E#length(3)", InvalidSpec,
     "the alias 'a' names two select items at column 34"),
    ("esper", "select current_count from E#length(3)", InvalidSpec, "current_count at column 8 is a built-in"),
    ("esper", "select sum(price) from E#length(3) having", WindowSyntaxError, "at column 42"),
    ("esper", "select sum(price) frm E#length(3)", WindowSyntaxError, "unexpected 'frm'"),
    ("esper", "select average from E#length(3)#uni(price) where sum(average) > 1", InvalidSpec,
     "WHERE (column 50) is evaluated for one event"),
    ("esper", "select price, * from E#length(3)", WindowSyntaxError, "unexpected '*'"),  # `*` comes first
    # CCL aggregation windows: each refusal names its place
    ("ccl", "SELECT sum(price) AS s FROM E KEEP 3 ROWS", InvalidSpec, "an aggregation needs GROUP BY (column 1)"),
    ("ccl", "SELECT symbol, sum(price) FROM E KEEP 3 ROWS GROUP BY symbol", InvalidSpec,
     "the select item at column 16 needs a name"),
    ("ccl", "SELECT symbol, price AS p FROM E KEEP 3 ROWS GROUP BY symbol", InvalidSpec,
     "the select item at column 16 reads a column outside an aggregate"),
    ("ccl", "SELECT sum(price) AS s FROM E KEEP 3 ROWS GROUP BY symbol", InvalidSpec,
     "the GROUP BY key at column 52 is not in the select list"),
    ("ccl", "SELECT x.symbol, sum(price) AS s FROM E t KEEP 3 ROWS GROUP BY x.symbol", InvalidSpec,
     "'x' at column 8 is not the source's name or alias"),
    ("ccl", "SELECT symbol, sum(*) AS s FROM E KEEP 3 ROWS GROUP BY symbol", InvalidSpec,
     "sum(*) at column 16: only count takes *"),
    ("ccl", "SELECT symbol, median(price) AS m FROM E KEEP 3 ROWS GROUP BY symbol", WindowSyntaxError, "column"),
    ("ccl", "SELECT symbol, sum(price) AS s FROM E KEEP 3 ROWS GROUP BY symbol HAVING", WindowSyntaxError,
     "at column 73"),
    ("ccl", "SELECT symbol, sum(price) AS s, count(*) AS s FROM E KEEP 3 ROWS GROUP BY symbol", InvalidSpec,
     "the alias 's' names two select items"),
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
    # Esper takes these as written, so the oracle does (its docstrings say what they mean):
    ("esper", "#sort(5, price, price desc)"),  # a second key on the same property never decides a tie
    ("esper", '#time_batch(1 sec, "FORCE_UPDATE, FORCE_UPDATE")'),  # TimeBatchFlags sets the flag twice
    ("esper", '#time_batch(1 sec, 0, "")'),  # TimeBatchFlags skips empty words: no flag
    ("esper", "#expr(price <= 'abc')"),  # a property's kind is known per event: an event error then
])
def test_text_within_the_limits_parses(dialect, text):
    assert parse(text, dialect) is not None

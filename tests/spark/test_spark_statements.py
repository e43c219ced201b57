"""Esper statements on Spark where the plan reads the events themselves: over
a `Frame` window (`#length`, `#lastevent`, `#keepall`) grouped by its
sub-windows, the running sums come from the events in arrival order, one sort
(spark_impl/windows/statement.py, `_Plan.framed`); over a `TimeFrame` window
(`#time`), from the events in time order per group after the clock's own sort
(`_Plan.time_framed`). The oracle and the corpus check every statement's
rows; these check the rows by hand and the plan."""

from __future__ import annotations

import contextlib
import io

import pytest

from spark_impl import apply_window_to_events
from spark_impl.frames import NOT_FIELDS

EVENTS = [(n, n * 1000, n % 2, f"E{n}", float(n)) for n in range(6)]


def _events(spark):
    return spark.createDataFrame(EVENTS, "n long, t long, k long, id string, price double")


def _plan(frame) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        frame.explain()
    return printed.getvalue()


def _sorts(frame) -> int:
    return _plan(frame).count("Sort [")


def _fields(row, frame) -> dict:
    """A typed output row's fields (the columns after the update key, side, pos and error)."""
    return {name: row[name] for name in frame.columns if name not in NOT_FIELDS}


def _rows(frame) -> list[tuple]:
    return [(r.after, r.side, _fields(r, frame)) for r in frame.orderBy("after", "side").collect()]


def test_a_statement_grouped_by_its_sub_windows_reads_each_post_off_the_events(spark):
    statement = "select irstream k, sum(price) as s, count(*) as n from E#groupwin(k)#length(2) group by k"
    out = apply_window_to_events(_events(spark), statement, order_col="n", time_col="t")
    # k = 0 gets prices 0, 2, 4 and k = 1 gets 1, 3, 5: the third of each pushes its first out
    assert _rows(out) == [
        (0, "insert", {"k": 0, "s": 0.0, "n": 1}), (0, "remove", {"k": 0, "s": None, "n": 0}),
        (1, "insert", {"k": 1, "s": 1.0, "n": 1}), (1, "remove", {"k": 1, "s": None, "n": 0}),
        (2, "insert", {"k": 0, "s": 2.0, "n": 2}), (2, "remove", {"k": 0, "s": 0.0, "n": 1}),
        (3, "insert", {"k": 1, "s": 4.0, "n": 2}), (3, "remove", {"k": 1, "s": 1.0, "n": 1}),
        (4, "insert", {"k": 0, "s": 6.0, "n": 2}), (4, "remove", {"k": 0, "s": 2.0, "n": 2}),
        (5, "insert", {"k": 1, "s": 8.0, "n": 2}), (5, "remove", {"k": 1, "s": 4.0, "n": 2}),
    ]
    assert _sorts(out) == 1  # the events by group and arrival; the window's posts are never built


def test_where_makes_an_arrival_a_post_where_its_event_or_the_one_it_pushes_out_is_kept(spark):
    statement = "select irstream sum(price) as s from E#length(2) where price < 2 or price > 3"
    out = apply_window_to_events(_events(spark), statement, order_col="n", time_col="t")
    # kept: 0, 1, 4, 5. E2 pushes 0 out (a post), E3 pushes 1 out (a post), E4 pushes 2 out and enters
    assert _rows(out) == [
        (0, "insert", {"s": 0.0}), (0, "remove", {"s": None}),
        (1, "insert", {"s": 1.0}), (1, "remove", {"s": 0.0}),
        (2, "insert", {"s": 1.0}), (2, "remove", {"s": 1.0}),
        (3, "insert", {"s": None}), (3, "remove", {"s": 1.0}),
        (4, "insert", {"s": 4.0}), (4, "remove", {"s": None}),
        (5, "insert", {"s": 9.0}), (5, "remove", {"s": 4.0}),
    ]
    assert _sorts(out) == 1


def test_a_statement_over_time_reads_each_arrival_and_expiry_off_the_events(spark):
    # E2 and E3 arrive together at 2 s, where E0 is due; the walk to 5 s stops at E1's due time, then at
    # E2's and E3's (one post of two leaving rows, the group left empty)
    events = [(0, 0, 0, "E0", 1.0), (1, 1000, 1, "E1", 2.0), (2, 2000, 0, "E2", 4.0), (3, 2000, 0, "E3", 8.0),
              (4, 5000, 1, "E4", 16.0)]
    frame = spark.createDataFrame(events, "n long, t long, k long, id string, price double")
    statement = "select irstream k, sum(price) as s, count(*) as n from E#time(2 sec) group by k"
    out = apply_window_to_events(frame, statement, order_col="n", time_col="t")
    rows = [(r.after, r.phase, r.time, r.side, _fields(r, out))
            for r in out.orderBy("after", "phase", "time", "side").collect()]
    assert rows == [
        (0, 1, 0, "insert", {"k": 0, "s": 1.0, "n": 1}), (0, 1, 0, "remove", {"k": 0, "s": None, "n": 0}),
        (1, 1, 1000, "insert", {"k": 1, "s": 2.0, "n": 1}), (1, 1, 1000, "remove", {"k": 1, "s": None, "n": 0}),
        # E2's walk stops at 2 s, where E0 is due, before E2 arrives
        (2, 0, 2000, "insert", {"k": 0, "s": None, "n": 0}), (2, 0, 2000, "remove", {"k": 0, "s": 1.0, "n": 1}),
        (2, 1, 2000, "insert", {"k": 0, "s": 4.0, "n": 1}), (2, 1, 2000, "remove", {"k": 0, "s": None, "n": 0}),
        (3, 1, 2000, "insert", {"k": 0, "s": 12.0, "n": 2}), (3, 1, 2000, "remove", {"k": 0, "s": 4.0, "n": 1}),
        # E4's walk: E1 leaves at 3 s, then E2 and E3 at 4 s in one post
        (4, 0, 3000, "insert", {"k": 1, "s": None, "n": 0}), (4, 0, 3000, "remove", {"k": 1, "s": 2.0, "n": 1}),
        (4, 0, 4000, "insert", {"k": 0, "s": None, "n": 0}), (4, 0, 4000, "remove", {"k": 0, "s": 12.0, "n": 2}),
        (4, 1, 5000, "insert", {"k": 1, "s": 16.0, "n": 1}), (4, 1, 5000, "remove", {"k": 1, "s": None, "n": 0}),
    ]
    # the window's own (the clock's, by time in its buckets, and two of its small per-bucket table), and one
    # more: the events by group and time
    alone = apply_window_to_events(frame, "#time(2 sec)", order_col="n", time_col="t")
    assert _sorts(out) == _sorts(alone) + 1
    assert "Union" in _plan(alone) and "Union" not in _plan(out)  # the window's arrivals and removals never built


@pytest.mark.parametrize("statement", [
    "select irstream k, sum(price) as s from E#length(2) group by k",  # a group is not a sub-window
    "select irstream k, max(price) as m from E#groupwin(k)#length(2) group by k",  # max needs the values held
])
def test_other_statements_read_the_windows_posts(spark, statement):
    assert _sorts(apply_window_to_events(_events(spark), statement, order_col="n", time_col="t")) > 1


@pytest.mark.parametrize("statement", [
    "select irstream k, sum(price) as s from E#groupwin(k)#time(2 sec) group by k",  # its sub-windows' timers
    "select irstream k, min(price) as s from E#time(2 sec) group by k",  # min needs the values held
])
def test_other_statements_over_time_read_the_windows_posts(spark, statement):
    assert "Union" in _plan(apply_window_to_events(_events(spark), statement, order_col="n", time_col="t"))


def test_a_property_no_event_gives_a_value_reads_as_null(spark):
    # the trace's `price` column has no value (a string column of nulls, marked `frames.NO_VALUES`): every event
    # has the property, null (`"price": null`), so the statement reads null, not a string it would refuse to
    # compare with a number (a property no event has at all is refused: tests/test_user_reports.py)
    from oracle import run
    from oracle.dialects import parse
    from oracle.model import Arrive, Event, Trace
    from spark_impl import run_cases

    spec = parse("select irstream count(price) as c, sum(price) as s, count(*) as n from E(price > 1 or ts > 0)"
                 "#length(2) where price < 5 or symbol = 'A'", "esper")
    trace = Trace([Arrive(Event(f"E{n}", {"symbol": s, "ts": n, "price": None}), time=n * 100)
                   for n, s in enumerate("ABA", 1)])
    (got,) = run_cases([(spec, trace)])
    assert not isinstance(got, Exception), got
    assert got == run(spec, trace) and len(got) == 2  # E1 enters; E2 is not kept (no post); E3 enters, pushing E1 out


# issue 43, item 6: a statement Esper's compiler refuses is told as the user wrote it, not in Python reprs
REFUSED = [
    ("select sum(symbol) as s from E#length(2)", "statement: sum(symbol) is refused by Esper's compiler "
                                                 "(sum over a string)"),
    ("select symbol + 1 as s from E#length(2)", "statement: symbol + 1 is refused by Esper's compiler "
                                                "(+ over a string and an integer)"),
    ("select sum(price) as s from E#length(2) where symbol", "statement: symbol is refused by Esper's compiler "
                                                             "(a condition over a string)"),
    ("select -symbol as s from E#length(2)", "statement: -symbol is refused by Esper's compiler (- over a string)"),
]


@pytest.mark.parametrize("statement, message", REFUSED, ids=[s for s, _ in REFUSED])
def test_a_refused_statement_is_written_as_the_user_wrote_it(spark, statement, message):
    from oracle import parse
    from oracle.errors import UnsupportedWindow
    from oracle.model import Arrive, Event, Length, Trace
    from spark_impl import run_cases

    trace = Trace([Arrive(Event("E1", {"symbol": "X", "price": 1.0}))])
    refused, fine = run_cases([(parse(statement), trace), (Length(1), trace)])  # one job: the other plan runs
    assert isinstance(refused, UnsupportedWindow) and str(refused) == message
    assert [u.insert[0].id for u in fine] == ["E1"]
    events = spark.createDataFrame([(0, 0, "E1", "X", 1.0)], "n long, t long, id string, symbol string, price double")
    with pytest.raises(UnsupportedWindow, match=r"^statement: .* is refused by Esper's compiler"):
        apply_window_to_events(events, statement, order_col="n", time_col="t").collect()

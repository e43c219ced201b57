"""The Spark families of Apama's kinds (spark_impl/windows/lots.py,
stream_query.py) on small hand-made traces, at the points where a plan could
go wrong: the order of a jump's lot across partitions and groups, a count
batch whose own items displace and hide each other, aggregates over a window
items leave (min and max cannot run forward), the empty window's values, and
the errors. Every expectation is worked out by hand from Apama's rules
(oracle/windows/lots.py; each trace's comments show how); the oracle is asked too, as a check
on the hand work. All cases run through `spark_impl.run_cases` in one batch.
"""

from __future__ import annotations

import math

import pytest

from oracle import run
from oracle.errors import UnsupportedWindow
from oracle.model import (
    Advance,
    Arrive,
    BatchedLength,
    BatchedTime,
    Event,
    GroupWin,
    Jump,
    KeepAll,
    Keyed,
    Length,
    LengthUnique,
    Trace,
)
from oracle.dialects.apama import stream_query
from spark_impl import apply_window, frames, run_cases, unsupported
from spark_impl.errors import InvalidFrame, JobFailed


def ev(event_id, time=None, **props):
    return Arrive(Event(event_id, props), time=time)


def u(after, time, insert=(), remove=()):
    return (after, time, list(insert), list(remove))


# Under partition by (#groupwin), a jump fires each group's timer once, due at
# the group's earliest pending expiry, a hidden item's included; a displaced item
# has no timer. retain 2 with unique u, within 1 s, per k:
GROUPED = Trace([
    ev("E1", 0, k="b", u="p"),    # 0 b first seen; leaves at 1000, but E4 displaces it first
    ev("E2", 5, k="a", u="x"),    # 1 a: due 1005; E5 hides it, its timer stays
    ev("E3", 10, k="b", u="q"),   # 2 b: due 1010
    ev("E4", 20, k="b", u="r"),   # 3 b: displaces E1 (newest 2: E3, E4), due 1020
    ev("E5", 30, k="a", u="x"),   # 4 a: hides E2, due 1030
    Jump(5000),                   # 5 a's timer due 1005 before b's due 1010: a's E5 first, then b's E3, E4
])

# A BatchedTime's own partitions share the grid; a jump's lot goes partition by
# partition, by the earliest instant it changes each (an expiry at or before the
# lot's grid point counts at its own instant). within 1.5 every 1.0 retain 1, per k:
PARTITIONED = Trace([
    ev("E1", 100, k="a"),         # 0 a first seen: enters 1000, but E3 displaces it there: never shown
    ev("E2", 200, k="b"),         # 1 enters 1000, leaves ceil(1700) = 2000
    ev("E3", 800, k="a"),         # 2 enters 1000, leaves ceil(2300) = 3000
    Advance(1500),                # 3 stop 1000: [E3 (a), E2 (b)]
    Jump(3500),                   # 4 at 3000: b changed at 2000, a at 3000: [E2, E3]
])

# retain 2 every 3 with unique u: a batch's items displace and hide each other
BATCHES = Trace([
    ev("E1", u="x"), ev("E2", u="y"), ev("E3", u="x"),  # 0-2: newest 2 = E2, E3 (E1 never in)
    ev("E4", u="y"), ev("E5", u="z"), ev("E6", u="z"),  # 3-5: newest 2 = E5, E6; E5 hidden by E6
    ev("E7", u="x"),                                     # 6: waits for its batch
])

WINDOWS = {
    "partition by k within 1.0 retain 2 with unique u, a jump": (
        GroupWin(("k",), LengthUnique(2, ("u",), 1000)), GROUPED,
        [u(0, 0, ["E1"]), u(1, 5, ["E2"]), u(2, 10, ["E3"]), u(3, 20, ["E4"], ["E1"]), u(4, 30, ["E5"], ["E2"]),
         u(5, 5000, [], ["E5", "E3", "E4"])]),
    "partition by k within 1.5 every 1.0 retain 1, a jump": (
        BatchedTime(1500, 1000, 1, (), ("k",)), PARTITIONED,
        [u(3, 1000, ["E3", "E2"]), u(4, 3500, [], ["E2", "E3"])]),
    "retain 2 every 3 with unique u": (
        BatchedLength(2, 3, ("u",)), BATCHES,
        [u(2, 0, ["E2", "E3"]), u(5, 0, ["E6"], ["E2", "E3"])]),
}

# retain 2 over 5, 3, 9, 4: min and max must see items leave
NUMBERS = Trace([ev("E1", p=5), ev("E2", p=3), ev("E3", p=9), ev("E4", p=4)])
# within 1.0 every 1.0: both enter at 1000 and leave at 2000, an empty window then
EMPTIED = Trace([ev("E1", 500, p=2.0), ev("E2", 700, p=4.5), Advance(2500)])
NAN = math.nan

QUERIES = {
    "retain 2 select min(v.p)": (stream_query(Length(2), "min", "p"), NUMBERS,
                                 [(0, 0, 5.0), (1, 0, 3.0), (2, 0, 3.0), (3, 0, 4.0)]),
    "retain 2 select max(v.p)": (stream_query(Length(2), "max", "p"), NUMBERS,
                                 [(0, 0, 5.0), (1, 0, 5.0), (2, 0, 9.0), (3, 0, 9.0)]),
    "retain all select count()": (stream_query(KeepAll(), "count"), NUMBERS,
                                  [(0, 0, 1), (1, 0, 2), (2, 0, 3), (3, 0, 4)]),
    "within 1.0 every 1.0 select avg(v.p)": (stream_query(BatchedTime(1000, 1000), "avg", "p"), EMPTIED,
                                             [(2, 1000, 3.25), (2, 2000, NAN)]),
    "within 1.0 every 1.0 select sum(v.p)": (stream_query(BatchedTime(1000, 1000), "sum", "p"), EMPTIED,
                                             [(2, 1000, 6.5), (2, 2000, 0.0)]),
    "within 1.0 every 1.0 select count()": (stream_query(BatchedTime(1000, 1000), "count"), EMPTIED,
                                            [(2, 1000, 2), (2, 2000, 0)]),
    "within 1.0 every 1.0 select min(v.p)": (stream_query(BatchedTime(1000, 1000), "min", "p"), EMPTIED,
                                             [(2, 1000, 2.0), (2, 2000, NAN)]),
}
# projections: the window's lot on one side only; a unit whose side is empty posts nothing
PROJECTIONS = {
    "partition by k ... select v": (stream_query(GroupWin(("k",), LengthUnique(2, ("u",), 1000)), "istream"), GROUPED,
                                    [u(0, 0, ["E1"]), u(1, 5, ["E2"]), u(2, 10, ["E3"]), u(3, 20, ["E4"]),
                                     u(4, 30, ["E5"])]),
    "partition by k ... select rstream v": (stream_query(GroupWin(("k",), LengthUnique(2, ("u",), 1000)), "rstream"),
                                            GROUPED, [u(3, 20, [], ["E1"]), u(4, 30, [], ["E2"]),
                                                      u(5, 5000, [], ["E5", "E3", "E4"])]),
}
CASES = {**WINDOWS, **QUERIES, **PROJECTIONS}


@pytest.fixture(scope="module")
def outcomes(spark):
    names = list(CASES)
    results = run_cases([(CASES[name][0], CASES[name][1]) for name in names])
    return dict(zip(names, results))


def shown(update):
    return (update.after, update.time, [e.id for e in update.insert], [e.id for e in update.remove])


def valued(update):
    (row,) = update.values.insert
    assert not update.values.remove and not update.insert and not update.remove
    (value,) = row.values()
    return (update.after, update.time, value)


def same_values(got, expected):
    return len(got) == len(expected) and all(
        g[:2] == e[:2] and (math.isnan(g[2]) if isinstance(e[2], float) and math.isnan(e[2]) else g[2] == e[2]
                            and type(g[2]) is type(e[2]))
        for g, e in zip(got, expected))


@pytest.mark.parametrize("name", list({**WINDOWS, **PROJECTIONS}))
def test_lots_post_the_expected_updates(outcomes, name):
    spec, trace, expected = CASES[name]
    got = outcomes[name]
    assert not isinstance(got, Exception), got
    assert [shown(x) for x in got] == expected
    assert [shown(x) for x in run(spec, trace)] == expected  # the hand work agrees with the oracle


@pytest.mark.parametrize("name", list(QUERIES))
def test_aggregates_post_one_row_per_lot(outcomes, name):
    spec, trace, expected = CASES[name]
    got = outcomes[name]
    assert not isinstance(got, Exception), got
    assert same_values([valued(x) for x in got], expected), [valued(x) for x in got]
    assert same_values([valued(x) for x in run(spec, trace)], expected)


def test_a_shown_item_without_the_argument_fails_the_job_naming_it(spark):
    trace = Trace([ev("E1", p=1.0), ev("E2"), ev("E3", p=2.0), ev("E4", p=3.0)])
    # E2 (no p) shows from its arrival: the job fails naming it
    (got,) = run_cases([(stream_query(Length(2), "sum", "p"), trace)])
    assert isinstance(got, JobFailed) and "E2: property p is missing" in str(got)
    # an item that never shows is never aggregated: retain 1 every 2 keeps the newest of each pair
    e1, e2, e3, e4 = trace.items
    reordered = Trace([e3, e4, e2, e1])  # batches (E3, E4) and (E2, E1): E2 is displaced by its own batch
    (fine,) = run_cases([(stream_query(BatchedLength(1, 2), "sum", "p"), reordered)])
    assert not isinstance(fine, Exception), fine
    assert [valued(x)[2] for x in fine] == [3.0, 1.0]


def test_a_non_numeric_argument_column_is_refused(spark):
    frame = frames.to_dataframe(spark, [("t", Trace([ev("E1", p="high")]))])
    with pytest.raises(InvalidFrame, match="'p'.*string, not a number"):
        apply_window(frame, stream_query(Length(2), "max", "p"))


def test_a_query_over_a_keyed_window_is_unsupported():
    from spark_impl.pipeline import family_of

    spec = stream_query(Keyed(("k",), Length(2)), "istream")
    assert "keyed" in unsupported(spec)
    with pytest.raises(UnsupportedWindow, match="keyed"):
        family_of(spec)


def test_query_values_in_apply_windows_output(spark):
    """An aggregate's row is its one typed field, named as the aggregate: no
    `id`, no `values` JSON; the empty window's avg a NaN double."""
    frame = frames.to_dataframe(spark, [("t", EMPTIED)])
    out = apply_window(frame, "from v in values within 1.0 every 1.0 select avg(v.p)", "apama")
    assert "values" not in out.columns and "id" not in out.columns
    assert out.schema["avg"].dataType.simpleString() == "double"
    rows = sorted((r["after"], r["phase"], r["time"], r["side"], r["avg"]) for r in out.collect())
    assert rows[0] == (2, 0, 1000, "insert", 3.25)
    assert rows[1][:4] == (2, 0, 2000, "insert") and math.isnan(rows[1][4])


def test_query_count_is_a_long_column(spark):
    frame = frames.to_dataframe(spark, [("t", EMPTIED)])
    out = apply_window(frame, "from v in values within 1.0 every 1.0 select count()", "apama")
    assert out.schema["count"].dataType.simpleString() == "bigint"
    assert sorted((r["time"], r["count"]) for r in out.collect()) == [(1000, 2), (2000, 0)]


def test_the_bench_reads_a_window_in_another_dialect():
    from spark_impl.bench import WINDOWS, dialect_and_clause

    assert dialect_and_clause("apama: partition by v.k within 10.0 every 1.0 retain 5") == (
        "apama", "partition by v.k within 10.0 every 1.0 retain 5")
    assert dialect_and_clause("#groupwin(k)#time(10 sec)") == ("esper", "#groupwin(k)#time(10 sec)")
    assert dialect_and_clause("nodialect: x") == ("esper", "nodialect: x")
    assert any(window.startswith("apama: ") for window in WINDOWS)

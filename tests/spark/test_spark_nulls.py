"""Null window properties on Spark over an event table (the trace-frame path
replays the corpus's cases): an event without its timestamp posts nothing and
is not held, where the oracle says so; an intersection's member that cannot
take the null fails the job naming the trace and seq."""

from __future__ import annotations

import pytest

from oracle.events import run_events
from spark_impl import apply_window_to_events

pytestmark = pytest.mark.spark

ROWS = [(0, 0, "A", 1000), (1, 100, "B", None), (2, 200, "A", 1500), (3, 2600, "B", 2600), (4, 2700, "A", None)]


@pytest.fixture(scope="module")
def events(spark):
    return spark.createDataFrame(ROWS, "n long, t long, symbol string, ts long")


def _oracle(window: str) -> list[tuple]:
    records = [{k: v for k, v in {"id": str(n), "n": n, "t": t, "symbol": s, "ts": ts}.items() if v is not None}
               for n, t, s, ts in ROWS]
    return [(u.after, u.time, side, e.id) for u in run_events(window, records, time="t", until=5000)
            for side, rows in (("insert", u.insert), ("remove", u.remove)) for e in rows]


@pytest.mark.parametrize("window", ["#time_order(ts, 1 sec)", "#timetolive(ts)", "#ext_timed(ts, 1 sec)",
                                    "#ext_timed_batch(ts, 1 sec)", "#groupwin(symbol)#time_order(ts, 1 sec)"])
def test_an_event_without_its_timestamp_posts_nothing_on_both_engines(events, window):
    out = apply_window_to_events(events, window, order_col="n", time_col="t", until=5000)
    rows = [(r.after, r.time, r.side, r.id) for r in
            out.orderBy("after", "phase", "time", "ordinal", "side", "pos").collect()]
    assert rows == _oracle(window)
    assert not {"1", "4"} & {r[3] for r in rows}


def test_an_intersection_member_that_cannot_take_the_null_fails_the_job_naming_the_seq(events):
    out = apply_window_to_events(events, "#unique(symbol)#time_order(ts, 1 sec)", order_col="n", time_col="t")
    with pytest.raises(Exception, match=r"trace 0 seq 1: event 1: a property of ts is null, which a member of the "
                                        r"intersection cannot take"):
        out.collect()


def test_a_stream_filter_keeps_the_nulls_from_the_intersection_on_both_engines(events):
    """`E(ts >= 0)` lets no event without a `ts` reach the intersection: both
    engines run the trace, neither refuses it."""
    window = "select irstream * from E(ts >= 0)#ext_timed(ts, 1 sec)#length(3)"
    out = apply_window_to_events(events, window, order_col="n", time_col="t")
    rows = [(r.after, r.side, r.id) for r in out.orderBy("after", "side", "pos").collect()]
    records = [{k: v for k, v in {"id": str(n), "n": n, "t": t, "symbol": s, "ts": ts}.items() if v is not None}
               for n, t, s, ts in ROWS]
    expected = [(u.after, side, row["id"]) for u in run_events(window, records, time="t")
                for side, part in (("insert", u.values.insert), ("remove", u.values.remove)) for row in part]
    assert rows == expected and {"1", "4"}.isdisjoint({r[2] for r in rows})


def test_check_pair_refuses_what_reaches_an_intersection_only():
    from oracle import parse
    from oracle.errors import InvalidTrace
    from oracle.model import Arrive, Event, Trace
    from spark_impl import frames

    trace = Trace([Arrive(Event("E1", {"ts": 0})), Arrive(Event("E2", {}))])
    frames.check_pair(parse("select * from E(ts >= 0)#ext_timed(ts, 1 sec)#length(3)", "esper"), trace)
    with pytest.raises(InvalidTrace, match="trace item 1: event 'E2': property 'ts' is null"):
        frames.check_pair(parse("select * from E#ext_timed(ts, 1 sec)#length(3)", "esper"), trace)

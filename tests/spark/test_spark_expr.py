"""The Spark expression windows (spark_impl/windows/expr.py) on hand-made input:
a user's own frame with variables on its `start` row and no column for them,
the rewrite of `current_count <= n` as `#length(n)`, and a value the expression
cannot take failing the job with the trace named. Expectations worked out by
hand from esper.md §4. An event table (no variables, its columns of one value
left out of the scan) posts what the same events post as a trace frame."""

from __future__ import annotations

import random

import pytest

from spark_impl import apply_window, apply_window_to_events, pipeline
from spark_impl.windows.expr import _as_length
from oracle.dialects import esper
from oracle.model import Length

SCHEMA = "trace_id string, seq long, kind string, time long, id string, op string, vars string, price double"


def _rows(frame):
    return sorted((r["after"], r["phase"], r["time"], r["side"], r["id"])
                  for r in frame.collect())


def test_variables_come_from_the_start_row_without_a_column(spark):
    rows = [("t", -1, "start", 0, None, None, '{"MAXC": 2}', None),
            ("t", 0, "event", 0, "E1", None, None, 1.0),
            ("t", 1, "event", 0, "E2", None, None, 2.0),
            ("t", 2, "set", 0, None, None, '{"MAXC": 1}', None),
            ("t", 3, "event", 10, "E3", None, None, 3.0)]
    frame = spark.createDataFrame(rows, SCHEMA)
    out = apply_window(frame, "#expr(current_count <= MAXC and price < 10.0)")
    assert _rows(out) == [(0, 1, 0, "insert", "E1"), (1, 1, 0, "insert", "E2"), (2, 1, 0, "remove", "E1"),
                          (3, 1, 10, "insert", "E3"), (3, 1, 10, "remove", "E2")]


def test_an_expression_of_an_unread_variable_posts_nothing_on_its_set(spark):
    rows = [("t", -1, "start", 0, None, None, '{"A": 1, "B": 2}', None),
            ("t", 0, "set", 0, None, None, '{"B": 5}', None),
            ("t", 1, "set", 0, None, None, '{"A": 5}', None)]
    out = apply_window(spark.createDataFrame(rows, SCHEMA), "#expr(current_count <= A)")
    assert _rows(out) == [(1, 1, 0, None, None)]  # only the set of A: an empty update


@pytest.mark.parametrize("text, size", [("current_count <= 3", 3), ("current_count < 3", 2),
                                        ("current_count <= 0", None), ("current_count <= MAXC", None),
                                        ("current_count <= 3.0", None), ("3 >= current_count", None)])
def test_only_a_literal_count_bound_is_planned_as_length(text, size):
    found = _as_length(esper.parse(f"#expr({text})"))
    assert found == (Length(size) if size else None)


def test_a_value_the_expression_cannot_take_fails_the_job_naming_why(spark):
    rows = [("t", 0, "event", 0, "E1", None, None, 1.0)]
    frame = spark.createDataFrame(rows, SCHEMA)
    with pytest.raises(Exception, match="trace t seq 0: the expiry expression failed: .*cannot be ordered"):
        apply_window(frame.selectExpr("*", "'IBM' AS symbol"), "#expr(symbol > price)").collect()


@pytest.mark.parametrize("window", ["#groupwin(k)#expr(sum(price) < 12)", "#expr(sum(price) < 12)",
                                    "#groupwin(k)#expr(oldest_timestamp + 2000 > newest_timestamp and price > 0)"])
@pytest.mark.parametrize("traced", [False, True])
def test_an_event_table_posts_what_its_trace_frame_posts(spark, window, traced):
    """Planned without variables (`variables=False`), the group table and the
    constant columns left out, the posts are those of the same events as a
    trace frame, where a name could be a variable."""
    draw = random.Random(window)
    rows, t = [], 0
    for n in range(300):
        t += draw.choice([0, 0, 500, 1000])
        rows.append((n, t, draw.randrange(6), f"E{n}", draw.choice([None, -0.0, 1.5, 3.25, 7.0, float("nan")]),
                     f"d{n % 2}" if traced else "d0"))
    events = spark.createDataFrame(rows, "n long, t long, k long, id string, price double, device string")
    table = apply_window_to_events(events, window, order_col="n", time_col="t", trace_col="device" if traced else None)
    trace = "device" if traced else "'0'"
    frame = apply_window(events.selectExpr(f"{trace} AS trace_id", "n AS seq", "'event' AS kind",
                                           "t AS time", "id", "k", "price"), window)
    # `pos.slot` orders the posts of sub-windows posting in one unit, which only a variable's setting makes:
    # without variables it is 0, as the frame's where no name is read (with one, the group's first seq)
    shared = [c for c in table.columns if c in frame.columns and (traced or c != "trace_id")]
    columns = [part for c in shared for part in (["pos.due", "pos.n"] if c == "pos" else [c])]
    got = sorted(map(repr, table.selectExpr(*columns).collect()))
    assert sum("remove" in row for row in got) > 20
    assert got == sorted(map(repr, frame.selectExpr(*columns).collect()))


def test_a_variable_where_none_was_promised_fails_the_job(spark):
    rows = [("t", -1, "start", 0, None, None, None, None),
            ("t", 0, "event", 0, "E1", None, None, 1.0),
            ("t", 1, "set", 0, None, None, '{"A": 5}', None)]
    out = pipeline.apply(spark.createDataFrame(rows, SCHEMA), esper.parse("#expr(sum(price) < A)"), variables=False)
    with pytest.raises(Exception, match="trace t seq 1: a variable declared or set, but the window was planned"):
        out.collect()

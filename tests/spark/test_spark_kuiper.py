"""eKuiper's pane windows and queries on Spark (spark_impl/windows/panes.py,
pane_kernel.py, pane_query.py) on small hand-made traces. Every expectation is
worked out by hand from kuiper.md and the rules in oracle/windows/panes.py (then the
oracle is asked to agree, so a wrong hand expectation shows too).

TUMBLINGWINDOW(ss, 1), processing time, created at 0 (ends 1000, 2000, ...):

    clock   0    100  500      1000       2000       3000
    items        E1@100 (a)    tick       tick       tick (the advance to 3000)
    panes                      [0,1000)   [1000,2000) [2000,3000)
                               E1         empty      empty
"""

from __future__ import annotations

import pytest

from difftest.compare import compare
from oracle import parse, run
from oracle.model import Advance, Arrive, Event, Jump, Trace
from spark_impl import apply_window, apply_window_to_events, frames, output_schema, run_cases
from spark_impl.errors import InvalidFrame
from spark_impl.windows.pane_kernel import aligned_end
from spark_impl.windows.pane_query import compile_select


def ev(event_id, time=None, **props):
    return Arrive(Event(event_id, props), time=time)


def kuiper(text, **settings):
    return parse(text, "kuiper", settings)


def summary(updates):
    """(after, time, inserted ids, (start, end), values rows or None, error); a
    null field left out of its row, as eKuiper's rows (maps) leave it out."""
    return [(u.after, u.time, [e.id for e in u.insert], (u.window.start, u.window.end) if u.window else None,
             None if u.values is None else [{k: v for k, v in r.items() if v is not None} for r in u.values.insert],
             u.error) for u in updates]


EMPTY_PANES = Trace([ev("E1", 100, color="red"), Advance(3000)])
# a jump 4 s past the first end: the first timer fires late and closes its own end; the next tick (due 6000,
# end 2000) is 4 s late: skipped, the ticks aligned again from 6000 (next end 7000)
JUMPS = Trace([ev("E1", 100, color="red"), Jump(5000), ev("E2", 5200, color="blue"), Advance(6000), Advance(7000)])


def test_tumbling_posts_empty_panes_at_every_tick(spark):
    spec = kuiper("TUMBLINGWINDOW(ss, 1)")
    [found] = run_cases([(spec, EMPTY_PANES)], spark)
    assert summary(found) == [
        (1, 1000, ["E1"], (0, 1000), None, None),
        (1, 2000, [], (1000, 2000), None, None),
        (1, 3000, [], (2000, 3000), None, None),
    ]
    assert found == run(spec, EMPTY_PANES)


def test_a_late_jump_realigns_beside_a_trace_that_does_not(spark):
    """One frame, two traces: the jumping one runs in the kernel, the other as set operations."""
    spec = kuiper("TUMBLINGWINDOW(ss, 1)")
    jumped, plain = run_cases([(spec, JUMPS), (spec, EMPTY_PANES)], spark)
    assert summary(jumped) == [
        (1, 5000, ["E1"], (0, 1000), None, None),
        (4, 7000, ["E2"], (1000, 7000), None, None),
    ]
    assert summary(plain)[0] == (1, 1000, ["E1"], (0, 1000), None, None)
    assert jumped == run(spec, JUMPS)


def test_grouped_count_query_values_and_bounds(spark):
    query = kuiper("SELECT color, count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 10), color")
    trace = Trace([ev("E1", 1000, color="red"), ev("E2", 4000, color="blue"), ev("E3", 5000, color="red"),
                   ev("E4", 12000, color="red"), Advance(20000)])
    [found] = run_cases([(query, trace)], spark)
    assert summary(found) == [
        (3, 10000, ["E1", "E2", "E3"], (0, 10000), [{"color": "red", "c": 2}, {"color": "blue", "c": 1}], None),
        (4, 20000, ["E4"], (10000, 20000), [{"color": "red", "c": 1}], None),
    ]


def test_pane_rows_false_keeps_the_query_rows_only(spark):
    query = kuiper("SELECT color, count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), color")
    trace = Trace([ev("E1", 100, color="red"), ev("E2", 200, color="red"), Advance(2000)])
    frame = frames.to_dataframe(spark, [("t", trace)], frames.spec_properties(query))
    out = apply_window(frame, query, pane_rows=False)
    assert "pane_event" not in out.columns and "values" not in out.columns
    got = sorted((r.time, r.side, r.color, r.c) for r in out.collect())
    # the first pane's one output row; the second pane empty: no output row (side null, fields null)
    assert got == [(1000, "insert", "red", 2), (2000, None, None, None)]
    with pytest.raises(Exception, match="only a query"):
        apply_window(frame, "TUMBLINGWINDOW(ss, 1)", "kuiper", pane_rows=False)


def test_aggregate_of_an_empty_pane_is_one_row_and_a_non_aggregate_none(spark):
    counted = kuiper("SELECT count(*) AS n, sum(size) AS total FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)")
    listed = kuiper("SELECT color FROM demo GROUP BY TUMBLINGWINDOW(ss, 1)")
    trace = Trace([ev("E1", 100, color="red", size=3), Advance(2000)])
    counts, lists = run_cases([(counted, trace), (listed, trace)], spark)
    # sum over no row is null, so the field is left out
    assert summary(counts) == [(1, 1000, ["E1"], (0, 1000), [{"n": 1, "total": 3}], None),
                               (1, 2000, [], (1000, 2000), [{"n": 0}], None)]
    assert summary(lists) == [(1, 1000, ["E1"], (0, 1000), [{"color": "red"}], None),
                              (1, 2000, [], (1000, 2000), [], None)]


def test_event_time_panes_of_one_row_get_distinct_ordinals_and_a_late_row_is_an_error(spark):
    spec = kuiper("TUMBLINGWINDOW(ss, 1)", time_mode="event", timestamp_field="ts")
    trace = Trace([ev("E1", ts=500), ev("E2", ts=3500), ev("E3", ts=2000)])
    frame = frames.to_dataframe(spark, [("t", trace)], frames.spec_properties(spec))
    rows = apply_window(frame, spec).collect()
    keys = sorted((r.after, r.ordinal, r.side, r.window.start if r.window else None) for r in rows)
    assert keys == [(1, 0, "insert", 500), (1, 1, None, 1000), (1, 2, None, 2000), (2, 0, "error", None)]
    [found] = run_cases([(spec, trace)], spark)
    assert summary(found) == [
        (1, 0, ["E1"], (500, 1000), None, None),
        (1, 0, [], (1000, 2000), None, None),
        (1, 0, [], (2000, 3000), None, None),
        (2, 0, [], None, None, "late row: event time 2000 ms is before the watermark 3500 ms"),
    ]


def test_hopping_reports_the_previous_end_minus_the_hop_as_start(spark):
    spec = kuiper("SELECT *, window_start() AS ws FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1)")
    trace = Trace([ev("E1", 1500, color="red"), Advance(3000)])
    [found] = run_cases([(spec, trace)], spark)
    # E1's walk reaches the first tick; ends 1000, 2000, 3000; the first start is creation - hop (<= 0: end - size); then previous end - hop
    assert summary(found) == [
        (0, 1000, [], (-1000, 1000), [], None),
        (1, 2000, ["E1"], (0, 2000), [{"id": "E1", "color": "red", "ws": 0}], None),
        (1, 3000, ["E1"], (1000, 3000), [{"id": "E1", "color": "red", "ws": 1000}], None),
    ]
    assert found == run(spec, trace)


def test_having_runs_in_python_and_suppresses_the_pane(spark):
    spec = kuiper("SELECT color, count(*) AS c FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), color HAVING c > 1")
    assert compile_select(spec, {"color": "string"}) is None  # HAVING is not compiled: the kernel runs it
    trace = Trace([ev("E1", 100, color="red"), ev("E2", 200, color="red"), ev("E3", 1100, color="blue"),
                   Advance(2000)])
    [found] = run_cases([(spec, trace)], spark)
    assert summary(found) == [(2, 1000, ["E1", "E2"], (0, 1000), [{"color": "red", "c": 2}], None)]


def test_sliding_and_count_windows(spark):
    sliding = kuiper("SLIDINGWINDOW(ss, 1)")
    count = kuiper("COUNTWINDOW(2)")
    trace = Trace([ev("E1", 100), ev("E2", 600), ev("E3", 1700)])
    slid, counted = run_cases([(sliding, trace), (count, trace)], spark)
    # each row's pane [t - 1000, t], closed both ends
    assert summary(slid) == [(0, 100, ["E1"], (-900, 100), None, None), (1, 600, ["E1", "E2"], (-400, 600), None, None),
                             (2, 1700, ["E3"], (700, 1700), None, None)]
    # every 2nd row, the last 2 rows; start and end the clock
    assert summary(counted) == [(1, 600, ["E1", "E2"], (600, 600), None, None)]


# COUNTWINDOW(3, 2): the triggers are the rows r = 1, 3, 5, ... (0-based, counted after the FILTER); r = 1
# holds 2 < 3 rows (no pane), every later one the last 3 rows: E2..E4 at E4, E4..E6 at E6
COUNTED = Trace([ev("E1", 100, color="red", size=3), ev("E2", 200, color="blue", size=1),
                 ev("E3", 300, color="red", size=5), ev("E4", 400, color="red", size=2),
                 ev("E5", 500, color="blue", size=4), ev("E6", 600, color="red", size=6),
                 ev("E7", 700, color="blue", size=7)])
# a schemaless stream: size holds a string in E8 (a condition on it is Python's, and errs there)
MIXED = Trace([*COUNTED.items, ev("E8", 800, color="blue", size="big"), ev("E9", 900, color="red", size=8)])


def test_count_window_panes_follow_the_row_indices(spark):
    [counted] = run_cases([(kuiper("COUNTWINDOW(3, 2)"), COUNTED)], spark)
    assert summary(counted) == [(3, 400, ["E2", "E3", "E4"], (400, 400), None, None),
                                (5, 600, ["E4", "E5", "E6"], (600, 600), None, None)]


@pytest.mark.parametrize("text, python", [
    ("COUNTWINDOW(3, 2)", False),
    ("COUNTWINDOW(2) FILTER(WHERE size > 1)", False),
    ("SELECT color, count(*) AS c, window_end() AS we FROM demo WHERE size > 1 GROUP BY COUNTWINDOW(3, 2), color",
     False),
    ("SELECT *, window_start() AS ws FROM demo WHERE color = 'red' GROUP BY COUNTWINDOW(3, 2) ORDER BY id DESC", False),
    ("SELECT color, count(*) AS c FROM demo GROUP BY COUNTWINDOW(3, 2), color HAVING c > 1", True),
    ("SELECT id FROM demo WHERE size >= avg(size) GROUP BY COUNTWINDOW(3, 2)", True),
    ("SELECT count(*) AS c FROM demo GROUP BY COUNTWINDOW(2) FILTER(WHERE event_time() > 150)", True),
])
def test_count_windows_post_what_the_oracle_posts_in_sql_or_per_pane(spark, text, python):
    """A count window's panes come from row indices, never a count. Where its
    conditions and query compile, one SQL statement (no Python task); else
    the rows are admitted or each pane posted by Spark's own evaluator. On a
    schemaless stream a condition on the mixed column is Python's (and errs
    at E8)."""
    spec = kuiper(text)
    assert run_cases([(spec, COUNTED), (spec, MIXED)], spark) == [run(spec, COUNTED), run(spec, MIXED)]
    frame = frames.to_dataframe(spark, [("t", COUNTED)], frames.spec_properties(spec))
    plan = apply_window(frame, spec)._jdf.queryExecution().executedPlan().toString()
    assert ("InArrow" in plan) == python


@pytest.mark.parametrize("name", ["due", "k", "r", "filled"])
def test_a_property_named_like_a_column_of_the_count_plan_posts_as_any_other(spark, name):
    """The count plan's own columns beside the properties are `#...` (`#r`,
    `#k`, `#due`), so a property named due or k rides along and groups."""
    spec = kuiper(f"SELECT `{name}`, count(*) AS c FROM demo WHERE `{name}` > 1 GROUP BY COUNTWINDOW(3, 2), `{name}`")
    trace = Trace([ev(f"E{n}", 100 * n, **{name: n % 3}) for n in range(1, 8)])
    assert run_cases([(spec, trace)], spark) == [run(spec, trace)]


def test_a_count_window_over_an_event_table_of_one_trace(spark):
    """One trace leaves the trace out of the index's window and every key
    (`Context.one_trace`); a trace column keeps it: the same output."""
    query = "SELECT color, count(*) AS c FROM demo GROUP BY COUNTWINDOW(2, 1), color"
    events = spark.createDataFrame([(0, 100, "red"), (1, 200, "blue"), (2, 300, "red")],
                                   "n long, t long, color string")

    def posted(frame, **kw):
        rows = apply_window_to_events(frame, query, order_col="n", time_col="t", dialect="kuiper",
                                      pane_rows=False, **kw).collect()
        return sorted((r.trace_id, r.after, r.time, r.pos.n, (r.color, r.c), r.window.start, r.window.end)
                      for r in rows)

    alone = posted(events)
    assert [r[1:3] + r[4:] for r in alone] == [
        (1, 200, ("red", 1), 200, 200), (1, 200, ("blue", 1), 200, 200),
        (2, 300, ("blue", 1), 300, 300), (2, 300, ("red", 1), 300, 300)]
    traced = posted(events.selectExpr("*", "'d1' AS device"), trace_col="device")
    assert [r[1:] for r in traced] == [r[1:] for r in alone] and {r[0] for r in traced} == {"d1"}


def test_a_column_named_window_is_refused(spark):
    frame = frames.to_dataframe(spark, [("t", EMPTY_PANES)]).withColumnRenamed("color", "window")
    with pytest.raises(InvalidFrame, match="window"):
        apply_window(frame, "TUMBLINGWINDOW(ss, 1)", "kuiper")


def test_the_output_window_column_holds_the_bounds(spark):
    frame = frames.to_dataframe(spark, [("t", EMPTY_PANES)])
    out = apply_window(frame, "TUMBLINGWINDOW(ss, 1)", "kuiper")
    assert out.schema["window"].dataType.simpleString() == "struct<start:bigint,end:bigint>"
    got = sorted((r.time, r.window.start, r.window.end, r.side) for r in out.collect())
    assert got == [(1000, 0, 1000, "insert"), (2000, 1000, 2000, None), (3000, 2000, 3000, None)]


def test_query_fields_are_typed_columns(spark):
    query = kuiper("SELECT color, avg(size) AS a FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), color")
    floats = Trace([ev("E1", 100, color="red", size=1.0), ev("E2", 200, color="red", size=2.0), Advance(1000)])
    integers = Trace([ev("E1", 100, color="red", size=1), ev("E2", 200, color="red", size=2), Advance(1000)])
    # eKuiper's avg of integers is the truncated integer mean, an integer
    for trace, mean, kind in ((floats, 1.5, "double"), (integers, 1, "bigint")):
        frame = frames.to_dataframe(spark, [("t", trace)], frames.spec_properties(query))
        out = apply_window(frame, query)
        assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields[-2:]] == [
            ("color", "string"), ("a", kind)]
        rows = [r for r in out.collect() if r.side == "insert" and r.pane_event is None]
        assert [(r.color, r.a) for r in rows] == [("red", mean)] and type(rows[0].a) is type(mean)
        # the pane's event rows: the event in `pane_event`, the fields null
        assert sorted((r.pane_event, r.color, r.a) for r in out.collect() if r.pane_event) == [
            ("E1", None, None), ("E2", None, None)]


def test_aligned_end_follows_the_zone_across_dst():
    from zoneinfo import ZoneInfo

    # 2024-03-10 01:30 EST (06:30 UTC), HH 2: the local midnight (05:00 UTC) + 2 h = 07:00 UTC (03:00 EDT)
    t = 1710052200000
    assert aligned_end(t, 2, 3_600_000, ZoneInfo("America/New_York")) == 1710054000000
    # SS 40 at second 51: 80 s after the minute's start
    assert aligned_end(51_000, 40, 1000, ZoneInfo("UTC")) == 80_000
    # New York's repeated 01:xx: the hour start 01:00 is Go's first occurrence (05:00 UTC), also
    # from the second 01:20 (06:20 UTC); Berlin's repeated 02:xx: the second (01:00 UTC)
    assert aligned_end(1730614800000, 10, 60_000, ZoneInfo("America/New_York")) == 1730611800000
    assert aligned_end(1729988400000, 10, 60_000, ZoneInfo("Europe/Berlin")) == 1729992600000


@pytest.mark.parametrize("start", [None, 250], ids=["created at 0", "created at 250"])
@pytest.mark.parametrize("name", ["k", "c", "E0", "due", "last", "g0"])
def test_a_property_named_like_a_column_of_the_set_plan_posts_as_any_other(spark, name, start):
    """The set plan's own columns beside the properties are named `#...` (the
    pane index `#k`, a trace's creation `#c`, ...), so a property named k, c,
    due (any case) stays in it (a property named `#...` is no identifier: both
    engines refuse it, `oracle.model.TraceProperties`). Created at 0 the creation is a literal; at 250, a column of each row.
    Hopping too (its rows are spread over their panes by an explode)."""
    # a `#...` name is no name of eKuiper's SQL: the query groups by x, the property only rides along
    key = "x" if name.startswith("#") else name
    # (the count is `n`: a property `c` beside an alias `c` would read the alias, the oracle's rule)
    query = f"SELECT `{key}`, count(*) AS n FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), `{key}`"
    hopping = query.replace("TUMBLINGWINDOW(ss, 1)", "HOPPINGWINDOW(ss, 1, 1)")
    events = spark.createDataFrame([(0, 300, "red"), (1, 1200, "blue"), (2, 1300, "red")], "n long, t long, x string")

    def posted(frame, q):
        out = apply_window_to_events(frame, q, order_col="n", time_col="t", until=3000, start=start,
                                     dialect="kuiper", pane_rows=False)
        kernel = "FlatMapGroupsInArrow" in out._jdf.queryExecution().executedPlan().toString()
        # in update order, then pos order (the kernel numbers pos from 0, the set plan by first seq)
        rows = sorted(out.collect(), key=lambda r: (r.after, r.time, r.pos.n if r.pos else -1))
        return kernel, [(r.after, r.time, r.side, r[key], r.n) for r in rows]

    expected = [(1, 1000, "insert", "red", 1), (3, 2000, "insert", "blue", 1),
                (3, 2000, "insert", "red", 1), (3, 3000, None, None, None)]
    named = events.withColumnRenamed("x", key)
    named = named.selectExpr("*", f"1 AS `{name}`") if name != key else named
    assert posted(named, query) == (False, expected)
    assert posted(named, hopping) == (False, expected)  # a hopping pane 0 holds E1, at 300 after the creation


def test_an_event_table_of_one_trace_posts_what_a_traced_table_does(spark):
    """HOPPINGWINDOW(ss, 2, 1) created at 0: ends 1000, 2000, ...; pane k holds
    [end - 2000, end); each tick fires on the first item at or past its end
    (E3 at 4500 fires three, the `until` advance, seq 4, two more); the pane
    ending 4000 holds no row. One trace leaves the trace out of every key
    (`Context.one_trace`); a trace column keeps it: the same output."""
    query = "SELECT color, count(*) AS c FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1), color"
    events = spark.createDataFrame([(0, 100, "red"), (1, 1200, "blue"), (2, 1300, "red"), (3, 4500, "red")],
                                   "n long, t long, color string")

    def posted(frame, **kw):
        rows = apply_window_to_events(frame, query, order_col="n", time_col="t", until=6000, dialect="kuiper",
                                      pane_rows=False, **kw).collect()
        return sorted((r.trace_id, r.after, r.time, r.side, r.pos.n if r.pos else -1, (r.color, r.c),
                       r.window.start, r.window.end) for r in rows)

    alone = posted(events)
    red, blue = lambda n: ("red", n), ("blue", 1)  # noqa: E731
    assert [(after, time, side, fields, (start, end)) for _, after, time, side, _, fields, start, end in alone] == [
        (1, 1000, "insert", red(1), (-1000, 1000)),
        (3, 2000, "insert", red(2), (0, 2000)), (3, 2000, "insert", blue, (0, 2000)),  # in pos order
        (3, 3000, "insert", blue, (1000, 3000)), (3, 3000, "insert", red(1), (1000, 3000)),
        (3, 4000, None, (None, None), (2000, 4000)),
        (4, 5000, "insert", red(1), (3000, 5000)),
        (4, 6000, "insert", red(1), (4000, 6000)),
    ]
    assert {r[0] for r in alone} == {"0"}
    traced = posted(events.selectExpr("*", "'d1' AS device"), trace_col="device")
    assert [r[1:] for r in traced] == [r[1:] for r in alone] and {r[0] for r in traced} == {"d1"}


def test_a_creation_at_its_aligned_end_runs_in_the_kernel_beside_set_traces(spark):
    """TUMBLINGWINDOW(hh, 8) in UTC+8: the clock's 0 is 08:00 local, so the
    aligned end of a creation at 0 is 0 itself (the alignment quirk): that
    trace goes to the kernel, one created at 1 h through set operations; with
    every trace created at 0 there is no set-oriented trace at all."""
    spec = kuiper("TUMBLINGWINDOW(hh, 8)", time_zone="Asia/Shanghai")
    hour = 3_600_000
    at_zero = Trace([ev("E1", hour, color="red"), Advance(17 * hour)])
    later = Trace([ev("E2", 2 * hour, color="blue"), Advance(17 * hour)], start_time=hour)
    both = run_cases([(spec, at_zero), (spec, later)], spark)
    assert both == [run(spec, at_zero), run(spec, later)]
    # the quirk trace's ticks run on its ends (8 h, 16 h); the other's first end is 8 h too (09:00 local: 16 h
    # after local midnight, 8 h on the clock)
    assert [u.time for u in both[0]] == [u.time for u in both[1]] == [8 * hour, 16 * hour]
    assert run_cases([(spec, at_zero)], spark) == [run(spec, at_zero)]


# --------------------------------------------------------------------------- the output schema of a query

# Each query field's type as eKuiper gives it. eKuiper's docs: sqls/data_types.md ("bigint: the int type",
# "float: the float type", string, boolean, array, struct; "Calculate with nil always return nil"; array and
# struct take no binary operation), guide/streams/overview.md ("Schema-less stream field data type will be
# determined at runtime"), sqls/functions/aggregate_functions.md, other_functions.md, window_functions.md;
# where they are silent the valuer as oracle/windows/query.py states it (eKuiper's funcs_agg.go, valuer.go).
# A JSON event's numbers are Go's int64 (an integer) and float64 (a float): bigint and double here.
TYPED = Trace([ev("E1", 100, symbol="IBM", price=3, amount=1.5, flag=True, tags=["a"], mixed="x", ts=100),
               ev("E2", 600, symbol="GE", price=4, amount=2.5, flag=False, tags=["b", "c"], mixed=2, ts=600),
               ev("E3", 1200, symbol="IBM", price=5, amount=0.5, flag=True, tags=[], mixed=2.5, ts=1200),
               Advance(3000)])
J = "json"  # a string column of JSON text (frames.JSON_TEXT)


@pytest.mark.parametrize("query, expected", [
    ("SELECT symbol, count(*) AS c, count(none) AS cn, sum(price) AS sp, sum(amount) AS sa, avg(price) AS ap, "
     "avg(amount) AS aa, min(price) AS lo, max(symbol) AS hi FROM demo GROUP BY TUMBLINGWINDOW(ss, 1), symbol",
     [("symbol", "string"),  # a column: its own type (data_types.md: string)
      ("c", "bigint"), ("cn", "bigint"),  # count: "the number of items in a group" (aggregate_functions.md): int64
      ("sp", "bigint"), ("sa", "double"),  # sum keeps its values' type: int64 of ints, float64 of floats (funcs_agg.go)
      ("ap", "bigint"), ("aa", "double"),  # avg of ints: the truncated int64 mean (funcs_agg.go; oracle query.py)
      ("lo", "bigint"), ("hi", "string")]),  # min/max: the argument's own type (funcs_agg.go)
    ("SELECT price / 2 AS half, price * amount AS pa, price + 1 AS p1, price > 2 AS big, symbol = 'GE' OR flag AS o, "
     "price + none AS pn, window_start() AS ws, window_end() AS we, row_number() AS rn FROM demo "
     "GROUP BY COUNTWINDOW(2)",
     [("half", "bigint"),  # int / int: Go's int64 division (valuer.go; oracle values.py GO)
      ("pa", "double"), ("p1", "bigint"),  # bigint with float: float; with bigint: bigint (data_types.md's table)
      ("big", "boolean"), ("o", "boolean"),  # comparisons and and/or: booleans
      ("pn", "string"),  # "Calculate with nil always return nil" (data_types.md): no value ever, a null string
      ("ws", "bigint"), ("we", "bigint"),  # "the window start/end timestamp in int64 format" (other_functions.md)
      ("rn", "bigint")]),  # row_number "numbers all rows sequentially" (window_functions.md): int64
    ("SELECT *, event_time() AS et FROM demo GROUP BY SLIDINGWINDOW(ss, 1)",
     [("id", "string"), ("symbol", "string"), ("price", "bigint"), ("amount", "double"), ("flag", "boolean"),
      ("tags", J),  # an array (data_types.md) is no one column type: JSON text
      ("mixed", J),  # a schemaless stream's field "determined at runtime" (streams/overview.md): JSON text
      ("ts", "bigint"), ("none", "string"),  # a column no event gives a value: always null
      ("et", "bigint")]),  # event_time(): "the timestamp of the current processing event" (other_functions.md), int64
    ("SELECT collect(*) AS rows, collect(price) AS prices, collect(*)[0]->symbol AS first, collect(price)[1] AS p1, "
     "deduplicate(symbol, true) AS kept, deduplicate(symbol, false) AS last, mixed + 1 AS m1, sum(mixed) AS sm "
     "FROM demo GROUP BY HOPPINGWINDOW(ss, 2, 1)",
     [("rows", J), ("prices", J),  # collect "returns an array" (aggregate_functions.md): JSON text
      ("first", "string"), ("p1", "bigint"),  # collect(*)[1]->a: the element's own value (aggregate_functions.md)
      ("kept", J), ("last", J),  # deduplicate: the rows, or the latest row (a map): JSON text
      ("m1", J), ("sm", J)]),  # over a field of runtime type the kind depends on the row: JSON text
])
def test_a_query_s_output_schema_is_the_engine_s_types_and_the_plan_s(spark, query, expected):
    """`output_schema` types each field as eKuiper does (`panes.query_fields`)
    over the input's columns, and `apply_window`'s output has exactly that
    schema, its rows written in it (the plan runs: a value of another kind
    would fail it)."""
    from pyspark.sql import functions as F

    spec = kuiper(query)
    frame = frames.to_dataframe(spark, [("t", TYPED)], [p for p in frames.spec_properties(spec) if p != "none"],
                                mixed=True)
    # last: a property no event gives a value (as `to_dataframe` marks one)
    frame = frame.select("*", F.lit(None).cast("string").alias("none", metadata={frames.NO_VALUES: True}))
    schema = output_schema(spec, frame.schema, "kuiper")
    head = ["trace_id", "after", "phase", "time", "ordinal", "side", "pos", "error", "window", "pane_event"]
    assert schema.names[:len(head)] == head
    fields = schema.fields[len(head):]
    assert [(f.name, J if f.metadata.get(frames.JSON_TEXT) else f.dataType.simpleString()) for f in fields] == expected
    assert all(f.dataType.simpleString() == "string" for f in fields if f.metadata.get(frames.JSON_TEXT))
    out = apply_window(frame, spec)
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields] == [
        (f.name, f.dataType.simpleString()) for f in schema.fields]
    assert [bool(f.metadata.get(frames.JSON_TEXT)) for f in out.schema.fields] == [
        bool(f.metadata.get(frames.JSON_TEXT)) for f in schema.fields]
    assert [r for r in out.collect() if r.side == "insert" and r.pane_event is None]  # the query's rows, typed
    [found] = run_cases([(spec, TYPED)], spark)
    assert compare(run(spec, TYPED), found) is None

"""spark_impl.frames: traces to the input frame and output rows back to updates;
the input checks of the public API. Expected rows are written out by hand from
the frame layout in frames' docstring."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import Row

from oracle.errors import InvalidTrace, UnsupportedWindow
from oracle.model import (
    Advance,
    Arrive,
    Event,
    ExtTimed,
    GroupWin,
    Intersection,
    Jump,
    KeepAll,
    Length,
    Rank,
    SetVariables,
    Sort,
    SortKey,
    TimeOrder,
    Trace,
    Unique,
    Update,
)
from oracle import run
from spark_impl import apply_window, apply_window_to_events, event_table, frames, run_cases
from spark_impl.errors import InvalidFrame


def ev(event_id, time=None, op=None, **props):
    return Arrive(Event(event_id, props), time=time, op=op)


TRACE = Trace(
    [
        ev("E1", n=1, x=1, s="a", b=True, tags=["p", "q"]),
        Advance(1000),
        ev("E2", n=2, x=2.5, s=None, b=False),
        SetVariables({"SIZE": 3}),
        Jump(4000),
        ev("E3", time=4500, n=-3, x=3, s="c", tags={"z": 1, "a": [2]}),
    ],
    start_time=500,
)


def test_a_trace_becomes_one_row_per_item_plus_the_start_row(spark):
    frame = frames.to_dataframe(spark, [("t", TRACE)])
    types = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    assert types == {
        "trace_id": "string", "seq": "bigint", "kind": "string", "time": "bigint", "id": "string", "op": "string",
        "vars": "string", "n": "bigint", "x": "double", "s": "string", "b": "boolean", "tags": "string",
    }
    rows = [r.asDict() for r in frame.orderBy("seq").collect()]
    blank = {"id": None, "op": None, "vars": None, "n": None, "x": None, "s": None, "b": None, "tags": None}
    assert rows == [
        {**blank, "trace_id": "t", "seq": -1, "kind": "start", "time": 500},
        {**blank, "trace_id": "t", "seq": 0, "kind": "event", "time": 500, "id": "E1", "n": 1, "x": 1.0, "s": "a",
         "b": True, "tags": '["p","q"]'},
        {**blank, "trace_id": "t", "seq": 1, "kind": "advance", "time": 1000},
        {**blank, "trace_id": "t", "seq": 2, "kind": "event", "time": 1000, "id": "E2", "n": 2, "x": 2.5, "b": False},
        {**blank, "trace_id": "t", "seq": 3, "kind": "set", "time": 1000, "vars": '{"SIZE": 3}'},
        {**blank, "trace_id": "t", "seq": 4, "kind": "jump", "time": 4000},
        {**blank, "trace_id": "t", "seq": 5, "kind": "event", "time": 4500, "id": "E3", "n": -3, "x": 3.0, "s": "c",
         "tags": '{"a":[2],"z":1}'},
    ]


def test_a_property_the_window_reads_is_a_column_even_if_no_event_has_it(spark):
    frame = frames.to_dataframe(spark, [("t", Trace([ev("E1")]))], extra_properties=["k"])
    assert frame.columns[-1] == "k" and frame.collect()[-1]["k"] is None


@pytest.mark.parametrize("values, expected", [
    ([1, 2], "long"),
    ([1, 2.5], "double"),
    ([None, 1.5], "double"),
    ([None, None], "string"),
    (["a", None], "string"),
    ([True, False], "boolean"),
    ([[1], {"a": 1}], "json"),
])
def test_one_column_type_per_property(values, expected):
    types = frames.PropertyTypes()
    for n, value in enumerate(values):
        types.merge(frames.PropertyTypes.of_trace(f"t{n}", Trace([ev("E", v=value)])))
    assert types.schema() == {"v": expected}


@pytest.mark.parametrize("first, second, words", [
    ("a", 1, "is an integer here but a string"),
    (1, True, "is a boolean here but an integer"),
    (2.5, "x", "is a string here but a float"),
    ([1], 1, "is an integer here but a list or object"),
])
def test_a_property_of_mixed_types_names_the_trace_and_item(first, second, words):
    trace = Trace([ev("E1", v=first), Advance(5), ev("E2", v=second)])
    with pytest.raises(InvalidTrace) as caught:
        frames.PropertyTypes.of_trace("t7", trace)
    assert caught.value.index == 2
    assert "trace 't7'" in str(caught.value) and words in str(caught.value) and "item 0" in str(caught.value)


def test_mixed_types_across_traces_name_the_later_trace():
    batch = frames.PropertyTypes()
    batch.merge(frames.PropertyTypes.of_trace("t0", Trace([ev("E1", v="a")])))
    with pytest.raises(InvalidTrace, match=r"trace 't1': property 'v' is an integer here but a string in trace 't0'"):
        batch.merge(frames.PropertyTypes.of_trace("t1", Trace([Advance(1), ev("E1", v=3)])))


@pytest.mark.parametrize("props, words", [
    ({"Time": 1}, "clashes with the reserved column 'time'"),
    ({"update_no": 1}, "clashes with the reserved column"),
    ({"a b": 1}, "is not an identifier"),
    ({"v": 2**63}, "does not fit in a long"),
    ({"v": 1, "V": 2}, "differ only in case"),
])
def test_property_names_and_values_that_cannot_be_columns(props, words):
    with pytest.raises(InvalidTrace, match=words):
        frames.PropertyTypes.of_trace("t", Trace([ev("E1", **props)]))


@pytest.mark.parametrize("spec, item, words", [
    (KeepAll(), ev("E1", op="update"), "operation code 'update'"),
    (Unique(("k",)), ev("E1", k={"a": 1}), "property 'k' is an object"),
    (GroupWin(("k",), KeepAll()), ev("E1", k={"a": 1}), "property 'k' is an object"),
    (ExtTimed("ts", 1000), ev("E1", ts=1.5), "timestamp property 'ts' is 1.5, not an integer"),
    (TimeOrder("ts", 0), ev("E1", ts=2.5), "timestamp property 'ts' is 2.5, not an integer"),
    (Intersection([Unique(["symbol"]), TimeOrder("ts", 0)]), ev("E1", symbol="A"),
     "property 'ts' is null, which the time_order member of the intersection cannot take"),
    (Sort(2, (SortKey("k"),)), ev("E1", k=[1, 2]), "sort property 'k' holds a list or object"),
    (Rank(("id",), 2, (SortKey("k", True),)), ev("E1", k={"a": 1}), "sort property 'k' holds a list or object"),
])
def test_check_pair_refuses_what_the_window_cannot_take(spec, item, words):
    trace = Trace([ev("E0", ts=0), item])
    with pytest.raises(InvalidTrace, match=words) as caught:
        frames.check_pair(spec, trace)
    assert caught.value.index == 1
    with pytest.raises(InvalidTrace, match=words) as caught:  # the oracle refuses the same item
        run(spec, trace)
    assert caught.value.index == 1


def test_rows_back_to_updates_with_the_traces_own_events():
    trace = Trace([ev("E1", v=1), ev("E2", v=2), ev("E3", v=3)])
    def row(after, phase, time, side, n, event_id, slot=0):
        pos = None if side is None else Row(due=time, slot=slot, n=n)
        return Row(trace_id="t", after=after, phase=phase, time=time, ordinal=0, side=side, pos=pos, id=event_id)

    rows = [  # unsorted, as Spark returns them
        row(2, 1, 1000, "remove", 1, "E2"),
        row(0, 1, 0, "insert", 0, "E1"),
        row(2, 1, 1000, "remove", 0, "E1"),
        row(2, 1, 1000, "insert", 2, "E3"),
        row(2, 0, 500, None, None, None),   # a stop of item 2's walk to 1000 comes before its arrival
    ]
    updates = frames.updates_from_rows(rows, {"t": trace, "u": Trace([])})
    e1, e2, e3 = trace.events()
    assert updates == {
        "t": (Update(0, 0, insert=[e1]), Update(2, 500), Update(2, 1000, insert=[e3], remove=[e1, e2])),
        "u": (),
    }
    assert updates["t"][2].remove[1] is e2 and e2.props["v"] == 2


def test_run_cases_gives_a_bad_pair_its_error_and_runs_the_others(spark, monkeypatch):
    from spark_impl.windows import FAMILIES

    monkeypatch.delitem(FAMILIES, Rank)  # a window the implementation does not build
    good = Trace([ev("E1"), ev("E2"), ev("E3")])
    results = run_cases([
        (Length(1), good),
        (Length(1), Trace([ev("E1"), ev("E1")])),
        (Rank(("k",), 1, (SortKey("k"),)), good),
        (Unique(("k",)), Trace([ev("E1", k="a"), ev("E2", k=1)])),
        (KeepAll(), Trace([ev("X", k=5)])),
        (Length(1), Trace([ev("E1"), Advance(10**30)])),   # a clock past a long: refused, not an Arrow overflow
        (Intersection([Length(1), KeepAll()]), good),
    ])
    e1, e2, e3 = good.events()
    assert results[0] == (Update(0, 0, [e1]), Update(1, 0, [e2], [e1]), Update(2, 0, [e3], [e2]))
    assert isinstance(results[1], InvalidTrace) and results[1].index == 1
    assert isinstance(results[2], UnsupportedWindow) and "rank" in str(results[2])
    assert isinstance(results[3], InvalidTrace) and "holds a number here but a string at item 0" in str(results[3])
    assert [u.insert[0].id for u in results[4]] == ["X"]
    assert isinstance(results[5], InvalidTrace) and results[5].index == 1 and "2**62" in str(results[5])
    assert results[6] == results[0]


def test_traces_whose_types_clash_run_in_separate_frames(spark):
    as_text, as_number = Trace([ev("A1", k="1"), ev("A2", k="1")]), Trace([ev("B1", k=1), ev("B2", k=1.0)])
    text, number = run_cases([(Unique(("k",)), as_text), (Unique(("k",)), as_number)])
    assert [[e.id for e in u.remove] for u in text] == [[], ["A1"]]
    assert [[e.id for e in u.remove] for u in number] == [[], ["B1"]]


def input_frame(spark, **drop_or_cast):
    frame = frames.to_dataframe(spark, [("t", Trace([ev("E1", k="a")]))])
    for name, how in drop_or_cast.items():
        frame = frame.drop(name) if how is None else frame.withColumn(name, frame[name].cast(how))
    return frame


@pytest.mark.parametrize("change, window, words", [
    ({"seq": None}, "#length(1)", "the input has no column 'seq'"),
    ({"trace_id": None}, "#length(1)", "the input has no column 'trace_id'"),
    ({"time": "string"}, "#length(1)", "column 'time' must be an integer type (long), not string"),
    ({"k": None}, "#unique(k)", "the window reads property 'k', but the input has no column 'k'"),
])
def test_apply_window_names_a_missing_or_mistyped_column(spark, change, window, words):
    with pytest.raises(InvalidFrame) as caught:
        apply_window(input_frame(spark, **change), window)
    assert words in str(caught.value)


def test_apply_window_takes_int_columns_and_no_op_or_vars(spark):
    frame = input_frame(spark, seq="int", time="int", op=None, vars=None)
    rows = apply_window(frame, "#length(1)").collect()
    assert [(r.after, r.phase, r.side, tuple(r.pos), r.id, r.k) for r in rows] == [(0, 1, "insert", (0, 0, 0), "E1", "a")]


def test_an_unknown_kind_fails_naming_the_row(spark):
    frame = input_frame(spark).selectExpr("trace_id", "seq", "'evnt' AS kind", "time", "id")
    with pytest.raises(InvalidFrame, match=r"column 'kind' is 'evnt' at seq=-1 in trace 't'; kinds: start, event"):
        apply_window(frame, "#keepall")
    with pytest.raises(Exception, match=r"trace t seq -?\d: kind must be one of start, event"):  # unchecked: the job
        apply_window(frame, "#keepall", validate=False).collect()


def test_apply_window_to_events_builds_traces_from_an_event_table(spark):
    table = spark.createDataFrame(
        [("d1", 10, 1000, "x"), ("d1", 11, 1500, "y"), ("d2", 3, 1200, "z"), ("d1", 12, 2600, "w")],
        "device string, offset long, ts long, note string",
    )
    out = apply_window_to_events(table, "#time(1 sec)", order_col="offset", time_col="ts", trace_col="device",
                                 until=3000, numbered=True)
    rows = sorted((r.trace_id, r.update_no, r.after, r.time, r.side, r.pos_no, r.id, r.note, r.ts) for r in out.collect())
    assert rows == [
        ("d1", 0, 10, 1000, "insert", 0, "10", "x", 1000),
        ("d1", 1, 11, 1500, "insert", 0, "11", "y", 1500),
        ("d1", 2, 12, 2000, "remove", 0, "10", "x", 1000),   # walking to E12's 2600 stops at 2000 and 2500
        ("d1", 3, 12, 2500, "remove", 0, "11", "y", 1500),
        ("d1", 4, 12, 2600, "insert", 0, "12", "w", 2600),
        ("d2", 0, 3, 1200, "insert", 0, "3", "z", 1200),
        ("d2", 1, 4, 2200, "remove", 0, "3", "z", 1200),     # the `until` advance of trace d2 has seq 4
    ]


# a table that does not describe traces is refused before planning, naming the column,
# the trace and the value: (rows of dev/n/ts, trace_col, until, message)
BAD_TABLE_ROWS = [
    ([("a", 1, 500), ("a", 2, None), ("a", 3, None)], "dev", None,
     "time_col 'ts' is null at n=2 in trace 'a' (2 rows in all)"),
    ([("a", 1, 500), ("a", 1, 600)], "dev", None,
     "order_col 'n' has the value 1 more than once in trace 'a' (an event's position is unique)"),
    ([("a", 1, 500), ("b", 1, 500), ("b", 2, 400)], "dev", None,
     "time_col 'ts' goes back along order_col 'n' in trace 'b': 400 ms at n=2, after 500 ms at n=1"),
    ([("a", 2, 400), ("a", 1, 500)], None, None,
     "time_col 'ts' goes back along order_col 'n': 400 ms at n=2, after 500 ms at n=1"),
    ([("a", None, 500), ("a", 1, 500)], "dev", None, "order_col 'n' is null in 1 row in trace 'a'"),
    ([("a", -3, 500), ("a", 1, 500)], "dev", None, "order_col 'n' is negative in trace 'a': -3 (positions start at 0)"),
    ([(None, 1, 500), ("a", 1, 500)], "dev", None, "trace_col 'dev' is null in 1 row"),
    ([("a", 1, 500), ("b", 1, 5000)], "dev", 4000, "until=4000 ms is before the last event of trace 'b', at 5000 ms"),
    ([("a", 1, 500), ("a", 2, 5000)], None, 4000, "until=4000 ms is before the last event of the table, at 5000 ms"),
    # the first problem by kind, then trace, then position
    ([("b", 1, 500), ("b", 1, 500), ("a", 5, 900), ("a", 6, 800), ("a", 7, None)], "dev", None,
     "time_col 'ts' is null at n=7 in trace 'a' (1 row in all)"),
    # an event before the window's start (0 by default): the oracle refuses time going backwards
    ([("a", 1, -5), ("a", 2, 500)], "dev", None,
     "time_col 'ts' is -5 ms in trace 'a', before the window's start at 0 ms (an event arrives at or after the "
     "clock the window is created at)"),
]


@pytest.mark.parametrize("rows, trace_col, until, message", BAD_TABLE_ROWS)
@pytest.mark.parametrize("layout", ["in order", "round robin"])
def test_apply_window_to_events_refuses_a_table_that_is_not_traces_in_one_sentence(spark, rows, trace_col, until,
                                                                                     message, layout):
    table = spark.createDataFrame(rows, "dev string, n long, ts long")
    if layout == "round robin":  # partitions of interleaved positions: the full check decides
        table = table.repartition(3)
    with pytest.raises(InvalidFrame) as caught:
        apply_window_to_events(table, "#keepall", order_col="n", time_col="ts", trace_col=trace_col, until=until)
    assert str(caught.value) == message


def test_the_partition_scan_decides_a_table_in_order_and_sorts_only_an_interleaved_one(spark, monkeypatch):
    def no_sort(*_):
        raise AssertionError("the full check ran")

    monkeypatch.setattr(event_table, "_full_check", no_sort)
    times = [100 * n for n in range(400)]
    times[125] = 50
    rows = list(enumerate(times))
    in_order = spark.createDataFrame(rows, "n long, ts long").coalesce(4)
    assert in_order.rdd.getNumPartitions() > 1
    with pytest.raises(InvalidFrame, match="50 ms at n=125, after 12400 ms at n=124$"):
        apply_window_to_events(in_order, "#keepall", order_col="n", time_col="ts")
    # a partition of several stretches in order (files packed into one task): its runs split where the order
    # skips, so they line up with the other partition's between them
    dealt = rows[:100] + rows[200:300] + rows[100:200] + rows[300:]  # two slices: 0-99 and 200-299, the others
    packed = spark.createDataFrame(spark.sparkContext.parallelize(dealt, 2), "n long, ts long")
    assert packed.rdd.getNumPartitions() == 2
    with pytest.raises(InvalidFrame, match="50 ms at n=125, after 12400 ms at n=124$"):
        apply_window_to_events(packed, "#keepall", order_col="n", time_col="ts")
    # rows dealt round the partitions: a run per row would be too many, so a run per trace, which overlap
    with pytest.raises(AssertionError, match="the full check ran"):
        apply_window_to_events(in_order.repartition(3), "#keepall", order_col="n", time_col="ts")


def test_the_full_check_compares_rows_across_its_buckets(spark, monkeypatch):
    monkeypatch.setattr(event_table, "CHECK_ROWS_PER_BUCKET", 2)
    times = [100 * n for n in range(12)]
    good = spark.createDataFrame([(n, t) for n, t in enumerate(times)], "n long, ts long").repartition(3)
    apply_window_to_events(good, "#keepall", order_col="n", time_col="ts")  # no error
    for at in range(1, 12):  # one step back, wherever the bucket boundaries fall
        back = times[:at] + [times[at - 1] - 1] + [t + 10_000 for t in times[at + 1:]]
        table = spark.createDataFrame([(n, t) for n, t in enumerate(back)], "n long, ts long").repartition(3)
        with pytest.raises(InvalidFrame, match=rf"{back[at]} ms at n={at}, after {back[at - 1]} ms at n={at - 1}$"):
            apply_window_to_events(table, "#keepall", order_col="n", time_col="ts")


# the arguments and the table's names and ids (issue 25): (table rows as n/ts/id/`a.b`, keywords, message)
BAD_EVENT_ARGUMENTS = [
    ("n long, ts long", [(1, 500)], dict(until=2500.7), "until must be a whole number of ms, got 2500.7"),
    ("n long, ts long", [(1, 500)], dict(until="2500"), "until must be a whole number of ms, got '2500'"),
    ("n long, ts long", [(1, 500)], dict(until=10**30), f"until={10**30} ms is further than 2**62 ms from 0"),
    ("n long, ts long", [(1, 500)], dict(until=2**62 + 1), "is further than 2**62 ms from 0"),
    ("n long, ts long", [(1, 500)], dict(start=True), "start must be a whole number of ms, got True"),
    ("n long, ts long", [(1, 500)], dict(start=800), "time_col 'ts' is 500 ms, before the window's start at 800 ms"),
    ("n long, ts long, `a.b` string", [(1, 500, "x")], {}, "column 'a.b' is not an identifier"),
    ("n long, ts long, `a``b` string", [(1, 500, "x")], {}, "column 'a`b' is not an identifier"),
    ("n long, ts long, id string", [(1, 500, "x"), (2, 600, "x")], {},
     "column 'id' has the value 'x' 2 times (first at order 1)"),
    ("n long, ts long, id string", [(1, 500, "x"), (2, 600, None)], {}, "column 'id' is null (first at order 2)"),
]


@pytest.mark.parametrize("schema, rows, keywords, message", BAD_EVENT_ARGUMENTS,
                         ids=[m[:30] for *_, m in BAD_EVENT_ARGUMENTS])
def test_apply_window_to_events_names_a_bad_argument_or_column(spark, schema, rows, keywords, message):
    table = spark.createDataFrame(rows, schema)
    with pytest.raises(InvalidFrame) as caught:
        apply_window_to_events(table, "#keepall", order_col="n", time_col="ts", **keywords)
    assert message in str(caught.value)


def test_a_dotted_order_column_is_refused_naming_it(spark):
    table = spark.createDataFrame([(1, 500, "x")], "`o.n` long, `t.s` long, note string")
    with pytest.raises(InvalidFrame, match="column 'o.n' is not an identifier"):  # it would be a property too
        apply_window_to_events(table, "#keepall", order_col="o.n", time_col="t.s")


def test_validate_false_skips_the_check_but_not_until(spark):
    table = spark.createDataFrame([(1, 500), (1, 600)], "n long, ts long")
    out = apply_window_to_events(table, "#keepall", order_col="n", time_col="ts", validate=False)
    assert out.where("side = 'insert'").count() == 2  # planned as given: the repeated position is not caught
    with pytest.raises(InvalidFrame, match="until=550 ms is before the last event"):
        apply_window_to_events(table, "#keepall", order_col="n", time_col="ts", until=550, validate=False)


# one rule for every reserved name: a table column that would clash with a column of
# the window's input or output is refused before planning, naming it
RESERVED_NAME_ROWS = ["time", "kind", "trace_id", "Trace_Id", "seq", "side", "pos", "update_no", "after", "phase"]


@pytest.mark.parametrize("name", RESERVED_NAME_ROWS)
def test_apply_window_to_events_refuses_a_column_with_a_reserved_name(spark, name):
    table = spark.createDataFrame([(1, 500, "x")], f"n long, ts long, `{name}` string")
    with pytest.raises(InvalidFrame) as caught:
        apply_window_to_events(table, "#keepall", order_col="n", time_col="ts")
    assert f"column {name!r} clashes with the column {name.lower()!r}" in str(caught.value)


def test_a_reserved_name_used_as_a_role_is_no_clash(spark):
    table = spark.createDataFrame([(1, 500, "x")], "seq long, time long, note string")
    rows = apply_window_to_events(table, "#keepall", order_col="seq", time_col="time").collect()
    assert [(r.after, r.time, r.note) for r in rows] == [(1, 500, "x")]


def test_apply_window_to_events_names_a_missing_column(spark):
    table = spark.createDataFrame([(1, 5000)], "n long, ts long")
    with pytest.raises(InvalidFrame, match="time_col names column 'when'"):
        apply_window_to_events(table, "#keepall", order_col="n", time_col="when")


def test_the_vars_column_is_json():
    (row,) = [r for r in frames.trace_rows("t", Trace([SetVariables({"A": 1.5})]), {}) if r[2] == "set"]
    assert json.loads(row[6]) == {"A": 1.5}


def test_run_cases_splits_into_bounded_jobs_and_a_failed_job_fails_only_its_cases(spark, monkeypatch):
    import spark_impl
    from oracle import run
    from spark_impl import pipeline
    from spark_impl.errors import JobFailed

    monkeypatch.setattr(spark_impl, "PLANS_PER_JOB", 2)
    specs = [Length(1), Length(2), KeepAll(), Unique(("k",)), Length(3)]
    pairs = [(spec, Trace([ev(f"E{i}", k=i % 2) for i in range(4)])) for spec in specs]
    real_apply = pipeline.apply

    def apply(frame, spec, **options):
        if spec == KeepAll():
            raise RuntimeError("boom\nJava stack")
        return real_apply(frame, spec, **options)

    monkeypatch.setattr(pipeline, "apply", apply)
    seen = []
    results = run_cases(pairs, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 3), (2, 3), (3, 3)]
    # jobs: [Length(1), Length(2)], [KeepAll(), Unique], [Length(3)]; the second fails
    assert isinstance(results[2], JobFailed) and isinstance(results[3], JobFailed)
    assert str(results[2]) == "the Spark job failed: RuntimeError: boom"
    for index in (0, 1, 4):
        assert results[index] == run(*pairs[index])


@pytest.mark.parametrize("items, words", [
    ([ev("E1", seq=1)], "property 'seq' is named like the trace frame's own column 'seq'"),
    ([ev("E1", symbol="A"), ev("E2", Symbol="B")], "properties 'symbol' (item 1) and 'Symbol' differ only in case"),
    ([ev("E1", size=3), ev("E2", size="big")], "property 'size' holds a string here but a number at item 1"),
])
def test_one_rule_of_what_a_case_may_hold_in_both_engines(items, words):
    """What the oracle refuses, run_cases refuses with the same message, naming the
    case's own item, never an internal trace id (no Spark job starts for it)."""
    from spark_impl import run_cases

    trace = Trace([ev("E0"), *items])
    with pytest.raises(InvalidTrace) as caught:
        run(KeepAll(), trace)
    [outcome] = run_cases([(KeepAll(), trace)], spark=object())
    assert isinstance(outcome, InvalidTrace) and str(outcome) == str(caught.value)
    assert words in str(outcome) and "trace '" not in str(outcome)


def test_run_cases_names_the_cases_item_not_its_internal_trace_id():
    from spark_impl import run_cases

    [outcome] = run_cases([(KeepAll(), Trace([ev("E0"), ev("E1", v=2**63)]))], spark=object())
    assert isinstance(outcome, InvalidTrace) and outcome.index == 1
    assert str(outcome) == f"trace item 1: property 'v' = {2**63} does not fit in a long"


# a user's trace frame (apply_window, validate on by default): each row changes one good frame of two
# traces by SQL and names what the check must say (issue 25)
GOOD_FRAME = [("t1", Trace([ev("E1"), Advance(500), ev("E2"), ev("E3", time=900)])),
              ("t2", Trace([ev("F1", time=100), ev("F2", time=200)]))]
BAD_FRAMES = [
    ("time goes back", "CASE WHEN trace_id = 't1' AND seq = 3 THEN 400 ELSE time END AS time",
     "goes back along order_col 'seq' in trace 't1': 400 ms at seq=3, after 500 ms at seq=2"),
    ("seq twice", "CASE WHEN trace_id = 't2' AND seq = 1 THEN 0 ELSE seq END AS seq",
     "order_col 'seq' has the value 0 more than once in trace 't2'"),
    ("null time", "CASE WHEN trace_id = 't1' AND seq = 1 THEN NULL ELSE time END AS time",
     "time_col 'time' is null at seq=1 in trace 't1'"),
    ("null trace", "CASE WHEN seq = 1 AND trace_id = 't2' THEN NULL ELSE trace_id END AS trace_id",
     "trace_col 'trace_id' is null in 1 row"),
    ("id twice", "CASE WHEN id = 'E3' THEN 'E1' ELSE id END AS id",
     "column 'id' has the value 'E1' more than once in trace 't1' (first at seq=0"),
    ("null id", "CASE WHEN id = 'F2' THEN NULL ELSE id END AS id", "column 'id' is null on the event at seq=1 in trace 't2'"),
    ("unknown kind", "CASE WHEN seq = 1 AND trace_id = 't1' THEN 'wait' ELSE kind END AS kind",
     "column 'kind' is 'wait' at seq=1 in trace 't1'"),
    ("far time", f"CASE WHEN trace_id = 't2' AND seq = 1 THEN {2**62 + 1} ELSE time END AS time",
     f"column 'time' is {2**62 + 1} ms at seq=1 in trace 't2', further than 2**62 ms from 0"),
    ("start late", "CASE WHEN kind = 'start' AND trace_id = 't2' THEN 150 ELSE time END AS time",
     "the start row's 150 ms is after 100 ms at seq=0"),
]


@pytest.mark.parametrize("what, change, words", BAD_FRAMES, ids=[row[0] for row in BAD_FRAMES])
def test_apply_window_checks_a_users_trace_frame(spark, what, change, words):
    frame = frames.to_dataframe(spark, GOOD_FRAME)
    column = change.rsplit(" AS ", 1)[1]
    bad = frame.selectExpr(*[change if c == column else f"`{c}`" for c in frame.columns])
    with pytest.raises(InvalidFrame) as caught:
        apply_window(bad, "#length(2)")
    assert words in str(caught.value)
    apply_window(bad, "#length(2)", validate=False)  # skipped: planned as is (no job runs)


def test_a_good_trace_frame_passes_the_check(spark):
    frame = frames.to_dataframe(spark, GOOD_FRAME)
    assert event_table.check_trace_frame(frame) is False  # and it holds no jump
    rows = apply_window(frame, "#length(2)").where("side = 'remove'").select("trace_id", "id").collect()
    assert sorted(tuple(r) for r in rows) == [("t1", "E1")]


def test_apply_window_plans_for_jumps_only_where_the_frame_holds_one(spark):
    """The default (`jumps=None`): the check finds whether a trace jumps; a
    frame without a jump gets the plan made for input without jumps, one with
    a jump the plan that fires timers at its target."""
    import re

    def plan(frame) -> str:
        return re.sub(r"#\d+L?|plan_id=\d+", "", frame._jdf.queryExecution().analyzed().toString())

    window = "#groupwin(k)#time(1 sec)"
    with_jump = [("t1", Trace([ev("E1", k=1), ev("E2", time=400, k=2), Jump(5000)])),
                 ("t2", Trace([ev("F1", time=100, k=1)]))]
    frame = frames.to_dataframe(spark, with_jump)
    assert event_table.check_trace_frame(frame) is True
    without = frame.where("kind <> 'jump'")
    assert plan(apply_window(without, window)) == plan(apply_window(without, window, jumps=False))
    assert plan(apply_window(without, window)) != plan(apply_window(without, window, jumps=True))
    assert plan(apply_window(frame, window)) == plan(apply_window(frame, window, jumps=True))
    for rows in (frame, without):  # the same updates either way
        assert (sorted(map(tuple, apply_window(rows, window).collect()))
                == sorted(map(tuple, apply_window(rows, window, validate=False).collect())))
    removed = apply_window(frame, window).where("side = 'remove'").select("id", "time").collect()
    assert sorted(map(tuple, removed)) == [("E1", 5000), ("E2", 5000)]  # both leave at the jump's target

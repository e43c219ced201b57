"""The typed rows of the derived-value windows (spark_impl/windows/derived.py)
and of Apama's aggregate queries (stream_query.py): each field a column of
the engine's type, `spark_impl.output_schema` giving, without running
anything, exactly the schema `apply_window` gives (names and types). The
expected types are written out here from the engines' sources and
documentation (cited per window), not read from the code under test.
"""

from __future__ import annotations

import math

import pytest

from oracle import parse, run
from oracle.model import Arrive, Event, Trace
from spark_impl import apply_window, frames, output_schema, run_cases
from spark_impl.frames import JSON_TEXT
from spark_impl.windows import derived

#: the output's own columns before the fields (frames.ROW_OUTPUT_COLUMNS)
KEY = [("trace_id", "string"), ("after", "bigint"), ("phase", "int"), ("time", "bigint"), ("ordinal", "int"),
       ("side", "string"), ("pos", "struct<due:bigint,slot:bigint,n:bigint>"), ("error", "string")]

L, D, S = "bigint", "double", "string"
UNI = [("datapoints", L), ("total", D), ("stddev", D), ("stddevpa", D), ("variance", D), ("average", D)]
LINEST = [("slope", D), ("YIntercept", D), ("XAverage", D), ("XStandardDeviationPop", D),
          ("XStandardDeviationSample", D), ("XSum", D), ("XVariance", D), ("YAverage", D),
          ("YStandardDeviationPop", D), ("YStandardDeviationSample", D), ("YSum", D), ("YVariance", D),
          ("dataPoints", L), ("n", L), ("sumX", D), ("sumXSq", D), ("sumXY", D), ("sumY", D), ("sumYSq", D)]

# Esper: each view's `createEventType` (common/.../view/derived/*View.java) puts its fields, in this order,
# with EPTypePremade LONGPRIMITIVE / LONGBOXED (a long: bigint) or DOUBLEBOXED (a double); an additional
# property is typed as its expression (`StatViewAdditionalPropsForge.make`: `getEvaluationType`), `*` copies
# every property of the event type with its own type; `#groupwin` adds its keys' values as they are
# (`AddPropertyValueOptionalView`). Apama: "Built-in aggregate functions" (EPL Reference): `count()` returns
# an integer (64 bits: bigint), `avg`, `min`, `max` of a float a float; `sum` returns its argument's type,
# but the oracle posts a float for every argument (oracle/windows/stream_query.py), and so does Spark.
SCHEMAS = {
    # SizeView.createEventType: size LONGPRIMITIVE
    ("esper", "#length(2)#size"): [("size", L)],
    # UnivariateStatisticsView.createEventType: datapoints LONGBOXED, then total, stddev, stddevpa, variance,
    # average DOUBLEBOXED; additional properties: symbol a string, ts an integer (long) property
    ("esper", "#length(2)#uni(price, symbol, ts)"): [*UNI, ("symbol", S), ("ts", L)],
    # `*`: the event's id (a string) and every property column, each its own type
    ("esper", "#uni(price, *)"): [*UNI, ("id", S), ("symbol", S), ("price", D), ("ts", L), ("p", D)],
    # RegressionLinestView.createEventType: dataPoints and n LONGBOXED, the others DOUBLEBOXED
    ("esper", "#length(3)#linest(price, ts)"): LINEST,
    # CorrelationView.createEventType: correlation DOUBLEBOXED
    ("esper", "#length(3)#correl(price, ts, id)"): [("correlation", D), ("id", S)],
    # WeightedAverageView.createEventType: average DOUBLEBOXED
    ("esper", "#weighted_avg(price, ts)"): [("average", D)],
    # grouped statistics: the keys added, typed as their columns
    ("esper", "#groupwin(symbol)#length(2)#uni(price)"): [*UNI, ("symbol", S)],
    ("esper", "#groupwin(symbol, ts)#length(2)#size"): [("size", L), ("symbol", S), ("ts", L)],
    # every key is a field already (an additional property): none added
    ("esper", "#groupwin(symbol)#length(2)#weighted_avg(price, ts, symbol)"): [("average", D), ("symbol", S)],
    # Apama: one field, named as the aggregate
    ("apama", "from v in values retain 2 select sum(v.p)"): [("sum", D)],
    ("apama", "from v in values retain 2 select count()"): [("count", L)],
    ("apama", "from v in values within 1.0 every 1.0 select avg(v.p)"): [("avg", D)],
    ("apama", "from v in values retain 2 select min(v.p)"): [("min", D)],
    ("apama", "from v in values partition by v.symbol retain 2 select max(v.p)"): [("max", D)],
}


def ev(event_id, **props):
    return Arrive(Event(event_id, props))


TRACE = Trace([ev("E1", symbol="A", price=1.0, ts=1, p=2.0), ev("E2", symbol="B", price=3.5, ts=4, p=1.0),
               ev("E3", symbol="A", price=2.0, ts=9, p=5.0)])


@pytest.fixture(scope="module")
def frame(spark):
    return frames.to_dataframe(spark, [("t", TRACE)])


def _names_and_types(schema):
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


@pytest.mark.parametrize("dialect, window", list(SCHEMAS), ids=[w for _, w in SCHEMAS])
def test_the_output_schema_is_the_engines_and_the_plans(frame, dialect, window):
    declared = output_schema(window, frame.schema, dialect)
    assert _names_and_types(declared) == KEY + SCHEMAS[dialect, window]
    out = apply_window(frame, window, dialect)
    assert _names_and_types(out.schema) == _names_and_types(declared)
    assert out.count() > 0  # the plan runs, with the declared types (the pipeline checks each field's)


def test_the_schema_is_found_from_column_types_alone():
    """A sink's table, before any data: the columns as type names."""
    schema = output_schema("#groupwin(symbol)#length(2)#uni(price, ts)", {"symbol": "string", "price": "double",
                                                                          "ts": "long"})
    assert _names_and_types(schema) == KEY + [*UNI, ("ts", L), ("symbol", S)]
    fields = derived.fields_of(parse("#uni(price, ts)", "esper"), {f.name: f for f in schema.fields})
    assert [f.name for f in fields] == [name for name, _ in UNI] + ["ts"]


# An additional property named like a field #linest does not check replaces it once there are values
# (oracle/windows/derived.py; corpus esper/linest-extra-replaces-a-field). Its column of the field's type:
# one column of that type. Of another type: the field is JSON text (metadata JSON_TEXT), the statistic's
# number before the first new event and the property's value after, neither converted.
REPLACED = Trace([ev("E1", price=1.0, ts=10, XSum="a", n=3), ev("E2", price=2.0, ts=30, XSum="b"),
                  ev("E3", price=4.0, ts=50, n=5)])


def test_a_field_replaced_by_a_property_of_its_type_keeps_the_type(spark):
    frame = frames.to_dataframe(spark, [("t", REPLACED)])
    window = "#length(2)#linest(price, ts, n)"
    out = apply_window(frame, window)
    assert out.schema["n"].dataType.simpleString() == "bigint" and not out.schema["n"].metadata.get(JSON_TEXT)
    rows = out.orderBy("after", "side").collect()
    assert [(r.after, r.side, r.n) for r in rows] == [
        (0, "insert", 3), (0, "remove", 0), (1, "insert", None), (1, "remove", 3),
        (2, "insert", 5), (2, "remove", None)]  # E2 has no n: the named property is null


def test_a_field_replaced_by_a_property_of_another_type_is_json_text(spark):
    frame = frames.to_dataframe(spark, [("t", REPLACED)])
    window = "#length(2)#linest(price, ts, XSum)"
    declared = output_schema(window, frame.schema)
    out = apply_window(frame, window)
    for schema in (declared, out.schema):
        assert schema["XSum"].dataType.simpleString() == "string" and schema["XSum"].metadata.get(JSON_TEXT)
    rows = out.orderBy("after", "side").collect()
    assert [(r.after, r.side, r.XSum) for r in rows] == [
        (0, "insert", '"a"'), (0, "remove", "0.0"), (1, "insert", '"b"'), (1, "remove", '"a"'),
        (2, "insert", None), (2, "remove", '"b"')]  # E3 has no XSum: the named property is null
    (got,) = run_cases([(parse(window, "esper"), REPLACED)])
    expected = run(parse(window, "esper"), REPLACED)
    assert [[row["XSum"] for row in (*u.values.insert, *u.values.remove)] for u in got] == [
        [row["XSum"] for row in (*u.values.insert, *u.values.remove)] for u in expected] == [
        ["a", 0.0], ["b", "a"], [None, "b"]]


def test_the_first_old_row_holds_the_empty_statistics(spark):
    frame = frames.to_dataframe(spark, [("t", REPLACED)])
    (first_old,) = apply_window(frame, "#uni(price, ts)").where("after = 0 AND side = 'remove'").collect()
    assert (first_old.datapoints, first_old.total, first_old.ts) == (0, 0.0, None)
    assert all(math.isnan(first_old[f]) for f in ("stddev", "stddevpa", "variance", "average"))

"""The typed output of Esper's and CCL's statements (`spark_impl.output_schema`,
found without running anything): one column per field, named as the engine
names it and typed as the engine types the expression. Spark's actual output
has the same schema: tests/spark/test_spark_statement_schema.py."""

from __future__ import annotations

import pytest

from oracle.errors import UnsupportedWindow
from spark_impl import ROW_OUTPUT_COLUMNS, output_schema

#: the input's property columns
COLUMNS = {"symbol": "string", "price": "double", "qty": "long", "flag": "boolean", "small": "int"}

# Each type as Esper's compiler gives it (Esper 9 source, common/src/main/java/com/espertech/esper/common/
# internal/epl/...): `count` a long (expression/agg/method/ExprCountNode: "Long"); `sum` the boxed type of its
# argument (agg/method/sum/AggregationForgeFactorySum.getSumAggregatorType: a double's Double, a long's Long);
# `avg` a double (ExprAvgNode: "Double"); `min`/`max` the argument's type (ExprMinMaxAggrNode); `+ - * %` by
# Java's binary numeric promotion (expression/ops/ExprMathNode, MathArithTypeEnum); `/` a double unless
# integer division is configured, which it is not by default (ExprMathNode: "false for division returns
# double"); comparisons and `and`/`or` booleans (ExprRelationalOpNode, ExprEqualsNode, ExprAndNode). A
# property is its column's type. Names: the alias, the property, else the expression's text
# (ExprNodeUtilityPrint.toExpressionStringMinPrecedenceSafe: `sum(price)`, `qty*2`).
ESPER = [
    ("select irstream symbol, sum(price) as total, count(*) as n from E#groupwin(symbol)#length(10) group by symbol",
     [("symbol", "string"), ("total", "double"), ("n", "bigint")]),
    ("select sum(price), sum(qty), avg(qty), count(price), min(symbol), max(qty), min(price) from E#length(3)",
     [("sum(price)", "double"), ("sum(qty)", "bigint"), ("avg(qty)", "double"), ("count(price)", "bigint"),
      ("min(symbol)", "string"), ("max(qty)", "bigint"), ("min(price)", "double")]),
    ("select qty*2, qty+price as mixed, qty/2 as half, qty%3 as rest, price > 2 as big, "
     "flag and price > 1 as both from E#length(2)",
     [("qty*2", "bigint"), ("mixed", "double"), ("half", "double"), ("rest", "bigint"), ("big", "boolean"),
      ("both", "boolean")]),
    ("select sum(price) / count(*) as mean, max(price) - min(price) as spread from E#time(10 sec)",
     [("mean", "double"), ("spread", "double")]),
    ("select small, price from E#length(2)", [("small", "int"), ("price", "double")]),
    ("select * from E#length(2)",
     [("id", "string"), ("symbol", "string"), ("price", "double"), ("qty", "bigint"), ("flag", "boolean"),
      ("small", "int")]),
    ("select *, qty*2 as twice from E#length(2)",
     [("id", "string"), ("symbol", "string"), ("price", "double"), ("qty", "bigint"), ("flag", "boolean"),
      ("small", "int"), ("twice", "bigint")]),
    # a row is a map of names: `price` once, where `*` put it, holding the later item's value and type
    ("select *, price*2 as price from E#length(2)",
     [("id", "string"), ("symbol", "string"), ("price", "double"), ("qty", "bigint"), ("flag", "boolean"),
      ("small", "int")]),
    ("select irstream symbol, count(*) as n from E#length(5) group by symbol having sum(qty) > 3",
     [("symbol", "string"), ("n", "bigint")]),
    # over a derived-value window's rows: its fields (esper.md §7: `datapoints` a long, the statistics doubles)
    ("select average, datapoints from E#length(3)#uni(price)", [("average", "double"), ("datapoints", "bigint")]),
]

# CCL's aggregation windows type the column by the same Java rules (apama-ccl.md: the aggregation window is
# Esper's statement read as a store)
CCL = [
    ("SELECT symbol, SUM(price) AS total, COUNT(*) AS n FROM S KEEP 3 ROWS GROUP BY symbol",
     [("symbol", "string"), ("total", "double"), ("n", "bigint")]),
]


def _fields(schema) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields[len(ROW_OUTPUT_COLUMNS):]]


@pytest.mark.parametrize("statement, fields", ESPER, ids=[s for s, _ in ESPER])
def test_esper_statement_fields_are_typed_as_esper_types_them(statement, fields):
    schema = output_schema(statement, COLUMNS)
    assert [f.name for f in schema.fields[:len(ROW_OUTPUT_COLUMNS)]] == list(ROW_OUTPUT_COLUMNS)
    assert _fields(schema) == fields


@pytest.mark.parametrize("statement, fields", CCL, ids=[s for s, _ in CCL])
def test_ccl_aggregation_window_fields(statement, fields):
    assert _fields(output_schema(statement, COLUMNS, "ccl")) == fields


def test_a_window_posting_events_keeps_its_event_columns():
    schema = output_schema("#length(2)", COLUMNS)
    assert [f.name for f in schema.fields] == [
        "trace_id", "after", "phase", "time", "ordinal", "side", "pos", "id", "error", *COLUMNS]


@pytest.mark.parametrize("statement, message", [
    ("select count(*) as time from E#length(2)", "field 'time' is named like the output column 'time'"),
    ("select sum(price) as Side from E#length(2)", "field 'Side' is named like the output column 'side'"),
    ("select count(*) as n, sum(qty) as N from E#length(2)", "field 'N' differs only in case from the field 'n'"),
])
def test_a_field_named_like_an_output_column_is_refused_suggesting_an_alias(statement, message):
    with pytest.raises(UnsupportedWindow, match=message) as caught:
        output_schema(statement, COLUMNS)
    assert "`as`" in str(caught.value)


def test_a_property_the_columns_lack_is_named():
    from spark_impl.errors import InvalidFrame

    with pytest.raises(InvalidFrame, match="reads property 'nosuch'"):
        output_schema("select nosuch from E#length(2)", COLUMNS)

"""A statement's typed output on Spark: its schema is `output_schema`'s (the
declared types, tests/test_statement_schema.py), its columns read as a Spark
user reads them, and its rows join back to a table."""

from __future__ import annotations

import math

import pytest

from spark_impl import apply_window_to_events, output_schema
from test_statement_schema import CCL, ESPER  # tests/ is on sys.path (rootdir conftest, prepend import mode)

pytestmark = pytest.mark.spark

ROWS = [(0, 0, "A", 1.5, 3, True, 1), (1, 100, "B", 2.5, 4, False, 2), (2, 200, "A", float("nan"), 5, None, 3),
        (3, 300, "B", None, 6, True, 4)]
SCHEMA = "ord long, at long, symbol string, price double, qty long, flag boolean, small int"


@pytest.fixture(scope="module")
def events(spark):
    return spark.createDataFrame(ROWS, SCHEMA)


def _simple(schema) -> list[tuple[str, str]]:
    return [(f.name, f.dataType.simpleString()) for f in schema.fields]


@pytest.mark.parametrize("statement, dialect", [(s, "esper") for s, _ in ESPER] + [(s, "ccl") for s, _ in CCL])
def test_the_output_has_the_declared_schema(events, statement, dialect):
    out = apply_window_to_events(events, statement, order_col="ord", time_col="at", dialect=dialect)
    declared = output_schema(statement, events.drop("ord", "at").schema, dialect)
    assert _simple(out.schema)[:8] == _simple(declared)[:8]
    # the order and time columns are the events' properties too (`select *` lists them)
    assert [c for c in _simple(out.schema) if c[0] not in ("ord", "at")] == _simple(declared)
    # (a plan computing a field of another type fails while planning: `pipeline._finalize_rows`)


def test_a_statement_row_reads_as_typed_columns_nan_included(events):
    out = apply_window_to_events(events, "select irstream symbol, sum(price) as total, count(*) as n "
                                         "from E#groupwin(symbol)#length(10) group by symbol",
                                 order_col="ord", time_col="at")
    rows = {(r.after, r.side): (r.symbol, r.total, r.n) for r in out.collect()}
    assert rows[(0, "insert")] == ("A", 1.5, 1) and rows[(1, "remove")] == ("B", None, 0)
    symbol, total, n = rows[(2, "insert")]
    assert (symbol, n) == ("A", 2) and math.isnan(total)  # a NaN is a double column's NaN, not text
    assert rows[(3, "insert")] == ("B", 2.5, 2)  # a null price counts in count(*), not in the sum


def test_statement_rows_join_back_to_a_table(events, spark):
    names = spark.createDataFrame([("A", "Alpha"), ("B", "Beta")], "symbol string, name string")
    out = apply_window_to_events(events, "select symbol, count(*) as n from E#length(10) group by symbol",
                                 order_col="ord", time_col="at")
    joined = out.join(names, "symbol").groupBy("name").max("n")
    assert sorted(tuple(r) for r in joined.collect()) == [("Alpha", 2), ("Beta", 2)]

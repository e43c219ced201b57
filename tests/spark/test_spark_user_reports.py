"""What a new user hit running the README (issue 43), on Spark's side: each
reproduction a row (the oracle's side: tests/test_user_reports.py)."""

from __future__ import annotations

import pytest

from oracle.errors import InvalidTrace
from oracle.events import run_events
from oracle.model import Advance, Arrive, Event, Trace
from spark_impl import apply_window_to_events, frames
from spark_impl.frames import NOT_FIELDS
from spark_impl.errors import InvalidFrame

pytestmark = pytest.mark.spark

ROWS = [(0, 0, "IBM", 1.0), (1, 400, "MSFT", 2.0), (2, 1500, "IBM", None)]


@pytest.fixture(scope="module")
def events(spark):
    return spark.createDataFrame(ROWS, "n long, t long, symbol string, price double")


def test_star_lists_the_order_and_time_columns_on_both_engines(events):
    """The order and time columns are properties of the event on both paths, so
    `select *` posts the same fields over a table and over an events file."""
    out = apply_window_to_events(events, "select irstream * from E#length(1)", order_col="n", time_col="t")
    spark_rows = [(r.side, {k: v for k, v in r.asDict().items() if k not in NOT_FIELDS and v is not None})
                  for r in out.orderBy("after", "side").collect()]
    records = [{k: v for k, v in {"id": str(n), "n": n, "t": t, "symbol": s, "price": p}.items() if v is not None}
               for n, t, s, p in ROWS]  # a null cell is a property the event lacks
    oracle_rows = [(side, dict(row)) for u in run_events("select irstream * from E#length(1)", records, time="t")
                   for side, rows in (("insert", u.values.insert), ("remove", u.values.remove)) for row in rows]
    assert spark_rows == oracle_rows
    assert set(spark_rows[0][1]) == {"id", "n", "t", "symbol", "price"} and len(spark_rows) == 5


def test_ext_timed_reads_the_time_column_on_both_engines(events):
    out = apply_window_to_events(events, "#ext_timed(t, 1 sec)", order_col="n", time_col="t")
    removed = [r.id for r in out.where("side = 'remove'").orderBy("pos").collect()]
    oracle_removed = [e.id for u in run_events("#ext_timed(t, 1 sec)", [
        {"id": str(n), "n": n, "t": t} for n, t, _, _ in ROWS], time="t") for e in u.remove]
    assert removed == oracle_removed == ["0", "1"]


def test_a_statement_over_a_column_the_table_lacks_is_refused(events):
    with pytest.raises(InvalidFrame, match="reads property 'nosuch', but the event table has no column 'nosuch'"):
        apply_window_to_events(events, "select nosuch from E#length(3)", order_col="n", time_col="t")


def test_a_property_some_events_lack_reads_null(events):
    out = apply_window_to_events(events, "select price from E#length(3)", order_col="n", time_col="t")
    assert out.columns[-1] == "price" and dict(out.dtypes)["price"] == "double"
    assert [r.price for r in out.orderBy("after").collect()] == [1.0, 2.0, None]


def test_trace_rows_checks_values_against_the_declared_column_types():
    """Names alone make string columns: a number under one is refused naming
    the trace, the item and the property, not an Arrow error at write time."""
    types = frames.PropertyTypes(["symbol"])
    trace = Trace([Arrive(Event("E1", {"symbol": None})), Advance(100), Arrive(Event("E2", {"symbol": 7}))])
    with pytest.raises(InvalidTrace, match=r"trace item 2: trace 't1': event 'E2': property 'symbol' is 7, but its "
                                           r"column is a string column"):
        frames.trace_rows("t1", trace, types.schema())
    inferred = frames.PropertyTypes.of_trace("t1", trace)
    assert frames.trace_rows("t1", trace, inferred.schema())[-1][-1] == 7


@pytest.mark.streaming
def test_a_failed_stream_is_told_by_its_cause_first(spark, tmp_path):
    """A replayed file (the same item in two micro-batches) stops the query; the
    exception `await_termination` raises starts with the trace, the seq and the
    reason, not with pyspark's forty-line wrapper."""
    from spark_impl import streaming

    types = frames.PropertyTypes(["symbol"])
    schema = frames.input_schema(types.schema())
    rows = frames.trace_rows("t1", Trace([Arrive(Event("E1", {"symbol": "IBM"})), Advance(500)]), types.schema())
    streaming.write_files(tmp_path / "inbox", [rows, rows[1:2]], schema)  # E1's row again: a replayed input
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "inbox"))
    query = (streaming.apply_window(stream, "#length(2)").writeStream.format("memory").queryName("replayed")
             .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
    with pytest.raises(streaming.StreamFailed) as info:
        streaming.await_termination(query)
    message = str(info.value)
    assert message.startswith("trace 't1' seq 0: the item arrived again after it ran (a replayed input?)"), message
    assert "\n" not in message and "Traceback" not in message


def test_the_trace_column_is_no_property_a_statement_can_read(spark):
    table = spark.createDataFrame([(0, 0, "s1", 1.0)], "n long, t long, sensor string, price double")
    with pytest.raises(InvalidFrame, match="reads property 'sensor'.*it is the trace column"):
        apply_window_to_events(table, "select sensor, sum(price) as s from E#length(2) group by sensor",
                               order_col="n", time_col="t", trace_col="sensor")

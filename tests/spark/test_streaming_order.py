"""The window's query on a stream (spark_impl/streaming/micro_batch.py), its
rules of order and state one by one, each in a small real streaming query:
an item ahead of a gap is held back in the state until the gap fills; what
arrives twice, a late start row, another window's state and a location a
later query wrote fail the query, naming the place."""

from __future__ import annotations

import pytest

from oracle import parse
from oracle.model import Advance, Arrive, Event, SetVariables, Trace

pytestmark = pytest.mark.streaming


def _rows(trace: Trace, trace_id: str = "t"):
    from spark_impl.frames import PropertyTypes, input_schema, trace_rows

    types = PropertyTypes(["k", "v"])
    types.merge(PropertyTypes.of_trace(trace_id, trace))
    return trace_rows(trace_id, trace, types.schema()), input_schema(types.schema())


def _run(spark, folder, files, schema, window, **kw):
    """`start_window` over `files` (one micro-batch each) to the end: the rows posted by batch id."""
    from spark_impl.streaming import start_window, write_files

    write_files(folder / "in", files, schema, first=kw.pop("first", 0))
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(folder / "in"))
    posted = {}
    query = start_window(stream, window, location=str(folder / "window"),
                         sink=lambda frame, batch_id: posted.__setitem__(batch_id, frame.collect()),
                         trigger={"availableNow": True}, **kw)
    try:
        query.awaitTermination()
    finally:
        query.stop()
    return posted


def _failure(spark, folder, files, schema, window, first: int = 0) -> str:
    from pyspark.errors import StreamingQueryException

    with pytest.raises(StreamingQueryException) as caught:
        _run(spark, folder, files, schema, window, first=first)
    return str(caught.value)


TRACE = Trace([Arrive(Event("E0", {"k": "a", "v": 1}), time=0), Advance(500),
               SetVariables({"lim": 2}), Arrive(Event("E1", {"k": "b", "v": 2}), time=1000),
               Arrive(Event("E2", {"k": "a", "v": 3}), time=1500), Arrive(Event("E3", {"k": "a", "v": 4}), time=2600)])


def test_items_ahead_of_a_gap_wait_in_the_state_and_run_when_it_fills(spark, tmp_path):
    from spark_impl import apply_window
    from spark_impl.frames import to_dataframe
    from spark_impl.streaming.micro_batch import HELD_BACK, Location

    rows, schema = _rows(TRACE)
    by_seq = {r[1]: r for r in rows}
    # micro-batch 0: seq 0 and 3 (3 ahead of the gap); 1: seq 4 and the set item (seq 2) still ahead; 2: seq 1
    files = [[by_seq[3], by_seq[0]], [by_seq[4], by_seq[2]], [by_seq[1]]]
    window = "#groupwin(k)#time(1 sec)"
    posted = _run(spark, tmp_path, files, schema, parse(window))
    expected = apply_window(to_dataframe(spark, [("t", TRACE)], ["k", "v"]).where("seq <= 4"), window).collect()
    assert sorted(map(repr, (r for b in posted.values() for r in b))) == sorted(map(repr, expected))
    assert {r["after"] for r in posted[0]} == {0} and posted[1] == []  # 3 and 4 wait for 1 and 2
    assert {r["after"] for r in posted[2]} == {3, 4}  # the advance (1) and the set item (2) post nothing
    where = Location(spark, str(tmp_path / "window"))
    assert where.versions() == [1, 2]  # states older than the one the newest was made from are gone
    assert where.read(1).where(HELD_BACK).count() == 3  # seq 2, 3, 4 held back after micro-batch 1
    assert where.read(2).where(HELD_BACK).count() == 0


def test_a_logged_state_of_a_window_reading_a_variable_posts_the_batch_rows(spark, tmp_path, monkeypatch):
    """Every micro-batch logs (`micro_batch.LOG_SHARE` unbounded): the snapshot holds a column the window's
    checks add (the variable `lim`, which no item carries), the logs hold it null, and the stream posts the
    batch's rows."""
    from spark_impl import apply_window
    from spark_impl.frames import to_dataframe
    from spark_impl.streaming import micro_batch

    monkeypatch.setattr(micro_batch, "LOG_SHARE", float("inf"))
    rows, schema = _rows(Trace(TRACE.items, variables={"lim": 1}))
    by_seq = {r[1]: r for r in rows}
    files = [[by_seq[s] for s in seqs] for seqs in ([-1, 0, 1], [2, 3], [4, 5])]
    assert len(rows) == 7
    window = "#expr(current_count <= lim)"
    posted = _run(spark, tmp_path, files, schema, parse(window))
    expected = apply_window(to_dataframe(spark, [("t", Trace(TRACE.items, variables={"lim": 1}))], ["k", "v"]),
                            window).collect()
    assert sorted(map(repr, (r for b in posted.values() for r in b))) == sorted(map(repr, expected))
    assert len(expected) > 3
    where = micro_batch.Location(spark, str(tmp_path / "window"))
    assert where.manifest(2)["logs"] == [1, 2]  # micro-batches 1 and 2 logged over the snapshot of 0
    assert "lim" in where.read(0).columns


def test_an_item_twice_or_again_after_it_ran_fails_naming_the_trace_and_seq(spark, tmp_path):
    rows, schema = _rows(Trace(TRACE.items, start_time=0, variables={"lim": 1}))
    by_seq = {r[1]: r for r in rows}
    assert -1 in by_seq  # the start row
    message = _failure(spark, tmp_path / "twice", [[by_seq[-1], by_seq[0], by_seq[1]], [by_seq[1], by_seq[2]]],
                       schema, parse("#length(2)"))
    assert "trace 't' seq 1: the item arrived again after it ran (a replayed input?)" in message
    message = _failure(spark, tmp_path / "start", [[by_seq[0]], [by_seq[-1]]], schema, parse("#length(2)"))
    assert "trace 't' seq -1: a start row after the trace began" in message


def test_a_state_written_by_another_window_or_a_later_query_is_refused(spark, tmp_path):
    rows, schema = _rows(TRACE)
    assert sorted(_run(spark, tmp_path, [rows[:3], rows[3:5]], schema, parse("#length(2)"))) == [0, 1]
    message = _failure(spark, tmp_path, [rows[5:]], schema, parse("#length(3)"), first=2)  # a third file
    assert "was written by another window" in message and "#length(3)" in message
    (tmp_path / "window" / "checkpoint").rename(tmp_path / "old-checkpoint")  # a new query, the old state
    message = _failure(spark, tmp_path, [], schema, parse("#length(2)"))
    assert "holds the state of micro-batch 1, after this query's micro-batch 0" in message


def test_apply_window_returns_a_stream_of_the_windows_updates_each_read_once(spark, tmp_path):
    from spark_impl import apply_window
    from spark_impl.frames import to_dataframe
    from spark_impl.streaming import apply_window as on_stream
    from spark_impl.streaming import write_files

    rows, schema = _rows(TRACE)
    write_files(tmp_path / "in", [rows[:3], rows[3:]], schema)
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    out = on_stream(stream, "#length(2)", location=str(tmp_path / "window"), trigger={"availableNow": True})
    out.window_query.awaitTermination()
    seen = []
    for _ in range(2):  # the reader's second run, from its checkpoint, reads nothing again
        query = (out.writeStream.option("checkpointLocation", str(tmp_path / "reader"))
                 .foreachBatch(lambda frame, _: seen.extend(frame.collect())).trigger(availableNow=True).start())
        query.awaitTermination()
    expected = apply_window(to_dataframe(spark, [("t", TRACE)], ["k", "v"]), "#length(2)")
    # the same columns and types (a file read back makes every nested field nullable)
    assert [(f.name, f.dataType.simpleString()) for f in out.schema.fields] == [
        (f.name, f.dataType.simpleString()) for f in expected.schema.fields]
    assert sorted(map(repr, seen)) == sorted(map(repr, expected.collect()))


def test_a_small_micro_batch_runs_its_plans_over_the_state_interpreted(spark, tmp_path):
    """A micro-batch's frame belongs to the query's own session, the state is
    read into it, so the plans built on the state run under the settings the
    micro-batch sets (`session.interpreted`: no adaptive execution for a small
    one), not the settings of the session that started the query."""
    from spark_impl.streaming import start_window, write_files

    rows, schema = _rows(TRACE)
    write_files(tmp_path / "in", [rows[:3], rows[3:]], schema)
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(tmp_path / "in"))
    plans = {}

    def sink(frame, batch_id):
        plans[batch_id] = frame._jdf.queryExecution().executedPlan().toString()
        frame.collect()

    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    query = start_window(stream, "#groupwin(k)#length(2)", location=str(tmp_path / "window"), sink=sink,
                         trigger={"availableNow": True})
    try:
        query.awaitTermination()
    finally:
        query.stop()
    assert sorted(plans) == [0, 1]
    assert "state_of" in plans[1]  # the second micro-batch's plan reads the state
    assert not [b for b, plan in plans.items() if "AdaptiveSparkPlan" in plan], plans


def test_a_micro_batch_of_files_is_read_again_by_each_job_and_any_other_source_cached(spark, tmp_path):
    """`rereadable`: a frame over files (a file source's micro-batch) is read again by each job of the
    micro-batch; a frame of any other leaf (a range, rows of an RDD: a Kafka topic's micro-batch is such)
    is cached by the survey's job."""
    from spark_impl.streaming.micro_batch import rereadable

    spark.range(3).write.parquet(str(tmp_path / "files"))
    files = spark.read.parquet(str(tmp_path / "files"))
    assert rereadable(files) and rereadable(files.where("id > 0").union(files))
    assert not rereadable(spark.range(3)) and not rereadable(files.union(spark.range(3)))

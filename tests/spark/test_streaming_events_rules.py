"""The rules of the events stream (spark_impl/streaming/events.py), one
scenario each: its micro-batch step (`EventStream`, the `foreachBatch`
function) handed each micro-batch's rows as Spark hands them, its state in a
temporary folder. A micro-batch of no rows whose watermark another key moved
is two micro-batches here: one with a row of the trace `~` (the clock) at
the new watermark plus the delay, then one of no rows; `~`'s own updates are
left out.

(The same step in real streaming queries, with restarts and every dialect:
tests/spark/test_streaming_events.py.)"""

from __future__ import annotations

import pytest

from oracle import parse

pytestmark = pytest.mark.streaming

CLOCK = "~"


class Steps:
    """One window's `EventStream` over an event table (`trace`, `n`, `t`,
    `id`, then `props`), fed micro-batch by micro-batch."""

    def __init__(self, spark, tmp_path, window: str, *, delay: int, start: int = 0, ids: bool = True,
                 props: str = ""):
        from pyspark.sql import functions as F

        from spark_impl.event_table import event_rows
        from spark_impl.streaming.events import EventStream, Names
        from spark_impl.streaming.micro_batch import Location
        from spark_impl.streaming.output import window_schema

        self.spark, self.delay, self.batch_id, self.clock_n = spark, delay, 0, 0
        self.table = "trace string, n bigint, t bigint, id string" + (f", {props}" if props else "")
        empty = spark.createDataFrame([], self.table)
        self.rows = lambda frame: event_rows(frame, order_col="n", time_col="t", trace_col="trace").withColumn(
            "#tick", F.lit(False))
        spec = parse(window)
        columns = self.rows(empty).drop("#tick")
        from pyspark.sql import types as T
        schema = window_schema(spec, T.StructType([f for f in columns.schema.fields
                                                   if f.name not in ("trace_id", "seq", "kind", "time", "id")]))
        self.posted: list[dict] = []

        def sink(frame, batch_id):
            self.last = [r.asDict(recursive=True) for r in frame.collect()]

        self.step = EventStream(Location(spark, str(tmp_path / "window")), spec, names=Names("n", "t", "trace"),
                                start=start, delay=delay, ids=ids, sink=sink, columns=columns.columns, schema=schema)

    def batch(self, rows: list[tuple]) -> list[dict]:
        """One micro-batch of rows (trace, n, t, id, props...): the rows posted (the clock's left out)."""
        self.step(self.rows(self.spark.createDataFrame(rows, self.table)), self.batch_id)
        self.batch_id += 1
        mine = [r for r in self.last if r["trace_id"] != CLOCK]
        self.posted += mine
        return mine

    def idle(self, watermark: int) -> list[dict]:
        """Micro-batches of no row of the traces under test, the watermark moved to `watermark`."""
        props = len(self.table.split(",")) - 4
        self.clock_n += 1
        out = self.batch([(CLOCK, self.clock_n, watermark + self.delay, f"c{self.clock_n}") + (None,) * props])
        return out + self.batch([])


def _sides(rows):
    """(after, phase, time, side, id) of each row, in the batch's order."""
    return sorted((r["after"], r["phase"], r["time"], r["side"] or "", r["id"] or "") for r in rows)


def test_out_of_order_rows_within_the_delay_are_put_back_in_order(spark, tmp_path):
    """#length(2), delay 1000: a row is fed when the watermark passes it."""
    steps = Steps(spark, tmp_path, "#length(2)", delay=1000)
    assert steps.batch([("a", 0, 0, "E0"), ("a", 2, 800, "E2")]) == []  # W = 0: held
    assert steps.batch([("a", 3, 1200, "E3"), ("a", 1, 500, "E1")]) == []  # W = 0: held
    assert _sides(steps.batch([])) == [(0, 1, 0, "insert", "E0")]  # W = 200: E0 fed
    assert _sides(steps.idle(2000)) == [
        (1, 1, 500, "insert", "E1"), (2, 1, 800, "insert", "E2"), (2, 1, 800, "remove", "E0"),
        (3, 1, 1200, "insert", "E3"), (3, 1, 1200, "remove", "E1")]


def test_a_late_row_posts_an_error_row_naming_it_and_is_counted(spark, tmp_path):
    """#length(5), delay 0: after rows up to 1000 ms the watermark is 1000; a
    row at 400 ms is late, one at exactly 1000 ms is not (it is held)."""
    steps = Steps(spark, tmp_path, "#length(5)", delay=0, props="price double")
    steps.batch([("a", 0, 0, "E0", 1.0), ("a", 1, 1000, "E1", 2.0)])
    posted = steps.batch([("a", 7, 400, "L1", 3.5), ("a", 8, 300, "L2", None), ("a", 2, 1000, "E2", 4.0)])
    errors = sorted((r for r in posted if r["side"] == "error"), key=lambda r: r["ordinal"])
    assert [(r["after"], r["phase"], r["time"], r["ordinal"], r["id"], r["price"]) for r in errors] == [
        (8, 2, 300, 0, "L2", None), (7, 2, 400, 1, "L1", 3.5)]  # checked in time order; counted 0, 1
    assert "late: t=400 ms at n=7 in trace 'a' is before the watermark 1000 ms" in errors[1]["error"]
    assert "delay of 0 ms" in errors[1]["error"]
    # E0 fed (the watermark passed it); E1 and E2, at the watermark, held
    assert [(r["after"], r["id"]) for r in posted if r["side"] == "insert"] == [(0, "E0")]
    later = steps.batch([("a", 9, 10, "L3", None)])
    assert [(r["ordinal"], r["side"], r["id"]) for r in later] == [(2, "error", "L3")]  # the count goes on
    assert {r["id"] for r in steps.posted if r["side"] == "insert"} == {"E0"}  # no late row reached the window


def test_timers_fire_when_the_watermark_passes_them_without_a_new_event(spark, tmp_path):
    for window, expected in [
        ("#time(1 sec)", [(2, 0, 1000, "remove", "E0"), (2, 0, 1500, "remove", "E1")]),
        ("#time_batch(1 sec)", [(2, 0, 1000, "insert", "E0"), (2, 0, 1000, "insert", "E1"),
                                (2, 0, 2000, "remove", "E0"), (2, 0, 2000, "remove", "E1")]),
    ]:
        steps = Steps(spark, tmp_path / window.split("(")[0][1:], window, delay=0)
        steps.batch([("x", 0, 0, "E0"), ("x", 1, 500, "E1")])  # W = 0: both held
        steps.idle(600)  # another key's row moved the watermark to 600: E0, E1 fed
        assert steps.idle(999) == []
        assert _sides(steps.idle(2500)) == expected, window


def test_the_walk_to_the_watermark_is_keyed_after_the_last_fed_event(spark, tmp_path):
    """A walk's updates get `after` = the last fed order value + 1 (before any event, 0)."""
    steps = Steps(spark, tmp_path / "a", '#time_batch(1 sec, "FORCE_UPDATE, START_EAGER")', delay=0)
    steps.batch([("a", 0, 2200, "E0")])  # W = 0: held; the window, created at 0, posts every second
    assert _sides(steps.idle(2100)) == [(0, 0, 1000, "", ""), (0, 0, 2000, "", "")]  # empty updates, after 0
    assert _sides(steps.idle(3000)) == [(1, 0, 3000, "insert", "E0")]
    steps = Steps(spark, tmp_path / "b", "#time(1 sec)", delay=0)
    steps.batch([("a", 4, 0, "E4")])
    assert _sides(steps.idle(5000)) == [(4, 1, 0, "insert", "E4"), (5, 0, 1000, "remove", "E4")]


def test_order_values_that_go_back_along_time_and_repeated_ones_are_rejected(spark, tmp_path):
    steps = Steps(spark, tmp_path, "#length(3)", delay=1000)
    steps.batch([("a", 5, 100, "E5"), ("a", 5, 200, "X5"), ("a", 3, 300, "E3"), ("a", 6, 50, "E6")])
    steps.idle(2000)
    errors = {r["id"]: r for r in steps.posted if r["side"] == "error"}
    # X5 repeats a held order value; fed in (time, order) order: E6 @50 first, then E5 @100 and E3 @300
    # go back below 6
    assert set(errors) == {"X5", "E5", "E3"}
    assert [r["id"] for r in steps.posted if r["side"] == "insert"] == ["E6"]
    assert "order_col 'n' has the value 5 twice (t=200 ms at n=5 in trace 'a'; the row at 100 ms came first" \
        in errors["X5"]["error"]
    assert "goes back along time_col 't'" in errors["E3"]["error"]
    assert "comes after n=6 at 50 ms" in errors["E3"]["error"]
    assert sorted(r["ordinal"] for r in errors.values()) == [0, 1, 2]


def test_bad_values_are_rejected_naming_the_column(spark, tmp_path):
    steps = Steps(spark, tmp_path, "#length(3)", delay=0, start=100)
    posted = steps.batch([("a", None, 200, "E0"), ("a", 1, None, "E1"), ("a", -2, 300, "E2"),
                          ("a", 3, 50, "E3"), ("a", 4, 400, None), (None, 5, 500, "E5")])
    reasons = sorted(r["error"] for r in posted)
    assert len(posted) == 6 and all(r["side"] == "error" and r["phase"] == 2 for r in posted)
    for text in ("order_col 'n' is negative", "column 'id' is null",
                 "before the window's start: t=50 ms at n=3 in trace 'a', the window starts at 100 ms"):
        assert any(text in r for r in reasons), (text, reasons)
    assert {r["after"] for r in posted if r["error"].startswith("order_col 'n' is null")} == {-1}
    # a null value is said in words, never as `t=None ms`
    assert "the event has no time: time_col 't' is null (no time at n=1 in trace 'a')" in reasons
    assert "order_col 'n' is null (t=200 ms at no n in trace 'a')" in reasons
    assert "trace_col 'trace' is null (t=500 ms at n=5)" in reasons
    assert not any("None" in r for r in reasons), reasons
    again = steps.batch([(None, 6, 600, "E6")])  # the rows of no trace are counted too
    assert [r["ordinal"] for r in again] == [1]


def test_a_repeated_id_is_rejected_when_ids_are_kept(spark, tmp_path):
    steps = Steps(spark, tmp_path / "a", "#length(3)", delay=0)
    steps.batch([("a", 0, 0, "E0"), ("a", 1, 0, "E0")])
    steps.idle(1)
    steps.batch([("a", 2, 5, "E0")])
    steps.idle(10)
    errors = sorted((r for r in steps.posted if r["side"] == "error"), key=lambda r: r["after"])
    assert [r["after"] for r in errors] == [1, 2]  # in one feed, and against the ids kept in the state
    assert all("the id 'E0' is an earlier event's" in r["error"] for r in errors)
    steps = Steps(spark, tmp_path / "b", "#length(3)", delay=0, ids=False)  # validate=False: ids not kept
    steps.batch([("a", 0, 0, "E0"), ("a", 1, 0, "E0")])
    steps.idle(1)
    assert [r["side"] for r in steps.posted] == ["insert", "insert"]


def test_rows_the_watermark_passed_are_fed_before_a_micro_batch_s_rows_are_checked(spark, tmp_path):
    """#length(3), delay 0; X0 repeats order value 0 after E0 was fed (rejected
    when its turn comes), L2 is late in the same micro-batch:

        micro-batch 0:  E0 @0 n0, E1 @100 n1       W=0     (held)
        micro-batch 1:  X0 @200 n0, Z @50 n9       W=100   feeds E0; Z late (rejected 0)
        micro-batch 2:  E2 @300 n2, L @10 n8       W=200   feeds E1; L late (rejected 1)
        micro-batch 3:  L2 @20 n7                  W=300   X0's turn: rejected 2; then L2 late (rejected 3)"""
    steps = Steps(spark, tmp_path, "#length(3)", delay=0)
    for rows in [[("a", 0, 0, "E0"), ("a", 1, 100, "E1")], [("a", 0, 200, "X0"), ("a", 9, 50, "Z")],
                 [("a", 2, 300, "E2"), ("a", 8, 10, "L")], [("a", 7, 20, "L2")]]:
        steps.batch(rows)
    errors = sorted((r["ordinal"], r["id"], r["after"], r["time"]) for r in steps.posted if r["side"] == "error")
    assert errors == [(0, "Z", 9, 50), (1, "L", 8, 10), (2, "X0", 0, 200), (3, "L2", 7, 20)]
    assert [r["id"] for r in steps.posted if r["side"] == "insert"] == ["E0", "E1"]


def test_a_state_of_another_window_is_refused(spark, tmp_path):
    from spark_impl.errors import InvalidFrame

    steps = Steps(spark, tmp_path, "#length(1)", delay=0)
    steps.batch([("a", 0, 0, "E0")])
    steps.idle(5)
    other = Steps(spark, tmp_path, "#length(2)", delay=0)
    other.batch_id = steps.batch_id
    with pytest.raises(InvalidFrame, match="was written by another window"):
        other.batch([("a", 1, 10, "E1")])

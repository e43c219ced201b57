"""A window over a live stream of plain events with an event-time column: the
streaming `apply_window_to_events`, run by spark_impl's own plans.

    from spark_impl import streaming
    stream = spark.readStream.schema("n long, t long, symbol string").parquet("in/")
    out = streaming.apply_window_to_events(stream, "#groupwin(symbol)#time(10 sec)",
                                           order_col="n", time_col="t", delay=5_000, location="window/")
    out.writeStream.outputMode("append").option("checkpointLocation", "ckpt/").foreachBatch(sink).start()

The columns are the batch `spark_impl.event_table.apply_window_to_events`'
(`event_table.event_rows`): `order_col` an integer position, `time_col` the
event's time (integer ms, or a timestamp as epoch ms), `trace_col` independent
traces (one trace, "0", without it), an `id` column or else the order value as
the event's id, every other column a property. The output has the batch's
output schema (`spark_impl.output_schema`), in append mode. There is no
`until`: the watermark is the stream's `until`.

**What runs.** The window's own query (`foreachBatch`, `EventStream`): each
micro-batch's rows are checked and held, the held rows the watermark has
passed are put in order and run through `apply_window_incrementally` (the
batch plans) resumed from the state the micro-batch before left, and every
trace's clock is walked to the watermark by the same call. No per-key Python
runs: a keyed window spreads over cores and workers as the batch plan does.
The frame returned reads the updates the window's query writes under
`location` (as `streaming.apply_window`'s; its `window_query` attribute).
A micro-batch of at most `frames.ONE_PARTITION_ROWS` rows runs its jobs
after the first interpreted, without code generation or adaptive execution
(`session.interpreted`), as the trace stream's do.

**The watermark.** Spark's, one for the whole stream: in micro-batch k, W =
max(W of k-1, the largest event time of the micro-batches before k -
`delay`), 0 at first (times further than 9e15 ms from 0, past what Spark's
watermark holds, are not counted). The query computes it itself, in its
state, by that rule. A small streaming aggregate beside the rows (one row per
day of event time, never posted) makes Spark run a micro-batch of no rows when
the watermark moves, as it does for any stateful query: so a quiet stream's
timers fire without waiting for new rows.

**Rules** (per trace; "fed" = given to the window):

* The clock is the events' time, as Esper's external clock: an event at time
  T walks the clock to T first (the timers due by T fire, each at its own due
  time, a timer due exactly at T before the event), then arrives.
* A row waits in the state (held) until the watermark passes its time (W >
  T: no row of time T can come any more, so ties are complete); then the
  held rows are fed in (time, order value) order: ties in time go by
  `order_col`. After them the clock walks to W: the timers due by W fire,
  each at its own due time, as the batch walks them to `until`. Every trace
  seen walks so, in every micro-batch whose watermark is past its clock.
* In a micro-batch, the held rows the watermark passed are fed and the clock
  walked first; then the micro-batch's own rows are checked and held: none
  is fed in the micro-batch it comes in.
* A row is **rejected** (never fed, never silently dropped) on arrival when
  its trace, order value, time or `id` is null or its order value negative;
  when its time is further than 2**62 ms from 0 or before the window's
  `start`; when its time is before the watermark of its micro-batch (**late**:
  the window may have walked past it; a row exactly at the watermark is not
  late: it is held, and arrives after the timers due then, as it would have;
  Spark's own rule, which this replaces, drops rows at or below the previous
  micro-batch's watermark); when its order value is held already (the first
  stays). When fed, it is rejected when its order value is not above every
  order value fed before it in its trace (rejected or not: each trace's
  order values grow with its times, as the batch requires), or, with
  `validate` and an `id` column, when its `id` is an earlier fed event's.
* A rejected row posts one `error` row: `after` its order value (-1 if null),
  `phase` 2 (`REJECTED`: after every update of its order value), `time` its
  time (the watermark if null), `ordinal` the number of rows of the trace
  rejected before it (those rejected when fed first, in feeding order; then
  those of the micro-batch, by time, order value and id, nulls first), `pos`
  (its time, 0, 0), `error` the reason naming the trace, the columns and
  values and the watermark, and the row's own `id` and properties: the row
  comes back whole (a dead-letter output). A window posting rows has no `id`
  or property columns (its fields are its own): its error row carries the
  message alone, which names the row.
* Update keys: an event's updates are the batch's, `after` its order value
  (phase 0 for the timers of its walk, 1 for itself). A walk to the watermark
  posts with `after` = the last fed order value + 1 (0 before any), phase 0:
  the batch's key for the same updates when a trace's order values are
  consecutive (the batch names the walk's next event, or `until` at the last
  value + 1). With gaps in the order values the batch names the next event's
  order value instead: the same order of updates, another `after`. `pos`
  orders the rows of an update's side as the batch's does (its values count
  the trace's items as the query fed them).
* So, when each trace's order values are consecutive and nothing is
  rejected, the output is exactly the batch `apply_window_to_events` over the
  events with time < the final watermark W (put in order), with `until` =
  W and the same `start`: tests/spark/test_streaming_events.py checks it.
  The window of a trace is created (at `start`, 0 by default) in the
  micro-batch its first row comes in (even a rejected one), so a timer armed
  at creation (`#firsttime`, a START_EAGER batch) fires when the watermark
  passes it even before the trace's first event is fed.

**State** (under `location`: `state/<batch id>/`, versioned and written as
`micro_batch.Location` writes, with `checkpoint/` and `updates/`):
`window`, the window's state (`apply_window_incrementally`: the items its
family declares its future reads; the query numbers each trace's items as it
feeds them, so an event's `seq` there is not its order value); `held`, the
rows not yet fed (about `delay` ms of the stream plus a micro-batch); `traces`,
per trace its last fed order value and time, its count of items and of
rejected rows and its clock; `ids`, with `validate` and an `id` column, every
fed event's id (the one part that grows with the trace); `stream`, the
largest event time seen, the watermark and the windows' fingerprints.

**Restart.** A micro-batch reads the newest state before its own id and
writes its own whole before the sink sees its updates, so a query stopped
after any micro-batch and started again from its `location` re-runs the
micro-batch that did not commit from the state before it, under the same
watermark: the stream's output is exactly a run without a stop, to a sink
idempotent by batch id. A state another window wrote is refused, naming both.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import nullcontext

from oracle.dialects import parse, spec_text
from oracle.model import Spec, WindowSpec
from spark_impl import pipeline
from spark_impl.errors import InvalidFrame, check_frame
from spark_impl.event_table import MAX_CLOCK, check_clock, check_statement_columns, event_rows
from spark_impl.frames import ONE_PARTITION_ROWS, START_SEQ, posts_rows
from spark_impl.incremental import fingerprint, resume
from spark_impl.session import interpreted
from spark_impl.streaming.micro_batch import Location, by_window, conform, run_to_end, split_state, updates_stream
from spark_impl.streaming.traces import FILES_PER_TRIGGER, STREAM_OF_EVENTS, check_specs
from spark_impl.windows.base import quoted

#: the phase of a rejected row's error update: after every update of its order value
REJECTED = 2
#: the column the watermark is put on (a copy of the time, for the aggregate beside the rows only)
_MARK = "#watermark"
#: the column that tells the aggregate's rows (which only make Spark run micro-batches of no rows) from the rows
_TICK = "#tick"
#: the largest |time| in ms Spark's watermark takes (a timestamp's microseconds must fit a long)
WATERMARK_RANGE = 9_000_000_000_000_000
#: the schema of the `traces` and `stream` parts of the state
TRACES = "trace_id string, last_n bigint, last_t bigint, cut bigint, clock bigint, rejected bigint"
STREAM = "latest bigint, watermark bigint, marks array<string>"


def apply_window_to_events(stream_df, window: str | WindowSpec, *, order_col: str, time_col: str, delay: int,
                           trace_col: str | None = None, start: int | None = None, dialect: str = "esper",
                           validate: bool = True, set_provider: bool = True, location: str | None = None,
                           trigger: Mapping | None = None):
    """The updates `window` (a clause in `dialect`'s syntax, or a spec) posts
    over the streaming event table `stream_df`, as a streaming frame with the
    batch `apply_window_to_events`' output schema, to write in append mode
    (module docstring: the rules, the rejected rows, the state).

    * `order_col`, `time_col`, `trace_col`, `start`: as the batch's (an
      integer position growing with time in each trace; the event time, ms or
      a timestamp; independent traces; the clock the window is created at,
      default 0: with epoch times, a window that arms a timer at creation, a
      START_EAGER batch, walks from there).
    * `delay`: the watermark delay, whole ms >= 0: a row may come up to this
      much after the latest event time of the earlier micro-batches and still
      be put in order; a later row is rejected (an `error` row).
    * `validate`: with an `id` column, keep every id in the state, so a
      repeated id is rejected (False: not kept, not caught).
    * `location`: where the window keeps its state, checkpoint and updates
      (None: a new temporary folder, so no restart); `trigger`: the window
      query's (`{"availableNow": True}`); `set_provider`: kept for callers of
      the earlier design (no state store is used).

    Raises `InvalidFrame` naming a missing or mistyped column, a column a
    statement reads that the table lacks, a bad `delay` or `start`, a
    recorded (not streaming) frame; the parser's errors for a bad clause."""
    check_frame(stream_df, "streaming.apply_window_to_events", "stream_df", STREAM_OF_EVENTS)
    spec = parse(window, dialect) if isinstance(window, str) else window
    check_statement_columns(spec, stream_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    return _apply(stream_df, spec, window=False, order_col=order_col, time_col=time_col, delay=delay,
                  trace_col=trace_col, start=start, validate=validate, location=location, trigger=trigger)


def apply_windows_to_events(stream_df, specs: Mapping[str, WindowSpec], *, order_col: str, time_col: str,
                            delay: int, trace_col: str, start: int | None = None, validate: bool = True,
                            set_provider: bool = True, location: str | None = None, trigger: Mapping | None = None):
    """Each trace under its own window (`specs`: trace id -> spec; a trace
    not named fails the query naming it): several windows in one query, as
    the tests run them. The output is the union of the windows' output
    schemas, always with the `window` column (`streaming.apply_windows`).
    Otherwise `apply_window_to_events`."""
    check_frame(stream_df, "streaming.apply_windows_to_events", "stream_df", STREAM_OF_EVENTS)
    table = check_specs(specs, "streaming.apply_windows_to_events")
    return _apply(stream_df, table, window=True, order_col=order_col, time_col=time_col, delay=delay,
                  trace_col=trace_col, start=start, validate=validate, location=location, trigger=trigger)


def _apply(stream_df, specs, *, location: str | None, **options):
    schema, start_query = _prepare(stream_df, specs, **options)
    return updates_stream(stream_df.sparkSession, schema, location, start_query)


def _prepare(stream_df, specs, *, window: bool, order_col: str, time_col: str, delay: int, trace_col: str | None,
             start: int | None, validate: bool, trigger: Mapping | None):
    """(the output schema, `start_query(location, sink)`: starts the window's query), after the checks
    that refuse bad arguments before any query starts."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from spark_impl.streaming.output import merged, window_schema

    if not stream_df.isStreaming:
        raise InvalidFrame("streaming.apply_window_to_events takes a streaming DataFrame (spark.readStream...); "
                           "for a recorded table use spark_impl.apply_window_to_events")
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0 or delay > MAX_CLOCK:
        raise InvalidFrame(f"delay must be a whole number of ms from 0 to 2**62 (the watermark delay), got {delay!r}")
    check_clock("start", start)
    rows = event_rows(stream_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    distinct = [specs] if isinstance(specs, Spec) else list(dict.fromkeys(specs.values()))
    for spec in distinct:
        pipeline.check_input(rows, spec, jumps=False)  # the window's property columns
    props = T.StructType([f for f in rows.schema.fields if f.name not in ("trace_id", "seq", "kind", "time", "id")])
    schema = merged((spec, window_schema(spec, props)) for spec in distinct)  # refused before any query starts
    if window and "window" not in schema.fieldNames():
        pane = T.StructType([T.StructField("start", T.LongType()), T.StructField("end", T.LongType())])
        schema = T.StructType([*schema.fields, T.StructField("window", pane)])
    # the watermark on a copy of the time that only the aggregate beside the rows reads: the rows reach the
    # window's step whole (late ones too), and the aggregate makes Spark run a micro-batch of no rows when
    # the watermark moves (module docstring)
    marked = rows.withColumn(_MARK, F.expr(f"CASE WHEN abs(time) <= {WATERMARK_RANGE} THEN timestamp_millis(time) END")) \
        .withWatermark(quoted(_MARK), f"{delay} milliseconds")
    ticks = marked.groupBy(F.window(quoted(_MARK), "1 day")).count().select(
        *(F.lit(None).cast(f.dataType).alias(f.name) for f in rows.schema.fields), F.lit(True).alias(_TICK))
    source = marked.drop(_MARK).withColumn(_TICK, F.lit(False)).unionByName(ticks)
    names = Names(order_col, time_col, trace_col)
    columns = list(rows.columns)

    def start_query(where: Location, sink):
        step = EventStream(where, specs, names=names, start=start or 0, delay=delay,
                           ids=validate and "id" in stream_df.columns, sink=sink, columns=columns, schema=schema)
        writer = source.writeStream.foreachBatch(step).option("checkpointLocation", where.folder("checkpoint"))
        return (writer.trigger(**trigger) if trigger else writer).start()

    return schema, start_query


class Names:
    """The user's names of the order, time and trace columns, for messages."""

    def __init__(self, order_col: str, time_col: str, trace_col: str | None):
        self.order_col, self.time_col, self.trace_col = order_col, time_col, trace_col

    def where(self):
        """A row's place in words (a column): `t=5 ms at n=3 in trace 'a'`; a null value as no time, no order."""
        from pyspark.sql import functions as F

        when = F.coalesce(F.concat(F.lit(f"{self.time_col}="), F.col("time").cast("string"), F.lit(" ms")),
                          F.lit("no time"))
        order = F.coalesce(F.concat(F.lit(f"{self.order_col}="), F.col("seq").cast("string")),
                           F.lit(f"no {self.order_col}"))
        trace = F.lit("")
        if self.trace_col:
            trace = F.coalesce(F.concat(F.lit(" in trace '"), F.col("trace_id"), F.lit("'")), F.lit(""))
        return F.concat(when, F.lit(" at "), order, trace)


class EventStream:
    """The per-micro-batch step of the events stream (module docstring)."""

    def __init__(self, location: Location, specs, *, names: Names, start: int, delay: int, ids: bool, sink,
                 columns: list[str], schema):
        self.location, self.names, self.start, self.delay, self.ids = location, names, start, delay, ids
        self.sink, self.columns, self.schema = sink, columns, schema
        self.one = specs if isinstance(specs, Spec) else None
        self.table = None if self.one is not None else dict(specs)
        self.marks = {fingerprint(s): s for s in ([self.one] if self.one is not None else self.table.values())}

    def __call__(self, batch, batch_id: int) -> None:
        prior = self.location.newest_before(batch_id)
        # the whole micro-batch computed once (the aggregate beside the rows included: its state is Spark's,
        # versioned by batch id), then every job reads the rows from memory
        whole = batch.persist()
        self._cached = [whole]
        try:
            self._step(whole.where(f"NOT {quoted(_TICK)}").selectExpr(*(quoted(c) for c in self.columns)),
                       prior, batch_id)
        finally:
            for frame in self._cached:
                frame.unpersist()

    def _keep(self, frame):
        """`frame` persisted for this micro-batch (read by several jobs)."""
        frame = frame.persist()
        self._cached.append(frame)
        return frame

    def _step(self, new, prior: int | None, batch_id: int) -> None:
        from pyspark.sql import functions as F

        spark = new.sparkSession
        part = (lambda name: self.location.read(prior, name, spark)) if prior is not None else None
        held = part("held") if part else spark.createDataFrame([], new.schema)
        traces = part("traces") if part else spark.createDataFrame([], TRACES)
        ids = part("ids") if part and self.ids else spark.createDataFrame([], "trace_id string, id string")
        window_state = part("window") if part else None
        latest, watermark = (None, 0)
        if part:
            (latest, watermark, marks), = [tuple(r) for r in part("stream").collect()]
            self._check_marks(marks)
        if latest is not None:
            watermark = max(watermark, latest - self.delay)
        seen = new.agg(F.expr(f"max(CASE WHEN abs(time) <= {WATERMARK_RANGE} THEN time END)").alias("m"),
                       F.expr("collect_set(trace_id)" if self.table is not None else "array()").alias("traces"),
                       F.count("*").alias("rows")).first()
        if self.table is not None:
            strange = next((t for t in seen["traces"] if t not in self.table), None)
            if strange is not None:
                raise InvalidFrame(f"trace {strange!r} has no window (apply_windows_to_events names a spec per trace)")
        latest = seen["m"] if latest is None else (latest if seen["m"] is None else max(latest, seen["m"]))
        # a small micro-batch's jobs run uncompiled (`session.interpreted`): compiling them costs more
        with interpreted(spark) if seen["rows"] <= ONE_PARTITION_ROWS else nullcontext():
            self._window(new, held, traces, ids, window_state, latest, watermark, batch_id)
        if prior is not None:
            self.location.prune(prior)

    def _window(self, new, held, traces, ids, window_state, latest, watermark: int, batch_id: int) -> None:
        """The rest of `_step`: feed, check, run the window, write the state, post."""
        spark = new.sparkSession
        fed, still_held, fed_rejected = self._feed(held, traces, ids, watermark)
        arrived, arrival_rejected = self._arrive(new, still_held, watermark)
        rejected = self._rejected(fed_rejected, arrival_rejected, traces, watermark)
        items, walks, counts = self._items(fed, traces, new, watermark)
        updates, window_after = self._run(items, window_state, walks)
        state = {
            "window": window_after,
            "held": still_held.unionByName(arrived),
            "traces": self._traces(traces, counts, rejected, walks, watermark),
            "stream": spark.createDataFrame([(latest, watermark, sorted(self.marks))], STREAM),
        }
        if self.ids:
            state["ids"] = ids.unionByName(fed.where("`#accepted`").select("trace_id", "id"))
        state = {name: frame for name, frame in state.items() if frame is not None}
        self.location.write(state, batch_id)  # its parts by one job
        errors = conform(rejected.drop("#count"), self.schema)
        self.sink(updates.unionByName(errors), batch_id)

    def _check_marks(self, marks: list[str]) -> None:
        """Refuse a state written by other windows (their fingerprints, `marks`, kept in the `stream` part)."""
        strange = sorted(set(marks) - set(self.marks))
        if strange:
            names = ", ".join(spec_text(s) for s in self.marks.values())
            raise InvalidFrame(f"the state in {self.location.path} was written by another window (fingerprint "
                               f"{strange[0]}), not {names}: restart a changed window at a new location")

    # ------------------------------------------------------------------ rows fed, rows held

    def _feed(self, held, traces, ids, watermark: int):
        """(the held rows the watermark passed, in feeding order, each marked `#accepted` and with its
        `#reason` when rejected; the rows still held; the rejected ones)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        n = self.names
        ready = held.where(F.col("time") < watermark).join(
            traces.select("trace_id", "last_n", "last_t"), "trace_id", "left")
        before = Window.partitionBy("trace_id").orderBy("time", "seq").rowsBetween(Window.unboundedPreceding, -1)
        top = F.max(F.struct("seq", "time")).over(before)
        ranked = ready.withColumn("#top", F.when(top.isNull() | (F.col("last_n") > top["seq"]),
                                                 F.struct(F.col("last_n").alias("seq"), F.col("last_t").alias("time")))
                                  .otherwise(top))
        ranked = ranked.withColumn("#in_order", F.col("#top.seq").isNull() | (F.col("seq") > F.col("#top.seq")))
        back = F.concat(F.lit(f"order_col {n.order_col!r} goes back along time_col {n.time_col!r}: "), n.where(),
                        F.lit(f" comes after {n.order_col}="), F.col("#top.seq").cast("string"), F.lit(" at "),
                        F.col("#top.time").cast("string"),
                        F.lit(" ms, fed already (a trace's order values grow with its times)"))
        reason = F.when(~F.col("#in_order"), back)
        if self.ids:
            known = ids.select("trace_id", "id", F.lit(True).alias("#known"))
            ranked = ranked.join(known, ["trace_id", "id"], "left")
            same_id = Window.partitionBy("trace_id", "id").orderBy("time", "seq").rowsBetween(
                Window.unboundedPreceding, -1)
            repeated = F.coalesce(F.col("#known"), F.lit(False)) | (
                F.coalesce(F.sum(F.col("#in_order").cast("int")).over(same_id), F.lit(0)) > 0)
            ranked = ranked.withColumn("#repeated", repeated)
            reason = reason.when(F.col("#repeated"), F.concat(
                n.where(), F.lit(": the id '"), F.col("id"),
                F.lit("' is an earlier event's in the trace (an event's id is unique in its trace)")))
        fed = ranked.withColumn("#reason", reason).withColumn("#accepted", F.col("#reason").isNull())
        fed = self._keep(fed.drop("last_n", "last_t", "#top", "#in_order", "#known", "#repeated"))
        return fed, held.where(F.col("time") >= watermark), fed.where("NOT `#accepted`")

    def _arrive(self, new, still_held, watermark: int):
        """(the micro-batch's rows held, its rows rejected with their `#reason`)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        n, t = self.names, F.col("time")
        where = n.where()
        problem = (
            F.when(F.col("trace_id").isNull(), F.concat(F.lit(f"trace_col {n.trace_col!r} is null ("), where, F.lit(")")))
            .when(F.col("seq").isNull(), F.concat(F.lit(f"order_col {n.order_col!r} is null ("), where, F.lit(")")))
            .when(t.isNull(), F.concat(F.lit(f"the event has no time: time_col {n.time_col!r} is null ("), where,
                                       F.lit(")")))
            .when(F.col("seq") < 0, F.concat(F.lit(f"order_col {n.order_col!r} is negative ("), where,
                                             F.lit("): positions start at 0")))
            .when(F.col("id").isNull(), F.concat(F.lit("column 'id' is null ("), where, F.lit("); every event has an id")))
            .when(F.abs(t) > MAX_CLOCK, F.concat(F.lit(f"time_col {n.time_col!r} is further than 2**62 ms from 0 ("),
                                                 where, F.lit(")")))
            .when(t < self.start, F.concat(F.lit("before the window's start: "), where,
                                           F.lit(f", the window starts at {self.start} ms")))
            .when(t < watermark, F.concat(F.lit("late: "), where, F.lit(
                f" is before the watermark {watermark} ms of its micro-batch (the latest event time of the earlier "
                f"micro-batches minus the delay of {self.delay} ms)"))))
        order = [t.isNotNull(), t, F.col("seq").isNotNull(), F.col("seq"), F.col("id")]
        checked = new.withColumn("#problem", problem)
        earlier = Window.partitionBy("trace_id", "seq").orderBy(*order).rowsBetween(Window.unboundedPreceding, -1)
        first_t = F.first(F.when(F.col("#problem").isNull(), t), ignorenulls=True).over(earlier)
        waiting = still_held.select("trace_id", "seq", F.col("time").alias("#held_t"))
        checked = checked.join(waiting, ["trace_id", "seq"], "left").withColumn(
            "#first_t", F.coalesce(F.col("#held_t"), first_t))
        twice = F.concat(F.lit(f"order_col {n.order_col!r} has the value "), F.col("seq").cast("string"),
                         F.lit(" twice ("), where, F.lit("; the row at "), F.col("#first_t").cast("string"),
                         F.lit(" ms came first and stays)"))
        checked = checked.withColumn("#reason", F.coalesce(
            F.col("#problem"), F.when(F.col("#first_t").isNotNull(), twice))).drop("#problem", "#held_t", "#first_t")
        checked = self._keep(checked)
        columns = [quoted(c) for c in self.columns]
        return checked.where("`#reason` IS NULL").selectExpr(*columns), checked.where("`#reason` IS NOT NULL")

    def _rejected(self, fed_rejected, arrival_rejected, traces, watermark: int):
        """The error rows of the rows rejected in this micro-batch (`#count` the trace's rejected rows after
        them), in the output's columns (a window posting rows drops the row's own)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        columns = [quoted(c) for c in self.columns]
        both = fed_rejected.selectExpr(*columns, "`#reason`", "0 AS `#stage`").unionByName(
            arrival_rejected.selectExpr(*columns, "`#reason`", "1 AS `#stage`"))
        prior_counts = traces.select(F.col("trace_id").alias("#t"), "rejected")
        counted = both.join(prior_counts, both["trace_id"].eqNullSafe(prior_counts["#t"]), "left").drop("#t")
        turn = Window.partitionBy("trace_id").orderBy("#stage", F.col("time").isNotNull(), "time",
                                                       F.col("seq").isNotNull(), "seq", "id")
        prior = F.coalesce(F.col("rejected"), F.lit(0))
        own = [c for c in self.columns if c not in ("trace_id", "seq", "kind", "time", "id")] + ["id"]
        rowy = [t for t, spec in (self.table or {}).items() if posts_rows(spec)]
        if rowy:  # a window posting rows: its error row carries the message alone (its columns are its fields)
            counted = counted.select(*(F.when(~F.col("trace_id").isin(rowy), F.col(quoted(c))).alias(c)
                                       if c in own else F.col(quoted(c)) for c in counted.columns))
        props = [quoted(c) for c in own[:-1]]
        return counted.select(
            "trace_id", F.coalesce(F.col("seq"), F.lit(START_SEQ)).alias("after"),
            F.lit(REJECTED).alias("phase"), F.coalesce(F.col("time"), F.lit(watermark)).alias("time"),
            (prior + F.row_number().over(turn) - 1).cast("int").alias("ordinal"), F.lit("error").alias("side"),
            F.struct(F.coalesce(F.col("time"), F.lit(watermark)).alias("due"), F.lit(0).cast("long").alias("slot"),
                     F.lit(0).cast("long").alias("n")).alias("pos"),
            F.col("#reason").alias("error"), "id", *props,
            (prior + F.count("*").over(Window.partitionBy("trace_id"))).alias("#count"))

    # ------------------------------------------------------------------ the window

    def _items(self, fed, traces, new, watermark: int):
        """(the items the window runs: the accepted rows numbered after each trace's cut, a start row for a
        trace new in this micro-batch, a walk to the watermark where it is past the trace's clock, each with
        `#after`, its update key; per trace its walk (`trace_id`, `#walk` true where it walks); per trace the
        accepted rows' count, last order value and time)."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        accepted = fed.where("`#accepted`").join(traces.select("trace_id", "cut"), "trace_id", "left")
        numbered = accepted.withColumn("#k", F.row_number().over(Window.partitionBy("trace_id").orderBy("time", "seq")))
        events = numbered.selectExpr(
            *(quoted(c) if c != "seq" else "coalesce(cut, -1) + `#k` AS seq" for c in self.columns),
            "seq AS `#after`")
        counts = numbered.groupBy("trace_id").agg(
            F.count("*").alias("#fed"), F.max(F.struct("seq", "time")).alias("#last"))
        fresh = new.where("trace_id IS NOT NULL").select("trace_id").distinct().join(traces, "trace_id", "left_anti")
        every = traces.where("trace_id IS NOT NULL").select("trace_id", "last_n", "cut", "clock").unionByName(fresh.select(
            "trace_id", F.lit(None).cast("long").alias("last_n"), F.lit(None).cast("long").alias("cut"),
            F.lit(self.start).cast("long").alias("clock"), F.lit(True).alias("#fresh")), allowMissingColumns=True)
        walks = every.join(counts, "trace_id", "left").select(
            "trace_id", F.coalesce("#fresh", F.lit(False)).alias("#fresh"), (F.col("clock") < watermark).alias("#walk"),
            F.col("cut").alias("#cut"), F.col("clock").alias("#clock"),
            (F.coalesce("cut", F.lit(-1)) + F.coalesce("#fed", F.lit(0)) + 1).alias("#walk_seq"),
            (F.coalesce(F.col("#last.seq"), F.col("last_n"), F.lit(-1)) + 1).alias("#walk_after"))
        walks = self._keep(walks)
        walk_items = walks.where("`#walk`").selectExpr(
            "trace_id", "`#walk_seq` AS seq", "'advance' AS kind", f"CAST({watermark} AS BIGINT) AS time",
            "`#walk_after` AS `#after`")
        starts = walks.where("`#fresh`").selectExpr(
            "trace_id", f"CAST({START_SEQ} AS BIGINT) AS seq", "'start' AS kind",
            f"CAST({self.start} AS BIGINT) AS time", "CAST(NULL AS BIGINT) AS `#after`")
        items = events.unionByName(walk_items, allowMissingColumns=True).unionByName(starts, allowMissingColumns=True)
        # computed once, as rows: each window's plan (the state's and the updates') starts from a leaf, where
        # the plan of the feeding above, copied into every window's several reads of its items, took longer to
        # plan than to run (the events test's seven windows: 41 -> 29 s a micro-batch)
        return items.localCheckpoint(), walks, counts

    def _run(self, items, window_state, walks):
        """(the updates, `after` as the order values, in the output's columns; the window's state after the
        items): per window, its traces' items resumed from their state; a trace without items keeps its
        state as it was."""
        from pyspark.sql import functions as F

        spark = items.sparkSession
        # each trace that runs, and the cut and clock the state holds it at (its last item run: the walk to
        # the watermark, or its start row) where it has run before: looked up as literals (`resume`'s cuts)
        found = walks.where("`#walk` OR `#fresh`").select("trace_id", "#cut", "#clock").collect()
        moving = [r[0] for r in found]
        cuts = {r[0]: (r[1], r[2]) for r in found if r[1] is not None}
        keys = items.select("trace_id", F.col("seq").alias("after"), "#after")
        items = items.drop("#after")
        still, state = None, window_state
        if window_state is not None:
            still, state = split_state(window_state, moving)
        groups = by_window(self.one, self.table, moving, items, state)
        updates, kept = None, still
        for spec, mine, held in groups:
            # the feeding checked each row and numbered the items after their trace's cut, and the state's
            # windows were checked against its marks (`_check_marks`): no row is checked again (`placed`)
            done = resume(mine, spec, state=held, cuts=cuts, jumps=False, placed=held is not None)
            posted = done.updates.join(keys, ["trace_id", "after"], "left").withColumn(
                "after", F.coalesce(F.col("#after"), F.col("after"))).drop("#after")
            part = conform(posted, self.schema)
            updates = part if updates is None else updates.unionByName(part)
            kept = done.state if kept is None else kept.unionByName(done.state, allowMissingColumns=True)
        if updates is None:
            updates = spark.createDataFrame([], self.schema)
        return updates, kept

    def _traces(self, traces, counts, rejected, walks, watermark: int):
        """Each trace's row of the `traces` part after this micro-batch."""
        from pyspark.sql import functions as F

        rejections = rejected.groupBy(F.col("trace_id").alias("#t")).agg(F.max("#count").alias("#count"))
        # the rows of no trace (a null trace column) have a row of their own, for the count of them rejected
        every = walks.join(traces, "trace_id", "left").join(counts, "trace_id", "left").unionByName(
            traces.where("trace_id IS NULL"), allowMissingColumns=True)
        every = every.join(rejections, every["trace_id"].eqNullSafe(rejections["#t"]), "full").select(
            F.coalesce(F.col("trace_id"), F.col("#t")).alias("trace_id"),
            F.coalesce(F.col("#last.seq"), F.col("last_n")).alias("last_n"),
            F.coalesce(F.col("#last.time"), F.col("last_t")).alias("last_t"),
            F.when(F.col("#walk"), F.col("#walk_seq"))
             .otherwise(F.coalesce(F.col("cut"), F.lit(-1)) + F.coalesce(F.col("#fed"), F.lit(0))).alias("cut"),
            F.when(F.col("#walk"), F.lit(watermark)).otherwise(F.coalesce(F.col("clock"), F.lit(self.start)))
             .alias("clock"),
            F.coalesce(F.col("#count"), F.col("rejected"), F.lit(0)).alias("rejected"))
        return every.selectExpr(*(f"CAST({quoted(c.split()[0])} AS {c.split()[1]}) AS {quoted(c.split()[0])}"
                                  for c in TRACES.split(", ")))


# --------------------------------------------------------------------------- event tables as a stream of files


def run_event_files(spark, folder, schema, window: str | WindowSpec | Mapping[str, WindowSpec], checkpoint, *,
                    fail_after: int | None = None, dialect: str = "esper", **options) -> dict[int, list]:
    """Run the Parquet files of `folder` (an event table of `schema`, one
    file per micro-batch: `traces.write_files`) through the window's query of
    `apply_window_to_events(..., **options)` (`window` a mapping of trace ids
    to specs: `apply_windows_to_events`) to the end (`availableNow`), its
    state and checkpoint under `checkpoint`, into a sink keeping each
    micro-batch's rows by batch id: those rows. `fail_after`: the sink fails
    from that batch id on (a crash, for restart tests; the micro-batch's state
    is written by then); the batches before it are returned."""
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_TRIGGER).parquet(str(folder))
    if isinstance(window, Mapping):
        specs, keyed = check_specs(window, "streaming.run_event_files"), True
    else:
        specs, keyed = (parse(window, dialect) if isinstance(window, str) else window), False
    _, start_query = _prepare(stream, specs, window=keyed, trigger={"availableNow": True},
                              **{"start": None, "validate": True, "trace_col": None, **options})
    return run_to_end(lambda sink: start_query(Location(spark, str(checkpoint)), sink), fail_after)


__all__ = ["apply_window_to_events", "apply_windows_to_events", "run_event_files", "EventStream", "REJECTED"]

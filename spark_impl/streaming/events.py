"""A window over a live stream of plain events with an event-time column: the
streaming `apply_window_to_events`.

    from spark_impl import streaming
    stream = spark.readStream.schema("n long, t long, symbol string").parquet("in/")
    out = streaming.apply_window_to_events(stream, "#groupwin(symbol)#time(10 sec)",
                                           order_col="n", time_col="t", delay=5_000)
    out.writeStream.outputMode("append").option("checkpointLocation", "ckpt/").foreachBatch(sink).start()

The columns are the batch `spark_impl.event_table.apply_window_to_events`'
(`event_table.event_rows`): `order_col` an integer position, `time_col` the
event's time (integer ms, or a timestamp as epoch ms), `trace_col` independent
traces (one trace, "0", without it), an `id` column or else the order value as
the event's id, every other column a property. The output has the batch's
output schema (`spark_impl.output_schema`; spark_impl/streaming/output.py), in
append mode. There is no `until`: the watermark is the
stream's `until`.

**What runs per key: the oracle**, as in `spark_impl.streaming.traces` (whose
processor plumbing this module shares): `transformWithStateInPandas` keyed by
trace, in `EventTime` mode, its processor feeding each trace's events to the
oracle's window state machine (`oracle.driver.Driver.step_keyed`).

**The watermark.** Spark's, one for the whole stream: in each micro-batch W =
(the largest event time of the earlier micro-batches) - `delay`, never going
back, 0 before there is one. The processor reads it
(`getCurrentWatermarkInMs`) and decides lateness itself: the watermark is put
on a copy of the time column that does not reach the operator, so Spark's own
late-row filter (which drops rows at or below the watermark unseen) has no
column to filter by, and every row reaches the processor.

**Rules** (per trace; "fed" = given to the window):

* The clock is the events' time, as Esper's external clock: an event at time
  T walks the clock to T first (the timers due by T fire, each at its own due
  time, a timer due exactly at T before the event), then arrives.
* A row waits in state (held) until the watermark passes its time (W > T:
  no row of time T can come any more, so ties are complete); then the held
  rows are fed in (time, order value) order: ties in time go by `order_col`.
  After them the clock walks to W: the timers due by W fire, each at its own
  due time, as the batch walks them to `until`. A trace with no new row is
  reached by a Spark event-time timer, registered at the earliest of its
  first held row's time + 1 and its window's next due time, so its timers
  fire when the watermark passes them (event-time timers).
* In a call, the held rows the watermark passed are fed and the clock walked
  first, then the call's new rows are checked: so a key's output does not
  depend on whether Spark runs its timer before or after its rows (a
  micro-batch's rows come first, but a restart can put a micro-batch of no
  rows at the same watermark before them).
* A row is **rejected** (never fed, never silently dropped) when its time is
  before the watermark of the micro-batch it comes in (**late**: the window
  may have walked past it; a row exactly at the watermark is not late: it is
  held, and arrives after the timers due then, as it would have; Spark's own
  rule, which this replaces, drops rows at or below the previous
  micro-batch's watermark); when its time is before the window's `start`; when its trace, order value, time or `id` is
  null or its order value negative; when its order value is held already
  (the first stays); when, at its turn, its order value is not above the
  last fed event's (the order goes back along time: each trace's order
  values grow with its times, as the batch requires); or when the oracle's
  trace check refuses it (an `id` seen before, with `validate`; a property
  of two kinds).
* A rejected row posts one `error` row: `after` its order value (-1 if null),
  `phase` 2 (`REJECTED`: after every update of its order value), `time` its
  time (the watermark if null), `ordinal` the number of rows of the trace
  rejected before it (so each has its own update key, and the count of a
  trace's rejected rows is its last ordinal + 1), `error` the reason naming
  the trace, the columns and values and the watermark, and the row's own
  `id` and properties: the row comes back whole (a dead-letter output). A
  window posting rows has no `id` or property columns (its fields are its
  own): its error row carries the message alone, which names the row.
* Update keys: an event's updates are the batch's, `after` its order value
  (phase 0 for the timers of its walk, 1 for itself). A walk to the watermark
  posts with `after` = the last fed order value + 1 (0 before any), phase 0:
  the batch's key for the same updates when a trace's order values are
  consecutive (the batch names the walk's next event, or `until` at the last
  value + 1). With gaps in the order values the batch names the next event's
  order value instead: the same order of updates, another `after`.
* So, when each trace's order values are consecutive and nothing is
  rejected, the output is exactly the batch `apply_window_to_events` over the
  events with time < the final watermark W (put in order), with `until` =
  W and the same `start`: the property tests/spark/test_streaming_events.py
  checks. The window of a trace is created (at `start`, 0 by default) when its
  first row arrives, so a timer armed at creation (`#firsttime`, a
  START_EAGER batch) fires when the watermark passes it even before the
  trace's first event is fed (the batch, knowing a trace by its events, has
  no such trace yet).
* What the window itself refuses (an `EventError`: a value it cannot
  compare) fails the query naming the trace and the order value, as in
  `traces`: the window may have half-taken the event.
* `pos` is `(the update's time, 0, the row's place in its side)`, as in
  `traces`.

**State per key** (one `ValueState`, `trace`: a pickle, protocol 5): the
driver (the window with its held events and pending timers, the clock), the
trace check (each property's kind; with an `id` column and `validate`, every
id seen: one entry per event, the only part that grows with the trace), the
held rows (order value -> time, id, properties as text: the rows not yet
passed by the watermark, about `delay` ms of the trace's events plus one
micro-batch), the last fed (time, order value), the count of rejected rows,
and the Spark timer registered (one per trace, in Spark's timer state). Read
and written once per call: a key with rows in the micro-batch, or whose timer
the watermark passed. A checkpoint made by another window is refused, naming
both.

**Restart.** As in `traces`: state and timers are versioned by Spark per
micro-batch and the watermark of a micro-batch is in its offset log, so a
query stopped after any micro-batch and started again from its checkpoint
re-runs the micro-batch that did not commit from the state before it, under
the same watermark: the stream's output is exactly a run without a stop, to
a sink idempotent per batch id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

from oracle.dialects import parse
from oracle.errors import InvalidTrace, WindowOracleError
from oracle.model import WindowSpec
from spark_impl import pipeline
from spark_impl.errors import InvalidFrame, check_frame
from spark_impl.event_table import MAX_CLOCK, check_clock, check_statement_columns, event_rows
from spark_impl.frames import START_SEQ
from spark_impl.windows.base import quoted
from spark_impl.streaming.output import Output
from spark_impl.streaming.keyed import KeyedProcessor, _decode, _encode, ensure_provider, operator_input
from spark_impl.streaming.traces import FILES_PER_TRIGGER, STREAM_OF_EVENTS, _drain, check_specs

#: the phase of a rejected row's error update: after every update of its order value
REJECTED = 2
#: the column the watermark is put on (a copy of the time, left out of the operator's input)
_MARK = "#watermark"


def apply_window_to_events(stream_df, window: str | WindowSpec, *, order_col: str, time_col: str, delay: int,
                           trace_col: str | None = None, start: int | None = None, dialect: str = "esper",
                           validate: bool = True, set_provider: bool = True):
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
    * `validate`: with an `id` column, keep every id in state, so a repeated
      id is rejected (False: not kept, not caught).
    * `set_provider`: as `streaming.apply_window` (the RocksDB state store).

    Raises `InvalidFrame` naming a missing or mistyped column, a column a
    statement reads that the table lacks, a bad `delay` or `start`, a
    recorded (not streaming) frame; the parser's errors for a bad clause."""
    check_frame(stream_df, "streaming.apply_window_to_events", "stream_df", STREAM_OF_EVENTS)
    spec = parse(window, dialect) if isinstance(window, str) else window
    check_statement_columns(spec, stream_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    return _apply(stream_df, lambda _trace_id: spec, [spec], window=False, order_col=order_col,
                  time_col=time_col, delay=delay, trace_col=trace_col, start=start, validate=validate,
                  set_provider=set_provider)


def apply_windows_to_events(stream_df, specs: Mapping[str, WindowSpec], *, order_col: str, time_col: str,
                            delay: int, trace_col: str, start: int | None = None, validate: bool = True,
                            set_provider: bool = True):
    """Each trace under its own window (`specs`: trace id -> spec; a trace
    not named fails the query naming it): several windows in one query, as
    the tests run them. The output is the union of the windows' output
    schemas, always with the `window` column (`streaming.apply_windows`).
    Otherwise `apply_window_to_events`."""
    check_frame(stream_df, "streaming.apply_windows_to_events", "stream_df", STREAM_OF_EVENTS)
    table = check_specs(specs, "streaming.apply_windows_to_events")

    def spec_of(trace_id: str) -> WindowSpec:
        try:
            return table[trace_id]
        except KeyError:
            raise InvalidTrace(f"trace {trace_id!r} has no window (apply_windows_to_events names a spec per "
                               "trace)") from None

    return _apply(stream_df, spec_of, list(dict.fromkeys(table.values())), window=True, order_col=order_col,
                  time_col=time_col, delay=delay, trace_col=trace_col, start=start, validate=validate,
                  set_provider=set_provider)


def _apply(stream_df, spec_of: Callable[[str], WindowSpec], specs: list[WindowSpec], *, window: bool,
           order_col: str, time_col: str, delay: int, trace_col: str | None, start: int | None, validate: bool,
           set_provider: bool):
    if not stream_df.isStreaming:
        raise InvalidFrame("streaming.apply_window_to_events takes a streaming DataFrame (spark.readStream...); "
                           "for a recorded table use spark_impl.apply_window_to_events")
    if isinstance(delay, bool) or not isinstance(delay, int) or delay < 0 or delay > MAX_CLOCK:
        raise InvalidFrame(f"delay must be a whole number of ms from 0 to 2**62 (the watermark delay), got {delay!r}")
    check_clock("start", start)
    validated = event_rows(stream_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    for spec in specs:
        validated = pipeline.check_input(validated, spec, jumps=False)  # the window's property columns
    output = Output.of(specs, validated.schema, window=window)  # the batch's schema: refused before any state
    ensure_provider(validated.sparkSession, set_provider)
    items, _, codec = operator_input(validated)
    from pyspark.sql import functions as F

    # the watermark on a copy of the time that the operator does not get: Spark filters late rows by the
    # operator's input column that carries the watermark, and here none does, so late rows reach the processor
    marked = (items.withColumn(_MARK, F.timestamp_millis(F.col("time")))
              .withWatermark(quoted(_MARK), f"{delay} milliseconds").drop(_MARK))
    processor = EventProcessor(spec_of, codec, output, start=start or 0, delay=delay,
                               ids=validate and "id" in stream_df.columns, names=(order_col, time_col, trace_col))
    posted = marked.groupBy("trace_id").transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=output.operator_schema(), outputMode="Append",
        timeMode="EventTime")
    return output.select(posted)


# --------------------------------------------------------------------------- the processor


class EventProcessor(KeyedProcessor):
    """One trace per key: rows are checked as they come (late, bad values),
    held until the watermark passes them, fed in (time, order) order to the
    trace's oracle driver, and the clock walked to the watermark; a Spark
    event-time timer brings the key back when the watermark passes its next
    held row or due timer (module docstring)."""

    def __init__(self, spec_of: Callable[[str], WindowSpec], codec: tuple[tuple[str, str], ...], output: Output, *,
                 start: int = 0, delay: int = 0, ids: bool = False,
                 names: tuple[str, str, str | None] = ("order", "time", None)):
        super().__init__(codec, output)
        self.spec_of, self.start, self.delay, self.ids = spec_of, start, delay, ids
        self.order_col, self.time_col, self.trace_col = names

    def handleInputRows(self, key, rows, timerValues) -> Iterator:
        trace_id = key[0]
        watermark = timerValues.getCurrentWatermarkInMs()
        state = self._load(trace_id)
        out: list[tuple] = []
        self._advance(trace_id, state, watermark, out)  # first: as if the key's timer had fired before its rows
        arrived = []
        for frame in rows:
            cols = {c: frame[c].tolist() for c in frame.columns}
            for i in range(len(frame)):
                arrived.append((_whole(cols["seq"][i]), _whole(cols["time"][i]), _text(cols["id"][i]),
                                tuple(_text(cols[name][i]) for name, _ in self.codec)))
        # a micro-batch's rows come in no order: checked in (time, order, id) order, nulls first
        arrived.sort(key=lambda r: (r[1] is not None, r[1] or 0, r[0] is not None, r[0] or 0, r[2] or ""))
        for row in arrived:  # at or after the watermark, or rejected: none is fed in this call
            self._arrive(trace_id, state, row, watermark, out)
        self._arm(state, None)
        self.save(state)
        if out:
            yield self.frame(out)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator:
        trace_id = key[0]
        state = self._load(trace_id)
        out: list[tuple] = []
        self._advance(trace_id, state, timerValues.getCurrentWatermarkInMs(), out)
        self._arm(state, expiredTimerInfo.getExpiryTimeInMs())
        self.save(state)
        if out:
            yield self.frame(out)

    # ----------------------------------------------------------- state

    def _load(self, trace_id: str) -> dict:
        return self.load(trace_id, self.spec_of(trace_id), lambda: {
            "driver": None, "check": None, "held": {}, "last": None, "rejected": 0, "timer": None})

    def _driver(self, trace_id: str, state: dict):
        if state["driver"] is None:
            spec = state["spec"]
            from oracle.driver import start  # the oracle's runtime: this package only, in the processor only
            from oracle.model import Trace, TraceCheck

            try:
                state["driver"] = start(spec, Trace((), self.start, {}))
                state["check"] = TraceCheck(self.start, {}, spec.MIXED_KINDS, ids=self.ids)
            except WindowOracleError as exc:
                raise InvalidTrace(f"trace {trace_id!r} start: {exc}") from None
        return state["driver"]

    def _arm(self, state: dict, expiring: int | None) -> None:
        """Keep one Spark timer for the key, at the earliest of its first held
        row's time + 1 (a held row is fed when the watermark passes its time)
        and its window's next due time; none if neither. The timer firing now
        (`expiring`) is deleted by Spark after the call."""
        dues = [held[0] + 1 for held in state["held"].values()]
        if state["driver"] is not None:
            due = state["driver"].window.next_timer()
            if due is not None:
                dues.append(due)
        want, have = min(dues, default=None), state["timer"]
        if want == have:
            return
        if have is not None and have != expiring:
            self.handle.deleteTimer(have)
        if want is not None:
            self.handle.registerTimer(want)
        state["timer"] = want

    # ----------------------------------------------------------- rows in, rows fed

    def _where(self, trace_id, n, t) -> str:
        """A row's place in words: `t=5 ms at seq=3 in trace 'a'`; a null value as no time, no order."""
        when = f"{self.time_col}={t} ms" if t is not None else "no time"
        order = f"{self.order_col}={n}" if n is not None else f"no {self.order_col}"
        in_trace = f" in trace {trace_id!r}" if self.trace_col and trace_id is not None else ""
        return f"{when} at {order}{in_trace}"

    def _arrive(self, trace_id, state: dict, row: tuple, watermark: int, out: list) -> None:
        n, t, id_, cells = row
        where = self._where(trace_id, n, t)
        problem = None
        if trace_id is None:
            problem = f"trace_col {self.trace_col!r} is null ({where})"
        elif n is None:
            problem = f"order_col {self.order_col!r} is null ({where})"
        elif t is None:
            problem = f"the event has no time: time_col {self.time_col!r} is null ({where})"
        elif n < 0:
            problem = f"order_col {self.order_col!r} is negative ({where}): positions start at 0"
        elif id_ is None:
            problem = f"column 'id' is null ({where}); every event has an id"
        elif abs(t) > MAX_CLOCK:
            problem = f"time_col {self.time_col!r} is further than 2**62 ms from 0 ({where})"
        elif t < self.start:
            problem = f"before the window's start: {where}, the window starts at {self.start} ms"
        elif t < watermark:
            problem = (f"late: {where} is before the watermark {watermark} ms of its micro-batch "
                       f"(the latest event time of the earlier micro-batches minus the delay of {self.delay} ms)")
        elif n in state["held"]:
            problem = (f"order_col {self.order_col!r} has the value {n} twice ({where}; the row at "
                       f"{state['held'][n][0]} ms came first and stays)")
        if problem is not None:
            self._reject(trace_id, state, n, t if t is not None else watermark, id_, cells, problem, out)
            return
        state["held"][n] = (t, id_, cells)

    def _advance(self, trace_id, state: dict, watermark: int, out: list) -> None:
        """Feed the held rows the watermark has passed, in (time, order)
        order, then walk the clock to the watermark."""
        from oracle.model import Advance, Arrive, Event

        driver = self._driver(trace_id, state)
        held = state["held"]
        for t, n in sorted((held_t, n) for n, (held_t, _, _) in held.items() if held_t < watermark):
            _, id_, cells = held.pop(n)
            last = state["last"]
            if last is not None and n <= last[1]:
                self._reject(trace_id, state, n, t, id_, cells, (
                    f"order_col {self.order_col!r} goes back along time_col {self.time_col!r}: "
                    f"{self._where(trace_id, n, t)} comes after {self.order_col}={last[1]} at {last[0]} ms, fed "
                    "already (a trace's order values grow with its times)"), out)
                continue
            props = {name: _decode(text, codec) for (name, codec), text in zip(self.codec, cells) if text is not None}
            item = Arrive(Event(id_, props), time=t)
            try:
                state["check"].item(n, item)
            except InvalidTrace as exc:
                self._reject(trace_id, state, n, t, id_, cells, f"{self._where(trace_id, n, t)}: {exc.reason}", out)
                continue
            self._step(trace_id, driver, n, item, out)
            state["last"] = (t, n)
        if watermark > driver.clock:
            after = state["last"][1] + 1 if state["last"] is not None else 0
            self._step(trace_id, driver, after, Advance(watermark), out)

    def _step(self, trace_id, driver, index: int, item, out: list) -> None:
        try:
            keyed = driver.step_keyed(index, item)
        except WindowOracleError as exc:
            reason = exc.reason if isinstance(exc, InvalidTrace) else str(exc)
            raise InvalidTrace(f"trace {trace_id!r} {self.order_col}={index}: {reason}") from None
        for phase, ordinal, update in keyed:
            self._rows(trace_id, phase, ordinal, update, out)

    def _reject(self, trace_id, state: dict, n, t: int, id_, cells, reason: str, out: list) -> None:
        count = state["rejected"]
        state["rejected"] = count + 1
        after = n if n is not None else START_SEQ
        texts = {name: _canonical(text, codec) for (name, codec), text in zip(self.codec, cells)}
        out.append(self.writer.rejected((trace_id, after, REJECTED, t, count, "error", t, 0, 0, reason, None, None),
                                        id_, texts))


def _missing(value) -> bool:
    """Whether a cell pandas hands over is null: None, a NaN (a long column
    with nulls arrives as floats) or pandas' NA (a nullable column)."""
    if value is None:
        return True
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ == "NAType"


def _whole(value) -> int | None:
    return None if _missing(value) else int(value)


def _text(value) -> str | None:
    return None if _missing(value) else str(value)


def _canonical(text: str | None, codec: str) -> str | None:
    """A property's text as the operator posts it (JSON in canonical form);
    as it came if it cannot be read."""
    if text is None:
        return None
    try:
        return _encode(_decode(text, codec), codec)
    except ValueError:
        return text


# --------------------------------------------------------------------------- event tables as a stream of files


def run_event_files(spark, folder, schema, window: str | WindowSpec | Mapping[str, WindowSpec], checkpoint, *,
                    fail_after: int | None = None, **options) -> dict[int, list]:
    """Run the Parquet files of `folder` (an event table of `schema`, one
    file per micro-batch: `traces.write_files`) through
    `apply_window_to_events(..., **options)` (`window` a mapping of trace ids
    to specs: `apply_windows_to_events`) to the end (`availableNow`), from
    `checkpoint`: the rows each micro-batch posted, by batch id.
    `fail_after`: the sink fails from that batch id on (a crash, for restart
    tests)."""
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_TRIGGER).parquet(str(folder))
    if isinstance(window, Mapping):
        out = apply_windows_to_events(stream, window, **options)
    else:
        out = apply_window_to_events(stream, window, **options)
    return _drain(out, checkpoint, fail_after)


__all__ = ["apply_window_to_events", "apply_windows_to_events", "run_event_files", "EventProcessor", "REJECTED"]

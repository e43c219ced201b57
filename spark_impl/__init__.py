"""The Spark implementation of the window specification: the same updates as the
oracle, computed for many traces and keys at once as relational operations.

* `apply_window(trace_df, window)`: a window over an input frame of traces (the
  frame's columns: `spark_impl.frames`). One output row per posted event.
* `apply_window_to_events(events_df, window, ...)`: the same over an ordinary
  event table (an order column, an arrival-time column, optional trace column).
* `run_cases(pairs)`: (spec, Trace) pairs in, updates out, one Spark job for all.

Output of `apply_window` / `apply_window_to_events`:

| column   | type   | meaning                                                           |
|----------|--------|-------------------------------------------------------------------|
| trace_id | string | the trace                                                         |
| after    | long   | the seq of the item that caused the update                        |
| phase    | int    | 0: a timer firing on the item's walk or jump; 1: the event's arrival |
| time     | long   | the clock the update was posted at, ms                            |
| ordinal  | int    | the update's order among those of one unit of work (0 for Esper,  |
|          |        | which posts at most one update per unit)                          |
| side     | string | 'insert' or 'remove'; null for an empty update (FORCE_UPDATE)      |
| pos      | struct | the row's order within its update's side: compare (due, slot, n)   |
|          |        | as a tuple (null for an empty update)                             |
| id       | string | the event's id                                                    |
| ...      | typed  | the event's properties                                            |

An update is identified by (trace_id, after, phase, time, ordinal), values each
row computes on its own: no step counts updates over a trace. Updates of a
trace are in that order: an item's walk stops in time order (phase 0), then its
arrival (phase 1); a jump is one stop. The total order of the rows is
`.orderBy("trace_id", "after", "phase", "time", "ordinal", "side", "pos")`
('insert' sorts before 'remove'); an empty update has a single row. The frame
is returned unsorted (a total order costs a global sort, which a consumer
writing to a table does not need). `numbered=True` adds `update_no` (0-based,
consecutive per trace) and `pos_no` (0-based within the side), at the cost of
one more shuffle and sort (`pipeline.numbered`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from functools import reduce

from oracle.dialects import parse
from oracle.errors import InvalidTrace, WindowOracleError
from oracle.model import Jump, Trace, Update, WindowSpec
from spark_impl import frames, pipeline
from spark_impl.errors import InvalidFrame, JobFailed, SparkUnavailable
from spark_impl.frames import OUTPUT_COLUMNS, UPDATE_KEY, PropertyTypes
from spark_impl.session import get_spark, interpreted


def _spec(window: str | WindowSpec, dialect: str) -> WindowSpec:
    return parse(window, dialect) if isinstance(window, str) else window


def apply_window(trace_df, window: str | WindowSpec, dialect: str = "esper", *, jumps: bool = True,
                 numbered: bool = False):
    """The updates `window` (a clause in `dialect`'s syntax, or a spec) posts over
    every trace of `trace_df`, one row per posted event (module docstring).

    `jumps=False` promises the input holds no `jump` item: windows whose jumps
    need more work (a grouped `#time`, `#time_batch`) plan without that work,
    and a jump row fails the job naming it. `numbered`: add `update_no` and
    `pos_no` (one more shuffle and sort).

    Raises `InvalidFrame` naming a missing or mistyped input column, the parser's
    errors for a bad clause, `UnsupportedWindow` for a window not implemented."""
    out = pipeline.apply(trace_df, _spec(window, dialect), jumps=jumps)
    return pipeline.numbered(out) if numbered else out


def apply_window_to_events(events_df, window: str | WindowSpec, *, order_col: str, time_col: str,
                           trace_col: str | None = None, until: int | None = None, start: int | None = None,
                           dialect: str = "esper", numbered: bool = False):
    """`apply_window` over an ordinary event table.

    * `order_col`: an integer column giving each event's unique, non-negative
      position in its trace (an offset, a sequence number); it becomes `seq` and,
      unless the table has an `id` column, the event's id (as text).
    * `time_col`: the clock at the event's arrival, in ms (an integer column) or a
      timestamp column (converted to epoch ms). It must not decrease along
      `order_col` within a trace.
    * `trace_col`: independent traces (e.g. one per device); all rows form one
      trace, `trace_id` "0", without it.
    * `until`: the clock, in ms, to walk every trace to after its last event, so
      timers due by then fire (the end of a trace flushes nothing by itself).
      An `until` before a trace's last event raises `InvalidFrame` (checked by
      one small job when the plan is built).
    * `start`: the clock when the window is created (default 0).

    Every other column is an event property (the order and time columns too, so
    `#ext_timed(ts, 10 sec)` can read `ts`). An event table has no jumps, so the
    window is planned without them (`apply_window`'s `jumps=False`).

        >>> out = apply_window_to_events(
        ...     trades, "#groupwin(symbol)#time(10 sec)",
        ...     order_col="offset", time_col="ts", until=1_700_000_060_000)
        >>> out.where("side = 'remove'").groupBy("symbol").count()
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    spec = _spec(window, dialect)
    fields = {f.name: f.dataType for f in events_df.schema.fields}
    for role, name in (("order_col", order_col), ("time_col", time_col), ("trace_col", trace_col)):
        if name is not None and name not in fields:
            raise InvalidFrame(f"{role} names column {name!r}, which the table does not have")
    integral = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
    if not isinstance(fields[order_col], integral):
        raise InvalidFrame(f"order_col {order_col!r} must be an integer column, not {fields[order_col].simpleString()}")
    if isinstance(fields[time_col], (T.TimestampType, T.TimestampNTZType)):
        arrival = F.unix_millis(F.col(time_col).cast("timestamp"))
    elif isinstance(fields[time_col], integral):
        arrival = F.col(time_col).cast("long")
    else:
        raise InvalidFrame(f"time_col {time_col!r} must be integer ms or a timestamp, not {fields[time_col].simpleString()}")
    consumed = {trace_col, "id"} | ({order_col, time_col} & frames.RESERVED)
    props = [c for c in events_df.columns if c not in consumed]
    clashes = [c for c in props if c.lower() in frames.RESERVED]
    if clashes:
        raise InvalidFrame(
            f"column {clashes[0]!r} clashes with the column {clashes[0].lower()!r} the window's input or output uses; "
            "rename it, or name it as order_col, time_col or trace_col"
        )
    trace_id = F.col(trace_col).cast("string") if trace_col else F.lit("0")
    event_id = F.col("id").cast("string") if "id" in fields else F.col(order_col).cast("string")
    rows = events_df.select(
        trace_id.alias("trace_id"), F.col(order_col).cast("long").alias("seq"), F.lit("event").alias("kind"),
        arrival.alias("time"), event_id.alias("id"), *props,
    )
    if until is not None:
        # checked before the plan is built (one small job), so the error is one sentence
        late = rows.groupBy("trace_id").agg(F.max("time").alias("_latest")).where(F.col("_latest") > until).limit(1)
        for found in late.collect():
            raise InvalidFrame(f"until={until} ms is before the last event of trace {found['trace_id']!r}, "
                               f"at {found['_latest']} ms")
        ends = rows.groupBy("trace_id").agg(F.max("seq").alias("_last"))
        rows = rows.unionByName(ends.select(
            "trace_id", (F.col("_last") + 1).alias("seq"), F.lit("advance").alias("kind"),
            F.lit(until).cast("long").alias("time"),
        ), allowMissingColumns=True)
    if start is not None:
        rows = rows.unionByName(rows.select("trace_id").distinct().select(
            "trace_id", F.lit(frames.START_SEQ).cast("long").alias("seq"), F.lit("start").alias("kind"),
            F.lit(start).cast("long").alias("time"),
        ), allowMissingColumns=True)
    return apply_window(rows, spec, jumps=False, numbered=numbered)


#: a job of `run_cases` holds at most this many window plans and input rows: the
#: plans of one job run in one Spark action, whose memory grows with both
PLANS_PER_JOB = 24
ROWS_PER_JOB = 250_000


def run_cases(pairs: Sequence[tuple[WindowSpec, Trace]], spark=None,
              progress: Callable[[int, int], None] | None = None) -> list[tuple[Update, ...] | WindowOracleError]:
    """The updates of each (spec, trace) pair, in order; a pair that cannot run
    (`UnsupportedWindow`, `InvalidTrace`) gets its exception and the others run.

    Pairs are grouped by spec; each group's traces become one input frame (traces
    whose property types clash go to separate frames). The frames' outputs are
    unioned into jobs of at most PLANS_PER_JOB plans and ROWS_PER_JOB input rows,
    each collected by one Spark action (`progress(done, total)` after each), so
    a replay of thousands of cases runs in a few jobs of bounded memory. A job
    of small traces (frames.ONE_PARTITION_ROWS rows in all) runs without code
    generation (`session.interpreted`). A job that fails gives each of its pairs
    a `JobFailed` naming the error; the other jobs run."""
    results: list = [None] * len(pairs)
    groups: dict[WindowSpec, list[tuple[str, Trace, PropertyTypes]]] = defaultdict(list)
    for index, (spec, trace) in enumerate(pairs):
        trace_id = str(index)
        try:
            pipeline.family_of(spec)
            frames.check_pair(spec, trace)
            types = PropertyTypes(frames.spec_properties(spec))
            types.merge(PropertyTypes.of_trace(trace_id, trace))
            groups[spec].append((trace_id, trace, types))
        except WindowOracleError as exc:
            results[index] = exc
    if not groups:
        return results
    spark = spark or get_spark()
    pieces = [(spec, types, batch) for spec, members in groups.items() for types, batch in _batches(members)]
    jobs: list[list] = [[]]
    for piece in pieces:
        rows = sum(len(trace) + 1 for _, trace in piece[2])
        job = jobs[-1]
        if job and (len(job) >= PLANS_PER_JOB or sum(r for *_, r in job) + rows > ROWS_PER_JOB):
            jobs.append(job := [])
        job.append((*piece, rows))
    for done, job in enumerate(jobs, 1):
        traces = {tid: trace for _, _, batch, _ in job for tid, trace in batch}
        try:
            outputs = []
            for spec, types, batch, _ in job:
                frame = frames.frame_of(spark, batch, types)
                jumps = any(isinstance(item, Jump) for _, trace in batch for item in trace.items)
                outputs.append(pipeline.apply(frame, spec, jumps=jumps).select(*OUTPUT_COLUMNS))
            union = reduce(lambda a, b: a.unionByName(b), outputs)
            small = sum(rows for *_, rows in job) <= frames.ONE_PARTITION_ROWS
            with interpreted(spark) if small else nullcontext():
                collected = union.collect()
        except Exception as exc:  # noqa: BLE001 - a failed job fails its own cases, not the others
            failure = JobFailed(f"the Spark job failed: {type(exc).__name__}: {_first_line(exc)}")
            for trace_id in traces:
                results[int(trace_id)] = failure
        else:
            for trace_id, found in frames.updates_from_rows(collected, traces).items():
                results[int(trace_id)] = found
        if progress:
            progress(done, len(jobs))
    return results


def _first_line(exc: BaseException, limit: int = 300) -> str:
    text = (str(exc).strip().splitlines() or [""])[0]
    return text[:limit]


def _batches(members):
    """Greedy split of one spec's traces into frames whose property types agree."""
    batches: list[tuple[PropertyTypes, list]] = []
    for trace_id, trace, types in members:
        for n, (merged, batch) in enumerate(batches):
            trial = merged.copy()
            try:
                trial.merge(types)
            except InvalidTrace:
                continue
            batches[n] = (trial, batch + [(trace_id, trace)])
            break
        else:
            batches.append((types, [(trace_id, trace)]))
    return batches


__all__ = ["apply_window", "apply_window_to_events", "run_cases", "InvalidFrame", "SparkUnavailable", "get_spark",
           "UPDATE_KEY", "OUTPUT_COLUMNS"]

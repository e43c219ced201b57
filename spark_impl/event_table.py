"""A window over an ordinary event table (`apply_window_to_events`): the table's
order, time and trace columns become the input frame's `seq`, `time` and
`trace_id` (`spark_impl.frames`), after one Spark job has checked that they
describe traces at all (`check_events`).

The check (`check_events`, one Spark job before planning) raises
`InvalidFrame` naming the column, the trace and the value for: a null trace,
order or time value; a negative or repeated order value; a time that goes
back along the order (`time_col 't' goes back along order_col 'n' in trace
'd2': 400 ms at n=7, after 500 ms at n=6`); an `until` before a trace's last
event; an event before the window's `start` (0 by default); an `id` column
with a null or a repeated value in a trace; a column name that is not an
identifier (`a.b`); an `until` or `start` that is not a whole number of ms
within 2^62 of 0. A table written in order (a log, a Parquet export) is
checked in one scan without a sort; one whose partitions interleave
positions costs a sort. The repeated-id check is a hashed pre-check
(`ids_may_repeat`: each event's 64-bit hash of (trace, id), sorted per input
partition, the sorted runs merged by hash range); the exact count over
every (trace, id) runs only where it finds a suspect, and names the problem.
A table without an `id` column takes its ids from the order column and
skips the id check. `apply_window` checks a trace frame the same way by
default (`check_trace_frame`: an unknown kind, an event without an id or an
id twice, a clock past 2^62, a second start row, then the order rules).
`validate=False` skips the checks for a table known to be valid (an invalid
one then gives wrong output); what they cost: spark_impl/bench.py.
"""

from __future__ import annotations

from functools import reduce

from attrs import frozen

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.dialects import parse
from oracle.model import Statement, WindowSpec, unknown_property
from spark_impl import frames, pipeline
from spark_impl.errors import EVENT_TABLE, InvalidFrame, check_frame

#: the trace_id of a table without trace_col
ONE_TRACE = "0"
#: a clock further than this from 0 cannot be planned (a clock plus a period must fit a long)
MAX_CLOCK = 2**62
_INTEGRAL = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)

#: the order check sorts each trace in buckets of about this many rows, so that
#: one long trace spreads over every task
CHECK_ROWS_PER_BUCKET = 1 << 18


def apply_window_to_events(events_df: DataFrame, window: str | WindowSpec, *, order_col: str, time_col: str,
                           trace_col: str | None = None, until: int | None = None, start: int | None = None,
                           dialect: str = "esper", numbered: bool = False, validate: bool = True,
                           pane_rows: bool = True) -> DataFrame:
    """`apply_window` over an ordinary event table.

    * `order_col`: an integer column giving each event's unique, non-negative
      position in its trace (an offset, a sequence number); it becomes `seq` and,
      unless the table has an `id` column, the event's id (as text).
    * `time_col`: the clock at the event's arrival, in ms (an integer column) or a
      timestamp column (converted to epoch ms). It must not decrease along
      `order_col` within a trace.
    * `trace_col`: independent traces (e.g. one per device); all rows form one
      trace, `trace_id` "0" (ONE_TRACE), without it.
    * `until`: the clock, in ms, to walk every trace to after its last event, so
      timers due by then fire (the end of a trace flushes nothing by itself).
    * `start`: the clock when the window is created (default 0).
    * `pane_rows`: False for an eKuiper query's output rows only (what its sink
      receives), without the panes' rows.
    * `validate`: check the table before planning (`passes_checks`: one scan
      of the order and time columns as the table lies and, where the table
      has an `id` column, of its ids' hashes, in one job; the exact checks,
      `check_events` and `_check_ids`, only where it cannot decide): a null order,
      time or trace value, a negative or repeated order value, a time that
      goes back along the order, an `until` before a trace's last event, or
      an id null or repeated in its trace raises `InvalidFrame` naming the
      column, the trace and the value. `validate=False` skips that job for
      a table known to be valid (offsets and ingest times of one log); an
      invalid table then gives wrong output. An `until` is checked either way.

    Every other column is an event property (the order and time columns too, so
    `#ext_timed(ts, 10 sec)` can read `ts`). An event table has no jumps, so the
    window is planned without them (`apply_window`'s `jumps=False`), and
    without variables (`pipeline.apply`'s `variables=False`): a name an
    expression reads is a property.

        >>> out = apply_window_to_events(
        ...     trades, "#groupwin(symbol)#time(10 sec)",
        ...     order_col="offset", time_col="ts", until=1_700_000_060_000)
        >>> out.where("side = 'remove'").groupBy("symbol").count()
    """
    check_frame(events_df, "apply_window_to_events", "events_df", EVENT_TABLE)
    spec = parse(window, dialect) if isinstance(window, str) else window
    for name, value in (("until", until), ("start", start)):
        check_clock(name, value)
    check_statement_columns(spec, events_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    rows = event_rows(events_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
    has_ids = "id" in events_df.columns
    # the checks' one pass decides a valid table; the exact checks run where it cannot, and name the problem
    passed = validate and passes_checks(rows, traced=trace_col is not None, ids="true" if has_ids else None,
                                        until=until, start=start or 0)
    if not passed and (validate or until is not None):
        check_events(rows, order_col=order_col, time_col=time_col, trace_col=trace_col, until=until, order=validate,
                     start=(start or 0) if validate else None)
    if not passed and validate and has_ids:
        _check_ids(rows, trace_col)
    if until is not None:
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
    out = pipeline.apply(rows, spec, jumps=False, variables=False, pane_rows=pane_rows,
                         one_trace=None if trace_col else ONE_TRACE)
    return pipeline.numbered(out) if numbered else out


def check_clock(name: str, value) -> None:
    """Raise `InvalidFrame` naming `name` unless `value` is None or a whole
    number of ms within 2**62 of 0."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidFrame(f"{name} must be a whole number of ms, got {value!r}")
    if value is not None and abs(value) > MAX_CLOCK:
        raise InvalidFrame(f"{name}={value} ms is further than 2**62 ms from 0 (a clock plus a period must fit "
                           "a 64-bit long)")


def check_statement_columns(spec: WindowSpec, events_df: DataFrame, *, order_col: str, time_col: str,
                            trace_col: str | None) -> None:
    """Raise `InvalidFrame` where `spec` is a statement reading a property no
    column of the table gives (`event_rows`' properties: the trace column is
    none); an event table declares no variables, so its columns are the
    stream's type (`oracle.model.unknown_property`)."""
    if not isinstance(spec, Statement):
        return
    unknown = unknown_property(spec, _property_columns(events_df, order_col, time_col, trace_col))
    if unknown is not None:
        why = " (it is the trace column)" if unknown == trace_col else ""
        raise InvalidFrame(f"the statement reads property {unknown!r}, but the event table has no column "
                           f"{unknown!r} that is a property{why}: the {spec.rules.engine} dialect refuses a property "
                           "its stream's type lacks")


def _property_columns(events_df: DataFrame, order_col: str, time_col: str, trace_col: str | None) -> list[str]:
    consumed = {trace_col, "id"} | ({order_col, time_col} & frames.RESERVED)
    return [c for c in events_df.columns if c not in consumed]


def event_rows(events_df: DataFrame, *, order_col: str, time_col: str, trace_col: str | None) -> DataFrame:
    """An event table's rows as trace items (`trace_id`, `seq`, `kind`
    'event', `time` in ms, `id`, then the properties): the order column is
    `seq`, the time column `time` (a timestamp as epoch ms), the trace column
    `trace_id` (ONE_TRACE without it), the `id` column or else the order value
    as text the event's id; every other column a property (the order and time
    columns too, unless named like a column the input uses). Raises
    `InvalidFrame` naming a missing or mistyped column, a column that is not
    an identifier or clashes with a reserved name. Values are not checked."""
    fields = {f.name: f.dataType for f in events_df.schema.fields}
    for role, name in (("order_col", order_col), ("time_col", time_col), ("trace_col", trace_col)):
        if name is not None and name not in fields:
            raise InvalidFrame(f"{role} names column {name!r}, which the table does not have")
    if not isinstance(fields[order_col], _INTEGRAL):
        raise InvalidFrame(f"order_col {order_col!r} must be an integer column, not {fields[order_col].simpleString()}")
    if isinstance(fields[time_col], (T.TimestampType, T.TimestampNTZType)):
        arrival = F.unix_millis(_col(time_col).cast("timestamp"))
    elif isinstance(fields[time_col], _INTEGRAL):
        arrival = _col(time_col).cast("long")
    else:
        raise InvalidFrame(f"time_col {time_col!r} must be integer ms or a timestamp, not {fields[time_col].simpleString()}")
    props = _property_columns(events_df, order_col, time_col, trace_col)
    odd = next((c for c in props if not frames.is_identifier(c)), None)
    if odd is not None:
        raise InvalidFrame(f"column {odd!r} is not an identifier (letters, digits and _, not first a digit), so it "
                           "cannot be an event property; rename it")
    clashes = [c for c in props if c.lower() in frames.RESERVED]
    if clashes:
        raise InvalidFrame(
            f"column {clashes[0]!r} clashes with the column {clashes[0].lower()!r} the window's input or output uses; "
            "rename it, or name it as order_col, time_col or trace_col"
        )
    trace_id = _col(trace_col).cast("string") if trace_col else F.lit(ONE_TRACE)
    event_id = F.col("id").cast("string") if "id" in fields else _col(order_col).cast("string")
    rows = events_df.select(
        trace_id.alias("trace_id"), _col(order_col).cast("long").alias("seq"), F.lit("event").alias("kind"),
        arrival.alias("time"), event_id.alias("id"), *props,
    )
    return rows


def _col(name: str):
    """A column by its name as written, dots and backticks included."""
    return F.col("`" + name.replace("`", "``") + "`")


def id_problems(rows: DataFrame) -> DataFrame:
    """The (trace_id, id, seq, n) of every id null on an event or held `n` > 1
    times in its trace (`seq` its first), the first first: one aggregate over
    every (trace, id), a shuffle of the whole table."""
    return (rows.groupBy("trace_id", "id").agg(F.expr("min(seq)").alias("seq"), F.expr("count(1)").alias("n"))
            .where("id IS NULL OR n > 1").orderBy("trace_id", "seq"))


#: the hash ranges each partition's sorted hashes are cut into by the id pre-check (a bucket's runs meet in one task)
ID_BUCKETS = 64
_ID_BUCKET_BITS = 6  # log2(ID_BUCKETS): a hash's bucket is its top bits, so a bucket's hashes stay sorted


def ids_may_repeat(rows: DataFrame) -> bool:
    """Whether some event of `rows` (trace_id, id) has no id, or two events
    of one trace may share one: False only where neither happens.

    Exact where it says False: each event's 64-bit hash of (trace, id) is
    taken in Spark, each input partition's hashes are sorted in numpy as the
    partition lies (a hash met twice there, or a null id, is a suspect) and
    cut into `ID_BUCKETS` sorted runs by their top bits, one row (a blob) per
    run; one shuffle of those blobs by bucket, then each bucket's runs sorted
    together: a hash met twice is a suspect. Two events with one (trace, id)
    have one hash, so no suspect means no repeat; a suspect is a repeat or,
    rarely, two ids of one hash, and the caller runs the exact aggregate
    (`id_problems`) to tell. What it saves: the aggregate shuffles every
    (trace, id) as a row; this shuffles 8 bytes an event in a few blobs."""
    hashed = rows.select(_id_hash(F.lit(True)))
    runs = hashed.mapInArrow(_sorted_hash_runs, "bucket int, hashes binary, suspect boolean")
    # by the bucket column alone: adaptive execution puts the small buckets together in a few tasks
    # (64 fixed partitions, each a Python task, took 5.3 s where this takes 4.0 at 10 M events)
    merged = runs.repartition("bucket").mapInArrow(_repeated_hashes, "suspect boolean")
    return bool(merged.where("suspect").limit(1).collect())


#: a checked event's hash where its id is null (`_id_hash`), read by the scans as a missing id; a real
#: hash of this value (one in 2**64) is read so too: a suspect, and the exact check then tells
MISSING_ID = -(2 ** 63)

#: `_scanned_columns`' `flags`, one small integer where three booleans were three columns: the row is the
#: start row, has an odd kind or clock, is a jump
START_BIT, ODD_BIT, JUMP_BIT = 1, 2, 4


def _id_hash(checked):
    """Column `h`: the (trace, id) 64-bit hash of a row where `checked` holds,
    `MISSING_ID` where its id is null, else null. One column where a hash and
    a flag were two: each column crossing into Python costs (4 M rows of
    seq, time and hash through Arrow: 0.86 s, 1.04 s with the flag)."""
    return F.when(checked, F.when(F.col("id").isNull(), F.lit(MISSING_ID)).otherwise(
        F.xxhash64("trace_id", "id"))).alias("h")


def _flags(table, bit: int):
    """Whether each row of an Arrow table's `flags` has `bit` (numpy booleans)."""
    return (table.column("flags").to_numpy() & bit) != 0


def _sorted_hash_runs(batches):
    """mapInArrow: one input partition's hashes (`_id_hash`) -> a suspect row
    if an id is null or a hash repeats here, else one row per bucket: its
    hashes sorted."""
    import numpy as np
    import pyarrow as pa

    hashes = [batch.column(0).to_numpy(zero_copy_only=False) for batch in batches]
    h = np.sort(np.concatenate(hashes)) if hashes else np.empty(0, np.int64)
    if (len(h) and h[0] == MISSING_ID) or bool((h[1:] == h[:-1]).any()):
        yield pa.RecordBatch.from_pydict({"bucket": [0], "hashes": [b""], "suspect": [True]},
                                         schema=_hash_run_schema())
        return
    # signed order: the top bits of h + 2**63 (unsigned) rise with h, so each bucket is a sorted slice
    top = ((h.view(np.uint64) ^ np.uint64(1 << 63)) >> np.uint64(64 - _ID_BUCKET_BITS)).astype(np.int32)
    cuts = np.searchsorted(top, np.arange(ID_BUCKETS + 1, dtype=np.int32))
    buckets = [b for b in range(ID_BUCKETS) if cuts[b] < cuts[b + 1]]
    yield pa.RecordBatch.from_pydict({"bucket": buckets, "hashes": [h[cuts[b]:cuts[b + 1]].tobytes() for b in buckets],
                                      "suspect": [False] * len(buckets)}, schema=_hash_run_schema())


def _repeated_hashes(batches):
    """mapInArrow: the runs of one or more buckets -> one row: a suspect from
    a partition, or a hash met in two runs."""
    import numpy as np
    import pyarrow as pa

    runs, suspect = [], False
    for batch in batches:
        suspect = suspect or bool(batch.column(2).to_numpy(zero_copy_only=False).any())
        runs += [np.frombuffer(blob, np.int64) for blob in batch.column(1).to_pylist()]
    if not suspect and runs:
        h = _merged_runs(runs)
        suspect = bool((h[1:] == h[:-1]).any())
    yield pa.RecordBatch.from_pydict({"suspect": [suspect]})


def _merged_runs(runs: list):
    """Sorted arrays of hashes as one sorted array. numpy's stable sort (a
    timsort for 64-bit integers) finds the sorted runs and merges them, where
    its default quicksort sorts afresh: 4 M hashes in 4 runs took 0.04 s
    against 0.49 s, in one task, on every checked table."""
    import numpy as np

    return np.sort(np.concatenate(runs), kind="stable")


def _hash_run_schema():
    import pyarrow as pa

    return pa.schema([("bucket", pa.int32()), ("hashes", pa.binary()), ("suspect", pa.bool_())])


def _check_ids(rows: DataFrame, trace_col: str | None) -> None:
    """Raise `InvalidFrame` for the first trace whose `id` column is null on an
    event or holds one value twice (an event's id is unique in its trace):
    the hashed pre-check, and the exact aggregate only where it finds a suspect."""
    if not ids_may_repeat(rows):
        return
    found = id_problems(rows).limit(1).collect()
    if found:
        bad = found[0]
        in_trace = f" in trace {bad.trace_id!r}" if trace_col else ""
        if bad.id is None:
            raise InvalidFrame(f"column 'id' is null{in_trace} (first at order {bad.seq}); every event has an id")
        raise InvalidFrame(f"column 'id' has the value {bad.id!r} {bad.n} times{in_trace} (first at order {bad.seq}); "
                           "an event's id is unique in its trace")


def passes_checks(rows: DataFrame, *, traced: bool, ids: str | None, until: int | None = None,
                  start: int | None = None) -> bool:
    """Whether `rows` (trace_id, seq, time, and with `ids` an id column) pass
    `check_events` and, with `ids` (SQL telling the rows whose id must be
    there and unique in its trace: `true`, `kind = 'event'`), the id check
    (`_check_ids`), decided by one job: one
    scan of each input partition as it lies (Arrow through numpy) gives both
    `_scan_partition`'s runs and `ids_may_repeat`'s bucketed hashes, one
    shuffle of the hashes (8 bytes an event) by bucket merges them, and the
    runs, a few rows per trace and partition, are lined up on the driver
    (`runs_pass`). Exact where it says True; False where it finds a problem
    or cannot tell (runs that overlap, a hash met twice): the caller then
    runs the exact checks, which name the problem. Where `check_events` and
    `_check_ids` read the table twice, this reads it once. `traced`: the
    rows hold more than one trace (else no trace id is sent per row)."""
    found = one_pass(rows, traced=traced, ids=ids).collect()
    if any(row["suspect"] for row in found):
        return False
    return runs_pass(_runs_of(found), until=until, start=start)


def _runs_of(found: list) -> list:
    """The runs among the rows of a one-pass scan (`one_pass`, `scan_and_hash`): the rows with a count (hash,
    flag and start rows have none)."""
    return [row for row in found if row["n"] is not None]


def _starts_and_flags(table, schema, start, **more):
    """A trace frame's partition (`trace_id`, `seq`, `time`, `flags`; `start`: its `START_BIT`): a row per
    start item (`is_start`, its seq as `lo`, its time as `start_time`) and one row of whether a row has an
    odd kind or clock (`odd`) or is a jump (`jumps`), with `more` columns of that row by name."""
    import pyarrow as pa

    starts = table.filter(pa.array(start))
    if starts.num_rows:
        yield _widened(pa.RecordBatch.from_pydict(
            {"trace_id": starts.column("trace_id").combine_chunks(), "lo": starts.column("seq").combine_chunks(),
             "start_time": starts.column("time").combine_chunks(), "is_start": pa.array([True] * starts.num_rows)}),
            schema)
    yield pa.RecordBatch.from_pydict(
        {name: [None] for name in schema.names} | {"odd": [bool(_flags(table, ODD_BIT).any())],
                                                   "jumps": [bool(_flags(table, JUMP_BIT).any())],
                                                   "is_start": [False]} | {k: [v] for k, v in more.items()},
        schema=schema)


def trace_frame_summary(trace_df: DataFrame, *, order: bool = True) -> Summary | None:
    """`Summary` of a trace frame (the batch's input) where one job shows it
    passes every check of `check_trace_frame`: `one_pass` over its rows, the
    start rows apart from the order scan, each event's (trace, id) hashed,
    with each partition's start rows and whether a row has an odd kind or
    clock or is a jump (`_starts_and_flags`); None where it does not (or
    cannot tell), and the exact checks name the problem. `order=False`: the
    order is left out (`_summary`)."""
    found = _scanned_columns(trace_df).mapInArrow(_scan_and_bucket, _ONE_PASS).repartition("bucket") \
        .mapInArrow(_merge_buckets, _ONE_PASS).collect()
    if any(row["suspect"] for row in found):
        return None
    return _summary(_runs_of(found), [row for row in found if row["is_start"]],
                    [row for row in found if row["odd"] is not None], order=order)


def one_pass(rows: DataFrame, *, traced: bool, ids: str | None) -> DataFrame:
    """`passes_checks`' job as a frame: the runs of each input partition
    (`bucket` null) and a row per merged task of whether it met a suspect."""
    sent = [F.col(c) for c in (("trace_id", "seq", "time") if traced else ("seq", "time"))]
    if ids is not None:
        sent.append(_id_hash(F.coalesce(F.expr(ids), F.lit(False))))
    scanned = rows.select(*sent).mapInArrow(_scan_and_bucket, _ONE_PASS)
    return scanned.repartition("bucket").mapInArrow(_merge_buckets, _ONE_PASS)


def runs_pass(runs: list, *, until: int | None = None, start: int | None = None) -> bool:
    """Whether the partitions' runs of a table (`_RUN` rows, of every trace)
    show it passes `check_events`: no null trace, seq or time, no negative
    seq, no seq twice and no time going back along seq (within each run, and
    between a trace's runs lined up by seq), no time after `until` nor before
    `start`. False also where the runs of a trace overlap (it cannot tell)."""
    by_trace: dict = {}
    for row in runs:
        by_trace.setdefault(row["trace_id"], []).append(row)
    for trace_id, parts in by_trace.items():
        n = sum(p["n"] for p in parts)
        lows = [p["lo"] for p in parts if p["lo"] is not None]
        if trace_id is None or sum(p["n_seq"] for p in parts) != n or sum(p["n_time"] for p in parts) != n:
            return False
        if (lows and min(lows) < 0) or any(p["bad_seq"] is not None for p in parts):
            return False
        lined = sorted((p for p in parts if p["first_seq"] is not None), key=lambda p: p["first_seq"])
        if any(a["last_seq"] >= b["first_seq"] or a["last_time"] > b["first_time"] for a, b in zip(lined, lined[1:])):
            return False
        if until is not None and any(p["latest"] is not None and p["latest"] > until for p in parts):
            return False
        if start is not None and lined and lined[0]["first_time"] < start:
            return False
    return True


def _one_pass_schema():
    import pyarrow as pa

    return pa.schema([("trace_id", pa.string())] + [(name, pa.int64()) for name in _RUN_LONGS]
                     + [("bucket", pa.int32()), ("hashes", pa.binary()), ("suspect", pa.bool_()),
                        ("odd", pa.bool_()), ("jumps", pa.bool_()), ("is_start", pa.bool_()), ("start_time", pa.int64())])


def _scan_and_bucket(batches):
    """mapInArrow: one input partition's (trace_id?, seq, time[, h][, flags]) rows -> its runs
    (`_scan_partition`) and its hashes' sorted runs per bucket or a suspect (`_sorted_hash_runs`)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    schema = _one_pass_schema()
    if "flags" in table.column_names:  # a trace frame's (`trace_frame_summary`)
        start = _flags(table, START_BIT)
        yield from _starts_and_flags(table, schema, start)
        table = table.filter(pa.array(~start))
    names = [n for n in ("trace_id", "seq", "time") if n in table.column_names]
    for run in _scan_partition(table.select(names).to_batches()):
        yield _widened(run, schema)
    if "h" in table.column_names:
        # the events' hashes (a row that is no event has none)
        hashes = table.select(["h"]).filter(pc.is_valid(table.column("h")))
        for run in _sorted_hash_runs(hashes.to_batches()):
            if run.num_rows:
                yield _widened(run, schema)


def _widened(batch, schema):
    """`batch` in `schema`'s columns: a column it lacks is null."""
    import pyarrow as pa

    columns = {name: batch.column(name) for name in batch.schema.names}
    return pa.RecordBatch.from_arrays([columns.get(f.name, pa.nulls(batch.num_rows, f.type)) for f in schema],
                                      schema=schema)


def _merge_buckets(batches):
    """mapInArrow: the scan's rows of one or more buckets (and the runs, bucket null) -> the runs as they
    came and one row of whether a suspect came or a hash was met in two partitions' runs."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    schema = _one_pass_schema()
    blobs, suspect, any_hashes = [], False, False
    for batch in batches:
        is_run = pc.is_null(batch.column("bucket"))
        runs = batch.filter(is_run)
        if runs.num_rows:
            yield runs
        hashed = batch.filter(pc.invert(is_run))
        if hashed.num_rows:
            any_hashes = True
            suspect = suspect or bool(pc.any(hashed.column("suspect")).as_py())
            blobs += [np.frombuffer(blob, np.int64) for blob in hashed.column("hashes").to_pylist() if blob]
    if not any_hashes:
        return
    if not suspect and blobs:
        h = _merged_runs(blobs)
        suspect = bool((h[1:] == h[:-1]).any())
    yield pa.RecordBatch.from_arrays([pa.nulls(1, f.type) if f.name not in ("bucket", "suspect") else
                                      pa.array([0] if f.name == "bucket" else [suspect], f.type) for f in schema],
                                     schema=schema)


# The problems `check_events` finds, by rank: the first by (rank, trace, seq) is reported.
_NULL_TRACE, _NULL_ORDER, _NEGATIVE, _NULL_TIME, _LATE, _OUT_OF_ORDER, _EARLY = range(7)
_OVERLAP = -1  # not a problem: the partition scan cannot decide a trace, the full check runs
_PROBLEM = "rank int, trace_id string, seq long, prev_seq long, time long, prev_time long, n long"

# What `_scan_partition` returns per (input partition, trace): counts, the least
# seq, the first seq with a null time, the latest time, the first and last row by
# seq among rows with both seq and time, and the first row (by seq) that repeats
# the seq before it or goes back in time.
_RUN = ("trace_id string, n long, n_seq long, n_time long, lo long, null_time_at long, latest long, "
        "first_seq long, first_time long, last_seq long, last_time long, "
        "bad_seq long, bad_prev_seq long, bad_time long, bad_prev_time long")


def check_events(rows: DataFrame, *, order_col: str, time_col: str, trace_col: str | None,
                 until: int | None, order: bool = True, start: int | None = None) -> None:
    """Raise `InvalidFrame` for the first problem of an event table already
    renamed to (trace_id, seq, time): a null trace, order or time value, a
    negative order value, an `until` before a trace's last event, a repeated
    order value or a time going back along the order. `order=False` checks
    `until` only (one aggregate). With `start`, an event before it (the clock
    the window is created at) is a problem too.

    Fast path, one scan and no sort of the table: each input partition is
    scanned as it lies by `_scan_partition` (Arrow batches through numpy: Spark
    SQL compares a row with the one before it only after a shuffle and sort of
    the whole table, which would cost as much as the window itself). It gives
    each trace's runs of rows in that partition (split where the seqs skip),
    checked within; a trace's runs, lined up by seq, are then compared end to
    first (a few rows per trace and partition). A table written in order (a
    log, a Parquet export, several files of one packed into a task) has runs
    of disjoint seq ranges, and the scan decides it. If some trace's runs
    overlap, the scan cannot, and `_full_check` sorts the table instead."""
    if order:
        found = _first([scanned_problems(rows, until, traced=trace_col is not None, start=start)])
        if found is not None and found.rank == _OVERLAP:
            found = _first(_full_check(rows, until, start))
    else:
        late = rows.groupBy("trace_id").agg(F.expr("max(time)").alias("time")).where(F.col("time") > until)
        found = _first([late.selectExpr(f"{_LATE} AS rank", "trace_id", "time")])
    if found is not None:
        raise InvalidFrame(_describe(found, order_col, time_col, trace_col, until, start))


def scanned_problems(rows: DataFrame, until: int | None, traced: bool = True, start: int | None = None) -> DataFrame:
    """The problems the partition scan finds, and an `_OVERLAP` row per trace
    it cannot decide: one exchange (by trace) of the runs, a few rows per trace
    and partition; every problem is a struct of a run's row."""
    sent = ("trace_id", "seq", "time") if traced else ("seq", "time")
    runs = rows.select(*sent).mapInArrow(_scan_partition, _RUN)
    whole, lined = "(PARTITION BY trace_id)", "(PARTITION BY trace_id ORDER BY first_seq)"
    lined_up = runs.selectExpr(
        "trace_id", "first_seq", "first_time", "bad_seq", "bad_prev_seq", "bad_time", "bad_prev_time",
        *(f"{fn}({c}) OVER {whole} AS {c}" for fn, c in (("sum", "n"), ("sum", "n_seq"), ("sum", "n_time"),
                                                         ("min", "lo"), ("min", "null_time_at"), ("max", "latest"))),
        f"min(first_time) OVER {whole} AS earliest",
        f"lag(last_seq) OVER {lined} AS prev_seq", f"lag(last_time) OVER {lined} AS prev_time",
    )
    return lined_up.selectExpr(
        "trace_id", "inline(filter(array("
        f"{_struct(_OVERLAP, 'first_seq', one='prev_seq >= first_seq')}, "
        f"{_struct(_OUT_OF_ORDER, 'bad_seq', 'bad_prev_seq', 'bad_time', 'bad_prev_time', one='bad_seq IS NOT NULL')}, "
        f"{_struct(_OUT_OF_ORDER, 'first_seq', 'prev_seq', 'first_time', 'prev_time', one='prev_time > first_time')}, "
        f"{_trace_structs(until, start)}), p -> p.n > 0))",
    )


def _struct(rank: int, seq: str = "NULL", prev_seq: str = "NULL", time: str = "NULL", prev_time: str = "NULL", *,
            one: str = "NULL", n: str | None = None) -> str:
    """SQL: a problem as a struct (`n` > 0 where there is one: `n`, else 1 where `one` holds)."""
    count = n if n is not None else f"IF({one}, 1, 0)"
    return (f"named_struct('rank', {rank}, 'seq', CAST({seq} AS BIGINT), 'prev_seq', CAST({prev_seq} AS BIGINT), "
            f"'time', CAST({time} AS BIGINT), 'prev_time', CAST({prev_time} AS BIGINT), "
            f"'n', CAST(coalesce({count}, 0) AS BIGINT))")


def _trace_structs(until: int | None, start: int | None = None) -> str:
    """SQL: the problems of a whole trace as structs, from its counts (columns n,
    n_seq, n_time, lo, null_time_at, latest, earliest)."""
    late = f"latest > {until}" if until is not None else "false"
    early = f"earliest < {start}" if start is not None else "false"
    return ", ".join((
        _struct(_NULL_TRACE, n="IF(trace_id IS NULL, n, 0)"),
        _struct(_NULL_ORDER, n="n - n_seq"),
        _struct(_NEGATIVE, "lo", one="lo < 0"),
        _struct(_NULL_TIME, "null_time_at", n="n - n_time"),
        _struct(_LATE, time="latest", one=late),
        _struct(_EARLY, time="earliest", one=early),
    ))


def _full_check(rows: DataFrame, until: int | None, start: int | None = None) -> list[DataFrame]:
    """The problems of any table, sorted: each trace's seq range is cut into
    about one bucket per CHECK_ROWS_PER_BUCKET rows (so one long trace spreads
    over every task); within a bucket each row is compared with the one before
    it by seq, and each bucket's first row with the previous bucket's last."""
    per_trace = rows.groupBy("trace_id").agg(
        F.expr("count(1)").alias("n"), F.expr("count(seq)").alias("n_seq"), F.expr("count(time)").alias("n_time"),
        F.expr("min(seq)").alias("lo"), F.expr("max(seq)").alias("hi"),
        F.expr("min(CASE WHEN time IS NULL THEN seq END)").alias("null_time_at"),
        F.expr("max(time)").alias("latest"), F.expr("min(time)").alias("earliest"),
    )
    width = f"(hi - lo) div greatest(1, n_seq div {CHECK_ROWS_PER_BUCKET}) + 1"
    placed = rows.where("trace_id IS NOT NULL AND seq IS NOT NULL AND time IS NOT NULL").select(
        "trace_id", "seq", "time"
    ).join(F.broadcast(per_trace.selectExpr("trace_id", "lo", f"{width} AS width")), "trace_id").selectExpr(
        "trace_id", "seq", "time", "(seq - lo) div width AS bucket"
    )
    within = placed.selectExpr(
        "trace_id", "seq", "time",
        "lag(seq) OVER (PARTITION BY trace_id, bucket ORDER BY seq) AS prev_seq",
        "lag(time) OVER (PARTITION BY trace_id, bucket ORDER BY seq) AS prev_time",
    ).where("prev_seq = seq OR prev_time > time").selectExpr(f"{_OUT_OF_ORDER} AS rank", "*")
    ends = placed.groupBy("trace_id", "bucket").agg(
        F.expr("min(seq)").alias("first_seq"), F.expr("min_by(time, seq)").alias("first_time"),
        F.expr("max(seq)").alias("last_seq"), F.expr("max_by(time, seq)").alias("last_time"),
    )
    across = ends.selectExpr(
        "trace_id", "first_seq AS seq", "first_time AS time",
        "lag(last_seq) OVER (PARTITION BY trace_id ORDER BY bucket) AS prev_seq",
        "lag(last_time) OVER (PARTITION BY trace_id ORDER BY bucket) AS prev_time",
    ).where("prev_time > time").selectExpr(f"{_OUT_OF_ORDER} AS rank", "*")
    whole = per_trace.selectExpr("trace_id", f"inline(filter(array({_trace_structs(until, start)}), p -> p.n > 0))")
    return [whole, within, across]


def _first(problems: list[DataFrame]):
    """The first row by (rank, trace, seq) of the problem frames (missing
    columns null), or None: one Spark job."""
    columns = [c.split() for c in _PROBLEM.split(", ")]
    shaped = [p.selectExpr(*(f"CAST({name if name in p.columns else 'NULL'} AS {kind}) AS {name}"
                             for name, kind in columns)) for p in problems]
    found = reduce(DataFrame.unionByName, shaped).orderBy("rank", "trace_id", "seq").limit(1).collect()
    return found[0] if found else None


def _scan_partition(batches):
    """mapInArrow: one input partition's (trace_id, seq, time) rows -> `_RUN`
    rows: per trace in it, a run per stretch of its seqs that does not skip
    (a partition of several files' rows, each in order, holds several), its
    counts on the first; one run per trace where the seqs skip more than
    `_MAX_SKIPS` times (sparse order values). Rows are sorted by (trace,
    seq) here (a partition written in order is already sorted, which
    numpy's sort finds cheap)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    if "trace_id" in table.column_names:
        encoded = pc.dictionary_encode(table.column("trace_id").combine_chunks())
        traces = encoded.dictionary.to_pylist() + [None]
        code = encoded.indices.fill_null(len(traces) - 1).to_numpy(zero_copy_only=False).astype(np.int64)
    else:  # one trace: its name is not sent (a string per row costs as much as the longs)
        traces = [ONE_TRACE, None]
        code = np.zeros(table.num_rows, np.int64)
    groups = len(traces)
    seq_col, time_col = table.column("seq").combine_chunks(), table.column("time").combine_chunks()
    has_seq = seq_col.is_valid().to_numpy(zero_copy_only=False)
    has_time = time_col.is_valid().to_numpy(zero_copy_only=False)
    seq = seq_col.fill_null(0).to_numpy(zero_copy_only=False)
    time = time_col.fill_null(0).to_numpy(zero_copy_only=False)
    out = {name: np.zeros(groups, np.int64) for name in _RUN_LONGS}
    known = {name: np.zeros(groups, bool) for name in _RUN_LONGS}

    def put(name, at, values):
        out[name][at], known[name][at] = values, True

    put("n", slice(None), np.bincount(code, minlength=groups))
    put("n_seq", slice(None), np.bincount(code[has_seq], minlength=groups))
    put("n_time", slice(None), np.bincount(code[has_time], minlength=groups))
    # rows with a seq, sorted by (trace, seq); a partition written in order needs no sort
    c, s, t, timed = code, seq, time, has_time
    if not has_seq.all():
        c, s, t, timed = c[has_seq], s[has_seq], t[has_seq], timed[has_seq]
    if not _ascending(c, s):
        order = np.lexsort((s, c))
        c, s, t, timed = c[order], s[order], t[order], timed[order]
    if len(c):
        starts = np.flatnonzero(np.r_[True, c[1:] != c[:-1]])
        put("lo", c[starts], s[starts])
    untimed = np.flatnonzero(~timed)
    if len(untimed):
        which, first = np.unique(c[untimed], return_index=True)
        put("null_time_at", which, s[untimed[first]])
    # rows with a trace, a seq and a time, in runs: a trace's rows split where its seqs skip (a partition may
    # hold several files' rows, each a stretch in order, and its runs must line up with the other
    # partitions' between them); one run per trace where the order values are sparse (too many skips)
    keep = timed & (c < groups - 1)
    if not keep.all():
        c, s, t = c[keep], s[keep], t[keep]
    extra = {}
    if len(c):
        trace_start = np.r_[True, c[1:] != c[:-1]]
        cut = trace_start | np.r_[False, (s[1:] > s[:-1] + 1)]
        if np.count_nonzero(cut) - np.count_nonzero(trace_start) > _MAX_SKIPS:
            cut = trace_start
        starts = np.flatnonzero(cut)
        ends = np.r_[starts[1:] - 1, len(c) - 1]
        run_latest = np.maximum.reduceat(t, starts)
        first_run = trace_start[starts]  # each trace's first run carries its counts
        which = c[starts[first_run]]
        put("first_seq", which, s[starts[first_run]])
        put("first_time", which, t[starts[first_run]])
        put("last_seq", which, s[ends[first_run]])
        put("last_time", which, t[ends[first_run]])
        put("latest", which, run_latest[first_run])
        run_of_row = np.cumsum(cut) - 1
        bad = np.flatnonzero(~cut[1:] & ((s[1:] == s[:-1]) | (t[1:] < t[:-1]))) + 1
        bad_run, first = np.unique(run_of_row[bad], return_index=True)
        at = bad[first]
        on_first = first_run[bad_run]
        for name, values in (("bad_seq", s[at]), ("bad_prev_seq", s[at - 1]), ("bad_time", t[at]),
                             ("bad_prev_time", t[at - 1])):
            put(name, c[at[on_first]], values[on_first])
        later = np.flatnonzero(~first_run)
        if len(later):
            runs = len(later)
            extra = {"trace": c[starts[later]], "n": np.zeros(runs, np.int64), "first_seq": s[starts[later]],
                     "first_time": t[starts[later]], "last_seq": s[ends[later]], "last_time": t[ends[later]],
                     "latest": run_latest[later]}
            bad_at = dict(zip(bad_run.tolist(), at.tolist()))
            rows_at = [bad_at.get(r) for r in later.tolist()]
            marked = np.array([r is not None for r in rows_at], bool)
            index = np.array([r if r is not None else 1 for r in rows_at], np.int64)
            extra.update({"bad_seq": (s[index], marked), "bad_prev_seq": (s[index - 1], marked),
                          "bad_time": (t[index], marked), "bad_prev_time": (t[index - 1], marked)})
    present = np.flatnonzero(out["n"] > 0)
    columns = {"trace_id": pa.array([traces[i] for i in present], pa.string())}
    for name in _RUN_LONGS:
        columns[name] = pa.array(out[name][present], pa.int64(), mask=~known[name][present])
    yield pa.RecordBatch.from_pydict(columns)
    if extra:  # a trace's later runs: its counts are on its first
        columns = {"trace_id": pa.array([traces[i] for i in extra["trace"]], pa.string())}
        for name in _RUN_LONGS:
            value = extra.get(name, extra["n"] if name in ("n", "n_seq", "n_time") else None)
            if value is None:
                columns[name] = pa.nulls(len(extra["trace"]), pa.int64())
            elif isinstance(value, tuple):
                columns[name] = pa.array(value[0], pa.int64(), mask=~value[1])
            else:
                columns[name] = pa.array(value, pa.int64())
        yield pa.RecordBatch.from_pydict(columns)


#: a partition's runs split at most this many times where a trace's seqs skip (`_scan_partition`)
_MAX_SKIPS = 64


def _ascending(codes, seqs) -> bool:
    """Whether rows are sorted by (trace code, seq)."""
    import numpy as np

    if len(codes) < 2:
        return True
    step = np.diff(codes)
    return bool((step >= 0).all() and (np.diff(seqs)[step == 0] >= 0).all())


_RUN_LONGS = tuple(c.split()[0] for c in _RUN.split(", ")[1:])
#: `_scan_and_bucket`'s rows: a partition's runs (`_RUN`, `bucket` null), or one bucket of its events' sorted
#: (trace, id) hashes (`hashes`), or a suspect (`suspect`: an event without an id, a hash met twice)
_ONE_PASS = (_RUN + ", bucket int, hashes binary, suspect boolean, odd boolean, jumps boolean, is_start boolean, "
             "start_time long")


def _describe(problem, order_col: str, time_col: str, trace_col: str | None, until: int | None,
              start: int | None = None) -> str:
    in_trace = f" in trace {problem.trace_id!r}" if trace_col else ""
    rows = "row" if problem.n == 1 else "rows"
    if problem.rank == _NULL_TRACE:
        return f"trace_col {trace_col!r} is null in {problem.n} {rows}"
    if problem.rank == _NULL_ORDER:
        return f"order_col {order_col!r} is null in {problem.n} {rows}{in_trace}"
    if problem.rank == _NEGATIVE:
        return f"order_col {order_col!r} is negative{in_trace}: {problem.seq} (positions start at 0)"
    if problem.rank == _NULL_TIME:
        return f"time_col {time_col!r} is null at {order_col}={problem.seq}{in_trace} ({problem.n} {rows} in all)"
    if problem.rank == _LATE:
        whose = f"trace {problem.trace_id!r}" if trace_col else "the table"
        return f"until={until} ms is before the last event of {whose}, at {problem.time} ms"
    if problem.rank == _EARLY:
        return (f"time_col {time_col!r} is {problem.time} ms{in_trace}, before the window's start at {start} ms "
                "(an event arrives at or after the clock the window is created at)")
    if problem.prev_seq == problem.seq:
        return (f"order_col {order_col!r} has the value {problem.seq} more than once{in_trace} "
                "(an event's position is unique)")
    return (f"time_col {time_col!r} goes back along order_col {order_col!r}{in_trace}: "
            f"{problem.time} ms at {order_col}={problem.seq}, after {problem.prev_time} ms at {order_col}={problem.prev_seq}")


# --------------------------------------------------------------------------- a trace frame


def check_trace_frame(trace_df: DataFrame, per_trace: list | None = None, scanned: list | None = None) -> bool:
    """Raise `InvalidFrame` for the first problem of a trace frame (the input of
    `apply_window`), naming the column, the trace and the value: what the
    oracle refuses in a trace: a valid frame in one Spark job
    (`trace_frame_summary`: the order runs, the id hashes and the per-trace
    figures below in one pass), or two where the order scan cannot decide
    (a frame read from several files: the exact order check follows); a
    frame with a problem in up to four more, which name it. Returns whether
    the frame holds a `jump` item (found by the first job: a plan for input
    without jumps is cheaper).

    * per trace (one aggregate, `trace_checks`): a kind that is null or not one
      of `KINDS`, an event without an id, a clock further than 2^62 ms from 0,
      more than one `start` row, a start time after the first item's time;
    * an id twice in a trace: `ids_may_repeat` (hashes sorted in numpy); where
      it finds a suspect, or the aggregate a problem, the aggregate runs again
      counting each trace's distinct ids, and names the first problem;
    * then the order: a null trace, seq or time, a negative seq, a seq twice, a
      time going back along seq (`check_events` on the items: one scan of a
      frame written in order, a sort otherwise).

    `per_trace`: the aggregate's rows, one per trace, computed by the caller
    in a job it runs anyway (the stream's survey: `trace_checks`' columns
    beside its own), so the checks run two jobs; with `scanned` too (the
    rows of `scan_and_hash` over the same frame, from the same job) none
    where `scan_decides` finds nothing."""
    if per_trace is None:
        summary = trace_frame_summary(trace_df, order=False)
        if summary is not None:  # every check but the order passes: one job, or the exact order check too
            if not summary.ordered:
                check_events(trace_df.where("kind <> 'start'").select("trace_id", "seq", "time"), order_col="seq",
                             time_col="time", trace_col="trace_id", until=None)
            return summary.jumps
        found = _first_trace_problem(trace_df, distinct_ids=False)
        first, jumps = found.first, found.jumps
    else:
        problems = [row for row in per_trace if row[TRACE_PROBLEM]]
        first = min(problems, key=lambda row: row["trace_id"]) if problems else None
        jumps = any(row["jumps"] for row in per_trace)
        if first is None and scanned is not None and scan_decides(scanned):
            return jumps
    if first is None and passes_checks(trace_df.where("kind <> 'start'"), traced=True, ids="kind = 'event'"):
        return jumps
    if first is not None or ids_may_repeat(trace_df.where("kind = 'event'").select("trace_id", "id")):
        # a problem, or ids that may repeat: the exact aggregate names the first problem
        first = _first_trace_problem(trace_df, distinct_ids=True).first
    if first is None:
        items = trace_df.where("kind <> 'start'").select("trace_id", "seq", "time")
        check_events(items, order_col="seq", time_col="time", trace_col="trace_id", until=None)
        return jumps
    _raise_trace_problem(trace_df, first)


#: `scan_and_hash`'s rows: a partition's runs (`_RUN`, the rest null), one row of its events' hashes and of
#: what its rows' kinds and clocks show (`trace_id` null), or a `start` item of it (`is_start`, its seq as `lo`)
_SCANNED = _RUN + ", hashes binary, missing_id boolean, odd boolean, jumps boolean, is_start boolean, start_time long"


def scan_and_hash(trace_df: DataFrame) -> DataFrame:
    """The order scan and the id hashes of a trace frame in one pass over
    each input partition (Arrow through numpy, no shuffle), for a caller that
    collects them with rows of its own in one job (the stream's survey), then
    asks `scan_decides` or `scanned_summary`: per partition, the runs
    `check_events` scans of its items (the start rows apart;
    `_scan_partition`), its start rows (trace and time), and one row of its
    events' 64-bit (trace, id) hashes, sorted, 8 bytes an event, with whether
    an event has no id (`MISSING_ID` among them), a row has an odd kind or
    clock (`trace_checks`' null or unknown kind, a clock past 2^62) and a row
    is a jump:
    `ids_may_repeat`'s runs without its shuffle, merged on the driver."""
    return _scanned_columns(trace_df).mapInArrow(_scan_and_hash_partition, _SCANNED)


def _scanned_columns(trace_df: DataFrame) -> DataFrame:
    """What a one-pass scan of a trace frame reads of each row: trace_id, seq, time, its event's (trace, id)
    hash (`_id_hash`: `MISSING_ID` where the event lacks an id) and `flags`: whether it is the start row
    (`START_BIT`), its kind or clock is odd (`ODD_BIT`: `trace_checks`' null or unknown kind, a clock past
    2^62), it is a jump (`JUMP_BIT`)."""
    kinds = ", ".join(f"'{k}'" for k in frames.KINDS)
    flags = (f"CAST(IF(kind = 'start', {START_BIT}, 0) + IF(kind = 'jump', {JUMP_BIT}, 0) + IF(coalesce(kind IS NULL "
             f"OR kind NOT IN ({kinds}) OR abs(time) > {MAX_CLOCK}, false), {ODD_BIT}, 0) AS TINYINT)")
    return trace_df.select("trace_id", "seq", "time", _id_hash(F.coalesce(F.col("kind") == "event", F.lit(False))),
                           F.expr(flags).alias("flags"))


def _scan_and_hash_partition(batches):
    """mapInArrow: one input partition's `_scanned_columns` -> `_SCANNED` rows."""
    import numpy as np
    import pyarrow as pa

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches)
    start = _flags(table, START_BIT)
    items = table.filter(pa.array(~start)).select(["trace_id", "seq", "time"])
    schema = _scanned_schema()
    for run in _scan_partition(items.to_batches()):
        yield _widened(run, schema)
    hashes = np.sort(table.column("h").drop_null().to_numpy().astype(np.int64))
    yield from _starts_and_flags(table, schema, start, hashes=hashes.tobytes(),
                                 missing_id=bool(len(hashes) and hashes[0] == MISSING_ID))


def _scanned_schema():
    import pyarrow as pa

    return pa.schema([("trace_id", pa.string())] + [(name, pa.int64()) for name in _RUN_LONGS]
                     + [("hashes", pa.binary()), ("missing_id", pa.bool_()), ("odd", pa.bool_()),
                        ("jumps", pa.bool_()), ("is_start", pa.bool_()), ("start_time", pa.int64())])


def scan_decides(scanned: list) -> bool:
    """Whether the rows of `scan_and_hash` show the frame passes the order and
    id checks: no event without an id and no hash met twice, and the runs
    pass (`runs_pass`). False also where it cannot tell (runs that overlap, a
    hash met twice: two ids may share one): the caller then runs the exact
    checks."""
    import numpy as np

    hashes = []
    for row in scanned:
        if row["hashes"] is not None:
            if row["missing_id"]:
                return False
            hashes.append(np.frombuffer(row["hashes"], np.int64))
    if hashes:
        h = _merged_runs(hashes)
        if bool((h[1:] == h[:-1]).any()):
            return False
    return runs_pass(_runs_of(scanned))


@frozen
class Summary:
    """What the rows of `scan_and_hash` show of a trace frame that passes
    every check of `check_trace_frame`: per trace (`traces`, by id) its
    items' count `n` (the start row apart), least and greatest seq `lo`,
    `hi`, `start_rows`, `early`, its earliest item by (time, seq)
    (`{"time", "seq"}`), and `clock`, its latest time; `jumps`, whether an
    item is a jump."""

    traces: dict
    jumps: bool
    ordered: bool = True  # the runs showed the order passes (`_summary`'s `order=False` may not know)


def scanned_summary(scanned: list) -> Summary | None:
    """`Summary` from the rows of `scan_and_hash`, where they show the frame
    passes every check of `check_trace_frame`: `scan_decides` (ids and
    order), then `_summary` (the per-trace aggregate's checks). None where
    they do not (or cannot tell): the caller runs the exact aggregate, which
    names the problem."""
    if not scan_decides(scanned):
        return None
    flags = [row for row in scanned if row["hashes"] is not None]
    return _summary(_runs_of(scanned), [row for row in scanned if row["is_start"]], flags)


def _summary(runs: list, starts: list, flags: list, *, order: bool = True) -> Summary | None:
    """`Summary` of a frame whose ids passed, from its partitions' runs,
    start rows and flag rows (`odd`, `jumps`), where they show it passes the
    rest of `check_trace_frame`: the order (`runs_pass`) and the per-trace
    aggregate's (`trace_checks`) checks, no odd kind or clock, no trace
    with two start rows or one after its first item's clock, no start row of
    a seq but -1. None where they do not. On a frame that passes, the time
    grows with `seq` in each trace, so a trace's earliest item is its first
    by seq. `order=False`: everything but the order (the caller checks it
    exactly), the figures then only as good as the order."""
    if any(row["odd"] for row in flags) or (order and not runs_pass(runs)):
        return None
    by_trace: dict = {}
    for row in runs:
        by_trace.setdefault(row["trace_id"], []).append(row)
    first_times: dict = {}
    for row in starts:
        if row["trace_id"] is None or row["trace_id"] in first_times or row["lo"] != frames.START_SEQ:
            return None  # a start row without a trace or of another seq, or a trace's second
        first_times[row["trace_id"]] = row["start_time"]
    traces = {}
    for trace_id in by_trace.keys() | first_times.keys():
        parts = [p for p in by_trace.get(trace_id, []) if p["first_seq"] is not None]
        first = min(parts, key=lambda p: p["first_seq"]) if parts else None
        if first is not None and first_times.get(trace_id) is not None and first_times[trace_id] > first["first_time"]:
            return None  # the start after the first item
        traces[trace_id] = {
            "n": sum(p["n"] for p in parts), "lo": first and first["first_seq"],
            "hi": max(p["last_seq"] for p in parts) if parts else None, "start_rows": int(trace_id in first_times),
            "early": first and {"time": first["first_time"], "seq": first["first_seq"]},
            "clock": max(p["latest"] for p in parts) if parts else None}
    return Summary(traces, any(row["jumps"] for row in flags), order or runs_pass(runs))


#: `trace_checks`' column telling a trace has a problem
TRACE_PROBLEM = "#problem"


def trace_checks(distinct_ids: bool = False) -> list:
    """The per-trace aggregate of `check_trace_frame` (its first bullet), as
    columns of a `groupBy("trace_id").agg(...)`, the last `TRACE_PROBLEM`:
    whether the trace has one. `distinct_ids`: count each trace's distinct
    ids too (an id twice is then a problem: a shuffle of every (trace, id));
    without it, the caller finds a repeat with `ids_may_repeat`."""
    kinds = ", ".join(f"'{k}'" for k in frames.KINDS)
    distinct = "count(DISTINCT id)" if distinct_ids else "count(id)"
    aggregates = {
        "bad_kind_seq": f"min_by(seq, seq) FILTER (WHERE kind IS NULL OR kind NOT IN ({kinds}))",
        "bad_kind": f"min_by(kind, seq) FILTER (WHERE kind IS NULL OR kind NOT IN ({kinds}))",
        "no_id_seq": "min(seq) FILTER (WHERE kind = 'event' AND id IS NULL)",
        "ids": "count(id) FILTER (WHERE kind = 'event')",
        "distinct_ids": f"{distinct} FILTER (WHERE kind = 'event')",
        "far_seq": f"min_by(seq, seq) FILTER (WHERE abs(time) > {MAX_CLOCK})",
        "far_time": f"min_by(time, seq) FILTER (WHERE abs(time) > {MAX_CLOCK})",
        "starts": "count(1) FILTER (WHERE kind = 'start')",
        "start_time": "max(time) FILTER (WHERE kind = 'start')",
        "first_time": "min_by(time, seq) FILTER (WHERE kind <> 'start')",
        "first_seq": "min(seq) FILTER (WHERE kind <> 'start')",
        "jumps": "count(1) FILTER (WHERE kind = 'jump')",
    }
    # an aggregate's own expression again: FILTERed counts are never null, the rest may be
    a = {name: f"({sql})" for name, sql in aggregates.items()}
    problem = (f"{a['bad_kind_seq']} IS NOT NULL OR {a['no_id_seq']} IS NOT NULL OR {a['ids']} <> {a['distinct_ids']} "
               f"OR {a['far_seq']} IS NOT NULL OR {a['starts']} > 1 OR coalesce({a['start_time']} > {a['first_time']}, "
               "false)")
    return [F.expr(sql).alias(name) for name, sql in aggregates.items()] + [F.expr(problem).alias(TRACE_PROBLEM)]


def _first_trace_problem(trace_df: DataFrame, distinct_ids: bool):
    """One job: the first trace (by id) with a problem of the per-trace
    aggregate (`first`: its figures, None if none) and whether any trace jumps
    (`jumps`)."""
    per_trace = trace_df.groupBy("trace_id").agg(*trace_checks(distinct_ids))
    return per_trace.agg(
        F.expr(f"min_by(struct(*), trace_id) FILTER (WHERE `{TRACE_PROBLEM}`)").alias("first"),
        F.expr("coalesce(sum(jumps), 0) > 0").alias("jumps")).first()


def _raise_trace_problem(trace_df: DataFrame, p) -> None:
    """`InvalidFrame` for the per-trace problem `p` (`_first_trace_problem`'s `first`)."""
    where = f"in trace {p.trace_id!r}"
    if p.bad_kind_seq is not None:
        raise InvalidFrame(f"column 'kind' is {p.bad_kind!r} at seq={p.bad_kind_seq} {where}; "
                           f"kinds: {', '.join(frames.KINDS)}")
    if p.no_id_seq is not None:
        raise InvalidFrame(f"column 'id' is null on the event at seq={p.no_id_seq} {where}")
    if p.ids != p.distinct_ids:
        repeated = (trace_df.where(F.col("trace_id") == p.trace_id).where("kind = 'event'").groupBy("id")
                    .agg(F.expr("min(seq)").alias("seq"), F.expr("count(1)").alias("n")).where("n > 1")
                    .orderBy("seq").first())
        raise InvalidFrame(f"column 'id' has the value {repeated.id!r} more than once {where} "
                           f"(first at seq={repeated.seq}; an event's id is unique in its trace)")
    if p.far_seq is not None:
        raise InvalidFrame(f"column 'time' is {p.far_time} ms at seq={p.far_seq} {where}, further than 2**62 ms "
                           "from 0 (a clock plus a period must fit a 64-bit long)")
    if p.starts > 1:
        raise InvalidFrame(f"{where}: {p.starts} rows of kind 'start'; a trace has at most one")
    raise InvalidFrame(f"column 'time' goes back {where}: the start row's {p.start_time} ms is after "
                       f"{p.first_time} ms at seq={p.first_seq}")

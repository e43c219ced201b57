"""The logical clock of the Spark implementation (CORPUS.md "Input items",
DESIGN.md "The clock"), as relational operations over whole traces.

* `prepare(items)` adds `prev_time`, the clock before each item: the previous
  item's `time` in `seq` order; before the first item, the creation clock (a
  `start` row's `time`, default 0). Every item but a jump walks from `prev_time`
  to `time` (an event first walks, then arrives at `time`); a jump jumps.
* `fire_units(items, dues, width)` finds where timers fire. A timer due at `d` fires in
  the unit of work of the first item (by `seq`) whose clock reaches `d`:
  - a walk (event or advance) stops at `d` itself: the timer fires at `time = d`,
    phase 0, before the item's arrival (a timer due at an event's arrival time
    fires before the event);
  - a jump fires it once, at the jump's target;
  - a timer no item reaches never fires (the end of a trace flushes nothing).
  A timer re-armed at a walk's stop can fall due later in the same walk, and one
  re-armed at a jump waits for the next item: both follow from the rule above,
  since a re-armed timer is due strictly after the clock that armed it.
* `locate(points, intervals, keys)`: for a monotone "clock" of one key (here
  `#ext_timed`'s running maximum timestamp per sub-window), the interval
  `(lo, hi]` holding each point.

Both lookups are one union and one window: points and marks sorted by time
descending (a mark before a point at the same time), and a running `last` mark
over a frame from unbounded preceding to the current row, which Spark computes
in one pass (a frame up to unbounded following would be recomputed per row).

`fire_units` does not read `prev_time` and never sorts a whole trace in one
task, so a trace of millions of events spreads over the cluster:
* the marks are the items that first reach each distinct clock time (a hash
  aggregate by trace and time: the item with the lowest seq at that time);
* the time axis of each trace is cut into buckets of `width` ms (the callers
  pass a multiple of the window's span), and the window partitions by
  (trace, bucket). A due time whose bucket holds no mark at or after it is
  reached by the first mark of the next non-empty bucket: a small window over
  one row per non-empty bucket (partitioned by trace) copies that mark, as a
  sentinel sorting after every other, into the bucket before it and every
  empty bucket between (one row per bucket: a gap of G ms costs G / width rows).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

#: a `fire_units` bucket is this many spans of the window wide
BUCKET_SPANS = 64

JUMP = "jump"
LONG_MAX = 2**63 - 1
START = "start"

# Column names of this module's inputs and outputs. They start with `#`, which no
# event property can (a property name is an identifier), so they never clash
# with the properties the callers carry along.
DUE = "#due"  # fire_units: a timer's due time
FIRE_SEQ = "#fire_seq"  # fire_units: the item whose walk or jump fires it
FIRE_TIME = "#fire_time"  # fire_units: the clock it fires at
AT = "#at"  # locate: a point
CREATED = "#created"  # creation: the window's creation clock
LO, HI = "#lo", "#hi"  # locate: an interval (lo, hi]


def prepare(items: DataFrame) -> DataFrame:
    """`items` with `prev_time`: the clock before each item (module docstring).

    A `start` row, if present, sorts first whatever its `seq`; its own
    `prev_time` is its `time`. A null `time` is skipped when looking back for the
    previous clock. (This is a window over each whole trace; nothing in the
    timed families reads `prev_time`, so Spark prunes it for them.)
    """
    order = Window.partitionBy("trace_id").orderBy((F.col("kind") != START).asc(), F.col("seq").asc())
    previous = F.last("time", ignorenulls=True).over(order.rowsBetween(Window.unboundedPreceding, -1))
    return items.withColumn(
        "prev_time",
        F.when(F.col("kind") == START, F.col("time")).otherwise(F.coalesce(previous, F.lit(0))).cast("long"),
    )


def bucket_width(span: int) -> int:
    """The `fire_units` bucket width for a window of this span: `BUCKET_SPANS` spans."""
    return BUCKET_SPANS * span


def creation(items: DataFrame) -> DataFrame:
    """One row per trace: `trace_id` and `CREATED`, the clock when the window is
    created (its `start` row's time, else 0)."""
    start = F.min(F.when(F.col("kind") == START, F.col("time")))
    return items.groupBy("trace_id").agg(F.coalesce(start, F.lit(0)).cast("long").alias(CREATED))


def floor_div(value: Column, divisor: Column | int) -> Column:
    """`floor(value / divisor)` in exact long arithmetic (`divisor` > 0)."""
    divisor = F.lit(divisor) if isinstance(divisor, int) else divisor
    return F.call_function("div", value - F.pmod(value, divisor), divisor)


def fire_units(
    items: DataFrame, dues: DataFrame, width: int, *, keep: bool = False, from_start: bool = False
) -> DataFrame:
    """`dues` (columns `trace_id`, `DUE`, and any others) with the unit of work
    each timer fires in: `FIRE_SEQ`, the item, and `FIRE_TIME`, the clock (a
    walk: the due time; a jump: its target). Timers no item reaches are dropped,
    or with `keep` kept with both columns null. `width`: the bucket width, ms
    (any positive width gives the same result; module docstring).

    `from_start`: some timers may fall due before the first item's clock (a
    window armed at creation); sentinels then reach back to the `start` row's
    bucket. Otherwise every due time is after the first item's clock (timers are
    armed by arrivals), and they start at the first item's bucket."""
    bucket = lambda t: floor_div(t, width)  # noqa: E731
    # a mark as one long, 2 * seq + (1 if a jump), so a hash aggregate can take its minimum
    marks = (
        items.where(F.col("kind") != START)
        .groupBy("trace_id", F.col("time").alias("#t"))
        .agg(F.min(F.col("seq") * 2 + (F.col("kind") == JUMP).cast("long")).alias("#m"))
        .select("trace_id", bucket(F.col("#t")).alias("#b"), "#t", F.lit(1).alias("#k"), "#m")
    )
    placed = dues.select("trace_id", bucket(F.col(DUE)).alias("#b"), F.col(DUE).alias("#t"), F.lit(0).alias("#k"), *[
        c for c in dues.columns if c != "trace_id"
    ])
    if from_start:
        starts = items.where(F.col("kind") == START).select("trace_id", bucket(F.col("time")).alias("#b"))
        marks_and_start = marks.unionByName(starts, allowMissingColumns=True)
    else:
        marks_and_start = marks
    firsts = marks_and_start.groupBy("trace_id", "#b").agg(
        F.min("#t").alias("#first_t"), F.min_by("#m", "#t").alias("#first_m")
    )
    earlier = F.lag("#b").over(Window.partitionBy("trace_id").orderBy("#b"))
    sentinels = firsts.withColumn("#earlier", earlier).select(
        "trace_id",
        F.explode(F.sequence(F.col("#earlier"), F.col("#b") - 1)).alias("#b"),
        F.lit(LONG_MAX).alias("#t"),
        F.lit(1).alias("#k"),
        F.col("#first_m").alias("#m"),
        F.col("#first_t").alias("#hit_t"),
    )
    frame = (
        Window.partitionBy("trace_id", "#b")
        .orderBy(F.col("#t").desc(), F.col("#k").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    hit = F.when(F.col("#m").isNotNull(), F.struct(F.coalesce("#hit_t", "#t").alias("t"), F.col("#m").alias("m")))
    found = (
        placed.unionByName(marks, allowMissingColumns=True)
        .unionByName(sentinels, allowMissingColumns=True)
        .withColumn("#found", F.last(hit, ignorenulls=True).over(frame))
        .where(F.col("#k") == 0)
    )
    if not keep:
        found = found.where(F.col("#found").isNotNull())
    mark = F.col("#found").getField("m")
    jump = F.pmod(mark, F.lit(2)) == 1
    return found.select(
        *dues.columns,
        F.shiftright(mark, 1).alias(FIRE_SEQ),
        F.when(jump, F.col("#found").getField("t")).otherwise(F.when(mark.isNotNull(), F.col(DUE))).alias(FIRE_TIME),
    )


def locate(points: DataFrame, intervals: DataFrame, keys: Sequence[str], *, keep: bool = False) -> DataFrame:
    """For each row of `points` (columns `keys`, `AT`, any others), the interval of
    its key that holds its `AT`: `intervals` has columns `keys`, `LO`, `HI` and
    payload columns (named unlike the points' columns), and the intervals
    `(LO, HI]` of one key are disjoint. The result has the points' columns, `LO`,
    `HI` and the payload; a point no interval holds is dropped, or with `keep`
    kept with those columns null. Keys match null-safely (a null group key is a
    group of its own).

    The one-pass frame: module docstring."""
    keys = list(keys)
    payload = [c for c in intervals.columns if c not in keys]
    spread = intervals.select(*keys, F.col(HI).alias("#t"), F.lit(1).alias("#k"), F.struct(*payload).alias("#hit"))
    point_columns = [c for c in points.columns if c not in keys]
    placed = points.select(*keys, F.col(AT).alias("#t"), F.lit(0).alias("#k"), *point_columns)
    frame = (
        Window.partitionBy(*keys)
        .orderBy(F.col("#t").desc(), F.col("#k").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    found = placed.unionByName(spread, allowMissingColumns=True).withColumn(
        "#found", F.last("#hit", ignorenulls=True).over(frame)
    )
    holds = F.col("#found").getField(LO) < F.col(AT)
    wanted = (F.col("#k") == 0) if keep else (F.col("#k") == 0) & holds
    return found.where(wanted).select(
        *keys, *point_columns, *[F.when(holds, F.col("#found").getField(c)).alias(c) for c in payload]
    )

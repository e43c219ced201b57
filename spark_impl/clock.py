"""The logical clock of the Spark implementation (CORPUS.md "Input items",
DESIGN.md "The clock"), as relational operations over whole traces.

* `prepare(items)` adds `prev_time`, the clock before each item: the previous
  item's `time` in `seq` order; before the first item, the creation clock (a
  `start` row's `time`, default 0). Every item but a jump walks from `prev_time`
  to `time` (an event first walks, then arrives at `time`); a jump jumps.
* `creation(items)`: each trace's creation clock, as a small table.
* `fire_units(items, dues, width)` finds where timers fire. A timer due at `d`
  fires in the unit of work of the first item (by `seq`) whose clock reaches `d`:
  - a walk (event or advance) stops at `d` itself: the timer fires at `time = d`,
    phase 0, before the item's arrival (a timer due at an event's arrival time
    fires before the event);
  - a jump fires it once, at the jump's target;
  - a timer no item reaches never fires (the end of a trace flushes nothing).
  A timer re-armed at a walk's stop can fall due later in the same walk, and one
  re-armed at a jump waits for the next item: both follow from the rule above,
  since a re-armed timer is due strictly after the clock that armed it.

How `fire_units` finds that item, without reading `prev_time` and without
sorting a whole trace in one task (a trace of millions of events spreads over
the cluster):
* the marks: for each distinct clock time of a trace, the first item (lowest
  seq) at that time, the one whose walk or jump reached it (a hash aggregate);
* the lookup: due times and marks in one window, sorted by time descending (a
  mark before a due time at the same time), with a running `last` mark over a
  frame from unbounded preceding to the current row, which Spark computes in one
  pass (a frame up to unbounded following would be recomputed per row);
* the partitioning: the time axis of each trace is cut into buckets of `width`
  ms (the callers pass a multiple of the window's span), and the window
  partitions by (trace, bucket). A due time whose bucket holds no mark at or
  after it is reached by the first mark of the next non-empty bucket: a small
  window over one row per non-empty bucket (partitioned by trace) copies that
  mark, as a sentinel sorting after every other, into the non-empty bucket
  before it and every empty bucket between (a gap of G ms costs G / width rows).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_impl.windows.base import quoted

#: a `fire_units` bucket is this many spans of the window wide
BUCKET_SPANS = 64

JUMP = "jump"
LONG_MAX = 2**63 - 1
START = "start"

# Column names of this module's inputs and outputs. They start with `#`, which no
# event property can (a property name is an identifier), so they never clash
# with the properties the callers carry along; in SQL text they are quoted.
DUE = "#due"  # fire_units: a timer's due time
FIRE_SEQ = "#fire_seq"  # fire_units: the item whose walk or jump fires it
FIRE_TIME = "#fire_time"  # fire_units: the clock it fires at
CREATED = "#created"  # creation: the window's creation clock


def prepare(items: DataFrame) -> DataFrame:
    """`items` with `prev_time`: the clock before each item (module docstring).

    A `start` row, if present, sorts first whatever its `seq`; its own
    `prev_time` is its `time`. A null `time` is skipped when looking back for the
    previous clock. (This is a window over each whole trace; nothing in the
    timed families reads `prev_time`, so Spark prunes it for them.)
    """
    previous = (
        f"last(time, true) OVER (PARTITION BY trace_id ORDER BY kind <> '{START}', seq "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    )
    return items.selectExpr(
        "*", f"CAST(CASE WHEN kind = '{START}' THEN time ELSE coalesce({previous}, 0) END AS BIGINT) AS prev_time"
    )


def creation(items: DataFrame) -> DataFrame:
    """One row per trace: `trace_id` and `CREATED`, the clock when the window is
    created (its `start` row's time, else 0)."""
    return items.groupBy("trace_id").agg(
        F.expr(f"CAST(coalesce(min(CASE WHEN kind = '{START}' THEN time END), 0) AS BIGINT)").alias(CREATED)
    )


def bucket_width(span: int) -> int:
    """The `fire_units` bucket width for a window of this span: `BUCKET_SPANS` spans."""
    return BUCKET_SPANS * span


def floor_div(value: str, divisor: str | int) -> str:
    """SQL for `floor(value / divisor)` in exact long arithmetic (`divisor` > 0)."""
    return f"((({value}) - pmod({value}, {divisor})) div ({divisor}))"


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
    # a mark is one long, 2 * seq + (1 if a jump), so a hash aggregate can take its minimum
    marks = (
        items.where(f"kind <> '{START}'")
        .groupBy("trace_id", "time")
        .agg(F.expr(f"min(seq * 2 + CAST(kind = '{JUMP}' AS BIGINT))").alias("#m"))
        .selectExpr("trace_id", f"{floor_div('time', width)} AS `#b`", "time AS `#t`", "1 AS `#k`", "`#m`")
    )
    others = [quoted(c) for c in dues.columns if c != "trace_id"]
    due = quoted(DUE)
    placed = dues.selectExpr("trace_id", f"{floor_div(due, width)} AS `#b`", f"{due} AS `#t`", "0 AS `#k`", *others)
    if from_start:
        starts = items.where(f"kind = '{START}'").selectExpr("trace_id", f"{floor_div('time', width)} AS `#b`")
        bucketed = marks.unionByName(starts, allowMissingColumns=True)
    else:
        bucketed = marks
    firsts = bucketed.groupBy("trace_id", "#b").agg(
        F.expr("min(`#t`)").alias("#first_t"), F.expr("min_by(`#m`, `#t`)").alias("#first_m")
    )
    sentinels = firsts.selectExpr(
        "*", "lag(`#b`) OVER (PARTITION BY trace_id ORDER BY `#b`) AS `#earlier`"
    ).selectExpr(
        "trace_id", "explode(sequence(`#earlier`, `#b` - 1)) AS `#b`", f"{LONG_MAX} AS `#t`", "1 AS `#k`",
        "`#first_m` AS `#m`", "`#first_t` AS `#hit_t`",
    )
    hit = "CASE WHEN `#m` IS NOT NULL THEN named_struct('t', coalesce(`#hit_t`, `#t`), 'm', `#m`) END"
    frame = (
        "OVER (PARTITION BY trace_id, `#b` ORDER BY `#t` DESC, `#k` DESC "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    )
    found = (
        placed.unionByName(marks, allowMissingColumns=True)
        .unionByName(sentinels, allowMissingColumns=True)
        .selectExpr("*", f"last({hit}, true) {frame} AS `#found`")
        .where("`#k` = 0" if keep else "`#k` = 0 AND `#found` IS NOT NULL")
    )
    return found.selectExpr(
        *(quoted(c) for c in dues.columns),
        f"shiftright(`#found`.m, 1) AS {quoted(FIRE_SEQ)}",
        f"CASE WHEN pmod(`#found`.m, 2) = 1 THEN `#found`.t WHEN `#found` IS NOT NULL THEN {due} END "
        f"AS {quoted(FIRE_TIME)}",
    )

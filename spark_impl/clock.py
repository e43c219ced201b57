"""The logical clock of the Spark implementation (CORPUS.md "Input items",
DESIGN.md "The clock"), as relational operations over whole traces.

A timer due at `d` fires in the unit of work of the first item (by `seq`) whose
clock reaches `d`, its *hit*:
* a walk (event or advance) stops at `d` itself: the timer fires at `time = d`,
  phase 0, before the item's arrival (a timer due at an event's arrival time
  fires before the event);
* a jump fires it once, at the jump's target;
* a timer no item reaches never fires (the end of a trace flushes nothing).
A timer re-armed at a walk's stop can fall due later in the same walk, and one
re-armed at a jump waits for the next item: both follow from the rule above,
since a re-armed timer is due strictly after the clock that armed it.

Since the clock never goes back along `seq`, the hit of `d` is the minimum
`(seq, jump?, time)` over the items whose clock is at least `d`. In a window
over a trace's items sorted by `time` descending, that is a running minimum:
* `expiries`: a due time at a fixed distance `span` after an item's own clock
  (`#time`) is looked up on the item's own row, with the frame
  `RANGE BETWEEN UNBOUNDED PRECEDING AND span PRECEDING` (items with
  `time >= own + span`): one row per item, one pass;
* `hits`: any other due time is a point row of its own, sorted after the items
  of its clock, with the frame from unbounded preceding to the current row
  (and optionally a second frame `span PRECEDING`, for the due time `span`
  later, in the same pass).
(The mirror-image frames over `time` ascending, up to unbounded following,
give the same answers but Spark recomputes them per row: quadratic.)

So that a long trace spreads over every task, each trace's time axis is cut
into buckets (`extents`): as many as the data's density asks for (about one
per `ROWS_PER_BUCKET` items, at most `BUCKETS_PER_PARTITION` per shuffle
partition unless that leaves more than `MOST_ROWS_PER_BUCKET` items in one),
never narrower than the largest distance a frame looks ahead (`reach`), and at
least one. The window partitions by (trace, bucket); an
item also appears, as a mark only, in the bucket before its own when it lies
within `reach` of its bucket's start, so a frame that looks `reach` ahead
finds it. A lookup that finds no item in its bucket is answered by a small
table with one row per bucket (`fallbacks`): the first item at or after the
end of what the bucket's window saw. A trace of a few thousand items is one
bucket; a dense trace of ten million, dozens.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from spark_impl.windows.base import quoted

START = "start"
JUMP = "jump"
#: the items whose walk or jump moves the clock, so may reach a due time
MOVES = "kind IN ('event', 'advance', 'jump')"
#: one bucket per about this many items of a trace ...
ROWS_PER_BUCKET = 65_536
#: ... and at most this many buckets per shuffle partition ...
BUCKETS_PER_PARTITION = 4
#: ... unless a bucket would hold more items than this: Spark's window operator
#: buffers a whole partition, so this bounds its memory (10 M items: 38 buckets)
MOST_ROWS_PER_BUCKET = 262_144

# Column names of this module. They start with `#`, which no event property can
# (a property name is an identifier), so they never clash with the properties the
# callers carry along; in SQL text they are quoted.
DUE = "#due"  # hits: a point's due time
HIT = "#hit"  # the first item reaching the due time: struct<seq, jump, time>, null if none
HIT_AFTER = "#hit_after"  # hits(after=x): the first item reaching due + x
CREATED = "#created"  # creation: the window's creation clock
T0, WIDTH, BUCKETS, BUCKET = "#t0", "#w", "#nb", "#b"
BUCKET_COLUMN = f"`{BUCKET}`"

# An item as a mark is one long, 2 * seq + 1 if a jump, so the minimum over a frame
# (the first item) is a min of longs, and aggregates of marks are hash aggregates.
# Since the clock never goes back, the first item also has the earliest clock of
# any set of items: the hit's time is the min of `time` over the same rows.
_MARK = "(seq * 2 + CAST(kind = 'jump' AS BIGINT))"


def _time_of(frame: str, jumps: bool) -> str:
    """SQL: the hit's clock over a window frame. Only a jump's is ever read (a
    walk fires at the due time), so without jumps it is not computed."""
    return f"min(`#mt`) {frame}" if jumps else "CAST(NULL AS BIGINT)"


def _hit(mark: str, time: str) -> str:
    """SQL: the hit struct from a minimum mark and the minimum time of the same rows."""
    return (f"CASE WHEN {mark} IS NOT NULL THEN named_struct('seq', shiftright({mark}, 1), "
            f"'jump', pmod({mark}, 2) = 1, 'time', {time}) END")


def creation(items: DataFrame) -> DataFrame:
    """One row per trace: `trace_id` and `CREATED`, the clock when the window is
    created (its `start` row's time, else 0)."""
    return items.groupBy("trace_id").agg(
        F.expr(f"CAST(coalesce(min(CASE WHEN kind = '{START}' THEN time END), 0) AS BIGINT)").alias(CREATED)
    )


def floor_div(value: str, divisor: str | int) -> str:
    """SQL for `floor(value / divisor)` in exact long arithmetic (`divisor` > 0)."""
    return f"((({value}) - pmod({value}, {divisor})) div ({divisor}))"


def fire_time(hit: str, due: str) -> str:
    """SQL: the clock a timer due at `due` fires at, given its hit: the due time
    on a walk, the target on a jump."""
    return f"CASE WHEN {hit}.jump THEN {hit}.time ELSE {due} END"


def extents(items: DataFrame, reach: int) -> DataFrame:
    """Per trace (a small table, broadcast by its readers): `T0`, the earliest
    clock; `WIDTH`, the bucket width (module docstring); `BUCKETS`, the number
    of buckets from `T0` to the latest clock."""
    partitions = int(items.sparkSession.conf.get("spark.sql.shuffle.partitions"))
    most = max(1, BUCKETS_PER_PARTITION * partitions)
    spread = items.groupBy("trace_id").agg(
        F.expr("min(time)").alias("#lo"), F.expr("max(time)").alias("#hi"), F.expr("count(1)").alias("#n")
    )
    wanted = f"greatest(1, least({most}, `#n` div {ROWS_PER_BUCKET}), `#n` div {MOST_ROWS_PER_BUCKET})"
    width = f"greatest(CAST({max(1, reach)} AS BIGINT), (`#hi` - `#lo`) div {wanted} + 1)"
    return spread.selectExpr("trace_id", "`#lo`", "`#hi`", f"{width} AS `{WIDTH}`").selectExpr(
        "trace_id", f"`#lo` AS `{T0}`", f"`{WIDTH}`", f"(`#hi` - `#lo`) div `{WIDTH}` + 1 AS `{BUCKETS}`"
    )


def bucket_of(time: str) -> str:
    """SQL: the bucket of a clock value (columns of `extents` joined)."""
    return floor_div(f"{time} - `{T0}`", f"`{WIDTH}`")


def marks(items: DataFrame, ext: DataFrame, reach: int) -> DataFrame:
    """The items that move the clock, each in its bucket `BUCKET` and, if it lies
    within `reach` of its bucket's start, again in the bucket before (column
    `#own` false there), with `#m`, its mark, and `#mt`, its clock."""
    placed = items.where(MOVES).join(F.broadcast(ext), "trace_id").selectExpr(
        "*", f"{bucket_of('time')} AS `#own_b`"
    )
    copy = f"`#own_b` > 0 AND time - `{T0}` - `#own_b` * `{WIDTH}` < {reach}" if reach > 0 else "false"
    return placed.selectExpr(
        "*", f"explode(CASE WHEN {copy} THEN array(`#own_b`, `#own_b` - 1) ELSE array(`#own_b`) END) AS `{BUCKET}`"
    ).selectExpr("*", f"`{BUCKET}` = `#own_b` AS `#own`", f"{_MARK} AS `#m`", "time AS `#mt`")


def fallbacks(items: DataFrame, ext: DataFrame, reach: int) -> DataFrame:
    """Per (trace, bucket b), every bucket from 0 to the last: `#after_0`, the
    first item in a bucket after b; `#after_reach`, the first item at least
    `reach` after the start of bucket b + 1 (what a frame looking `reach` ahead
    from bucket b cannot see). A small table: one row per bucket."""
    per_bucket = (
        items.where(MOVES).join(F.broadcast(ext), "trace_id")
        .selectExpr("trace_id", f"{bucket_of('time')} AS `{BUCKET}`", f"{_MARK} AS `#m`", "time",
                    f"time - `{T0}` - {bucket_of('time')} * `{WIDTH}` >= {reach} AS `#late`")
        .groupBy("trace_id", BUCKET)
        .agg(F.expr("min(`#m`)").alias("#first"), F.expr("min(time)").alias("#first_t"),
             F.expr("min(CASE WHEN `#late` THEN `#m` END)").alias("#late_m"),
             F.expr("min(CASE WHEN `#late` THEN time END)").alias("#late_t"))
        .selectExpr("trace_id", BUCKET_COLUMN, f"{_hit('`#first`', '`#first_t`')} AS `#first`",
                    f"{_hit('`#late_m`', '`#late_t`')} AS `#first_late`")
    )
    dense = ext.selectExpr("trace_id", f"explode(sequence(CAST(0 AS BIGINT), `{BUCKETS}` - 1)) AS `{BUCKET}`")
    table = dense.join(F.broadcast(per_bucket), ["trace_id", BUCKET], "left")
    later = f"OVER (PARTITION BY trace_id ORDER BY `{BUCKET}` DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"
    with_after = table.selectExpr("*", f"min(`#first`) {later} AS `#after_0`")
    nxt = f"OVER (PARTITION BY trace_id ORDER BY `{BUCKET}`)"
    return with_after.selectExpr(
        "trace_id", f"`{BUCKET}`", "`#after_0`",
        f"coalesce(lead(`#first_late`) {nxt}, lead(`#after_0`) {nxt}) AS `#after_reach`",
    )


def expiries(items: DataFrame, span: int, carry: list[str], *, jumps: bool = True) -> DataFrame:
    """The event rows of `items` (columns `carry`, SQL) with `HIT`: the first item
    reaching the event's clock + `span` (null if none does). `jumps`: as `hits`."""
    ext = extents(items, span)
    rows = marks(items, ext, span)
    frame = f"OVER (PARTITION BY trace_id, `{BUCKET}` ORDER BY time DESC RANGE BETWEEN UNBOUNDED PRECEDING AND {span} PRECEDING)"
    found = rows.selectExpr(
        *carry, "kind", "`#own`", BUCKET_COLUMN, f"min(`#m`) {frame} AS `#fm`", f"{_time_of(frame, jumps)} AS `#ft`"
    ).where("`#own` AND kind = 'event'").selectExpr(*carry, BUCKET_COLUMN, f"{_hit('`#fm`', '`#ft`')} AS `#found`")
    fb = fallbacks(items, ext, span).select("trace_id", BUCKET, "#after_reach")
    joined = found.join(F.broadcast(fb), ["trace_id", BUCKET], "left")
    return joined.selectExpr(*carry, f"coalesce(`#found`, `#after_reach`) AS {quoted(HIT)}")



def hits(items: DataFrame, points: DataFrame, *, after: int = 0, reach: int = 1, jumps: bool = True) -> DataFrame:
    """`points` (columns `trace_id`, `DUE` and any others) with `HIT`, the first
    item reaching the due time, and with `after` > 0 also `HIT_AFTER`, the first
    item reaching due + `after`; one pass. `reach`: the bucket width's lower
    bound (any positive value gives the same answers). `jumps=False`: the items
    hold no jump, and a hit's `time` is left null (never read)."""
    reach = max(reach, after, 1)
    ext = extents(items, reach)
    others = [c for c in points.columns if c != "trace_id"]
    due = quoted(DUE)
    # a point's own columns travel as one struct, so a mark row (most of the rows)
    # is six fields wide, not as wide as a point (a row spends 8 bytes per field, null or not)
    payload = "named_struct(" + ", ".join(f"'{c}', {quoted(c)}" for c in others) + ")"
    placed = points.join(F.broadcast(ext), "trace_id").selectExpr(
        "trace_id", f"{due} AS `#t`", "0 AS `#k`", f"greatest(0, {bucket_of(due)}) AS `{BUCKET}`",
        "CAST(NULL AS BIGINT) AS `#m`", "CAST(NULL AS BIGINT) AS `#mt`", f"{payload} AS `#p`",
    )
    mark_rows = marks(items, ext, after).selectExpr(
        "trace_id", "time AS `#t`", "1 AS `#k`", BUCKET_COLUMN, "`#m`", "`#mt`"
    )
    both = placed.unionByName(mark_rows, allowMissingColumns=True)
    # one order key, 2t + k: by clock descending, a mark before a point of its clock; a
    # RANGE of 2x on it is a RANGE of x on the clock, so both frames share one window
    order = f"PARTITION BY trace_id, `{BUCKET}` ORDER BY `#t` * 2 + `#k` DESC"
    so_far = f"OVER ({order} RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)"
    found = [f"min(`#m`) {so_far} AS `#fm`", f"{_time_of(so_far, jumps)} AS `#ft`"]
    hits_ = [f"{_hit('`#fm`', '`#ft`')} AS `#found`"]
    if after:
        ahead = f"OVER ({order} RANGE BETWEEN UNBOUNDED PRECEDING AND {2 * after} PRECEDING)"
        found += [f"min(`#m`) {ahead} AS `#am`", f"{_time_of(ahead, jumps)} AS `#at`"]
        hits_.append(f"{_hit('`#am`', '`#at`')} AS `#found_after`")
    looked = both.selectExpr("*", *found).where("`#k` = 0").selectExpr(
        "trace_id", *(f"`#p`.{quoted(c)} AS {quoted(c)}" for c in others), BUCKET_COLUMN, *hits_
    )
    fb = fallbacks(items, ext, after)
    joined = looked.join(F.broadcast(fb), ["trace_id", BUCKET], "left")
    out = [f"coalesce(`#found`, `#after_0`) AS {quoted(HIT)}"]
    if after:
        out.append(f"coalesce(`#found_after`, `#after_reach`) AS {quoted(HIT_AFTER)}")
    return joined.selectExpr("trace_id", *(quoted(c) for c in others), *out)

"""Time-based sliding windows as relational operations (esper.md §2; seed 14.3.3,
14.3.4, 14.3.11): `#time(t)`, `#ext_timed(ts, t)`, `#firsttime(t)`.

Every event is inserted at its own arrival (phase 1). Posted rows carry the
event's properties, and `pos` is the posted event's `seq`: the rows of one post
are in arrival order, and the pipeline ranks them into positions.

* `#time(t)`: an event arriving at `a` is due to leave at `a + t`; it leaves in
  the unit of work where the clock first reaches that (`clock.fire_units`). On a
  walk every distinct due time is a stop of its own and the events due then
  leave together, in arrival order; a jump fires the window's timer once and
  posts every event due by its target, oldest first. This is exactly Esper's
  single re-armed timer (`oldest + t`), since a stop at due time `d` removes
  precisely the events that arrived at `d - t`.
  Slot order: under groupwin the groups' timers of one unit post in (due, slot)
  order, a group's due being its earliest due time in that unit (one post per
  group: the minimum over the group's rows of the unit). Without groupwin every
  row has slot 0 and the rows' own due times order a jump's one post exactly as
  arrival order does, so each row keeps its own due time as `slot_due`.
* `#ext_timed(ts, t)`: the deque is in arrival order and a scan from the front
  stops at the first young event, so event i leaves at the first later arrival j
  with `ts_j - t >= max(ts_0..ts_i)`: every event in front of i must have gone by
  then, and all have once some arrival reaches `P_i + t`, where `P` is the running
  maximum timestamp of the sub-window. (An event j with `ts_j - t >= P_i` exists
  before i only if `ts_j - t >= ts_j`, never.) So, with `P` computed by one
  running max, event i's remover is the first arrival whose `P` reaches
  `P_i + t`: the arrivals that raise `P` hold the disjoint intervals
  `(P_before, P]`, and `clock.locate` finds the one holding `P_i + t`. The
  remover posts the removed events in arrival order after its own insert.
* `#firsttime(t)`: the timer is armed at the window's creation (the trace's
  start, or under groupwin the group's first arrival) for `creation + t`, and
  fires in the first unit whose clock reaches it. An event is kept (and
  inserted) iff it arrives before that: iff its arrival clock is below
  `creation + t`, since an event arriving at a clock at or past it walked or
  jumped there first (its own walk fires the timer before it arrives). Nothing
  ever leaves and the timer posts nothing.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from oracle.model import ExtTimed, FirstTime, Time
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, in_order

TIMER = 0  # the contract's phase of a timer stop (1: an arrival)


def posts(items: DataFrame, spec, ctx: Context) -> DataFrame:
    if isinstance(spec, Time):
        return sliding(items, ctx, spec.span)
    if isinstance(spec, ExtTimed):
        return externally_timed(items, ctx, spec.timestamp, spec.span)
    if isinstance(spec, FirstTime):
        return first_time(items, ctx, spec.span)
    raise TypeError(f"not a time window: {spec!r}")


def carried(ctx: Context) -> list[str]:
    """The columns an event row carries into a post row."""
    return list(dict.fromkeys(["trace_id", *ctx.group_keys, "slot", "seq", "id", *ctx.properties]))


def timer_posts(rows: DataFrame, ctx: Context, side: str, seq: Column, time: Column, slot_due: Column) -> DataFrame:
    """Post rows (the contract's columns, then the properties) posting each row's
    event on `side` in the timer stop (phase 0) of item `seq` at clock `time`."""
    return rows.select(
        "trace_id",
        seq.cast("long").alias("seq"),
        F.lit(TIMER).alias("phase"),
        time.cast("long").alias("time"),
        slot_due.cast("long").alias("slot_due"),
        "slot",
        F.lit(side).alias("side"),
        F.col("seq").cast("long").alias("pos"),
        "id",
        *ctx.properties,
    )


def arrivals(items: DataFrame, ctx: Context) -> DataFrame:
    """Every event inserted at its own arrival, at position its seq."""
    return arrival_posts(events(items), ctx, Emit("insert", F.col("seq"), F.col("time"), F.col("seq")))


def sliding(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    dues = events(items).select(*carried(ctx), (F.col("time") + span).alias(clock.DUE))
    fired = clock.fire_units(items, dues, clock.bucket_width(span))
    if ctx.group_keys:
        unit = Window.partitionBy(*ctx.partition, clock.FIRE_SEQ, clock.FIRE_TIME)
        slot_due = F.min(clock.DUE).over(unit)
    else:
        slot_due = F.col(clock.DUE)
    removed = timer_posts(fired, ctx, "remove", F.col(clock.FIRE_SEQ), F.col(clock.FIRE_TIME), slot_due)
    return arrivals(items, ctx).unionByName(removed)


def externally_timed(items: DataFrame, ctx: Context, timestamp: str, span: int) -> DataFrame:
    ts = F.col(timestamp).cast("long")
    so_far = in_order(ctx).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = in_order(ctx).rowsBetween(Window.unboundedPreceding, -1)
    stamped = events(items).select(
        *carried(ctx), "time", F.max(ts).over(so_far).alias("#p"), F.max(ts).over(before).alias("#p_before")
    )
    points = stamped.select(*carried(ctx), (F.col("#p") + span).alias(clock.AT))
    raisers = stamped.where(F.col("#p") > F.col("#p_before")).select(
        *ctx.partition,
        F.col("#p_before").alias(clock.LO),
        F.col("#p").alias(clock.HI),
        F.col("seq").alias("#remover_seq"),
        F.col("time").alias("#remover_time"),
    )
    located = clock.locate(points, raisers, ctx.partition)
    removed = arrival_posts(
        located, ctx, Emit("remove", F.col("#remover_seq"), F.col("#remover_time"), F.col("seq"))
    )
    return arrivals(items, ctx).unionByName(removed)


def first_time(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    if ctx.group_keys:
        arrived = events(items).withColumn(clock.CREATED, F.min("time").over(Window.partitionBy(*ctx.partition)))
    else:
        arrived = events(items).join(F.broadcast(clock.creation(items)), "trace_id")
    kept = arrived.where(F.col("time") < F.col(clock.CREATED) + span)
    return arrival_posts(kept, ctx, Emit("insert", F.col("seq"), F.col("time"), F.col("seq")))

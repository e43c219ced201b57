"""`#time_order(ts, t)` and `#timetolive(ts)` (span 0) as relational operations
(esper.md §2 `#time_order`; seed 14.3.21, 14.3.22).

Every event is inserted at its own arrival (phase 1). An event whose
`ts + t` is at or before its arrival clock is posted as old in the same post.
Any other is due to leave at `ts + t`, which is after its arrival: the window's
one timer is always due at the oldest held `ts + t`, and a firing at clock `T`
releases every held event with `ts + t <= T`, so each event leaves in the unit
of the first item reaching its own due time (`clock.hits`, one point per held
event), as `#time`'s expiry does with the arrival clock. A walk stops at each
distinct due time; a jump releases everything due by its target in one post.

Order within a post: ascending `ts`, then arrival, i.e. (due, seq); among
groupwin's groups, Esper's (due, slot) timer order (`time.timer_removals`,
with `by_due`).

An event whose `ts` is null is never posted nor held (`stamped_events`);
under `#groupwin` its group exists from it on (the slot).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import TimeOrder
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, over, quoted, stamped_events
from spark_impl.windows.time import carried, timer_removals


def time_ordered(items: DataFrame, spec: TimeOrder, ctx: Context) -> DataFrame:
    own = carried(ctx)
    due = quoted(clock.DUE)
    stamped = stamped_events(items, spec.timestamp).selectExpr(
        *own, "time", f"CAST({quoted(spec.timestamp)} AS BIGINT) + {spec.span} AS {due}")
    arrived = arrival_posts(stamped, ctx, Emit("insert", "seq", "time"),
                            Emit("remove", f"CASE WHEN {due} <= time THEN seq END", "time"))
    held = stamped.where(f"{due} > time").drop("time")
    found = clock.hits(items, held, jumps=ctx.jumps).where(f"{quoted(clock.HIT)} IS NOT NULL")
    return arrived.unionByName(timer_removals(found, items, ctx, due, by_due=True))


def unreleased(items: DataFrame, spec: TimeOrder, ctx: Context) -> DataFrame:
    """The state `#time_order(ts, t)`'s future reads (`spark_impl.incremental`):
    the events it holds at the trace's clock `C` (its items' latest time),
    the stamped ones with `ts + t` above `C`, which no item has reached;
    every later post inserts an arrival or releases a held event at its due
    time. Under `#groupwin` also each group's first event, stamped or not,
    for the slot (as `time.unexpired`): one released already is held and
    released again in the replay, before the cut."""
    clock = items.groupBy("trace_id").agg(F.max("time").alias("#clock"))
    first = f"row_number() {over(ctx)} = 1" if ctx.group_keys else "false"
    stamped = f"{quoted(spec.timestamp)} IS NOT NULL"
    return events(items).join(F.broadcast(clock), "trace_id").selectExpr(
        "*", f"{first} AS `#first_of_group`",
        f"{stamped} AND CAST({quoted(spec.timestamp)} AS BIGINT) + {spec.span} > `#clock` AS `#held`") \
        .where("`#held` OR `#first_of_group`").drop("#clock", "#first_of_group", "#held")


POSTS = {TimeOrder: time_ordered}
HELD = {TimeOrder: unreleased}

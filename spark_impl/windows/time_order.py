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

Order within a post: ascending `ts`, then arrival, i.e. (due, seq). Without
groupwin every row keeps its own due as `slot_due` and its seq as `n`. Under
groupwin the groups' timers of one unit post in (due, slot) order, a group's
timer being due at its oldest row of that unit: on a walk stop every row of
the unit has the stop as its due; a jump (planned only when the input may hold
jumps) takes the group's least due over its rows of the unit, and numbers the
group's rows by (due, seq) for `n`.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from oracle.model import TimeOrder
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, quoted
from spark_impl.windows.time import carried, group_table, partition, timer_posts, with_group


def time_ordered(items: DataFrame, spec: TimeOrder, ctx: Context) -> DataFrame:
    own = carried(ctx)
    due = quoted(clock.DUE)
    stamped = events(items).selectExpr(*own, "time", f"CAST({quoted(spec.timestamp)} AS BIGINT) + {spec.span} AS {due}")
    arrived = arrival_posts(stamped, ctx, Emit("insert", "seq", "time"),
                            Emit("remove", f"CASE WHEN {due} <= time THEN seq END", "time"))
    held = stamped.where(f"{due} > time").drop("time")
    hit = quoted(clock.HIT)
    found = clock.hits(items, held, jumps=ctx.jumps).where(f"{hit} IS NOT NULL")
    fired_at = clock.fire_time(hit, due)
    if not ctx.group_keys:
        removed = timer_posts(found, ctx, "remove", f"{hit}.seq", fired_at, due, slot="0")
    elif not ctx.jumps:
        grouped = with_group(found, group_table(items, ctx).drop("#first"), ctx)
        removed = timer_posts(grouped, ctx, "remove", f"{hit}.seq", fired_at, fired_at)
    else:
        grouped = with_group(found, group_table(items, ctx).drop("#first"), ctx).selectExpr("*", f"{fired_at} AS `#at`")
        unit = f"OVER ({partition(ctx, clock.HIT, '#at')}"
        ranked = grouped.selectExpr(
            "*", f"min({due}) {unit}) AS `#group_due`", f"row_number() {unit} ORDER BY {due}, seq) AS `#n`"
        )
        removed = timer_posts(ranked, ctx, "remove", f"{hit}.seq", "`#at`", "`#group_due`", n="`#n`")
    return arrived.unionByName(removed)


POSTS = {TimeOrder: time_ordered}

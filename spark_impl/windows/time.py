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
  `(P_before, P]`, and the first of them reaching `P_i + t` is found as in
  `clock.fire_units`: points and marks in one window over the sub-window,
  sorted by value descending, a running `last` mark. The remover posts the
  removed events in arrival order after its own insert.
* `#firsttime(t)`: the timer is armed at the window's creation (the trace's
  start, or under groupwin the group's first arrival) for `creation + t`, and
  fires in the first unit whose clock reaches it. An event is kept (and
  inserted) iff it arrives before that: iff its arrival clock is below
  `creation + t`, since an event arriving at a clock at or past it walked or
  jumped there first (its own walk fires the timer before it arrives). Nothing
  ever leaves and the timer posts nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import ExtTimed, FirstTime, Time
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, over, quoted

TIMER = 0  # the contract's phase of a timer stop (1: an arrival)
SO_FAR = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"

# posts exactly once per arrival and never on a timer: the pipeline numbers its
# updates by arrival (post rows carry the arrival's `arrival_no` as `update_no`)
ONE_POST_PER_ARRIVAL = (ExtTimed,)


def posts(items: DataFrame, spec, ctx: Context) -> DataFrame:
    if isinstance(spec, Time):
        return sliding(items, ctx, spec.span)
    if isinstance(spec, ExtTimed):
        return externally_timed(items, ctx, spec.timestamp, spec.span)
    if isinstance(spec, FirstTime):
        return first_time(items, ctx, spec.span)
    raise TypeError(f"not a time window: {spec!r}")


def carried(ctx: Context) -> list[str]:
    """The columns (SQL) an event row carries into a post row."""
    return [quoted(c) for c in dict.fromkeys(["trace_id", *ctx.group_keys, "slot", "seq", "id", *ctx.properties])]


def partition(ctx: Context, *extra: str) -> str:
    """`PARTITION BY` the sub-window's columns (and `extra` ones), as SQL."""
    return "PARTITION BY " + ", ".join(quoted(c) for c in (*ctx.partition, *extra))


def timer_posts(rows: DataFrame, ctx: Context, side: str, seq: str, time: str, slot_due: str) -> DataFrame:
    """Post rows (the contract's columns, then the properties) posting each row's
    event on `side` in the timer stop (phase 0) of item `seq` at clock `time`
    (SQL expressions), the timer being due at `slot_due`."""
    return rows.selectExpr(
        "trace_id",
        f"CAST({seq} AS BIGINT) AS seq",
        f"{TIMER} AS phase",
        f"CAST({time} AS BIGINT) AS time",
        f"CAST({slot_due} AS BIGINT) AS slot_due",
        "slot",
        f"'{side}' AS side",
        "CAST(seq AS BIGINT) AS pos",
        "id",
        *(quoted(p) for p in ctx.properties),
    )


def arrivals(items: DataFrame, ctx: Context) -> DataFrame:
    """Every event inserted at its own arrival (at position its seq)."""
    unit = "arrival_no" if ctx.arrival_numbers else None
    return arrival_posts(events(items), ctx, Emit("insert", "seq", "time", "seq", unit))


def sliding(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    due = quoted(clock.DUE)
    dues = events(items).selectExpr(*carried(ctx), f"time + {span} AS {due}")
    fired = clock.fire_units(items, dues, clock.bucket_width(span))
    fire_seq, fire_time = quoted(clock.FIRE_SEQ), quoted(clock.FIRE_TIME)
    if ctx.group_keys:
        slot_due = f"min({due}) OVER ({partition(ctx, clock.FIRE_SEQ, clock.FIRE_TIME)})"
    else:
        slot_due = due
    return arrivals(items, ctx).unionByName(timer_posts(fired, ctx, "remove", fire_seq, fire_time, slot_due))


def externally_timed(items: DataFrame, ctx: Context, timestamp: str, span: int) -> DataFrame:
    ts = f"CAST({quoted(timestamp)} AS BIGINT)"
    own = [*carried(ctx), *(["arrival_no"] if ctx.arrival_numbers else [])]
    unit = "CAST(arrival_no AS BIGINT)" if ctx.arrival_numbers else "CAST(NULL AS BIGINT)"
    stamped = events(items).selectExpr(
        *own, "time",
        f"max({ts}) {over(ctx, frame=SO_FAR)} AS `#p`",
        f"max({ts}) {over(ctx, frame=BEFORE)} AS `#p_before`",
    )
    # each event is a point (its due time, P + t) and, if it raises P, a mark at P
    remover = f"named_struct('seq', seq, 'time', time, 'unit', {unit})"
    no_mark = "CAST(NULL AS STRUCT<seq: BIGINT, time: BIGINT, unit: BIGINT>)"
    point = f"named_struct('k', 0, 't', `#p` + {span}, 'mark', {no_mark})"
    mark = f"CASE WHEN `#p` > `#p_before` THEN named_struct('k', 1, 't', `#p`, 'mark', {remover}) END"
    rows = stamped.selectExpr(*own, f"explode(array({point}, {mark})) AS `#r`").where("`#r` IS NOT NULL")
    first_reaching = f"OVER ({partition(ctx)} ORDER BY `#r`.t DESC, `#r`.k DESC {SO_FAR})"
    found = rows.selectExpr("*", f"last(`#r`.mark, true) {first_reaching} AS `#remover`").where("`#r`.k = 0")
    removed = arrival_posts(found, ctx, Emit("remove", "`#remover`.seq", "`#remover`.time", "seq", "`#remover`.unit"))
    return arrivals(items, ctx).unionByName(removed)


def first_time(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    created = quoted(clock.CREATED)
    if ctx.group_keys:
        arrived = events(items).selectExpr("*", f"min(time) OVER ({partition(ctx)}) AS {created}")
    else:
        arrived = events(items).join(F.broadcast(clock.creation(items)), "trace_id")
    kept = arrived.where(f"time < {created} + {span}")
    return arrival_posts(kept, ctx, Emit("insert", "seq", "time", "seq"))

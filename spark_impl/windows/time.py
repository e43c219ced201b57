"""Time-based sliding windows as relational operations (esper.md §2; seed 14.3.3,
14.3.4, 14.3.11): `#time(t)`, `#ext_timed(ts, t)`, `#firsttime(t)`.

Every event is inserted at its own arrival (phase 1). Posted rows carry the
event's properties, and `pos` is the posted event's `seq`: the rows of one post
are in arrival order.

* `#time(t)`: an event arriving at `a` is due to leave at `a + t`; it leaves in
  the unit of work where the clock first reaches that (`clock.expiries`: one
  window over the items themselves). On a walk every distinct due time is a
  stop of its own and the events due then leave together, in arrival order; a
  jump fires the window's timer once and posts every event due by its target,
  oldest first. This is exactly Esper's single re-armed timer (`oldest + t`),
  since a stop at due time `d` removes precisely the events that arrived at
  `d - t`.
  Order within a unit: under groupwin the groups' timers of one unit post in
  (due, slot) order. A walk stop at `d` fires only timers due at `d`, so there
  the order is the slot's: the seq of the group's first event, from a small
  per-group aggregate (`group_table`). A jump fires each group's timer once,
  due at its oldest event's due time: the smallest due time among the group's
  rows of that unit, a window over the group's rows, needed (and planned) only
  when the input may hold jumps. Without groupwin every row has slot 0 and
  the rows' own due times order a jump's one post exactly as arrival order
  does, so each row keeps its own due time as `slot_due`.
* `#ext_timed(ts, t)`: the deque is in arrival order and a scan from the front
  stops at the first young event, so event i leaves at the first later arrival j
  with `ts_j - t >= max(ts_0..ts_i)`: every event in front of i must have gone by
  then, and all have once some arrival reaches `P_i + t`, where `P` is the running
  maximum timestamp of the sub-window. (An event j with `ts_j - t >= P_i` exists
  before i only if `ts_j - t >= ts_j`, never.) So, with `P` computed by one
  running max, event i's remover is the first arrival whose `P` reaches
  `P_i + t`: the arrivals that raise `P` hold the disjoint intervals
  `(P_before, P]`, and the first of them reaching `P_i + t` is found as in
  `clock.hits`: points and marks in one window over the sub-window,
  sorted by value descending, a running `last` mark. The remover posts the
  removed events in arrival order after its own insert. An event whose `ts`
  is null is not one of the sub-window's events at all (`stamped_events`).
* `#firsttime(t)`: the timer is armed at the window's creation (the trace's
  start, or under groupwin the group's first arrival) for `creation + t`, and
  fires in the first unit whose clock reaches it. An event is kept (and
  inserted) iff it arrives before that: iff its arrival clock is below
  `creation + t`, since an event arriving at a clock at or past it walked or
  jumped there first (its own walk fires the timer before it arrives). Nothing
  ever leaves and the timer posts nothing.
* `#time_accum(t)`: each arrival re-arms the one timer at its clock + t, so
  the timer fires (walk or jump) before the next arrival exactly when that
  arrival comes t or more after the one before: its own walk, or an earlier
  item, reaches the due time first, and no item before a closer arrival can.
  Such gaps cut a sub-window's events into accumulations (a running count of
  gaps, in seq order); an accumulation leaves in the unit of the first item
  reaching its last arrival + t (`clock.hits`, one point per event carrying
  that due time), in arrival order, ordered among groups by (due, slot) as
  `#time`'s.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import ExtTimed, FirstTime, Time, TimeAccum
from spark_impl import clock
from spark_impl.windows import Context, TimeFrame
from spark_impl.windows.base import Emit, arrival_posts, events, over, quoted, stamped_events, trace_clocks

TIMER = 0  # the contract's phase of a timer stop (1: an arrival)
SO_FAR = "ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
BEFORE = "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING"


POSTS = {
    Time: lambda items, spec, ctx: sliding(items, ctx, spec.span),
    ExtTimed: lambda items, spec, ctx: externally_timed(items, ctx, spec.timestamp, spec.span),
    FirstTime: lambda items, spec, ctx: first_time(items, ctx, spec.span),
    TimeAccum: lambda items, spec, ctx: accumulating(items, ctx, spec.span),
}
#: a statement over `#time` may read its contents off the events by their clocks (`spark_impl.windows.TimeFrame`)
FRAMES = {Time: lambda spec: TimeFrame(spec.span)}


def unexpired(items: DataFrame, spec: Time, ctx: Context) -> DataFrame:
    """The state `#time(t)`'s future reads (`spark_impl.incremental`): the
    events it holds at the trace's clock `C` (its items' latest time), those
    arriving after `C - t`, whose due times the clock has not reached; every
    later post inserts an arrival or removes a held event at its due time.
    Under `#groupwin` also each group's first event: groups' timers due
    together post in the order the groups were created (`slot`, the seq of
    that event), so a resumed run must create them in that order again. An
    expired first event enters and leaves again before the cut, so the
    window holds the same events after it. The first events are the least
    seq of each group (`group_table`, joined back by broadcast): no step
    sorts the events by key."""
    clocked = events(items).join(F.broadcast(trace_clocks(items, ctx)), "trace_id")
    if not ctx.group_keys:
        return clocked.where(f"time > `#clock` - {spec.span}").drop("#clock")
    return with_group(clocked, group_table(items, ctx).select(*ctx.partition, "slot"), ctx) \
        .where(f"time > `#clock` - {spec.span} OR seq = slot").drop("#clock", "slot")


def first_time_held(items: DataFrame, spec: FirstTime, ctx: Context) -> DataFrame:
    """`#firsttime(t)`'s state: what it holds, the events arriving before
    its creation + t (under `#groupwin` each group's first event among
    them, which dates the group's creation; without, the trace's `start`
    row does, and it is always kept). Later arrivals are never taken and
    nothing leaves."""
    return first_time(items, ctx, spec.span, kept=True)


def ext_timed_held(items: DataFrame, spec: ExtTimed, ctx: Context) -> DataFrame:
    """`#ext_timed(ts, t)`'s state: what it holds, the stamped events no
    arrival has removed: those whose `P_i + t` is above `M`, the sub-window's
    greatest timestamp (no arrival up to i reaches `P_i + t`, so the first
    that does comes later). Enough: the event that set a held event's `P_i`
    has `P = P_i` itself, so it is held too; the held events replayed give
    each its `P_i` again and leave `P` at `M` for the next arrival, so every
    later removal falls where it did."""
    ts = f"CAST({quoted(spec.timestamp)} AS BIGINT)"
    return stamped_events(items, spec.timestamp).selectExpr(
        "*", f"max({ts}) {over(ctx, frame=SO_FAR)} AS `#p`", f"max({ts}) OVER ({partition(ctx)}) AS `#m`") \
        .where(f"`#m` < `#p` + {spec.span}").drop("#p", "#m")


def accumulated(items: DataFrame, spec: TimeAccum, ctx: Context) -> DataFrame:
    """`#time_accum(t)`'s state: what it holds, each sub-window's last
    accumulation while no item has reached its last arrival + t (the
    trace's clock `C` below it; an earlier accumulation left at the arrival
    that opened the next, or before). Replayed alone it is one accumulation
    due when it was. Under `#groupwin` also each group's first event, for
    the slot (as `unexpired`): it is t or more before the last
    accumulation, so it is one of its own in the replay and leaves before
    the cut."""
    clock = items.groupBy("trace_id").agg(F.max("time").alias("#clock"))
    whole = f"OVER ({partition(ctx)})"
    first = f"row_number() {over(ctx)} = 1" if ctx.group_keys else "false"
    return numbered(events(items), ctx, spec.span).join(F.broadcast(clock), "trace_id").selectExpr(
        "*", f"max(`#run`) {whole} AS `#last_run`", f"max(time) {whole} AS `#last`", f"{first} AS `#first_of_group`") \
        .where(f"(`#run` = `#last_run` AND `#last` + {spec.span} > `#clock`) OR `#first_of_group`") \
        .drop("#run", "#last_run", "#last", "#clock", "#first_of_group")


HELD = {Time: unexpired, FirstTime: first_time_held, ExtTimed: ext_timed_held, TimeAccum: accumulated}


def carried(ctx: Context) -> list[str]:
    """The columns (SQL) an event row carries into a post row."""
    return [quoted(c) for c in dict.fromkeys(["trace_id", *ctx.group_keys, "seq", "id", *ctx.properties])]


def partition(ctx: Context, *extra: str) -> str:
    """`PARTITION BY` the sub-window's columns (and `extra` ones), as SQL."""
    return "PARTITION BY " + ", ".join(quoted(c) for c in (*ctx.partition, *extra))


def group_table(items: DataFrame, ctx: Context) -> DataFrame:
    """Per sub-window under groupwin: `slot`, the seq of its first event, and
    `#first`, that event's clock. A hash aggregate: one row per group, joined
    back by broadcast (`with_group`), so no step sorts the events by key."""
    return events(items).groupBy(*ctx.partition).agg(
        F.expr("min(seq)").alias("slot"), F.expr("min(time)").alias("#first")
    )


def with_group(rows: DataFrame, table: DataFrame, ctx: Context) -> DataFrame:
    """`rows` with the columns of `table` (one row per sub-window), matched on
    the partition columns null-safely (a null key is a group)."""
    extra = [c for c in table.columns if c not in ctx.partition]
    on = " AND ".join(["`__rows`.trace_id = `__groups`.trace_id",
                       *(f"`__rows`.{quoted(k)} <=> `__groups`.{quoted(k)}" for k in ctx.group_keys)])
    joined = rows.alias("__rows").join(F.broadcast(table).alias("__groups"), F.expr(on), "inner")
    return joined.selectExpr("`__rows`.*", *(f"`__groups`.{quoted(c)}" for c in extra))


def timer_posts(rows: DataFrame, ctx: Context, side: str, seq: str, time: str, slot_due: str,
                slot: str = "slot", n: str = "seq") -> DataFrame:
    """Post rows (the contract's columns, then the properties) posting each row's
    event on `side` in the timer stop (phase 0) of item `seq` at clock `time`
    (SQL expressions), the timer being due at `slot_due`, the row `n`-th in its
    post (default: by arrival)."""
    return rows.selectExpr(
        "trace_id",
        f"CAST({seq} AS BIGINT) AS seq",
        f"{TIMER} AS phase",
        f"CAST({time} AS BIGINT) AS time",
        f"CAST({slot_due} AS BIGINT) AS slot_due",
        f"CAST({slot} AS BIGINT) AS slot",
        f"'{side}' AS side",
        f"CAST({n} AS BIGINT) AS pos",
        "id",
        *(quoted(p) for p in ctx.properties),
    )


def timer_removals(found: DataFrame, items: DataFrame, ctx: Context, due: str, *, by_due: bool = False) -> DataFrame:
    """Post rows removing each row of `found` (event rows with `clock.HIT`, due
    to leave at `due`, SQL) in its hit's timer stop, in Esper's timer order.
    Without groupwin every row keeps its own due time as `slot_due`. Under
    groupwin the groups' timers of one unit post in (due, slot) order, the slot
    being the seq of the group's first event (`group_table`): on a walk stop
    every row of the unit is due at the stop's clock; a jump (planned only when
    the input may hold jumps) fires each group's timer once, due at the least
    due time of the group's rows in that unit. Within a group's post rows are
    in arrival order, or with `by_due` in (due, seq) order (a window whose due
    times do not follow arrival)."""
    hit = quoted(clock.HIT)
    fired_at = clock.fire_time(hit, due)
    if not ctx.group_keys:
        return timer_posts(found, ctx, "remove", f"{hit}.seq", fired_at, due, slot="0")
    grouped = with_group(found, group_table(items, ctx).drop("#first"), ctx)
    if not ctx.jumps:
        return timer_posts(grouped, ctx, "remove", f"{hit}.seq", fired_at, fired_at)
    # a unit is the hit item and the clock: one walk stops at several due times
    unit = f"OVER ({partition(ctx, clock.HIT, '#at')}"
    ranks = [f"row_number() {unit} ORDER BY {due}, seq) AS `#n`"] if by_due else []
    timed = grouped.selectExpr("*", f"{fired_at} AS `#at`").selectExpr(
        "*", f"min({due}) {unit}) AS `#group_due`", *ranks)
    return timer_posts(timed, ctx, "remove", f"{hit}.seq", "`#at`", "`#group_due`", n="`#n`" if by_due else "seq")


def arrivals(items: DataFrame, ctx: Context, taken: DataFrame | None = None) -> DataFrame:
    """Every event (of `taken`, the events the window takes, where given)
    inserted at its own arrival (in order its seq)."""
    return arrival_posts(events(items) if taken is None else taken, ctx, Emit("insert", "seq", "time"))


def sliding(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    hit = quoted(clock.HIT)
    found = clock.expiries(items, span, [*carried(ctx), "time"], jumps=ctx.jumps).where(f"{hit} IS NOT NULL")
    return arrivals(items, ctx).unionByName(timer_removals(found, items, ctx, f"(time + {span})"))


def externally_timed(items: DataFrame, ctx: Context, timestamp: str, span: int) -> DataFrame:
    ts = f"CAST({quoted(timestamp)} AS BIGINT)"
    own = carried(ctx)
    taken = stamped_events(items, timestamp)
    stamped = taken.selectExpr(
        *own, "time",
        f"max({ts}) {over(ctx, frame=SO_FAR)} AS `#p`",
        f"max({ts}) {over(ctx, frame=BEFORE)} AS `#p_before`",
    )
    # each event is a point (its due time, P + t) and, if it raises P, a mark at P
    remover = "named_struct('seq', seq, 'time', time)"
    no_mark = "CAST(NULL AS STRUCT<seq: BIGINT, time: BIGINT>)"
    point = f"named_struct('k', 0, 't', `#p` + {span}, 'mark', {no_mark})"
    mark = f"CASE WHEN `#p` > `#p_before` THEN named_struct('k', 1, 't', `#p`, 'mark', {remover}) END"
    rows = stamped.selectExpr(*own, f"explode(array({point}, {mark})) AS `#r`").where("`#r` IS NOT NULL")
    first_reaching = f"OVER ({partition(ctx)} ORDER BY `#r`.t DESC, `#r`.k DESC {SO_FAR})"
    found = rows.selectExpr("*", f"last(`#r`.mark, true) {first_reaching} AS `#remover`").where("`#r`.k = 0")
    removed = arrival_posts(found, ctx, Emit("remove", "`#remover`.seq", "`#remover`.time", "seq"))
    return arrivals(items, ctx, taken).unionByName(removed)


def first_time(items: DataFrame, ctx: Context, span: int, *, kept: bool = False) -> DataFrame:
    """`#firsttime`'s posts; with `kept`, the events it takes, as input rows."""
    created = quoted(clock.CREATED)
    if ctx.group_keys:
        arrived = events(items).selectExpr("*", f"min(time) OVER ({partition(ctx)}) AS {created}")
    else:
        arrived = events(items).join(F.broadcast(clock.creation(items)), "trace_id")
    taken = arrived.where(f"time < {created} + {span}")
    if kept:
        return taken.drop(clock.CREATED)
    return arrival_posts(taken, ctx, Emit("insert", "seq", "time", "seq"))


def numbered(rows: DataFrame, ctx: Context, span: int) -> DataFrame:
    """Event `rows` with `#run`, the number of gaps of `span` or more before
    each in its sub-window: its accumulation."""
    gaps = rows.selectExpr("*", f"lag(time) {over(ctx)} AS `#prev`")
    return gaps.selectExpr(
        "*", f"sum(CASE WHEN time >= `#prev` + {span} THEN 1 ELSE 0 END) {over(ctx, frame=SO_FAR)} AS `#run`",
    ).drop("#prev")


def accumulating(items: DataFrame, ctx: Context, span: int) -> DataFrame:
    own = carried(ctx)
    due = quoted(clock.DUE)
    points = numbered(events(items).selectExpr(*own, "time"), ctx, span).selectExpr(
        *own, f"max(time) OVER ({partition(ctx, '#run')}) + {span} AS {due}")
    found = clock.hits(items, points, jumps=ctx.jumps).where(f"{quoted(clock.HIT)} IS NOT NULL")
    return arrivals(items, ctx).unionByName(timer_removals(found, items, ctx, due))


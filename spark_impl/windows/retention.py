"""CCL's retention policies that are no other kind's rule (apama-ccl.md §2.3,
§2.4, §2.6), as window functions over each sub-window (the trace, or under
`PER` a group: more partition columns), set-oriented as Esper's count and time
windows (`spark_impl/windows/length.py`, `time.py`). Without a primary key
every row is an insert and nothing is ever deleted but by the policy, so each
row's fate is a function of its index in its sub-window (count policies) or of
its own arrival clock (the jumping time policy).

With `i` the 0-based index of an event in its sub-window (`row_number` by seq),
every event is inserted at its own arrival, and:

* `KEEP n ROWS SLACK s` (`SlackLength`, s >= 2): the first purge comes at the
  arrival that makes n + s rows, index n + s - 1, and takes the s oldest; it
  leaves n rows, so the next purge comes s arrivals later and takes the next s.
  So the events fall in blocks of s (block b = i div s), and block b leaves at
  the arrival of index b*s + n + s - 1: its first event's `lead(seq, n + s - 1)`,
  carried to the block's other events by a forward fill (`last(..,
  ignorenulls)` of a struct set on the block's first event only, so an
  incomplete lookup, a struct of nulls, is carried as it is), in the arriving
  event's update after its insert, oldest first (pos: seq).
* `KEEP EVERY n ROWS` (`JumpingLength`): the arrival of index n purges the n
  before it and stays, alone; so the blocks are of n (block b = i div n), and
  block b leaves at the arrival of index (b + 1)*n: its first event's
  `lead(seq, n)`, forward-filled as above.
* `KEEP EVERY t` (`JumpingTime`): an event arriving at `a` leaves at the end
  of its interval, `(floor(a / t) + 1) * t`, in the unit of the first item
  whose clock reaches that (`clock.hits`). Every row held arrived in the
  interval the window's one timer closes (an arrival at or after its end comes
  after the timer fired: the timer due at an arrival's clock fires first, and
  a jump fires it), so the rule "all rows held leave at the end of the oldest
  one's interval" is each row leaving at its own interval's end. The rows of
  one firing are posted oldest first; under PER (`#groupwin`, which the CCL
  dialect writes only for count policies, but the model allows) the groups'
  timers order as `#time`'s (`time.timer_removals`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import JumpingLength, JumpingTime, SlackLength
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, index, over, quoted
from spark_impl.windows.length import AT_ARRIVAL
from spark_impl.windows.time import arrivals, carried, partition, timer_removals


def slack_length(items: DataFrame, spec: SlackLength, ctx: Context) -> DataFrame:
    return purged_in_blocks(events(items), ctx, block=spec.slack, closer=spec.size + spec.slack - 1)


def jumping_length(items: DataFrame, spec: JumpingLength, ctx: Context) -> DataFrame:
    return purged_in_blocks(events(items), ctx, block=spec.size, closer=spec.size)


def jumping_time(items: DataFrame, spec: JumpingTime, ctx: Context) -> DataFrame:
    due = quoted(clock.DUE)
    points = events(items).selectExpr(*carried(ctx), f"{interval_end('time', spec.span)} AS {due}")
    found = clock.hits(items, points, reach=spec.span, jumps=ctx.jumps).where(f"{quoted(clock.HIT)} IS NOT NULL")
    return arrivals(items, ctx).unionByName(timer_removals(found, items, ctx, due))


POSTS = {SlackLength: slack_length, JumpingLength: jumping_length, JumpingTime: jumping_time}


def unpurged_blocks(items: DataFrame, ctx: Context, block: int, closer: int) -> DataFrame:
    """The state of a count policy (`spark_impl.incremental`): each
    sub-window's blocks whose remover (index b*block + closer) has not
    arrived, from the first such block's first event. Those are the rows it
    holds (a purged block's rows are never posted again); a block's first
    index is a multiple of `block`, so the resumed run's blocks (indices from
    0 again) are the same blocks and leave at the same arrivals."""
    by = partition(ctx)
    return events(items).selectExpr(
        "*", f"row_number() OVER ({by} ORDER BY seq) - 1 AS `#i`", f"count(1) OVER ({by}) AS `#n`") \
        .where(f"(`#i` div {block}) * {block} + {closer} >= `#n`").drop("#i", "#n")


def unclosed_intervals(items: DataFrame, spec: JumpingTime, ctx: Context) -> DataFrame:
    """`KEEP EVERY t`'s state: the events whose interval's end the trace's
    clock C (its items' latest time) has not reached, the rows held at C (one
    whose end is at or before C left in the unit of the first item reaching
    it, at or before the cut). Under `PER` also each group's first event, as
    `#time`'s state keeps it (`time.unexpired`): the groups' timers due
    together post in the order the groups were created; an expired first
    event enters and leaves again before the cut."""
    clock = items.groupBy("trace_id").agg(F.max("time").alias("#clock"))
    first = f"row_number() OVER ({partition(ctx)} ORDER BY seq) = 1" if ctx.group_keys else "false"
    return events(items).join(F.broadcast(clock), "trace_id").selectExpr("*", f"{first} AS `#first_of_group`") \
        .where(f"{interval_end('time', spec.span)} > `#clock` OR `#first_of_group`").drop("#clock", "#first_of_group")


#: the state each policy's future reads (`spark_impl.incremental`)
HELD = {SlackLength: lambda items, spec, ctx: unpurged_blocks(items, ctx, spec.slack, spec.size + spec.slack - 1),
        JumpingLength: lambda items, spec, ctx: unpurged_blocks(items, ctx, spec.size, spec.size),
        JumpingTime: unclosed_intervals}


def interval_end(time: str, span: int) -> str:
    """SQL: the end of the `span`-long interval of the clock, anchored at 0, that
    `time` lies in: `(floor(time / span) + 1) * span`."""
    return f"({clock.floor_div(time, span)} * {span} + {span})"


def purged_in_blocks(rows: DataFrame, ctx: Context, block: int, closer: int) -> DataFrame:
    """Insert at arrival; the events in blocks of `block` by index, each block
    removed at the arrival `closer` events after its first (module docstring)."""
    order = over(ctx)
    remover = f"named_struct('seq', lead(seq, {closer}) {order}, 'time', lead(time, {closer}) {order})"
    running = over(ctx, frame="ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    marked = rows.selectExpr("*", f"{index(ctx)} AS `#i`").selectExpr(
        "*", f"CASE WHEN `#i` % {block} = 0 THEN {remover} END AS `#first`")
    filled = marked.selectExpr("*", f"last(`#first`, true) {running} AS `#remover`")
    return arrival_posts(filled, ctx, AT_ARRIVAL, Emit("remove", "`#remover`.seq", "`#remover`.time"))

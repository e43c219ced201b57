"""Count-based windows as window functions over each sub-window in arrival order
(esper.md §1; seed 14.3.1, 14.3.2, 14.3.10). Events arrive one at a time, so
every update holds the posts of one arrival.

With `i` the 0-based index of an event in its sub-window (`row_number` by seq):

* `#length(n)`: event i is inserted at its own arrival and removed, as the
  one pushed out, at the arrival of event i + n (`lead(seq, n)`), in the same
  update as that event's insert. Never removed while fewer than n follow.
* `#length_batch(n)`: event i is in batch b = i div n. Batch b is complete when
  its last event, i' = b*n + n - 1, exists: that arrival posts the whole batch
  as inserted (pos i mod n) and the previous batch as removed (pos i mod n).
  So event i is inserted at the arrival of its batch's closer and removed at
  the arrival of the next batch's closer, the closer of event i + n. A batch's
  closer is read at its first event (`lead(seq, n - 1)`, null if the batch is
  incomplete) and carried to the batch's other events by a forward fill
  (`last(..., ignorenulls)`); the next batch's closer is `lead` of that by n.
  An incomplete batch posts nothing.
* `#firstlength(n)`: events 0..n-1 are inserted at their arrival and never
  removed; later arrivals post nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from oracle.model import FirstLength, Length, LengthBatch
from spark_impl.windows import Context, Frame
from spark_impl.windows.base import Emit, arrival_posts, events, index, over, quoted

AT_ARRIVAL = Emit("insert", "seq", "time")


def sliding(items: DataFrame, spec: Length, ctx: Context) -> DataFrame:
    return pushed_out(events(items), ctx, spec.size)


def batched(items: DataFrame, spec: LengthBatch, ctx: Context) -> DataFrame:
    return batches(events(items), ctx, spec.size)


def first_length(items: DataFrame, spec: FirstLength, ctx: Context) -> DataFrame:
    kept = events(items).selectExpr("*", f"{index(ctx)} AS _i").where(f"_i < {spec.size}")
    return arrival_posts(kept, ctx, AT_ARRIVAL)


POSTS = {Length: sliding, LengthBatch: batched, FirstLength: first_length}
#: `#length(n)` holds its sub-window's last n events after each arrival (`Frame`)
FRAMES = {Length: lambda spec: Frame(spec.size)}


def held_by_arrival(items: DataFrame, ctx: Context, *, last: int | None = None, first: int | None = None,
                    extra: tuple[str, ...] = ()) -> DataFrame:
    """The state of a window holding events by arrival alone
    (`spark_impl.incremental`): each sub-window's (split by `extra`) `last`
    events, those fewer than `last` events follow (`lead(seq, last)` null),
    or its `first`, those fewer than `first` precede. An offset, not a
    `row_number` under a limit: Spark plans a limit per partition with a
    sort of its own before the shuffle, so a second sort of every row."""
    partition = ", ".join(quoted(c) for c in ctx.partition + extra)
    offset, n = ("lead", last) if last is not None else ("lag", first)
    return events(items).selectExpr("*", f"{offset}(seq, {n}) OVER (PARTITION BY {partition} ORDER BY seq) AS `#by`") \
        .where("`#by` IS NULL").drop("#by")


def last_batches(items: DataFrame, spec: LengthBatch, ctx: Context) -> DataFrame:
    """`#length_batch(n)`'s state: the sub-window's open batch and the last
    full one, which the next flush posts as removed; from a batch's first
    event, so the batches restart where they did."""
    partition = ", ".join(quoted(c) for c in ctx.partition)
    return events(items).selectExpr(
        "*", f"row_number() OVER (PARTITION BY {partition} ORDER BY seq) - 1 AS `#i`",
        f"count(1) OVER (PARTITION BY {partition}) AS `#n`") \
        .where(f"`#i` >= (`#n` div {spec.size} - 1) * {spec.size}").drop("#i", "#n")


#: the state each window's future reads (`spark_impl.incremental`): `#length(n)` its sub-windows' last n events,
#: `#firstlength(n)` their first n (it ignores the rest)
HELD = {Length: lambda items, spec, ctx: held_by_arrival(items, ctx, last=spec.size),
        FirstLength: lambda items, spec, ctx: held_by_arrival(items, ctx, first=spec.size),
        LengthBatch: last_batches}


def pushed_out(rows: DataFrame, ctx: Context, size: int, *extra: str) -> DataFrame:
    """Insert at arrival; remove at the arrival `size` events later in the
    sub-window split by `extra` columns (also `#lastevent`, `#unique`)."""
    order = over(ctx, *extra)
    later = Emit("remove", f"lead(seq, {size}) {order}", f"lead(time, {size}) {order}")
    return arrival_posts(rows, ctx, AT_ARRIVAL, later)


def batches(rows: DataFrame, ctx: Context, size: int) -> DataFrame:
    order = over(ctx)
    closer = f"named_struct('seq', lead(seq, {size - 1}) {order}, 'time', lead(time, {size - 1}) {order})"
    running = over(ctx, frame="ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW")
    marked = rows.selectExpr("*", f"{index(ctx)} AS _i").selectExpr(
        "*", f"CASE WHEN _i % {size} = 0 THEN {closer} END AS _start"
    )
    filled = marked.selectExpr("*", f"last(_start, true) {running} AS _close").selectExpr(
        "*", f"lead(_close, {size}) {order} AS _next"
    )
    pos = f"_i % {size}"
    return arrival_posts(filled, ctx, Emit("insert", "_close.seq", "_close.time", pos), Emit("remove", "_next.seq", "_next.time", pos))

"""`#sort(n, criteria)` as one window function, and `#rank(keys, n, criteria)`
as a per-sub-window kernel (esper.md §3; seed 14.3.19, 14.3.20).

`#sort`:

Every event is inserted at its own arrival (phase 1). The window after each
arrival holds the `n` best events so far: an event leaves only by being pushed
past the `n`-th place, and an event once pushed out never returns, since only
arrivals change the ranking. "Better" is the order of the sub-window's events
by the criteria (nulls first ascending, last descending), then newest first:
so an event `e` is held exactly while fewer than `n` events better than it have
arrived, and it leaves at the arrival of the `n`-th better event, or at its
own arrival if `n` better ones were there before it (new and old at once).

In a window over the sub-window ordered that way (criteria, then seq
descending), the events better than `e` are the rows before it:
`min_by(struct(seq, time), seq, n)` over the frame from the first row to the
row before gives the `n` earliest of them, and the last of those is the
arrival that pushes `e` out. One shuffle by sub-window, one sort, one window
whose aggregate keeps `n` rows: the bare plan's shape. Each arrival pushes out
at most one event, so a removal is the only row of its side.

`#rank`: an arrival replaces the event held under its unique key, or, if its
key is not held, may push out the worst. Which keys are held depends on every
earlier push-out, and which event is pushed out depends on the keys held: no
order of the events gives the answer to a running aggregate, so the state is
truly sequential. Each sub-window's events (one shuffle by sub-window) go
through a grouped Arrow kernel (`_rank_kernel`), a loop over the events in seq
order with a dictionary of holders and a sorted list of at most n + 1 entries.
The kernel compares integers only: the criteria and the unique keys are first
replaced by their `dense_rank` within the sub-window (SQL's ordering, nulls
first ascending, last descending; equal keys, nulls included, share a rank).
It adds to each event the arrival that removed it (replaced, pushed out, or
its own arrival if it came in worse than the worst of a full window).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.model import Rank, Sort
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, quoted


def _order(spec: Sort) -> str:
    return ", ".join(f"{quoted(c.property)} DESC NULLS LAST" if c.descending else f"{quoted(c.property)} ASC NULLS FIRST"
                     for c in spec.criteria)


def sorted_window(items: DataFrame, spec: Sort, ctx: Context) -> DataFrame:
    partition = ", ".join(quoted(c) for c in ctx.partition)
    better = (f"OVER (PARTITION BY {partition} ORDER BY {_order(spec)}, seq DESC "
              "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    ranked = events(items).selectExpr(
        "*", f"min_by(named_struct('seq', seq, 'time', time), seq, {spec.size}) {better} AS `#better`"
    )
    # the n-th better arrival (the latest of the n earliest), or the event's own if it came later
    pusher = (f"CASE WHEN size(`#better`) = {spec.size} THEN "
              "greatest(element_at(`#better`, -1), named_struct('seq', seq, 'time', time)) END")
    pushed = ranked.selectExpr("*", f"{pusher} AS `#pusher`")
    return arrival_posts(pushed, ctx, Emit("insert", "seq", "time"),
                         Emit("remove", "`#pusher`.seq", "`#pusher`.time"))


def ranked_window(items: DataFrame, spec: Rank, ctx: Context) -> DataFrame:
    partition = ", ".join(quoted(c) for c in ctx.partition)
    unique = ", ".join(f"{quoted(k)} ASC NULLS FIRST" for k in spec.keys)
    prepared = events(items).selectExpr(
        "*", f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {_order(spec)}) AS `#s`",
        f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {unique}) AS `#u`",
    )
    schema = T.StructType([*prepared.schema.fields, T.StructField("#out_seq", T.LongType()),
                           T.StructField("#out_time", T.LongType())])
    removed = prepared.groupBy(*ctx.partition).applyInArrow(_rank_kernel(spec.size), schema)
    return arrival_posts(removed, ctx, Emit("insert", "seq", "time"), Emit("remove", "`#out_seq`", "`#out_time`"))


def _rank_kernel(size: int):
    """The grouped-map function for `#rank` with `size` (module docstring)."""

    def kernel(table):
        import bisect

        import pyarrow as pa

        seq, time = table.column("seq").to_pylist(), table.column("time").to_pylist()
        sort_rank, key = table.column("#s").to_pylist(), table.column("#u").to_pylist()
        out_seq: list = [None] * len(seq)
        out_time: list = [None] * len(seq)
        holder: dict[int, int] = {}  # unique key -> row held under it
        held: list[tuple[int, int, int]] = []  # (sort rank, -seq, row): last is the oldest of the worst

        def leave(row: int, by: int) -> None:
            out_seq[row], out_time[row] = seq[by], time[by]

        for row in sorted(range(len(seq)), key=seq.__getitem__):
            entry = (sort_rank[row], -seq[row], row)
            old = holder.get(key[row])
            if old is not None:
                held.pop(bisect.bisect_left(held, (sort_rank[old], -seq[old], old)))
                leave(old, row)
            elif len(held) >= size and sort_rank[row] > held[-1][0]:
                leave(row, row)
                continue
            bisect.insort(held, entry)
            holder[key[row]] = row
            if len(held) > size:
                _, _, worst = held.pop()
                del holder[key[worst]]
                leave(worst, row)
        return table.append_column("#out_seq", pa.array(out_seq, pa.int64())).append_column(
            "#out_time", pa.array(out_time, pa.int64()))

    return kernel


POSTS = {Sort: sorted_window, Rank: ranked_window}

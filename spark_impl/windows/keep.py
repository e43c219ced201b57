"""Windows that keep events by arrival alone (esper.md §1; seed 14.3.9, 14.3.11,
14.3.12), over each sub-window in arrival order:

* `#keepall`: every event is inserted at its arrival and never removed.
* `#firstevent`: the sub-window's first event (`row_number` 1) is inserted at
  its arrival; every later arrival posts nothing.
* `#lastevent`: every event is inserted at its arrival and removed at the
  next arrival of its sub-window (`lead(seq, 1)`), in that arrival's update:
  a length window of size 1.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from oracle.model import FirstEvent, KeepAll, LastEvent
from spark_impl.windows import Context, Frame
from spark_impl.windows.base import arrival_posts, events, index
from spark_impl.windows.length import AT_ARRIVAL, held_by_arrival, pushed_out



def keep_all(items: DataFrame, spec: KeepAll, ctx: Context) -> DataFrame:
    return arrival_posts(events(items), ctx, AT_ARRIVAL)


def first_event(items: DataFrame, spec: FirstEvent, ctx: Context) -> DataFrame:
    return arrival_posts(events(items).selectExpr("*", f"{index(ctx)} AS _i").where("_i = 0"), ctx, AT_ARRIVAL)


def last_event(items: DataFrame, spec: LastEvent, ctx: Context) -> DataFrame:
    return pushed_out(events(items), ctx, 1)


POSTS = {KeepAll: keep_all, FirstEvent: first_event, LastEvent: last_event}
#: `#keepall` holds every event so far, `#lastevent` the last one, after each arrival (`Frame`)
FRAMES = {KeepAll: lambda spec: Frame(None), LastEvent: lambda spec: Frame(1)}
#: the state each window's future reads (`spark_impl.incremental`): the first event, the last one; `#keepall`
#: every event (its own future posts read none, but it holds them all: a statement over it reads them)
HELD = {FirstEvent: lambda items, spec, ctx: held_by_arrival(items, ctx, first=1),
        LastEvent: lambda items, spec, ctx: held_by_arrival(items, ctx, last=1),
        KeepAll: lambda items, spec, ctx: events(items)}

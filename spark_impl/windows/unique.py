"""Keyed windows (esper.md §1 `#unique`, `#firstunique`; seed 14.3.14, 14.3.18):
the sub-window split further by the unique key columns, each key in arrival
order. Window partitioning puts null values of a key column together, so a
missing property (null) is a key like any other (oracle.windows.keys, decided).

* `#unique(keys)`: every event is inserted at its arrival and removed at the
  next arrival with the same key (`lead(seq, 1)` over the key), in that
  arrival's update: a length window of size 1 per key.
* `#firstunique(keys)`: the first event of each key (`row_number` 1 over the
  key) is inserted at its arrival, never removed; other arrivals post nothing.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from oracle.model import FirstUnique, Unique
from spark_impl.windows import Context
from spark_impl.windows.base import arrival_posts, events, index
from spark_impl.windows.length import AT_ARRIVAL, held_by_arrival, pushed_out



def unique(items: DataFrame, spec: Unique, ctx: Context) -> DataFrame:
    return pushed_out(events(items), ctx, 1, *spec.keys)


def first_unique(items: DataFrame, spec: FirstUnique, ctx: Context) -> DataFrame:
    firsts = events(items).selectExpr("*", f"{index(ctx, *spec.keys)} AS _i").where("_i = 0")
    return arrival_posts(firsts, ctx, AT_ARRIVAL)


POSTS = {Unique: unique, FirstUnique: first_unique}
#: the state each window's future reads (`spark_impl.incremental`): each key's last event, each key's first
HELD = {Unique: lambda items, spec, ctx: held_by_arrival(items, ctx, last=1, extra=spec.keys),
        FirstUnique: lambda items, spec, ctx: held_by_arrival(items, ctx, first=1, extra=spec.keys)}

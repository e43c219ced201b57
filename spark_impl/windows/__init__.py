"""The Spark windows, one module per window family (mirroring oracle/windows/).

Contract between a family module and the shared pipeline (spark_impl/__init__.py):

    posts(items: DataFrame, spec, ctx: Context) -> DataFrame

`items` is the validated input with the clock columns added by `spark_impl.clock`
(`prev_time`: the clock before the item; every non-jump item walks from
`prev_time` to `time`, a jump item jumps). `ctx.partition` lists the partition
columns of one sub-window: `trace_id`, then the group key columns under groupwin
(`ctx.group_keys`; a null key is a group of its own: join on keys null-safely).

A family returns one row per event it posts, with these columns:

| column   | meaning                                                                  |
|----------|--------------------------------------------------------------------------|
| trace_id | the trace                                                                |
| seq      | the item that caused the unit of work (the event, or the advance/jump/   |
|          | event whose walk or jump reached the timer)                              |
| phase    | 0: a timer stop during the item's walk or jump; 1: the event's arrival   |
| time     | the clock the update is posted at (a walk: the due time; a jump: its     |
|          | target; an arrival: the event's time)                                    |
| slot_due | for timer posts, the timer's due time (jumps fire due timers in due      |
|          | order); for arrivals, `time`                                             |
| slot     | the sub-window's creation order in its trace (under groupwin the seq of  |
|          | the group's first event; 0 otherwise): simultaneous timers of several    |
|          | groups post in (slot_due, slot) order                                    |
| side     | 'insert' or 'remove'; null for an empty post (FORCE_UPDATE), whose id    |
|          | and pos are null too                                                     |
| pos      | the event's position among the post's rows of that side                  |
| id       | the posted event's id                                                    |

The pipeline turns these into the public output: one update per distinct
(trace_id, seq, phase, time), numbered in that order, rows of a side concatenated
over the update's posts in (slot_due, slot, pos) order, properties joined back by id.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from attrs import frozen

from oracle.errors import UnsupportedWindow
from oracle.model import (
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    Time,
    TimeBatch,
    Unique,
    WindowSpec,
    spec_kind,
)


@frozen
class Context:
    """What a family needs to know besides its spec.

    `partition`: the columns that identify one sub-window (`trace_id`, then
    `group_keys`); every window function and join of a family partitions by them.
    `group_keys`: the `#groupwin` key columns (empty without groupwin). On rows
    that are not events (advance, jump, ...) they are null, which is not a group.
    `properties`: the event property columns of `items`. A family may carry them
    on a post row built from the posted event's own input row; the pipeline joins
    back by (trace_id, id) only the properties a family's rows lack.

    `arrival_numbers`: set for a spec the family lists in `ONE_POST_PER_ARRIVAL`
    (below). Every event row of `items` then carries `arrival_no`, the number of
    its arrival's update in the trace, and every post row must carry `update_no`,
    the `arrival_no` of the arrival it is posted at.

    The pipeline also gives every event row of `items` its `slot` (the contract's
    meaning: the seq of its group's first event under groupwin, else 0).
    """

    partition: tuple[str, ...]
    group_keys: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    arrival_numbers: bool = False


# spec class -> family module (spark_impl.windows.<module>) holding its `posts`.
FAMILIES: dict[type, str] = {
    Length: "length",
    LengthBatch: "length",
    FirstLength: "length",
    KeepAll: "keep",
    FirstEvent: "keep",
    LastEvent: "keep",
    Unique: "unique",
    FirstUnique: "unique",
    Time: "time",
    ExtTimed: "time",
    FirstTime: "time",
    TimeBatch: "time_batch",
    ExtTimedBatch: "time_batch",
}


@frozen
class Family:
    """A family module's `posts` for one spec, and whether the spec posts exactly
    once per arrival and never on a timer (the module's optional
    `ONE_POST_PER_ARRIVAL`, a tuple of spec classes). For those the updates are
    the arrivals, so the pipeline numbers them on the input, before the family
    runs, instead of ranking the posts after it (one sort of the posts less)."""

    posts: Callable
    one_post_per_arrival: bool


def family(spec: WindowSpec) -> Family:
    """`spec`'s family, its module imported on first use; a spec without a family,
    or whose family module is not there, is `UnsupportedWindow`."""
    name = FAMILIES.get(type(spec))
    if name is not None:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
        else:
            return Family(module.posts, isinstance(spec, getattr(module, "ONE_POST_PER_ARRIVAL", ())))
    raise UnsupportedWindow(f"the Spark implementation does not implement the {spec_kind(spec)} window")

"""The Spark windows, one module per window family (mirroring oracle/windows/).

Contract between a family module and the shared pipeline (spark_impl/pipeline.py):
a family module has a table `POSTS`, spec class -> a function

    (items: DataFrame, spec, ctx: Context) -> DataFrame

`items` is the validated input (columns: spark_impl.frames). `ctx.partition`
lists the partition columns of one sub-window: `trace_id`, then the group key
columns under groupwin (`ctx.group_keys`; a null key is a group of its own:
join on keys null-safely). Where a timer fires is found by `spark_impl.clock`.

A module may also have a table `CHECKS`, spec class -> a function (spec) that
raises `UnsupportedWindow` for a spec of that class the module does not build;
`family` calls it. And a table `FRAMES`, spec class -> a function (spec) ->
`Frame` (or `TimeFrame`), for a window whose contents after each post are a
frame over its sub-window's events in arrival order (or in time): a statement
over it may aggregate the events themselves (`spark_impl.windows.statement`)
instead of its posts.

A family returns one row per event it posts, with these columns:

| column   | meaning                                                                  |
|----------|--------------------------------------------------------------------------|
| trace_id | the trace                                                                |
| seq      | the item that caused the unit of work (the event, or the advance/jump/   |
|          | event whose walk or jump reached the timer)                              |
| phase    | 0: a timer stop during the item's walk or jump; 1: the event's arrival   |
| time     | the clock the update is posted at (a walk: the due time; a jump: its     |
|          | target; an arrival: the event's time)                                    |
| slot_due | for timer posts, the due time of the sub-window's timer that fired       |
|          | (jumps fire due timers in due order); for arrivals, `time`               |
| slot     | the sub-window's creation order in its trace (under groupwin the seq of  |
|          | the group's first event; 0 otherwise): simultaneous timers of several    |
|          | groups post in (slot_due, slot) order                                    |
| side     | 'insert' or 'remove'; 'update' for a row posted with CCL's update code;  |
|          | 'error' for a rejected item (its message in `error`); null for an empty  |
|          | post (FORCE_UPDATE), whose id and pos are null too                       |
| pos      | the event's order among its sub-window's post's rows of that side (a     |
|          | long; the posted event's seq where the post is in arrival order)         |
| id       | the posted event's id                                                    |
| #field<i>| a row-posting family (below): the row's i-th field, typed as declared;  |
|          | `id` null (an eKuiper query's pane rows: the pane's event, fields null)  |
| error    | optional: on a row of side 'error', the rejected item's message (a keyed |
|          | window's duplicate insert, ...); a family that rejects nothing leaves it |
|          | out                                                                      |
| ordinal  | optional: the update's order among several of one unit of work (an      |
|          | eKuiper pane window: panes closing together); absent: 0                  |
| wstart,  | optional: a pane's reported start and end (eKuiper); the output's        |
| wend     | `window` struct                                                          |

A module may have a table `HELD`, spec class -> a function

    (items: DataFrame, spec, ctx: Context) -> DataFrame | None

giving the item rows (the input's columns) the window's future posts read
after the last of `items`: what `spark_impl.incremental` keeps as the
window's state (events, and any other item it needs; `start` and `set`
items are always kept). None (or no entry): every item is kept.

A family whose specs post rows of fields (a statement, a derived-value
window) has a table `FIELDS`, spec class -> a function

    (spec, columns: dict[str, StructField], group_keys) -> tuple[StructField, ...]

giving the rows' fields in order (their public names, Spark types as the
engine types each, metadata `frames.JSON_TEXT` on a field holding JSON text)
from the input's property columns, without running anything; its posts
carry field i as column `#field<i>` of exactly that type. A module whose
windows report pane bounds (`wstart`, `wend`) sets `PANE_BOUNDS = True`.

The pipeline turns these into the public output: one update per distinct
(trace_id, seq, phase, time), a side's rows ordered by (slot_due, slot, pos),
the `pos` of the output; properties joined back by id where a family's rows
lack them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from attrs import frozen

from oracle.errors import UnsupportedWindow
from oracle.model import (
    BatchedLength,
    BatchedTime,
    LengthUnique,
    Expr,
    ExprBatch,
    Correl,
    Linest,
    Size,
    Uni,
    WeightedAvg,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    TimeAccum,
    FirstUnique,
    Intersection,
    JumpingLength,
    JumpingTime,
    KeepAll,
    Keyed,
    LastEvent,
    Length,
    LengthBatch,
    Rank,
    RetainUnion,
    SlackLength,
    Sort,
    Time,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Unique,
    WindowSpec,
    spec_kind,
)
from oracle.model import CountPanes, Hopping, Session, Sliding, Statement, Tumbling


@frozen
class Context:
    """What a family needs to know besides its spec.

    `partition`: the columns that identify one sub-window (`trace_id`, then
    `group_keys`); every window function of a family over events partitions by
    them. `group_keys`: the `#groupwin` key columns (empty without groupwin). On
    rows that are not events (advance, jump, ...) they are null, which is not a
    group. `properties`: the event property columns of `items`. A family may
    carry them on a post row built from the posted event's own input row; the
    pipeline joins back by (trace_id, id) only the properties a family's rows lack.
    `jumps`: whether `items` may hold `jump` items (false: the caller promised
    none, and the pipeline fails the job on one). `variables`: whether `items`
    may declare or set variables (a start row's `vars`, a `set` item; false: the
    caller promised neither, as an event table has neither, and the pipeline
    fails the job on one). `pane_rows`: an eKuiper
    query posts its panes' rows beside its output rows (false: the output rows
    only, what eKuiper's sink receives). `one_trace`: the trace id of every
    item, when the caller knows there is one trace (an event table without a
    trace column); a family may then leave `trace_id` out of its grouping and
    join keys (a constant string key costs a hash aggregate a third more,
    measured) and put it back as this literal. `lasts`: where the caller
    knows them (a stream's survey), each trace's last item as (trace id,
    seq, time) triples, its latest clock being that time: a family's state
    reads a trace's clock off them (`base.trace_clocks`) rather than
    aggregating it.
    """

    partition: tuple[str, ...]
    group_keys: tuple[str, ...] = ()
    properties: tuple[str, ...] = ()
    jumps: bool = True
    variables: bool = True
    pane_rows: bool = True
    one_trace: str | None = None
    lasts: tuple[tuple[str, int, int], ...] | None = None


# spec class -> family module (spark_impl.windows.<module>) whose POSTS holds its function.
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
    TimeAccum: "time",
    TimeOrder: "time_order",
    Sort: "sort",
    Rank: "sort",
    TimeBatch: "time_batch",
    ExtTimedBatch: "time_batch",
    TimeLengthBatch: "time_batch",
    Expr: "expr",
    ExprBatch: "expr",
    Intersection: "several",
    RetainUnion: "several",
    Size: "derived",
    Uni: "derived",
    Linest: "derived",
    Correl: "derived",
    WeightedAvg: "derived",
    SlackLength: "retention",
    JumpingLength: "retention",
    JumpingTime: "retention",
    Keyed: "keyed",
    # Apama (issue 14)
    BatchedTime: "lots",
    BatchedLength: "lots",
    LengthUnique: "lots",
    # eKuiper's pane windows and the queries over them
    Tumbling: "panes",
    Hopping: "panes",
    Sliding: "panes",
    Session: "panes",
    CountPanes: "panes",
}

#: a statement's family, by when its rules post (`Rules.posted`): Esper's rows
#: and CCL's aggregation windows, eKuiper's panes, Apama's activations
STATEMENT_FAMILIES: dict[str, str] = {"update": "statement", "store": "statement", "pane": "panes",
                                      "activation": "stream_query"}


@frozen
class Frame:
    """A window whose every arrival is one post, of the arriving event inserted
    and, once the sub-window holds `size` events, the `size`-th event before it
    removed: after each arrival it holds the sub-window's last `size` events
    (`size` None: every event so far, nothing removed). Nothing else posts."""

    size: int | None


@frozen
class TimeFrame:
    """A window that inserts each event at its arrival and removes it alone in
    the timer posts of its due time, its arrival clock + `span`: the first item
    whose clock reaches the due time fires it (a walk stops at each due time,
    a jump once at its target, before the item's own arrival). So after any
    post the window holds the events that arrived and are not yet due by the
    clock, whatever else they share. Nothing else posts."""

    span: int


@frozen
class Family:
    """A family module's `posts`, for one spec, and its `frame` where the
    module's `FRAMES` gives one."""

    posts: Callable
    frame: Frame | TimeFrame | None = None
    fields: Callable | None = None
    panes: bool = False
    held: Callable | None = None


def family(spec: WindowSpec) -> Family:
    """`spec`'s family, its module imported on first use (a module named in
    FAMILIES must exist: a missing one is an error, not an unsupported window);
    a spec without a family, or one its module's `CHECKS` refuses, is
    `UnsupportedWindow`."""
    name = STATEMENT_FAMILIES[spec.rules.posted] if isinstance(spec, Statement) else FAMILIES.get(type(spec))
    if name is None:
        raise UnsupportedWindow(f"the Spark implementation does not implement the {spec_kind(spec)} window")
    module = importlib.import_module(f"{__name__}.{name}")
    check = getattr(module, "CHECKS", {}).get(type(spec))
    if check is not None:
        check(spec)
    frame = getattr(module, "FRAMES", {}).get(type(spec))
    return Family(module.POSTS[type(spec)], frame(spec) if frame is not None else None,
                  getattr(module, "FIELDS", {}).get(type(spec)), getattr(module, "PANE_BOUNDS", False),
                  getattr(module, "HELD", {}).get(type(spec)))

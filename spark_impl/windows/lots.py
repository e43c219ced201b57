"""Apama's lot windows as relational operations (apama-ccl.md §1.2 to §1.8;
../shared/seeds/apama-batched-windows.txt): `BatchedTime` (`within d every p
[retain n] [with unique k]`, with its own partitions), `BatchedLength`
(`retain n every m [with unique k]`) and `LengthUnique` (`[within d] retain n
with unique k`), the last two also under `#groupwin` (`partition by`).

The rules (oracle/windows/lots.py; decided points pinned by corpus/apama):

* One activation (an arrival, one stop of a walk, one jump) posts one lot: what
  the window shows after it, minus what it showed before (insert), and the
  reverse (remove); no change, no post.
* What the window shows is a function of the arrivals alone: of a partition's
  items, those entered and not expired, the newest n of them (`retain n`), and
  of those the latest per unique key (`with unique`, after the rest: a hidden
  item still holds one of the n places).
* Entry: unbatched at arrival; batched by count, at the arrival of the m-th
  item of the partition's batch (the batch enters as one); batched by time, at
  the grid point `creation + k p` at or after arrival (k >= 0), an item arriving
  on the grid at its own arrival (after the grid point's own lot).
* Exit by time: at arrival + d; batched, at the first grid point at or after
  arrival + d (lifetimes count from arrival).

Why each item's fate is a few window functions. Entry is monotone in arrival
order (a later item never enters earlier), and so is the exit by time; so the
items a partition has entered form a prefix of its arrivals and those not
expired a suffix. Hence, for item i at position x of its partition:

* it is displaced from the newest n exactly when the item at position x + n
  enters (the n items after it have then entered, and none has expired before
  i): `lead(entry, n)`;
* it is hidden exactly when the next item of its partition with its unique key
  enters: `lead(entry, 1)` by (partition, key). (If that item never shows, i
  left no later: it expires no later than the item, or is displaced with it.)
* Once displaced, hidden or expired, an item never shows again (a newer item
  stays as long as an older one), so it shows from its entry to the earliest
  of its exit, displacement and hiding, compared as units of work
  `(seq, phase, time)`. An item whose earliest removal is its entry's own
  unit never shows and posts nothing: the batch period longer than the
  duration, a count batch's items displaced by the same batch, a duplicate
  hidden by its own batch, an item that came and went within one jump.

Every instant at which what the window shows changes is a due time of the
window's timer (an entry or an exit), so an instant's unit is its *hit* on the
clock (`spark_impl.clock`): a walk's stop at it (phase 0), or the jump passing
it; a jump past several grid points then posts their changes as one lot.

Order in a lot (the contract's `pos` as (due, slot, n)): one partition's items
in arrival order (n = seq). A `BatchedTime` with partitions posts partition
by partition: by the earliest instant the lot changes the partition (an
expired item's exit if it lies at or before the lot's instant, else the lot's
instant: the grid point at or before the unit's clock), then the partition's
first arrival (slot), as `#groupwin` orders groups. Under `#groupwin` a jump
fires each group's timer once, due at the group's earliest pending expiry
(hidden items' included: they keep their timers), so a group's removals by
time in one unit carry that due as `slot_due` and the group's first arrival as
`slot`. Without jumps (the caller's promise, `Context.jumps`) every lot's
instant is its unit's clock (a walk stops at each due time; an arrival's lot
is its own instant), so the windows only a jump's order needs are left out.

No fate depends on another item's fate, only on arrivals (each a `lead` over
them), so nothing is sequential and no grouped Python kernel is needed.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.model import BatchedLength, BatchedTime, LengthUnique
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import events, quoted
from spark_impl.windows.time import carried

TIMER, ARRIVAL = 0, 1
#: a unit of work: struct fields compare in this order, which is the units' order in a trace
UNIT = "STRUCT<seq: BIGINT, phase: INT, time: BIGINT>"
HIT = quoted(clock.HIT)
DUE = quoted(clock.DUE)


def arrival_unit(seq: str = "seq", time: str = "time") -> str:
    """SQL: the unit of an item's arrival."""
    return f"named_struct('seq', CAST({seq} AS BIGINT), 'phase', {ARRIVAL}, 'time', CAST({time} AS BIGINT))"


def timer_unit(hit: str, due: str) -> str:
    """SQL: the unit in which a timer due at `due` fires, given its hit (null if no item reaches it)."""
    return (f"CASE WHEN {hit} IS NOT NULL THEN named_struct('seq', {hit}.seq, 'phase', {TIMER}, "
            f"'time', CAST({clock.fire_time(hit, due)} AS BIGINT)) END")


def _grid_at_or_after(value: str, period: int) -> str:
    """SQL: the first grid point `#c + k * period` at or after `value` (`#c` the creation clock)."""
    return f"(`#c` - {clock.floor_div(f'`#c` - ({value})', period)} * {period})"


def _grid_at_or_before(value: str, period: int) -> str:
    """SQL: the last grid point at or before `value` (a jump's lot is the content there)."""
    return f"(`#c` + {clock.floor_div(f'({value}) - `#c`', period)} * {period})"


def _keys_sql(columns) -> list[str]:
    return [quoted(c) for c in columns]


class Lots:
    """One lot window's plan over event rows holding `#entry` and `#exit`, the
    units of the item's entry and of its exit by time (null: none): `fates`
    adds the displacement, the hiding and the removal, `posts` the post rows
    (module docstring). `parts`: the columns of one partition (the sub-window's,
    then a `BatchedTime`'s own partitions)."""

    def __init__(self, ctx: Context, *, size: int | None, unique: tuple[str, ...], own_partition: tuple[str, ...] = ()):
        self.ctx = ctx
        self.size, self.unique = size, unique
        self.parts = tuple(dict.fromkeys((*ctx.partition, *own_partition)))

    def over(self, *extra: str, frame: str = "") -> str:
        return f"OVER (PARTITION BY {', '.join(_keys_sql((*self.parts, *extra)))} ORDER BY seq {frame})"

    def fates(self, rows: DataFrame) -> DataFrame:
        """`rows` (with `#entry`, `#exit`) with `#rm`, the unit that takes the
        item out (null: never), and `#shown`, whether it ever shows."""
        displaced = f"lead(`#entry`, {self.size}) {self.over()}" if self.size else f"CAST(NULL AS {UNIT})"
        hidden = f"lead(`#entry`, 1) {self.over(*self.unique)}" if self.unique else f"CAST(NULL AS {UNIT})"
        first = f"min(seq) OVER (PARTITION BY {', '.join(_keys_sql(self.parts))})"  # the partition's first arrival
        staged = rows.selectExpr("*", f"{displaced} AS `#disp`", f"{hidden} AS `#hide`", f"{first} AS `#slot`")
        return staged.selectExpr(
            "*", "least(`#exit`, `#disp`, `#hide`) AS `#rm`"
        ).selectExpr("*", "`#entry` IS NOT NULL AND (`#rm` IS NULL OR `#rm` > `#entry`) AS `#shown`")

    def posts(self, rows: DataFrame, *, keep: tuple[str, ...] = (), when: str | None = None,
              timer_due: str | None = None) -> DataFrame:
        """Post rows: each shown item inserted at its entry, removed at `#rm`.
        `keep`: more columns of `rows` the SQL below reads. `when` (SQL over a
        post row, `#u` its unit, `#side` its side): the instant the lot
        changes the item's partition, for partition order; `timer_due` (a
        column of `rows`): under groupwin, the due of the group's timer where
        the item leaves by time."""
        ctx = self.ctx
        shown = self.fates(rows).where("`#shown`")
        posted = shown.selectExpr(
            *carried(ctx), *(quoted(c) for c in keep), "`#slot`",
            "explode(array(named_struct('side', 'insert', 'u', `#entry`), "
            "CASE WHEN `#rm` IS NOT NULL THEN named_struct('side', 'remove', 'u', `#rm`) END)) AS `#p`",
        ).where("`#p` IS NOT NULL").selectExpr("*", "`#p`.side AS `#side`", "`#p`.u AS `#u`")
        if when is not None and ctx.jumps and len(self.parts) > len(ctx.partition):
            # partitions in one window: (earliest change, first arrival). Only a jump's lot can
            # change a partition before its own instant (a walk stops at every due time, and an
            # arrival's lot is its own instant), so without jumps `when` is the unit's clock; with
            # one partition any value common to the unit's rows orders them
            unit_part = ", ".join(_keys_sql((*self.parts, "#u")))
            posted = posted.selectExpr("*", f"{when} AS `#when`").selectExpr(
                "*", f"min(`#when`) OVER (PARTITION BY {unit_part}) AS `#slot_due`")
        elif timer_due is not None:
            by_timer = f"`#side` = 'remove' AND `#u`.phase = {TIMER}"
            posted = posted.selectExpr(
                "*", f"CASE WHEN {by_timer} THEN {quoted(timer_due)} ELSE `#u`.time END AS `#slot_due`")
        else:
            posted = posted.selectExpr("*", "`#u`.time AS `#slot_due`")
        return posted.selectExpr(
            "trace_id", "`#u`.seq AS seq", "`#u`.phase AS phase", "`#u`.time AS time",
            "CAST(`#slot_due` AS BIGINT) AS slot_due", "CAST(`#slot` AS BIGINT) AS slot", "`#side` AS side",
            "CAST(seq AS BIGINT) AS pos", "id", *(quoted(p) for p in ctx.properties),
        )


# --------------------------------------------------------------------------- the kinds


def length_unique(items: DataFrame, spec: LengthUnique, ctx: Context) -> DataFrame:
    """`LengthUnique`: every item enters at its own arrival; with a span it
    leaves at exactly arrival + span (`clock.expiries`)."""
    plan = Lots(ctx, size=spec.size, unique=spec.unique)
    own = [*carried(ctx), "time"]
    if spec.span is None:
        rows = events(items).selectExpr(*own, f"{arrival_unit()} AS `#entry`", f"CAST(NULL AS {UNIT}) AS `#exit`")
        return plan.posts(rows)
    found = clock.expiries(items, spec.span, own, jumps=ctx.jumps)
    rows = found.selectExpr(*own, f"{arrival_unit()} AS `#entry`",
                            f"{timer_unit(HIT, f'(time + {spec.span})')} AS `#exit`")
    if not ctx.group_keys or not ctx.jumps:  # a walk's stop fires the timers due at its clock only
        return plan.posts(rows)
    # under groupwin a jump fires each group's timer once, due at its earliest pending expiry:
    # the items still held when the timer fires (not displaced before), hidden ones too
    fated = plan.fates(rows).selectExpr(
        *(quoted(c) for c in rows.columns), f"CASE WHEN `#exit` IS NOT NULL AND (`#disp` IS NULL OR `#disp` > `#exit`) "
        f"THEN time + {spec.span} END AS `#pending`")
    by_unit = ", ".join(_keys_sql((*ctx.partition, "#exit")))
    timed = fated.selectExpr(*(quoted(c) for c in rows.columns),
                             f"min(`#pending`) OVER (PARTITION BY {by_unit}) AS `#group_due`")
    return plan.posts(timed, keep=("#group_due",), timer_due="#group_due")


def batched_length(items: DataFrame, spec: BatchedLength, ctx: Context) -> DataFrame:
    """`BatchedLength`: the m-th item of each batch of a partition lets the
    batch in at its arrival; the entry of any item is the arrival of the first
    batch closer at or after it (within m - 1 items)."""
    plan = Lots(ctx, size=spec.size, unique=spec.unique)
    m = spec.batch
    indexed = events(items).selectExpr(*carried(ctx), "time", f"row_number() {plan.over()} AS `#i`")
    closer = f"CASE WHEN pmod(`#i`, {m}) = 0 THEN {arrival_unit()} END"
    rows = indexed.selectExpr(
        *carried(ctx), "time",
        f"min({closer}) {plan.over(frame=f'ROWS BETWEEN CURRENT ROW AND {m - 1} FOLLOWING')} AS `#entry`",
        f"CAST(NULL AS {UNIT}) AS `#exit`")
    return plan.posts(rows)


def batched_time(items: DataFrame, spec: BatchedTime, ctx: Context) -> DataFrame:
    """`BatchedTime`: entry at the grid point at or after arrival (an arrival
    on the grid at its own arrival), exit at the grid point at or after
    arrival + span, both found on the clock (`clock.hits`, one lookup per
    distinct grid point); the grid is the trace's (the window's creation),
    shared by the partitions."""
    p = spec.period
    plan = Lots(ctx, size=spec.size, unique=spec.unique, own_partition=spec.partition)
    own = [*carried(ctx), "time"]
    arrived = events(items).join(F.broadcast(clock.creation(items)), "trace_id").selectExpr(
        *own, f"{quoted(clock.CREATED)} AS `#c`")
    gridded = arrived.selectExpr(
        "*", f"{_grid_at_or_after('time', p)} AS `#e`", f"{_grid_at_or_after(f'time + {spec.span}', p)} AS `#x`")
    # the items share their grid points: each distinct point is looked up on the clock once, then joined
    # back as the entry and as the exit (a small table where the period is long beside the spacing)
    points = gridded.selectExpr("trace_id", f"`#e` AS {DUE}").union(
        gridded.selectExpr("trace_id", f"`#x` AS {DUE}")).distinct()
    found = clock.hits(items, points, reach=p, jumps=ctx.jumps).selectExpr(
        "trace_id", f"{DUE} AS `#g`", f"{timer_unit(HIT, DUE)} AS `#at`")
    entry_hits = found.withColumnsRenamed({"#g": "#e", "#at": "#entry_at"})
    exit_hits = found.withColumnsRenamed({"#g": "#x", "#at": "#exit"})
    rows = gridded.join(entry_hits, ["trace_id", "#e"], "left").join(exit_hits, ["trace_id", "#x"], "left")
    rows = rows.selectExpr(*(quoted(c) for c in gridded.columns),
                           f"CASE WHEN time = `#e` THEN {arrival_unit()} ELSE `#entry_at` END AS `#entry`", "`#exit`")
    # the instant a lot changes a partition: its expired items' exits at or before the lot's instant, else that
    at = f"CASE WHEN `#u`.phase = {TIMER} THEN {_grid_at_or_before('`#u`.time', p)} ELSE `#u`.time END"
    when = f"CASE WHEN `#side` = 'remove' AND `#x` <= {at} THEN `#x` ELSE {at} END"
    return plan.posts(rows, keep=("#c", "#x"), when=when)


def _clocks(items: DataFrame) -> DataFrame:
    """Per trace its clock C, its items' latest time."""
    return items.groupBy("trace_id").agg(F.max("time").alias("#clock"))


def _first_of(parts: tuple[str, ...]) -> str:
    """SQL: whether an event is its partition's first arrival (its `#slot`)."""
    return f"row_number() OVER (PARTITION BY {', '.join(_keys_sql(parts))} ORDER BY seq) = 1"


def newest_unexpired(items: DataFrame, spec: LengthUnique, ctx: Context) -> DataFrame:
    """`LengthUnique`'s state (`spark_impl.incremental`): per partition its
    newest n arrivals, with a span only those not expired at the trace's
    clock C (arrival + span > C). An older item was displaced by an arrival
    at or before the cut (the n-th after it), an expired one left in the unit
    of the first item reaching its expiry: either left before the cut, and no
    later fate reads it (a fate reads the arrivals after the item). Both sets
    are suffixes of the partition's arrivals, so the resumed run's `lead`s
    over them find the same displacers and hiders. Under `#groupwin` also each
    group's first event: groups' lots of one unit post in the order of their
    first arrivals (`slot`); that event, if older, is displaced (by the n-th
    event kept after it) or expired again before the cut."""
    order = f"PARTITION BY {', '.join(_keys_sql(ctx.partition))} ORDER BY seq DESC"
    first = _first_of(ctx.partition) if ctx.group_keys else "false"
    rows = events(items).selectExpr("*", f"row_number() OVER ({order}) <= {spec.size} AS `#newest`",
                                    f"{first} AS `#first_of_group`")
    kept = "`#newest`"
    if spec.span is not None:
        rows = rows.join(F.broadcast(_clocks(items)), "trace_id")
        kept = f"`#newest` AND time + {spec.span} > `#clock`"
    return rows.where(f"({kept}) OR `#first_of_group`").drop("#newest", "#first_of_group", "#clock")


def unentered_and_newest(items: DataFrame, spec: BatchedLength, ctx: Context) -> DataFrame:
    """`BatchedLength`'s state: per partition (k events, L = (k div m) * m of
    them entered) every event from the first of the batch holding index
    L - n (0-based) on: the open batch, and the entered items not displaced
    (an item at index i is displaced by the entry of index i + n, so those
    below L - n were, at or before the cut, and no later fate reads them).
    From a batch's first event, so the resumed run's batches (counted from
    its first event) are the same batches; one partition posts per arrival,
    so no partition's first arrival is needed."""
    by = f"PARTITION BY {', '.join(_keys_sql(ctx.partition))}"
    m = spec.batch
    entered = f"(`#n` div {m}) * {m}"
    return events(items).selectExpr(
        "*", f"row_number() OVER ({by} ORDER BY seq) - 1 AS `#i`", f"count(1) OVER ({by}) AS `#n`") \
        .where(f"`#i` >= greatest(0, (({entered} - {spec.size}) div {m}) * {m})").drop("#i", "#n")


def unexited_and_newest(items: DataFrame, spec: BatchedTime, ctx: Context) -> DataFrame:
    """`BatchedTime`'s state: per partition the events not exited at the
    trace's clock C (exit grid point x > C: one at or before C was hit at or
    before the cut) and, with `retain n`, of those only the ones at index
    L - n or later, L being the partition's items entered by C (entry grid
    point e <= C; entries follow arrival order, so those are a prefix): an
    earlier one was displaced at or before the cut. Both sets are suffixes of
    the partition's arrivals (exits follow arrival too), so the resumed
    run's `lead`s over them are the same; the grid is the trace's creation,
    its `start` row, which the state keeps. With partitions (its own, or
    `#groupwin`) also each partition's first event (`#slot`: partitions post
    in the order of their first arrivals), which, older than the rest, leaves
    again before the cut: it exited, or is displaced by the n-th event kept
    after it (index L - 1, entered)."""
    p = spec.period
    parts = tuple(dict.fromkeys((*ctx.partition, *spec.partition)))
    by = f"PARTITION BY {', '.join(_keys_sql(parts))}"
    first = _first_of(parts) if len(parts) > 1 else "false"
    rows = events(items).join(F.broadcast(clock.creation(items)), "trace_id").join(
        F.broadcast(_clocks(items)), "trace_id").selectExpr(
        "*", f"{quoted(clock.CREATED)} AS `#c`").selectExpr(
        "*", f"{_grid_at_or_after('time', p)} AS `#e`", f"{_grid_at_or_after(f'time + {spec.span}', p)} AS `#x`",
        f"{first} AS `#first_of_part`")
    kept = "`#x` > `#clock`"
    if spec.size is not None:
        rows = rows.selectExpr(
            "*", f"row_number() OVER ({by} ORDER BY seq) - 1 AS `#i`",
            f"count(CASE WHEN `#e` <= `#clock` THEN 1 END) OVER ({by}) AS `#entered`")
        kept += f" AND `#i` >= `#entered` - {spec.size}"
    return rows.where(f"({kept}) OR `#first_of_part`").drop(
        clock.CREATED, "#clock", "#c", "#e", "#x", "#first_of_part", "#i", "#entered")


#: the state each window's future reads (`spark_impl.incremental`)
HELD = {LengthUnique: newest_unexpired, BatchedLength: unentered_and_newest, BatchedTime: unexited_and_newest}

POSTS = {
    LengthUnique: length_unique,
    BatchedLength: batched_length,
    BatchedTime: batched_time,
}

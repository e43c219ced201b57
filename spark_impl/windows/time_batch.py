"""Batch windows cut by time (esper.md §0.2, §2; seed 14.3.5, 14.3.6, 14.3.7):
`#time_batch(t[, ref][, flags])` and `#ext_timed_batch(ts, t[, ref])` as
relational operations, `#time_length_batch(t, n[, flags])` as a kernel.

Both cut batches on the grid `ref + k*t`. `next_grid(c)`, the first grid point
strictly after `c`, is Esper's `deltaAddWReference`: `c + t - ((c - ref) mod t)`
(mod the non-negative remainder). Posted rows carry the event's properties, and
`pos` is the posted event's `seq`: the rows of one post are in arrival order.

`#time_batch` (timer-driven). Per sub-window the reference is the `ref`
parameter, else the first arrival's clock; with START_EAGER the creation clock
(the trace's start, or under groupwin the group's first arrival), `ref` unread.
Its one timer, while armed, is always due at the first grid point after the
clock of its last firing or arming, and walks stop at every grid point, so
whenever an event arrives at clock `a` the pending due time is `g1 = next_grid(a)`
(armed by this arrival or earlier: an armed timer due later than `a` and first
after a clock at or before `a` is exactly that). Hence, per event:

* it is released (inserted) in the unit where the clock first reaches `g1`
  (`clock.hits`): the walk stop at `g1`, or a jump whose target `T1 >= g1`
  then fires once, releasing every batch that fell due by `T1` as one;
* that firing posted a non-empty batch, so it re-armed at `g2 = next_grid(T1)`
  (`T1 = g1` on a walk); the event leaves (as the previous batch) in the unit
  where the clock first reaches `g2`.

Events with the same `g1` form one batch. Each event row is looked up itself,
as a point of `clock.hits`, which spares a distinct over the batches and a join
back. On a walk `T1 = g1`, so `g2 = g1 + t`: both lookups are frames of one
window pass. Only a jump can release at `T1 > g1`; where the input may hold
jumps, `g2` is looked up in a second pass from `T1`. One unit posts one post
per sub-window: new = the events released there, old = the events leaving
there, each in arrival order; `slot_due` is the timer's due time (`g1`, resp.
`g2`: equal where both sides meet). Without FORCE_UPDATE this
is all: a firing that finds both sides empty posts nothing and lets the timer
lapse until the next arrival, which the rule above already covers.
With FORCE_UPDATE (or START_EAGER, which implies it) the timer never lapses
once armed (at the first arrival, or at creation with START_EAGER), so it fires
in the unit of every grid point from `next_grid(arming clock)` to the trace's
last clock (a jump covering several grid points is one unit, due at the first
of them), and each such unit without an event post of the sub-window gets an
empty post (side, id and pos null): the firings and the event posts are unioned
and a count of event rows per (sub-window, unit) drops the firings of units
that have them.

Per-trace values (creation clock, last clock, first arrival) and per-group ones
(first arrival, slot) come from small aggregates joined by broadcast, so no
step sorts a whole trace in one task and the events are never sorted by key.

`#ext_timed_batch` (event-driven, no timers). The arriving event closes the open
batch iff its timestamp reaches `next_grid(oldest)`, `oldest` the timestamp of
the batch's first event (esper.md §2): with `cell(x) = floor((x - ref) / t)`,
iff `cell(ts) > cell(oldest)`, and the closing event starts the next batch. By
induction the first event of every batch holds the running maximum cell of its
sub-window (nothing before it in its batch had a higher cell), so an event
starts a batch iff its cell exceeds every earlier cell (or it is the first):
one running max. A batch is posted (new) at the arrival of the next batch's
first event, and posted again (old) at the arrival of the first event of the
batch after that; a batch never followed posts nothing, and no batch is empty.
Both arrivals are found by running `last` over the sub-window in descending
arrival order: the nearest start after a row, then that start's own next start.
An event whose `ts` is null is not in the sub-window (`stamped_events`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.model import ExtTimedBatch, TimeBatch, TimeLengthBatch
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, over, quoted, stamped_events
from spark_impl.windows.time import BEFORE, SO_FAR, TIMER, carried, group_table, partition, with_group

CREATED = quoted(clock.CREATED)


POSTS = {
    TimeBatch: lambda items, spec, ctx: TimeBatches(spec, ctx).posts(items),
    ExtTimedBatch: lambda items, spec, ctx: external_batches(items, ctx, spec),
    TimeLengthBatch: lambda items, spec, ctx: time_length_batches(items, ctx, spec),
}


def next_grid(current: str, reference: str, span: int) -> str:
    """SQL for the first grid point `reference + k*span` strictly after `current`."""
    return f"({current} + {span} - pmod({current} - {reference}, {span}))"


class TimeBatches:
    """`#time_batch`: the rules and their relational form are in the module docstring."""

    def __init__(self, spec: TimeBatch, ctx: Context):
        self.spec, self.ctx = spec, ctx
        self.span = spec.span

    def posts(self, items: DataFrame) -> DataFrame:
        arrived = self.referenced(items)
        due = quoted(clock.DUE)
        points = arrived.selectExpr("*", f"`#g1` AS {due}")
        if self.ctx.jumps:
            released = self.fired(items, points, "#s1", "#t1")
            leaving = released.selectExpr("*", f"{next_grid('`#t1`', '`#ref`', self.span)} AS {due}")
            rows = self.fired(items, leaving, "#s2", "#t2", due_as="#g2", keep=True)
        else:
            # every release is a walk stop at g1: the batch leaves when the clock reaches g1 + t
            found = clock.hits(items, points, after=self.span, jumps=False).where(f"{quoted(clock.HIT)} IS NOT NULL")
            hit, later = quoted(clock.HIT), quoted(clock.HIT_AFTER)
            rows = found.selectExpr(
                *(quoted(c) for c in arrived.columns), f"{hit}.seq AS `#s1`", "`#g1` AS `#t1`",
                f"`#g1` + {self.span} AS `#g2`", f"{later}.seq AS `#s2`",
                f"{clock.fire_time(later, f'`#g1` + {self.span}')} AS `#t2`",
            )
        posted = self.event_posts(rows)
        if not self.spec.force_update:
            return posted
        # a firing's empty post stays only where the sub-window posts no event in that unit
        both = posted.unionByName(self.firings(items, arrived), allowMissingColumns=True)
        counted = both.selectExpr("*", f"count(side) OVER ({partition(self.ctx, 'seq', 'time')}) AS `#posted`")
        return counted.where("side IS NOT NULL OR `#posted` = 0").drop("#posted")

    def eager_without_groups(self) -> bool:
        """START_EAGER outside groupwin: the window is created with the trace."""
        return self.spec.start_eager and not self.ctx.group_keys

    def referenced(self, items: DataFrame) -> DataFrame:
        """Event rows with the sub-window's `slot`, reference `#ref`, arming clock
        `#arm`, the pending due time `#g1` and, with FORCE_UPDATE, the trace's last
        clock `#last` (per-trace and per-group values: module docstring)."""
        ctx = self.ctx
        arrived = events(items)
        if self.spec.force_update or not ctx.group_keys:  # the per-trace values are read
            arrived = arrived.join(F.broadcast(self.per_trace(items)), "trace_id")
        if ctx.group_keys:
            arrived = with_group(arrived.drop("#first"), group_table(items, ctx), ctx)
        else:
            arrived = arrived.selectExpr("*", "CAST(0 AS BIGINT) AS slot")
        if self.eager_without_groups():
            reference = arming = CREATED
        else:
            arming = "`#first`"
            unread = self.spec.reference is None or self.spec.start_eager
            reference = arming if unread else f"CAST({self.spec.reference} AS BIGINT)"
        return arrived.selectExpr(
            *carried(ctx), "slot", "time", *(["`#last`"] if self.spec.force_update else []),
            f"{reference} AS `#ref`", f"{arming} AS `#arm`", f"{next_grid('time', reference, self.span)} AS `#g1`",
        )

    @staticmethod
    def per_trace(items: DataFrame) -> DataFrame:
        """Per trace: the creation clock, the last clock, the first arrival's clock."""
        return items.groupBy("trace_id").agg(
            F.expr(f"CAST(coalesce(min(CASE WHEN kind = '{clock.START}' THEN time END), 0) AS BIGINT)").alias(
                clock.CREATED
            ),
            F.expr("max(time)").alias("#last"),
            F.expr("min(CASE WHEN kind = 'event' THEN time END)").alias("#first"),
        )

    def fired(self, items: DataFrame, dues: DataFrame, seq: str, time: str, *, due_as: str | None = None,
              keep: bool = False) -> DataFrame:
        """`dues` with the unit each fires in, as columns `seq` and `time` (rows no
        item reaches dropped, or with `keep` kept with both null), the due time
        kept as `due_as`."""
        found = clock.hits(items, dues, reach=self.span)
        if not keep:
            found = found.where(f"{quoted(clock.HIT)} IS NOT NULL")
        hit, due = quoted(clock.HIT), quoted(clock.DUE)
        return found.selectExpr(
            *(quoted(c) for c in dues.columns if c != clock.DUE), *([f"{due} AS {quoted(due_as)}"] if due_as else []),
            f"{hit}.seq AS {quoted(seq)}", f"{clock.fire_time(hit, due)} AS {quoted(time)}",
        )

    def event_posts(self, rows: DataFrame) -> DataFrame:
        """Each event inserted where its batch is released, removed where it leaves."""
        both = rows.selectExpr(
            *carried(self.ctx), "slot", "`#s1`", "`#t1`", "`#g1`", "`#s2`", "`#t2`", "`#g2`",
            "explode(array(0, CASE WHEN `#s2` IS NOT NULL THEN 1 END)) AS `#i`",
        ).where("`#i` IS NOT NULL")

        def pick(released: str, leaving: str) -> str:
            return f"CAST(CASE `#i` WHEN 0 THEN {released} ELSE {leaving} END AS BIGINT)"

        return both.selectExpr(
            "trace_id", f"{pick('`#s1`', '`#s2`')} AS seq", f"{TIMER} AS phase", f"{pick('`#t1`', '`#t2`')} AS time",
            f"{pick('`#g1`', '`#g2`')} AS slot_due", "slot",
            "CASE `#i` WHEN 0 THEN 'insert' ELSE 'remove' END AS side", "CAST(seq AS BIGINT) AS pos", "id",
            *(quoted(p) for p in self.ctx.properties),
        )

    def firings(self, items: DataFrame, arrived: DataFrame) -> DataFrame:
        """FORCE_UPDATE: an empty post (side, id and pos null) in the unit of every
        grid point from the first after arming to the trace's last clock (a jump
        over several grid points is one unit, due at the first of them)."""
        ctx = self.ctx
        if self.eager_without_groups():
            windows = self.per_trace(items).selectExpr(
                "trace_id", "CAST(0 AS BIGINT) AS slot", f"{CREATED} AS `#arm`", f"{CREATED} AS `#ref`", "`#last`"
            )
        else:
            windows = arrived.selectExpr(
                *(quoted(c) for c in ctx.partition), "slot", "`#arm`", "`#ref`", "`#last`"
            ).distinct()
        first = next_grid("`#arm`", "`#ref`", self.span)
        grid = windows.selectExpr(
            *(quoted(c) for c in ctx.partition), "slot",
            f"explode(CASE WHEN {first} <= `#last` THEN sequence({first}, `#last`, CAST({self.span} AS BIGINT)) END) "
            f"AS {quoted(clock.DUE)}",
        )
        units = (
            self.fired(items, grid, "seq", "time", due_as="#g")
            .groupBy(*ctx.partition, "slot", "seq", "time")
            .agg(F.expr("min(`#g`)").alias("slot_due"))
        )
        return units.selectExpr(
            *(quoted(c) for c in ctx.partition), "seq", f"{TIMER} AS phase", "time", "slot_due", "slot",
            "CAST(NULL AS STRING) AS side", "CAST(NULL AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id",
        )


def pending_batches(items: DataFrame, spec: TimeBatch, ctx: Context) -> DataFrame:
    """`#time_batch`'s state (`spark_impl.incremental`) at the trace's clock
    `C` (its items' latest time). Each event's posts are a function of its
    own clock, its sub-window's reference (and with FORCE_UPDATE its arming
    clock and slot) and the hits of `g1` and `g2` (module docstring), so the
    state is:

    * the events whose `g2` lies after `C`: the open batch (`g1` not reached)
      and the last released one, which the next firing posts as removed;
    * each sub-window's first event: its reference and arming clock, and
      under groupwin its slot;
    * where the input may hold jumps, the item releasing each of these (the
      hit of its `g1`, if at or before `C`): `g2` is the first grid point
      after that item's clock (a jump's target), and that item is then the
      first held one reaching `g1`, as it is the first of all items. Such an
      item that is an event not held itself is held as an `advance` to its
      clock (the same walk, no event). So a held event posts exactly what
      it does in one run: after the cut the same hits, before it posts the
      next call drops (a long-gone first event is inserted and removed again
      by items at or before the cut). Without jumps every release is a walk
      stop at `g1`, and `g2 = g1 + t`.
    An event not held has left (`g2` at or before `C`) and posts nothing more;
    with FORCE_UPDATE a firing after `C` is found among the new items and its
    empty post dropped where the same event posts are."""
    plan = TimeBatches(spec, ctx)
    arrived = plan.referenced(items)
    at = items.where(f"kind <> '{clock.START}'").groupBy("trace_id").agg(F.expr("max(time)").alias("#clock"))
    if ctx.group_keys:
        first = "seq = slot"  # a group's slot is the seq of its first event
    else:
        firsts = events(items).groupBy("trace_id").agg(F.expr("min(seq)").alias("#first_seq"))
        arrived = arrived.join(F.broadcast(firsts), "trace_id")
        first = "seq = `#first_seq`"
    if ctx.jumps:
        points = arrived.selectExpr("*", f"`#g1` AS {quoted(clock.DUE)}")
        released = plan.fired(items, points, "#s1", "#t1", keep=True)
        g2, release = next_grid("`#t1`", "`#ref`", plan.span), "`#s1`"
    else:
        released, g2, release = arrived, f"`#g1` + {plan.span}", "CAST(NULL AS BIGINT)"
    decided = released.join(F.broadcast(at), "trace_id").selectExpr(
        "trace_id", "seq", f"{release} AS `#s1`", f"`#g1` > `#clock` OR {g2} > `#clock` OR {first} AS `#keep`"
    ).where("`#keep`")
    wanted = decided.selectExpr("trace_id", "seq", "true AS `#event`").unionByName(
        decided.where("`#s1` IS NOT NULL").selectExpr("trace_id", "`#s1` AS seq", "false AS `#event`")
    ).groupBy("trace_id", "seq").agg(F.expr("max(`#event`)").alias("#event"))
    return as_held(items.join(wanted, ["trace_id", "seq"], "inner"), ctx)


def as_held(rows: DataFrame, ctx: Context) -> DataFrame:
    """`rows` (item rows with `#event`) as a state's rows: an event whose
    `#event` is false held as an `advance` to its clock (its walk only: no
    id, no properties)."""
    walk = "kind = 'event' AND NOT `#event`"
    blank = set(ctx.properties) | {"id", "op"}
    return rows.selectExpr(*(
        f"CASE WHEN {walk} THEN 'advance' ELSE kind END AS kind" if c == "kind"
        else f"CASE WHEN {walk} THEN NULL ELSE {quoted(c)} END AS {quoted(c)}" if c in blank
        else quoted(c)
        for c in rows.columns if c != "#event"))


def external_batches(items: DataFrame, ctx: Context, spec: ExtTimedBatch) -> DataFrame:
    ts = f"CAST({quoted(spec.timestamp)} AS BIGINT)"
    if spec.reference is not None:
        reference = f"CAST({spec.reference} AS BIGINT)"
    else:
        reference = f"first({ts}) {over(ctx, frame=SO_FAR)}"
    cell = clock.floor_div(f"{ts} - {reference}", spec.span)
    celled = stamped_events(items, spec.timestamp).selectExpr(*carried(ctx), "time", f"{cell} AS `#cell`")
    marked = celled.selectExpr(
        "*", f"coalesce(`#cell` > max(`#cell`) {over(ctx, frame=BEFORE)}, true) AS `#start`"
    )
    later = f"OVER ({partition(ctx)} ORDER BY seq DESC {BEFORE})"
    start = "CASE WHEN `#start` THEN named_struct('seq', seq, 'time', time) END"
    with_next = marked.selectExpr("*", f"last({start}, true) {later} AS `#next`")
    with_after = with_next.selectExpr("*", f"last(CASE WHEN `#start` THEN `#next` END, true) {later} AS `#after_next`")
    return arrival_posts(
        with_after, ctx,
        Emit("insert", "`#next`.seq", "`#next`.time", "seq"),
        Emit("remove", "`#after_next`.seq", "`#after_next`.time", "seq"),
    )


def open_external_batches(items: DataFrame, spec: ExtTimedBatch, ctx: Context) -> DataFrame:
    """`#ext_timed_batch`'s state (`spark_impl.incremental`): per sub-window
    its stamped events from the start of its last closed batch on (that
    batch, posted as removed when the next batch closes, and the open one)
    and, without `ref`, its first stamped event, the reference. The running
    maximum cell after that start is read off these alone (a start's cell
    exceeds every earlier one), so the held events start the same batches
    and post what they post in one run; the first event, where it is held
    apart, makes one batch of its own, posted and removed by held starts
    at or before the cut. Nothing else is read: the window has no timer."""
    ts = f"CAST({quoted(spec.timestamp)} AS BIGINT)"
    reference = f"CAST({spec.reference} AS BIGINT)" if spec.reference is not None else \
        f"first({ts}) {over(ctx, frame=SO_FAR)}"
    cell = clock.floor_div(f"{ts} - {reference}", spec.span)
    celled = stamped_events(items, spec.timestamp).selectExpr("*", f"{cell} AS `#cell`")
    marked = celled.selectExpr(
        "*", f"max(`#cell`) {over(ctx, frame=BEFORE)} AS `#before`"
    ).selectExpr("*", "coalesce(`#cell` > `#before`, true) AS `#start`")
    later = f"OVER ({partition(ctx)} ORDER BY seq DESC {SO_FAR})"
    counted = marked.selectExpr("*", f"count(CASE WHEN `#start` THEN 1 END) {later} AS `#starts`")
    first = "`#before` IS NULL" if spec.reference is None else "false"
    return counted.where(f"`#starts` <= 1 OR (`#starts` = 2 AND `#start`) OR {first}").selectExpr(*(quoted(c) for c in items.columns))


def time_length_batches(items: DataFrame, ctx: Context, spec: TimeLengthBatch) -> DataFrame:
    """`#time_length_batch(t, n[, flags])`: a batch leaves at its n-th event or
    when the timer fires, and every release re-arms the timer at its own clock
    + t, so where each batch ends depends on where the one before it ended: no
    running aggregate over the events gives the cut, and the state is truly
    sequential. Each sub-window's events (one shuffle by sub-window) go through
    a grouped Arrow kernel (`_time_length_kernel`) that replays the rule of
    esper.md §2 over the events in seq order and the trace's clock.

    The kernel needs of the clock only what decides a timer's firing clock: a
    timer due at `d` fires at `d` on a walk, or at a jump's target when a jump
    crosses `d` (the clock before it below `d`, its target at or above), and
    never past the trace's last clock. So each event row carries its trace's
    jumps (seq, clock before, target) and last clock. The kernel posts, per
    released or leaving event, the unit that releases it: an arrival (its seq
    and clock) or a timer due at `d`; the item whose walk or jump reaches `d`
    is then found by `clock.hits`, the same lookup every timed family uses."""
    rows = _kernel_rows(items, ctx, spec)
    keys = [f for f in rows.schema.fields if f.name in ctx.partition]
    schema = T.StructType([
        *keys, T.StructField("slot", T.LongType()), T.StructField("id", T.StringType()),
        T.StructField("side", T.StringType()), T.StructField("pos", T.LongType()),
        T.StructField("#useq", T.LongType()), T.StructField("#utime", T.LongType()),
        T.StructField(clock.DUE, T.LongType()),
    ])
    posted = rows.groupBy(*ctx.partition).applyInArrow(_time_length_kernel(spec, ctx.partition), schema)
    at_arrival = posted.where("`#useq` IS NOT NULL").selectExpr(
        "trace_id", "`#useq` AS seq", "1 AS phase", "`#utime` AS time", "`#utime` AS slot_due", "slot", "side",
        "pos", "id")
    by_timer = clock.hits(items, posted.where("`#useq` IS NULL").drop("#useq", "#utime"), reach=spec.span)
    hit, due = quoted(clock.HIT), quoted(clock.DUE)
    at_timer = by_timer.where(f"{hit} IS NOT NULL").selectExpr(
        "trace_id", f"{hit}.seq AS seq", f"{TIMER} AS phase", f"{clock.fire_time(hit, due)} AS time",
        f"{due} AS slot_due", "slot", "side", "pos", "id")
    return at_arrival.unionByName(at_timer)


def fresh_length_batches(items: DataFrame, spec: TimeLengthBatch, ctx: Context) -> DataFrame | None:
    """`#time_length_batch`'s state (`spark_impl.incremental`): the events
    since the window last lapsed (a timer firing on two empty batches, which
    leaves it unarmed: its first state), found by the kernel's own replay,
    none if it lapsed after its last event; each jump after the first of them
    and the item before each such jump (an event not held as an `advance` to
    its clock): the kernel reads of the clock the jumps, the clock before each,
    and the last clock. From that first state the replay of the held events
    and jumps is the replay of one run. Its timer is re-armed at each
    release's own clock, off any grid, so no batch nearer the cut restarts
    it: a window that never lapses holds every event since its first. None
    (every item kept) with FORCE_UPDATE (it never lapses) and under groupwin
    (a group's slot and creation are its first event, which a replay would
    batch again)."""
    if ctx.group_keys or spec.force_update:
        return None
    rows = _kernel_rows(items, ctx, spec)
    schema = T.StructType([*(f for f in rows.schema.fields if f.name in ctx.partition),
                           T.StructField("#fresh", T.LongType()), T.StructField("#lapsed", T.BooleanType())])
    fresh = rows.groupBy(*ctx.partition).applyInArrow(_fresh_kernel(ctx.partition, spec), schema) \
        .where("NOT `#lapsed`").drop("#lapsed")
    placed = items.selectExpr("*", "lead(kind) OVER (PARTITION BY trace_id ORDER BY seq) AS `#then`",
                              "lead(seq) OVER (PARTITION BY trace_id ORDER BY seq) AS `#then_seq`") \
        .join(F.broadcast(fresh), "trace_id")
    event = "kind = 'event' AND seq >= `#fresh`"
    kept = placed.where(f"{event} OR (kind = 'jump' AND seq > `#fresh`) "
                        f"OR (`#then` = 'jump' AND `#then_seq` > `#fresh`)")
    return as_held(kept.selectExpr(*(quoted(c) for c in items.columns), f"{event} OR kind <> 'event' AS `#event`"), ctx)


def _kernel_rows(items: DataFrame, ctx: Context, spec: TimeLengthBatch) -> DataFrame:
    """The rows `_time_length_kernel` takes: the sub-window's events, each with
    its slot, its trace's jumps, last clock and creation clock (and with
    START_EAGER outside groupwin one row per trace with no event)."""
    per_trace = items.groupBy("trace_id").agg(
        F.expr("max(time)").alias("#last"),
        F.expr(f"CAST(coalesce(min(CASE WHEN kind = '{clock.START}' THEN time END), 0) AS BIGINT)").alias("#created"),
    )
    if ctx.jumps:
        before = "coalesce(lag(time) OVER (PARTITION BY trace_id ORDER BY seq), 0)"
        jumps = (items.selectExpr("trace_id", "seq", "kind", "time", f"{before} AS `#before`")
                 .where(f"kind = '{clock.JUMP}'")
                 .groupBy("trace_id")
                 .agg(F.expr("array_sort(collect_list(named_struct('seq', seq, 'before', `#before`, "
                             "'target', time)))").alias("#jumps")))
        per_trace = per_trace.join(jumps, "trace_id", "left")
    else:
        per_trace = per_trace.selectExpr("*", "CAST(NULL AS ARRAY<STRUCT<seq: BIGINT, before: BIGINT, "
                                         "target: BIGINT>>) AS `#jumps`")
    arrived = events(items).join(F.broadcast(per_trace), "trace_id")
    if ctx.group_keys:
        arrived = with_group(arrived, group_table(items, ctx), ctx)
        created = "`#first`"
    else:
        arrived = arrived.selectExpr("*", "CAST(0 AS BIGINT) AS slot")
        created = "`#created`"
    rows = arrived.selectExpr(*(quoted(c) for c in ctx.partition), "slot", "seq", "time", "id", "`#last`",
                              f"CAST({created} AS BIGINT) AS `#created`",
                              "CAST(`#jumps` AS ARRAY<STRUCT<seq: BIGINT, before: BIGINT, target: BIGINT>>) AS `#jumps`")
    if spec.start_eager and not ctx.group_keys:
        # the window exists from the trace's start, events or not: one row per trace with no event
        rows = rows.unionByName(per_trace.selectExpr(
            "trace_id", "CAST(0 AS BIGINT) AS slot", "CAST(NULL AS BIGINT) AS seq", "CAST(NULL AS BIGINT) AS time",
            "CAST(NULL AS STRING) AS id", "`#last`", "`#created`",
            "CAST(`#jumps` AS ARRAY<STRUCT<seq: BIGINT, before: BIGINT, target: BIGINT>>) AS `#jumps`"))
    return rows


def _time_length_kernel(spec: TimeLengthBatch, partition: tuple[str, ...]):
    """The grouped-map function of `#time_length_batch` (`time_length_batches`):
    one row per event posted (side, pos = its seq) or per empty post (side, id
    and pos null), with the unit that posts it: `#useq`/`#utime` for an
    arrival, `#due` for a timer.

    The clock is `replay`'s, from what the kernel has of it: its sub-window's
    events, each jump as a walk to the clock before it and the jump itself, and
    a last walk to the trace's last clock (module docstring of
    `time_length_batches`: all a timer's firing depends on)."""

    def kernel(table):
        import pyarrow as pa

        seq = table.column("seq").to_pylist()
        ids = table.column("id").to_pylist()
        out = _replayed(spec, table).out
        n = len(out["side"])
        first = table.slice(0, 1)
        columns = {name: pa.array([first.column(name)[0].as_py()] * n, first.schema.field(name).type)
                   for name in (*partition, "slot")}
        return pa.table({
            **columns, "id": pa.array([None if r is None else ids[r] for r in out["row"]], pa.string()),
            "side": pa.array(out["side"], pa.string()),
            "pos": pa.array([None if r is None else seq[r] for r in out["row"]], pa.int64()),
            "#useq": pa.array(out["#useq"], pa.int64()), "#utime": pa.array(out["#utime"], pa.int64()),
            clock.DUE: pa.array(out[clock.DUE], pa.int64()),
        })

    return kernel


def _replayed(spec: TimeLengthBatch, table) -> _TimeLengthBatches:
    """One sub-window's rows (`_kernel_rows`) replayed (`_time_length_kernel`)."""
    from spark_impl.windows.replay import replay

    seq, time = table.column("seq").to_pylist(), table.column("time").to_pylist()
    last = table.column("#last")[0].as_py()
    jumps = table.column("#jumps")[0].as_py() or []
    created = table.column("#created")[0].as_py()
    batches = _TimeLengthBatches(spec, seq, created)
    items = [(seq[row], "event", time[row], row) for row in range(table.num_rows) if seq[row] is not None]
    for jump in jumps:  # the walk to the clock before the jump, then the jump
        if jump["before"] is not None:
            items.append((jump["seq"], "advance", jump["before"], None))
        items.append((jump["seq"], "jump", jump["target"], None))
    items.sort(key=lambda item: (item[0], item[1] == "jump"))
    items.append((None, "advance", last, None))
    replay(items, batches, lambda *unit: None, clock=created)
    return batches


def _fresh_kernel(partition: tuple[str, ...], spec: TimeLengthBatch):
    """The grouped-map function of `fresh_length_batches`: per sub-window one
    row, `#fresh` the seq of its last arrival into a lapsed window (or its
    first), `#lapsed` whether it lapsed again after that."""

    def kernel(table):
        import pyarrow as pa

        batches = _replayed(spec, table)
        first = table.slice(0, 1)
        columns = {name: first.column(name) for name in partition}
        return pa.table({**columns, "#fresh": pa.array([batches.fresh], pa.int64()),
                         "#lapsed": pa.array([batches.lapsed], pa.bool_())})

    return kernel


class _TimeLengthBatches:
    """One sub-window of `#time_length_batch(t, n)` as `replay` drives it: the
    open batch, the batch released before it (posted as removed by the next
    release) and the timer (None: not armed). A release, by the n-th event or
    the timer, posts the open batch as inserted and the previous one as
    removed (an empty post only with FORCE_UPDATE) and re-arms the timer at
    its own clock + t; the first arrival into an unarmed window arms it."""

    def __init__(self, spec: TimeLengthBatch, seq: list, created: int):
        self.span, self.size, self.force = spec.span, spec.size, spec.force_update
        self.seq = seq
        self.batch: list[int] = []
        self.previous: list[int] = []
        self.timer = created + spec.span if spec.start_eager else None
        # the state `fresh_length_batches` reads: the seq of the last arrival into a window in its first state
        # (no timer, both batches empty: not yet armed, or lapsed), and whether it lapsed after that
        self.fresh: int | None = None
        self.lapsed = self.timer is None
        self.out: dict[str, list] = {name: [] for name in ("side", "row", "#useq", "#utime", clock.DUE)}

    def due(self) -> int | None:
        return self.timer

    def fire(self, now: int) -> None:
        self.timer = self._release(now, (None, None, self.timer))

    def arrive(self, row: int, now: int) -> None:
        if self.lapsed:
            self.fresh, self.lapsed = self.seq[row], False
        self.batch.append(row)
        if len(self.batch) >= self.size:
            self.timer = self._release(now, (self.seq[row], now, None))
        elif self.timer is None:
            self.timer = now + self.span

    def _release(self, now: int, unit: tuple) -> int | None:
        """Post the release in `unit` (arrival seq and clock, or the timer's due time)."""
        released, leaving = self.batch, self.previous
        self.previous, self.batch = released, []
        if not (released or leaving or self.force):
            self.lapsed = True
            return None
        for side, rows in (("insert", released), ("remove", leaving)):
            for row in rows:
                self._post(side, row, unit)
        if not released and not leaving:
            self._post(None, None, unit)
        return now + self.span

    def _post(self, side, row, unit) -> None:
        for name, value in zip(("side", "row", "#useq", "#utime", clock.DUE), (side, row, *unit)):
            self.out[name].append(value)


#: the state each window's future reads (`spark_impl.incremental`): `pending_batches`,
#: `open_external_batches`, `fresh_length_batches`
HELD = {TimeBatch: pending_batches, ExtTimedBatch: open_external_batches,
        TimeLengthBatch: fresh_length_batches}

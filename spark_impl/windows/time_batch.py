"""Batch windows on a time grid as relational operations (esper.md §0.2, §2;
seed 14.3.5, 14.3.6): `#time_batch(t[, ref][, flags])`, `#ext_timed_batch(ts, t[, ref])`.

Both cut batches on the grid `ref + k*t`. `next_grid(c)`, the first grid point
strictly after `c`, is Esper's `deltaAddWReference`: `c + t - ((c - ref) mod t)`
(mod the non-negative remainder). Posted rows carry the event's properties, and
`pos` is the posted event's `seq`: the rows of one post are in arrival order,
and the pipeline ranks them into positions.

`#time_batch` (timer-driven). Per sub-window the reference is the `ref`
parameter, else the first arrival's clock; with START_EAGER the creation clock
(the trace's start, or under groupwin the group's first arrival), `ref` unread.
Its one timer, while armed, is always due at the first grid point after the
clock of its last firing or arming, and walks stop at every grid point, so
whenever an event arrives at clock `a` the pending due time is `g1 = next_grid(a)`
(armed by this arrival or earlier: an armed timer due later than `a` and first
after a clock at or before `a` is exactly that). Hence, per event:

* it is released (inserted) in the unit where the clock first reaches `g1`
  (`clock.fire_units`): the walk stop at `g1`, or a jump whose target `T1 >= g1`
  then fires once, releasing every batch that fell due by `T1` as one;
* that firing posted a non-empty batch, so it re-armed at `g2 = next_grid(T1)`
  (`T1 = g1` on a walk); the event leaves (as the previous batch) in the unit
  where the clock first reaches `g2`.

Events with the same `g1` form one batch. Each event row is looked up itself
(two passes of `clock.fire_units`): cheaper than a distinct over batches and a
join back. One unit posts one post per sub-window: new = the events released there, old =
the events leaving there, each in arrival order; `slot_due` is the timer's due
time (`g1`, resp. `g2`: equal where both sides meet). Without FORCE_UPDATE this
is all: a firing that finds both sides empty posts nothing and lets the timer
lapse until the next arrival, which the rule above already covers.
With FORCE_UPDATE (or START_EAGER, which implies it) the timer never lapses
once armed (at the first arrival, or at creation with START_EAGER), so it fires
in the unit of every grid point from `next_grid(arming clock)` to the trace's
last clock (a jump covering several grid points is one unit, due at the first
of them), and each such unit without an event post of the sub-window gets an
empty post (side, id and pos null).

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
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from oracle.model import ExtTimedBatch, TimeBatch
from spark_impl import clock
from spark_impl.windows import Context
from spark_impl.windows.base import Emit, arrival_posts, events, in_order
from spark_impl.windows.time import TIMER, carried


def posts(items: DataFrame, spec, ctx: Context) -> DataFrame:
    if isinstance(spec, TimeBatch):
        return TimeBatches(spec, ctx).posts(items)
    if isinstance(spec, ExtTimedBatch):
        return external_batches(items, ctx, spec)
    raise TypeError(f"not a time batch window: {spec!r}")


def next_grid(current: Column, reference: Column, span: int) -> Column:
    """The first grid point `reference + k*span` strictly after `current`."""
    return current + span - F.pmod(current - reference, F.lit(span))


def join_on(left: DataFrame, right: DataFrame, columns: list[str], how: str = "inner") -> DataFrame:
    """`left.join(right, columns, how)`, equal meaning null-safe equal (a null
    group key is a group of its own); the result has one copy of `columns`."""
    renamed = right.select(*[F.col(c).alias(f"#r{i}") for i, c in enumerate(columns)],
                           *[c for c in right.columns if c not in columns])
    on = reduce(lambda a, b: a & b, [left[c].eqNullSafe(renamed[f"#r{i}"]) for i, c in enumerate(columns)])
    return left.join(renamed, on, how).drop(*[f"#r{i}" for i in range(len(columns))])


class TimeBatches:
    """`#time_batch`: the rules and their relational form are in the module docstring."""

    def __init__(self, spec: TimeBatch, ctx: Context):
        self.spec, self.ctx = spec, ctx
        self.span = spec.span

    def posts(self, items: DataFrame) -> DataFrame:
        arrived = self.referenced(items)
        released = self.fired(items, arrived.withColumn(clock.DUE, F.col("#g1")), "#s1", "#t1")
        leaving = released.withColumn("#g2", next_grid(F.col("#t1"), F.col("#ref"), self.span))
        rows = self.fired(items, leaving.withColumn(clock.DUE, F.col("#g2")), "#s2", "#t2", keep=True)
        posted = self.event_posts(rows)
        if not self.spec.force_update:
            return posted
        return posted.unionByName(self.empty_posts(items, arrived, posted), allowMissingColumns=True)

    def eager_without_groups(self) -> bool:
        """START_EAGER outside groupwin: the window is created with the trace."""
        return self.spec.start_eager and not self.ctx.group_keys

    def referenced(self, items: DataFrame) -> DataFrame:
        """Event rows with the sub-window's reference `#ref`, arming clock `#arm`,
        the pending due time `#g1` and, with FORCE_UPDATE, the trace's last clock
        `#last`. Per-trace values come from a small aggregate joined by broadcast,
        per-group ones from a window over the group: neither sorts a whole trace."""
        ctx = self.ctx
        arrived = events(items).join(F.broadcast(self.per_trace(items)), "trace_id")
        if self.eager_without_groups():
            reference = arming = F.col(clock.CREATED)
        else:
            if ctx.group_keys:
                arrived = arrived.withColumn("#first", F.min("time").over(Window.partitionBy(*ctx.partition)))
            arming = F.col("#first")
            if self.spec.reference is not None and not self.spec.start_eager:
                reference = F.lit(self.spec.reference).cast("long")
            else:
                reference = F.col("#first")
        return arrived.select(
            *carried(ctx), "time", *(["#last"] if self.spec.force_update else []),
            reference.alias("#ref"), arming.alias("#arm"),
            next_grid(F.col("time"), reference, self.span).alias("#g1"),
        )

    def per_trace(self, items: DataFrame) -> DataFrame:
        """Per trace: the creation clock, the last clock, the first arrival's clock."""
        return items.groupBy("trace_id").agg(
            F.coalesce(F.min(F.when(F.col("kind") == clock.START, F.col("time"))), F.lit(0)).cast("long").alias(
                clock.CREATED
            ),
            F.max("time").alias("#last"),
            F.min(F.when(F.col("kind") == "event", F.col("time"))).alias("#first"),
        )

    def fired(self, items: DataFrame, dues: DataFrame, seq: str, time: str, **options) -> DataFrame:
        """`dues` with the unit each fires in, as columns `seq` and `time`
        (`options`: those of `clock.fire_units`)."""
        found = clock.fire_units(items, dues, clock.bucket_width(self.span), **options)
        return found.withColumnRenamed(clock.FIRE_SEQ, seq).withColumnRenamed(clock.FIRE_TIME, time).drop(clock.DUE)

    def event_posts(self, rows: DataFrame) -> DataFrame:
        """Each event inserted where its batch is released, removed where it leaves."""
        sides = [
            F.struct(F.lit("insert").alias("side"), F.col("#s1").alias("s"), F.col("#t1").alias("t"),
                     F.col("#g1").alias("due")),
            F.when(F.col("#s2").isNotNull(), F.struct(
                F.lit("remove").alias("side"), F.col("#s2").alias("s"), F.col("#t2").alias("t"),
                F.col("#g2").alias("due"))),
        ]
        exploded = rows.select(*carried(self.ctx), F.explode(F.array(*sides)).alias("#p")).where(
            F.col("#p").isNotNull()
        )
        return exploded.select(
            "trace_id",
            F.col("#p.s").cast("long").alias("seq"),
            F.lit(TIMER).alias("phase"),
            F.col("#p.t").cast("long").alias("time"),
            F.col("#p.due").cast("long").alias("slot_due"),
            "slot",
            F.col("#p.side").alias("side"),
            F.col("seq").cast("long").alias("pos"),
            "id",
            *self.ctx.properties,
        )

    def empty_posts(self, items: DataFrame, arrived: DataFrame, posted: DataFrame) -> DataFrame:
        """FORCE_UPDATE: an empty post in the unit of every grid point from the
        first after arming to the trace's last clock, where the sub-window posts
        no event (a jump over several grid points is one unit, due at the first)."""
        ctx = self.ctx
        if self.eager_without_groups():
            windows = self.per_trace(items).select(
                "trace_id", F.lit(0).cast("long").alias("slot"), F.col(clock.CREATED).alias("#arm"),
                F.col(clock.CREATED).alias("#ref"), "#last",
            )
        else:
            windows = arrived.select(*ctx.partition, "slot", "#arm", "#ref", "#last").distinct()
        first, last = next_grid(F.col("#arm"), F.col("#ref"), self.span), F.col("#last")
        grid = windows.select(
            *ctx.partition, "slot",
            F.explode(F.when(first <= last, F.sequence(first, last, F.lit(self.span)))).alias(clock.DUE),
        )
        units = (
            self.fired(items, grid.withColumn("#g", F.col(clock.DUE)), "seq", "time",
                       from_start=self.eager_without_groups())
            .groupBy(*ctx.partition, "slot", "seq", "time")
            .agg(F.min("#g").alias("slot_due"))
        )
        empty = join_on(units, posted.select(*ctx.partition, "seq", "time"), [*ctx.partition, "seq", "time"], "left_anti")
        return empty.select(
            "trace_id", "seq", F.lit(TIMER).alias("phase"), "time", "slot_due", "slot",
            F.lit(None).cast("string").alias("side"), F.lit(None).cast("long").alias("pos"),
            F.lit(None).cast("string").alias("id"),
        )


def external_batches(items: DataFrame, ctx: Context, spec: ExtTimedBatch) -> DataFrame:
    ts = F.col(spec.timestamp).cast("long")
    so_far = in_order(ctx).rowsBetween(Window.unboundedPreceding, Window.currentRow)
    before = in_order(ctx).rowsBetween(Window.unboundedPreceding, -1)
    reference = F.lit(spec.reference).cast("long") if spec.reference is not None else F.first(ts).over(so_far)
    celled = events(items).select(*carried(ctx), "time", clock.floor_div(ts - reference, spec.span).alias("#cell"))
    earlier = F.max("#cell").over(before)
    marked = celled.withColumn("#start", earlier.isNull() | (F.col("#cell") > earlier))
    later = Window.partitionBy(*ctx.partition).orderBy(F.col("seq").desc()).rowsBetween(Window.unboundedPreceding, -1)
    start = F.when(F.col("#start"), F.struct(F.col("seq").alias("seq"), F.col("time").alias("time")))
    with_next = marked.withColumn("#next", F.last(start, ignorenulls=True).over(later))
    with_after = with_next.withColumn(
        "#after_next", F.last(F.when(F.col("#start"), F.col("#next")), ignorenulls=True).over(later)
    )
    return arrival_posts(
        with_after,
        ctx,
        Emit("insert", F.col("#next.seq"), F.col("#next.time"), F.col("seq")),
        Emit("remove", F.col("#after_next.seq"), F.col("#after_next.time"), F.col("seq")),
    )

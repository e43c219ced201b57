"""Helpers shared by the untimed family modules (the contract is in `__init__.py`).

Every untimed window posts only on arrivals, and every row it posts is an event
posted at the arrival of some event of its sub-window: its own arrival (the
insert stream) or a later one (the event that pushes it out). So a family
computes, per event row and with window functions over the sub-window ordered by
`seq`, the seq and clock of the arrival that inserts it and of the one that
removes it; `arrival_posts` turns those columns into post rows. A post row is
built from the posted event's own input row, so it carries the event's property
columns and the pipeline need not join them back.

The untimed families write expressions as Spark SQL text (`over`, `index`): one
call to the JVM per expression, where the Column API makes one per operator and
function, and building the plan is most of the cost of a differential batch of
small traces. `Emit` takes either form.
"""

from __future__ import annotations

from attrs import frozen
from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from spark_impl.windows import Context

ARRIVAL = 1  # the contract's phase of an event's arrival (0: a timer stop)
PARTS = ("seq", "time", "pos")  # what an Emit gives


def quoted(name: str) -> str:
    """A column name as a SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def trace_clocks(items: DataFrame, ctx: Context) -> DataFrame:
    """Per trace of `items`, `#clock`, its latest clock (the time of its
    last item: a trace's time never goes back): literal rows from
    `ctx.lasts` where the caller knows them, else an aggregate."""
    if ctx.lasts is not None:
        return items.sparkSession.createDataFrame([(t, c) for t, _, c in ctx.lasts], "trace_id string, `#clock` long")
    return items.where("kind <> 'start'").groupBy("trace_id").agg(F.max("time").alias("#clock"))


def events(items: DataFrame) -> DataFrame:
    """The event rows of the input."""
    return items.where("kind = 'event'")


def stamped_events(items: DataFrame, timestamp: str) -> DataFrame:
    """The event rows whose `timestamp` is not null: the ones Esper's
    externally timed and time-ordered views take. On a null one the view
    throws before it holds anything and Esper's runtime goes on, so such an
    event is never posted and never held; it stays in `items`, an item whose
    arrival walks the clock like any other, and a group's first event under
    `#groupwin` even if it has none (Esper makes the group's view before the
    view throws)."""
    return items.where(f"kind = 'event' AND {quoted(timestamp)} IS NOT NULL")


def constant_columns(values: dict) -> list[str]:
    """SQL select items: each column of one value (a string or a long) put back
    after a kernel it did not cross into (name -> value)."""
    return [f"CAST({value} AS BIGINT) AS {quoted(name)}" if isinstance(value, int)
            else "'" + value.replace("\\", "\\\\").replace("'", "\\'") + f"' AS {quoted(name)}"
            for name, value in values.items()]


def over(ctx: Context, *extra: str, frame: str = "") -> str:
    """`OVER (...)`: the sub-window, further split by `extra` columns, in arrival
    order, with an optional frame clause."""
    partition = ", ".join(quoted(c) for c in ctx.partition + extra)
    return f"OVER (PARTITION BY {partition} ORDER BY seq {frame})"


def in_order(ctx: Context, *extra: str) -> WindowSpec:
    """`over` for the Column API."""
    return Window.partitionBy(*ctx.partition, *extra).orderBy("seq")


def index(ctx: Context, *extra: str) -> str:
    """0-based position of the event in its sub-window (split by `extra`)."""
    return f"row_number() {over(ctx, *extra)} - 1"


@frozen
class Emit:
    """Post the row's event on `side` at the arrival whose seq and clock are the
    expressions `seq` and `time` (SQL text or Columns; nothing while `seq` is
    null), in order `pos` among the post's rows of that side."""

    side: str
    seq: Column | str
    time: Column | str
    pos: Column | str = "seq"


def arrival_posts(rows: DataFrame, ctx: Context, *emits: Emit) -> DataFrame:
    """Post rows (the contract's columns, then the event's properties) for each
    `Emit` of each row whose target seq is set. One sub-window posts at an
    arrival, so `slot` is 0 and `slot_due` the arrival's clock."""
    keep = ["trace_id", "id", *(quoted(p) for p in ctx.properties)]
    # each expression once, as a column (Spark evaluates a repeated window expression once per use)
    computed: list[Column | str] = []
    for n, e in enumerate(emits):
        for part in PARTS:
            expression = getattr(e, part)
            name = f"_emit{n}_{part}"
            computed.append(f"CAST({expression} AS BIGINT) AS {name}" if isinstance(expression, str)
                            else expression.cast("bigint").alias(name))
    texts = [c for c in computed if isinstance(c, str)]
    columns = [c for c in computed if not isinstance(c, str)]
    staged = rows.selectExpr("*", *texts)
    if columns:
        staged = staged.select("*", *columns)
    # one output row per emit whose seq is set: explode the emits' indexes and pick
    # each column by index (measured: 7% faster than exploding an array of structs)
    if len(emits) == 1:
        picked = staged.where("_emit0_seq IS NOT NULL")

        def pick(part: str) -> str:
            return f"_emit0_{part}"
    else:
        present = ", ".join(f"CASE WHEN _emit{n}_seq IS NOT NULL THEN {n} END" for n in range(len(emits)))
        picked = staged.selectExpr(*keep, *(f"_emit{n}_{part}" for n in range(len(emits)) for part in PARTS),
                                   f"explode(array({present})) AS _emit").where("_emit IS NOT NULL")

        def pick(part: str) -> str:
            return "CASE _emit " + " ".join(f"WHEN {n} THEN _emit{n}_{part}" for n in range(len(emits))) + " END"
    if len(emits) == 1:
        side = f"'{emits[0].side}'"
    else:
        side = "CASE _emit " + " ".join(f"WHEN {n} THEN '{e.side}'" for n, e in enumerate(emits)) + " END"
    return picked.selectExpr(
        "trace_id", f"{pick('seq')} AS seq", f"{ARRIVAL} AS phase", f"{pick('time')} AS time",
        f"{pick('time')} AS slot_due", "CAST(0 AS BIGINT) AS slot", f"{side} AS side", f"{pick('pos')} AS pos",
        *keep[1:],
    )

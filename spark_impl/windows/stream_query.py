"""Apama's stream queries (`oracle.model.Statement`, Apama's rules; apama-ccl.md §1.2):
`select v`, `select rstream v` and the aggregates `sum`, `count`, `avg`, `min`,
`max` over a window's lots, as relational operations over the window's own
posts.

The window runs as its own family over the same items (under `#groupwin`,
`partition by`, with its keys as more partition columns); a unit of work is
one activation, and its rows are one lot in and one lot out.

* `select v` (`istream`): the lot's inserted items, as `insert` rows; a unit
  whose lot has none posts nothing. `select rstream v` (`rstream`): the lot's
  removed items, as `remove` rows. Filtering the window's rows by side is
  exactly that: their order (slot_due, slot, pos) is the window's.
* An aggregate: one row per unit in which the window posted an item
  (either side), over what the window shows after that unit. An item shows
  from the unit that inserts it up to (not including) the unit that removes
  it. The units of a trace that post are numbered in order (`dense_rank` by
  (seq, phase, time), the units' order); an item then shows in the units
  numbered [inserted, removed), so each item is exploded into the units it
  shows in and each unit's values are one aggregate over its items (plus
  the unit itself, so an empty window still gives its row). The work grows
  with the sum over the posting units of the window's size then: the
  definition ("over what the window shows"), read literally, which `min`
  and `max` with removals need; a window of thousands of items on a long
  trace would want running sums for `count`, `sum` and `avg`.
* Values (decided in `oracle.windows.stream_query`): `count` the items shown;
  `sum`, `avg`, `min`, `max` of the argument as doubles; over no items `sum`
  0.0, `count` 0, the others NaN. A shown item whose argument is null (the
  property missing) fails the job naming the event and the property, where
  the oracle's trace is invalid.
* The row's one field (`fields_of`, the family's `FIELDS`), column
  `#field0`, is named as the oracle names it (`sum`, `count`, `avg`, `min`,
  `max`): `count` a long (Apama's `count()` returns an integer, 64 bits),
  the others doubles (Apama's `avg`, `min`, `max` take and return a float
  here; its `sum` returns its argument's type, an integer over integers,
  but the oracle posts a float whatever the argument, and the posts follow
  the oracle). `select v` and `select rstream v` post events and have no
  fields (`Statement.posts_events`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import GroupWin, Keyed, Statement, selection, spec_kind
from spark_impl.errors import InvalidFrame
from spark_impl.windows import Context, family
from spark_impl.windows.base import events, quoted

CONTRACT = ("trace_id", "seq", "phase", "time", "slot_due", "slot", "side", "pos", "id")
_NUMERIC = (T.LongType, T.IntegerType, T.ShortType, T.ByteType, T.DoubleType, T.FloatType, T.DecimalType)


def _window(spec: Statement, ctx: Context):
    """The query's window and its context (a `GroupWin`: its keys as more partition columns)."""
    window = spec.window
    if isinstance(window, GroupWin):
        keys = tuple(k for k in window.keys if k not in ctx.group_keys)
        ctx = Context(partition=ctx.partition + keys, group_keys=ctx.group_keys + keys,
                      properties=ctx.properties, jumps=ctx.jumps, pane_rows=ctx.pane_rows, one_trace=ctx.one_trace)
        window = window.window
    return window, ctx


def check(spec: Statement) -> None:
    """`UnsupportedWindow` for a query whose window Spark does not build, or
    one whose posts are not lots of items (a keyed window's update codes)."""
    window = spec.window.window if isinstance(spec.window, GroupWin) else spec.window
    if isinstance(window, Keyed):
        raise UnsupportedWindow(f"stream_query: a query over a {spec_kind(window)} window (its update and error "
                                "rows are no lot) is not supported")
    family(window)


def stream_query(items: DataFrame, spec: Statement, ctx: Context) -> DataFrame:
    check(spec)
    window, inner = _window(spec, ctx)
    rows = family(window).posts(items, window, inner)
    output, argument = selection(spec)
    if output == "istream":
        return rows.where("side = 'insert'")
    if output == "rstream":
        return rows.where("side = 'remove'")
    return aggregate(items, rows.selectExpr(*CONTRACT).where("side IN ('insert', 'remove')"), output, argument)


def _argument(items: DataFrame, output: str, name: str) -> str:
    """SQL: the argument of a shown item as a double (failing the job on a null)."""
    kind = items.schema[name].dataType
    if not isinstance(kind, _NUMERIC):
        raise InvalidFrame(f"stream_query: {output}() reads property {name!r}, but its column is "
                           f"{kind.simpleString()}, not a number")
    message = (f"concat('event ', coalesce(id, 'null'), ': property {name} is missing; "
               f"{output}() reads numbers')")
    return f"CASE WHEN {quoted(name)} IS NULL THEN CAST(raise_error({message}) AS DOUBLE) ELSE CAST({quoted(name)} AS DOUBLE) END"


def aggregate(items: DataFrame, rows: DataFrame, output: str, argument: str | None) -> DataFrame:
    """One row per posting unit, its value as `#field0` (module docstring)."""
    numbered = rows.selectExpr(
        "trace_id", "seq", "phase", "time", "side", "id",
        "dense_rank() OVER (PARTITION BY trace_id ORDER BY seq, phase, time) AS `#u`")
    numbered = numbered.selectExpr("*", "max(`#u`) OVER (PARTITION BY trace_id) AS `#last`")
    spans = numbered.groupBy("trace_id", "id").agg(
        F.expr("min(CASE WHEN side = 'insert' THEN `#u` END)").alias("#in"),
        F.expr("min(CASE WHEN side = 'remove' THEN `#u` END)").alias("#out"),
        F.expr("max(`#last`)").alias("#last"),
    ).where("`#in` IS NOT NULL")
    value = "CAST(NULL AS DOUBLE)"
    if argument is not None:
        spans = spans.join(events(items).select("trace_id", "id", argument), ["trace_id", "id"], "left")
        value = _argument(items, output, argument)
    end = "coalesce(`#out`, `#last` + 1) - 1"
    shown = spans.selectExpr(
        "trace_id", f"explode(CASE WHEN {end} >= `#in` THEN sequence(`#in`, {end}) END) AS `#u`", "id",
        *([quoted(argument)] if argument is not None else []),
    ).selectExpr(
        "trace_id", "`#u`", "CAST(NULL AS BIGINT) AS seq", "CAST(NULL AS INT) AS phase",
        "CAST(NULL AS BIGINT) AS time", "1 AS `#item`", f"{value} AS `#v`")
    units = numbered.selectExpr(
        "trace_id", "`#u`", "seq", "CAST(phase AS INT) AS phase", "time", "0 AS `#item`", "CAST(NULL AS DOUBLE) AS `#v`")
    per_unit = units.unionByName(shown).groupBy("trace_id", "#u").agg(
        F.expr("max(seq)").alias("seq"), F.expr("max(phase)").alias("phase"), F.expr("max(time)").alias("time"),
        F.expr("sum(`#item`)").alias("#n"), F.expr("sum(`#v`)").alias("#sum"),
        F.expr("min(`#v`)").alias("#min"), F.expr("max(`#v`)").alias("#max"))
    nan = "double('NaN')"
    result = {
        "count": "CAST(`#n` AS BIGINT)",
        "sum": "coalesce(`#sum`, 0D)",
        "avg": f"CASE WHEN `#n` = 0 THEN {nan} ELSE `#sum` / `#n` END",
        "min": f"CASE WHEN `#n` = 0 THEN {nan} ELSE `#min` END",
        "max": f"CASE WHEN `#n` = 0 THEN {nan} ELSE `#max` END",
    }[output]
    kind = _TYPES[output].simpleString().upper()
    return per_unit.selectExpr(
        "trace_id", "seq", "phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot", "'insert' AS side",
        "CAST(0 AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id", f"CAST({result} AS {kind}) AS `#field0`")


#: an aggregate's type (module docstring)
_TYPES = {"count": T.LongType(), "sum": T.DoubleType(), "avg": T.DoubleType(), "min": T.DoubleType(),
          "max": T.DoubleType()}


def fields_of(spec: Statement, columns=None, group_keys=()) -> tuple[T.StructField, ...]:
    """The query's row's one field (module docstring); none for `select v`
    and `select rstream v`, which post events. Runs nothing."""
    output, _ = selection(spec)
    return (T.StructField(output, _TYPES[output]),) if output in _TYPES else ()


POSTS = {Statement: stream_query}
FIELDS = {Statement: fields_of}
CHECKS = {Statement: check}

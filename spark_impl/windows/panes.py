"""eKuiper's pane windows on Spark: TUMBLINGWINDOW, HOPPINGWINDOW,
SLIDINGWINDOW, SESSIONWINDOW, COUNTWINDOW, alone or under a query
(kuiper.md §5; the family contract: `spark_impl/windows/__init__.py`).

A pane is one update: its rows (side `insert`, in pane order: arrival order in
processing time, event-time order in event time), its bounds (`wstart`,
`wend`, the output's `window`), with a query its output rows (side `insert`,
`id` null, one typed column per field: `FIELDS`); several panes of one unit
of work are told apart by `ordinal`, in the order they close. An empty pane
is one row of side null (a query's pane of no output row too). A late
event-time row is one row of side `error`: "late row: event time T ms is
before the watermark W ms". A query's pane rows carry the event's `id`, their
fields null.

A query's fields (`FIELDS`, `query_fields`): `Statement.field_names` in
order (`*`: `id`, then every property in column order; a name two items give
is one field), each typed as eKuiper's valuer gives it from the input
columns' kinds (`pane_query`'s docstring, "The fields' kinds"; eKuiper holds
a stream's numbers as Go's int64 and float64): an integer `long`, a float
`double`, a string `string`, a boolean `boolean`. A field whose kind no one
column type holds (a list or a row object, `collect`, `deduplicate`; a JSON
text input column: a list or object property, or a property of mixed kinds,
eKuiper's streams being schemaless; arithmetic, `sum`, ... over one; a name
two items give in different kinds) is a string column of JSON text, marked
`frames.JSON_TEXT`; one that never has a value (reading a column no event
gives a value, a string in arithmetic) a string column, null. For example,
over `price` long and `symbol` string: `count(*)`, `sum(price)`,
`avg(price)` (the truncated integer mean), `price / 2`, `window_start()`
long; `price * 1.5`, `avg` of a double column double; `min(symbol)`
string; `price > 2` boolean; `collect(*)` JSON text; `collect(*)[0]->symbol`
string. The kernel and the SQL plans write field n as column `#field<n>` of
that type; a value of another kind fails the task naming the field
(`pane_kernel.FieldCells`; in SQL, `_typed_sql` at planning).

Rules every kind shares (kuiper.md §1, §5):

* FILTER(WHERE c): a row for which c is not true never enters the window (in
  event time it still lifts the watermark). A query's WHERE acts as the
  filter of processing-time tumbling, hopping and session windows (eKuiper
  pushes it down); elsewhere it filters each pane's rows, and a pane it leaves
  empty is not posted.
* Event time: the watermark before a row is `max(largest earlier event time,
  tolerance) - tolerance` (0 before any row); a row below it is late,
  dropped and posted as an error. Rows enter in event-time order (ties in
  arrival order) once the watermark reaches them, and every pane due by the
  watermark closes in that row's unit of work.
* A reported start <= 0 is replaced by `end - length`.

How Spark runs them:

* Processing-time tumbling and hopping, set-oriented (`_SetPlan`), for the
  traces whose ticks keep their first alignment (no jump; created before
  its aligned end): ends are arithmetic, `E0 + k * interval`, E0 being
  eKuiper's aligned end of the creation time, computed on the driver in the
  case's time zone (DST as zoneinfo has it). One hash aggregate of the
  items by (trace, slot) places the ticks on the items that fire them and
  finds the panes that hold a row; a row's panes are arithmetic on its time
  (tumbling: one; hopping: the ends in `(t, t + size]`); a query is a Spark
  aggregation by (trace, pane, keys) (`pane_query.compile_select`).
* Count windows, from row indices (`count_posts`, `_count_steps`): a row's
  0-based index r among its trace's admitted rows says which panes hold it
  (those that fire at the rows r .. r + n - 1 that are triggers), so the
  panes are a window function (the index), an explode and a join; a query is
  the same aggregation as above (`_CountPlan`), or, where a condition or the
  query does not compile to SQL, one grouped Arrow task per pane.
* Everything else (sliding, session; every event-time window; tumbling and
  hopping traces with a jump or created at or past their aligned end; a
  condition or query that does not compile to SQL) replays per trace in a
  grouped Arrow kernel (`pane_kernel.py`, whose docstring says why each is
  sequential).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import Call, CountPanes, Hopping, Session, Sliding, Statement, Tumbling, expression_nodes
from spark_impl.errors import InvalidFrame
from spark_impl.frames import JSON_TEXT, NO_VALUES
from spark_impl.windows import Context
from spark_impl.windows.base import quoted, trace_clocks
from spark_impl.windows.pane_kernel import (
    KernelRows, aligned_end, event_row, field_column, kernel, machine_for, pane_output)
from spark_impl.windows.pane_query import (
    Failure, compile_select, field_kinds, grouping_key, row_passes, sql_condition, sql_literal)
from spark_impl.windows.replay import replay

#: a field kind's Spark type (`pane_query.field_kinds`): JSON text (marked `JSON_TEXT`) and a field of no value
#: (`null`) are strings
FIELD_TYPES = {"long": T.LongType(), "double": T.DoubleType(), "string": T.StringType(), "boolean": T.BooleanType(),
               "json": T.StringType(), "null": T.StringType()}
#: an input column's value kind, by its Spark type (JSON text: `json`; no value: `null`; another type: `json`)
_COLUMN_KINDS = {T.LongType: "long", T.IntegerType: "long", T.ShortType: "long", T.ByteType: "long",
                 T.DoubleType: "double", T.FloatType: "double", T.StringType: "string", T.BooleanType: "boolean"}


def query_kinds(query: Statement, columns: dict[str, T.StructField]) -> tuple[tuple[str, str], ...]:
    """The query's fields and their kinds (`pane_query.field_kinds`) over
    the input's property columns."""
    kinds = {name: "json" if f.metadata.get(JSON_TEXT) else "null" if f.metadata.get(NO_VALUES)
             else _COLUMN_KINDS.get(type(f.dataType), "json") for name, f in columns.items()}
    return field_kinds(query, kinds)


def query_fields(query: Statement, columns: dict[str, T.StructField], group_keys=()) -> tuple[T.StructField, ...]:
    """`FIELDS`: the query's fields as Spark types (module docstring)."""
    if group_keys:
        raise UnsupportedWindow("an eKuiper pane window under #groupwin: GROUP BY keys group a pane instead")
    return tuple(T.StructField(name, FIELD_TYPES[kind], True, {JSON_TEXT: True} if kind == "json" else {})
                 for name, kind in query_kinds(query, columns))


def _kernel_schema(fields: tuple[tuple[str, str], ...]) -> T.StructType:
    """The kernel's rows (`pane_kernel.arrow_schema`) as Spark's."""
    return T.StructType([
        T.StructField("trace_id", T.StringType()), T.StructField("seq", T.LongType()),
        T.StructField("phase", T.IntegerType()), T.StructField("time", T.LongType()),
        T.StructField("ordinal", T.IntegerType()), T.StructField("side", T.StringType()),
        T.StructField("pos", T.LongType()), T.StructField("id", T.StringType()),
        T.StructField("error", T.StringType()), T.StructField("wstart", T.LongType()),
        T.StructField("wend", T.LongType()),
        *(T.StructField(field_column(n), FIELD_TYPES[kind]) for n, (_, kind) in enumerate(fields))])


def _field_columns(fields) -> list[str]:
    """SQL: the field columns (`#field<n>`)."""
    return [quoted(field_column(n)) for n in range(len(fields))]


def _null_fields(fields) -> list[str]:
    """SQL: the field columns, null (a pane's event row, an empty pane, an error)."""
    return [f"CAST(NULL AS {FIELD_TYPES[kind].simpleString()}) AS {quoted(field_column(n))}"
            for n, (_, kind) in enumerate(fields)]


def _typed_sql(name: str, sources: list[tuple[str, str]], kind: str) -> str:
    """SQL of a field of `kind` from its compiled sources ((sql, value kind),
    `pane_query.compile_select`): the last non-null one, each cast to the
    field's type (an integer to a double); a source of another kind is an
    `AssertionError` naming the field: the declared type and the plan disagree."""
    target = FIELD_TYPES[kind].simpleString()
    parts = []
    for sql, found in sources:
        if found == "null":
            continue
        # a field of no value may read a column no event gives a value, which SQL reads as a string
        if found != kind and not (found == "long" and kind == "double") and not (found == "string" and kind == "null"):
            raise AssertionError(f"the query's field {name!r} is declared {kind}, but its SQL gives {found}")
        parts.append(f"CAST({sql} AS {target})")
    if not parts:
        return f"CAST(NULL AS {target})"
    return parts[0] if len(parts) == 1 else f"coalesce({', '.join(reversed(parts))})"


def _split(spec) -> tuple:
    return (spec.window, spec) if isinstance(spec, Statement) else (spec, None)


def pushed_where(window, query) -> bool:
    """Whether the query's WHERE acts as the window's filter (the spec's `where_in_window`)."""
    return query is not None and query.where_in_window


def _check(items: DataFrame) -> None:
    clash = [c for c in items.columns if c.lower() in ("window", "wstart", "wend")]
    if clash:
        raise InvalidFrame(f"column {clash[0]!r} clashes with a column a pane window's output uses")


def pane_posts(items: DataFrame, spec, ctx: Context) -> DataFrame:
    """The posts of a pane window or a query over one (module docstring)."""
    if ctx.group_keys:
        raise UnsupportedWindow("an eKuiper pane window under #groupwin: GROUP BY keys group a pane instead")
    _check(items)
    window, query = _split(spec)
    fields = () if query is None else query_kinds(
        query, {f.name: f for f in items.schema.fields if f.name in ctx.properties})
    if isinstance(window, CountPanes):
        return count_posts(items, window, query, ctx, fields)
    if isinstance(window, (Tumbling, Hopping)) and not window.event_time:
        plan = _SetPlan.of(items, window, query, ctx, fields)
        if plan is not None:
            return plan.posts(items, ctx.jumps)
    if window.event_time:
        kept, late = late_rows(items, window, fields)
        return _query_rows_only(sequential(kept, window, query, ctx, fields), ctx).unionByName(late)
    return _query_rows_only(sequential(items, window, query, ctx, fields), ctx)


#: SQL: a pane's event row (a query's output rows have no `id`)
_PANE_ROW = "side = 'insert' AND id IS NOT NULL"


def _query_rows_only(posted: DataFrame, ctx: Context) -> DataFrame:
    """Without the panes' rows when the caller asked for the query's rows only."""
    return posted if ctx.pane_rows else posted.where(f"NOT ({_PANE_ROW})")


def late_rows(items: DataFrame, window, fields=()) -> tuple[DataFrame, DataFrame]:
    """Event time's late rows as a relational step: (the items without them,
    their error rows). The watermark before an event is `max(largest earlier
    event time, tolerance) - tolerance`, 0 before the first: a running
    maximum over the trace's events in arrival order (a late row cannot lift
    it: its time is below it already). A row below it is late."""
    ts, tol = quoted(window.timestamp), window.late_tolerance
    marked = items.selectExpr(
        "*", f"CASE WHEN kind = 'event' THEN coalesce(greatest(max(CASE WHEN kind = 'event' THEN {ts} END) OVER "
             "(PARTITION BY trace_id ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), "
             f"{tol}) - {tol}, 0) END AS `#watermark`")
    kept = marked.where(f"kind != 'event' OR {ts} >= `#watermark`")
    late = marked.where(f"kind = 'event' AND {ts} < `#watermark`").selectExpr(
        "trace_id", "seq", "CAST(1 AS INT) AS phase", "time", "CAST(0 AS INT) AS ordinal", "'error' AS side",
        "CAST(0 AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id", *_null_fields(fields),
        f"concat('late row: event time ', {ts}, ' ms is before the watermark ', `#watermark`, ' ms') AS error",
        "CAST(NULL AS BIGINT) AS wstart", "CAST(NULL AS BIGINT) AS wend")
    return kept.drop("#watermark"), _contract(late, fields)


def _types(items: DataFrame, names) -> dict[str, str]:
    """Property -> the value kind the SQL compiler reads (JSON text: `json`)."""
    kinds = {T.LongType: "long", T.IntegerType: "long", T.DoubleType: "double", T.StringType: "string",
             T.BooleanType: "boolean"}
    out = {"id": "string"}
    for f in items.schema.fields:
        if f.name in names:
            out[f.name] = "json" if f.metadata.get(JSON_TEXT) else kinds.get(type(f.dataType), "json")
    return out


class _PaneSQL:
    """A set-oriented plan's posts as one SQL statement over the clean items
    (`statement`). A plan's own steps (`_steps`) end in `ticks`, one row per
    fired pane (its index `#k` in the trace; `after`, the seq of the item
    whose unit of work posts it; `due`, the clock then; `wstart`, `wend`;
    `filled`, whether it holds a row), and `placed`, one row per (row, fired
    pane) with its `#k` and bounds; `_joined` gives a placed row its pane's
    `after` and `#due`. The posts follow: the panes' rows, a query's rows (an
    aggregation by (trace, pane, keys), `pane_query.compile_select`), the
    empty panes. With one trace (`Context.one_trace`) the trace is no key: it
    is put back as a literal. A window alone carries the properties (`carried`:
    its rows are events); a query's rows carry its fields (`fields`, their kinds).

    `PHASE`: the posts' phase; `EMPTY_PANES`: whether a fired pane may hold
    no row (it posts an empty pane); `TICKS_HINT`: the hint of a join with
    the ticks."""

    PHASE, EMPTY_PANES, TICKS_HINT = 0, True, "/*+ BROADCAST(ticks) */ "

    def __init__(self, query, select: dict | None, types: dict, ctx: Context, fields=()):
        self.query, self.select, self.fields = query, select, fields
        self.pane_rows, self.types, self.properties = ctx.pane_rows, types, ctx.properties
        self.carried = ctx.properties if query is None else ()
        #: the trace's key columns, and the trace_id column of an output row
        self.trace = [] if ctx.one_trace is not None else ["trace_id"]
        self.trace_id = "trace_id" if ctx.one_trace is None else f"{sql_literal(ctx.one_trace)[0]} AS trace_id"

    def statement(self) -> str:
        """The plan as one SQL statement over the clean items (`_CLEAN`): its
        named steps, then the rows in the kernel's columns."""
        steps = self._steps()
        steps.update(self._output())
        body = ",\n".join(f"{name} AS ({sql})" for name, sql in steps.items())
        return f"WITH {body}\n" + _select(
            ["trace_id", "seq", "phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot", "side", "pos", "id",
             *_field_columns(self.fields), "error", "ordinal", "wstart", "wend", *(quoted(p) for p in self.carried)],
            "posted")

    def _steps(self) -> dict[str, str]:
        """The named steps up to `ticks` and `placed`."""
        raise NotImplementedError

    def _joined(self) -> str:
        """SQL of the step `joined`: the placed rows with their pane's `after` and `#due`."""
        raise NotImplementedError

    def _keep(self) -> list[str]:
        return [*self.trace, "seq", "time", "id", *(quoted(p) for p in self.properties)]

    def _output(self) -> dict[str, str]:
        """The steps after `placed`, the last `posted`: event rows, the
        query's rows, and the empty panes' rows, in the kernel's columns."""
        props = [quoted(p) for p in self.carried]
        nulls = [f"CAST(NULL AS {self._sql_type(p)}) AS {quoted(p)}" for p in self.carried]
        no_fields = _null_fields(self.fields)
        def key(due: str = "due") -> list[str]:
            return [self.trace_id, "after AS seq", f"CAST({self.PHASE} AS INT) AS phase", f"{due} AS time",
                    "CAST(0 AS INT) AS ordinal"]

        rest = ["CAST(NULL AS STRING) AS error", "wstart", "wend"]
        empty = "(SELECT * FROM ticks WHERE NOT filled)"
        steps = {}
        # the rows beside their fired panes, only where they are read
        if self.select is None or self.pane_rows or not self.select["group"]:
            steps["joined"] = self._joined()
        branches = []
        if self.select is None or self.pane_rows:
            branches.append(_select([*key(_DUE), "'insert' AS side", "seq AS pos", "id", *no_fields, *rest, *props],
                                    "joined"))
        if self.select is None:
            if self.EMPTY_PANES:
                branches.append(_select([*key(), "CAST(NULL AS STRING) AS side", "CAST(NULL AS BIGINT) AS pos",
                                         "CAST(NULL AS STRING) AS id", *rest, *nulls], empty))
        else:
            steps.update(self._query_rows())
            branches.append(_select([*key(), "'insert' AS side", "CAST(pos AS BIGINT) AS pos",
                                     "CAST(NULL AS STRING) AS id", *_field_columns(self.fields), *rest, *nulls],
                                    "valued"))
            # without keys every fired pane is a group
            if self.EMPTY_PANES and (self.select["keys"] or not self.select["group"]):
                branches.append(_select([*key(), "CAST(NULL AS STRING) AS side", "CAST(NULL AS BIGINT) AS pos",
                                         "CAST(NULL AS STRING) AS id", *no_fields, *rest, *nulls], empty))
        steps["posted"] = "\nUNION ALL ".join(branches)
        return steps

    def _sql_type(self, prop: str) -> str:
        return dict(_SQL_TYPES).get(self.types.get(prop), "STRING")

    def _query_rows(self) -> dict[str, str]:
        """The steps of the query's output rows, the last `valued` (with the
        fields, `pos` and the pane's columns). A grouping query aggregates
        the rows by (trace, k, keys) and joins the fired ticks to the groups;
        without keys every fired pane is one group, an empty one too (where
        there are: `EMPTY_PANES`): each fired pane adds a marker row (no seq:
        `count(*)` is `count(seq)`, and `min_by(col, seq)`, `min(seq)` skip it)."""
        plan, trace = self.select, [*self.trace]
        if [name for name, _ in plan["fields"]] != [name for name, _ in self.fields]:
            raise AssertionError(f"the plan's fields {plan['fields']} are not the declared {self.fields}")
        record = [f"{_typed_sql(name, sources, kind)} AS {column}" for (name, sources), (_, kind), column
                  in zip(plan["fields"], self.fields, _field_columns(self.fields))]
        orders = [f"{sql} AS o{n}" for n, (sql, _) in enumerate(plan["order"])]
        if plan["group"]:
            grouping = [*trace, _K, "seq", "id", "wstart", "wend", *(quoted(p) for p in self.properties)]
            source = _select(grouping, "placed")
            if not plan["keys"] and self.EMPTY_PANES:
                source += "\nUNION ALL " + _select(
                    [*trace, _K, "CAST(NULL AS BIGINT) AS seq", "CAST(NULL AS STRING) AS id", "wstart", "wend",
                     *(f"CAST(NULL AS {self._sql_type(p)}) AS {quoted(p)}" for p in self.properties)], "ticks")
            keys = [grouping_key(n) for n in range(len(plan["keys"]))]
            keyed = _select(["*", *(f"{k} AS {grouping_key(n)}" for n, k in enumerate(plan["keys"]))], f"({source})")
            # grouped by (trace, pane index, keys) only; the fired ticks' columns joined to the groups
            grouped = _select([*trace, _K, *keys, *record, "min(seq) AS first_seq",
                               *orders], f"({keyed})", group=[*trace, _K, *keys])
            pane = ", ".join([*trace, _K, "after", "due", "wstart", "wend"])
            rows = _select([f"{self.TICKS_HINT}*"], f"({grouped}) JOIN (SELECT {pane} FROM ticks) ticks",
                           using=[*trace, _K])
        else:
            rows = _select([*trace, _K, "after", f"{_DUE} AS due", *record,
                            "seq AS first_seq", *orders, "wstart", "wend"], "joined")
        if plan["order"]:
            order_by = ", ".join([f"o{n} {'DESC NULLS LAST' if d else 'ASC NULLS FIRST'}"
                                  for n, (_, d) in enumerate(plan["order"])] + ["first_seq"])
            pos = f"row_number() OVER (PARTITION BY {', '.join([*trace, _K])} ORDER BY {order_by}) AS pos"
        else:
            pos = "coalesce(first_seq, 0) AS pos"
        return {"valued": _select(["*", pos], f"({rows})")}


class _SetPlan(_PaneSQL):
    """Processing-time tumbling and hopping panes as set operations, for the
    traces whose ticks keep their first alignment: no jump, and a creation
    time c before its aligned end E0 (a creation at or past it hits the
    alignment quirk: such traces, and those with a jump, go through the
    kernel).

    Tick k (k >= 0) ends at e_k = E0 + k i (i: the size, hopping the hop) and
    is due then. Pane k holds the admitted rows of `[left_k, e_k)`: tumbling
    `left_k` = e_{k-1} (pane 0: every row before E0); hopping `left_k` =
    trigger + hop - size, the trigger being e_{k-1}, for pane 0 the creation.
    Reported start: tumbling the trigger, hopping trigger - hop; a start <= 0
    is `e_k - size`.

    Slot d of a trace holds the items with d ticks due by their time (d = 0
    before E0, else `(t - E0) div i + 1`): tick k fires in the walk of the
    first item of the first slot after k that has one. One hash aggregate of
    the items by (trace, slot) gives each slot's first item and its admitted
    rows' latest time, whence the fired ticks and the panes that hold a row
    (a few rows per trace). A row finds its panes by arithmetic (tumbling:
    its slot; hopping: the ends in `(t, t + size]`); a query is one
    aggregation by (trace, pane, keys) joined to the fired ticks.

    The plan is one SQL statement (`statement`) over the clean items, so
    Spark analyses it once; built step by step as DataFrames it took twice
    as long to plan (each step is analysed on its own)."""

    def __init__(self, window, query, admit: str, select: dict | None, types: dict, ctx: Context, fields=()):
        super().__init__(query, select, types, ctx, fields)
        self.window, self.admit = window, admit
        self.hopping = isinstance(window, Hopping)
        self.interval = window.hop if self.hopping else window.size
        #: SQL of a row's creation time and first end: its columns, or literals when every trace shares them
        self.c, self.e0 = "`#c`", "`#e0`"

    @classmethod
    def of(cls, items: DataFrame, window, query, ctx: Context, fields=()):
        """The plan, or None when a condition or the query does not compile to
        SQL, or a property's name starts with `#` (the plan's own columns
        beside the properties do: `#k`, `#c`, ...)."""
        if any(p.startswith("#") for p in ctx.properties):
            return None
        types = _types(items, ctx.properties)
        conditions = [c for c in (window.filter, query.where if query is not None else None) if c is not None]
        admit = [_row_condition(c, types) for c in conditions]
        if any(a is None for a in admit):
            return None
        select = None
        if query is not None:
            select = compile_select(query, types)
            if select is None:
                return None
        return cls(window, query, " AND ".join(admit) or "true", select, types, ctx, fields)

    def _first_end(self, c: int) -> int:
        """E0 of a trace created at c: eKuiper's aligned end, in the window's zone."""
        from zoneinfo import ZoneInfo

        w = self.window
        return aligned_end(c, self.interval // w.unit, w.unit, ZoneInfo(w.time_zone))

    def split(self, items: DataFrame, jumps: bool) -> tuple[DataFrame | None, DataFrame | None]:
        """(the clean traces' items, either with columns `#c` and `#e0` or, when
        every trace is created at 0, with `self.c`/`self.e0` set to their
        literals; the other traces' items), either None when there are none.
        The creation times are few (one per trace at most, most traces sharing
        one): they are collected (one small job; an event table without a
        `start` row skips the scan) and each one's first end computed here, in
        the zone."""
        starts = {row[0] for row in items.where("kind = 'start'").select("time").distinct().collect()}
        first_ends = {c: self._first_end(c) for c in starts | {0}}
        quirks = {c for c, e0 in first_ends.items() if e0 <= c}
        if starts <= {0} and quirks:  # every trace created at 0, at its aligned end (e.g. HH in UTC+8)
            return None, items
        if starts <= {0}:  # every trace created at 0: constants
            self.c, self.e0 = "CAST(0 AS BIGINT)", f"CAST({first_ends[0]} AS BIGINT)"
            marked = items
        else:
            table = items.sparkSession.createDataFrame(sorted(first_ends.items()), "`#c` long, `#e0` long")
            created = items.where("kind = 'start'").selectExpr("trace_id", "time AS `#c`")
            marked = (items.join(F.broadcast(created), "trace_id", "left")
                      .withColumn("#c", F.coalesce("`#c`", F.lit(0))).join(F.broadcast(table), "#c"))
        if not quirks and not jumps:
            return marked, None
        troubled = None
        if quirks:
            troubled = marked.where(F.col("`#c`").isin(sorted(quirks))).select("trace_id")
        if jumps:
            jumped = items.where("kind = 'jump'").select("trace_id")
            troubled = jumped if troubled is None else troubled.unionByName(jumped)
        troubled = F.broadcast(troubled.distinct())
        return (marked.join(troubled, "trace_id", "left_anti"),
                items.join(troubled, "trace_id", "left_semi"))

    def posts(self, items: DataFrame, jumps: bool) -> DataFrame:
        clean, dirty = self.split(items, jumps)
        out = None
        if clean is not None:
            out = _run(self.statement(), clean)
        if dirty is None:
            return out
        rest = sequential(dirty, self.window, self.query, None, self.fields, self.properties)
        if not self.pane_rows:
            rest = rest.where(f"NOT ({_PANE_ROW})")
        if self.carried:  # the kernel's rows lack the properties: joined back from their own traces' events
            props = dirty.where("kind = 'event'").select("trace_id", "id", *(F.col(quoted(p)) for p in self.carried))
            rest = rest.join(props, ["trace_id", "id"], "left")
        return rest if out is None else out.unionByName(rest)

    # ------------------------------------------------------------------ the statement: SQL over the clean items

    def _bounds(self) -> dict[str, str]:
        """SQL of pane k's bounds from its trace's c and e0: its end, left
        bound (hopping) and reported start."""
        w, i = self.window, self.interval
        end = f"({self.e0} + {_K} * {i})"
        trigger = f"(CASE WHEN {_K} = 0 THEN {self.c} ELSE {end} - {i} END)"
        reported = f"({trigger} - {w.hop})" if self.hopping else trigger
        return {"wend": end, "lft": f"({trigger} + {w.hop - w.size})" if self.hopping else "NULL",
                "wstart": f"CASE WHEN {reported} <= 0 THEN {end} - {w.size} ELSE {reported} END"}

    def _slot(self, time: str = "time") -> str:
        return f"CASE WHEN {time} < {self.e0} THEN 0 ELSE ({time} - {self.e0}) div {self.interval} + 1 END"

    def _last_pane(self, time: str) -> str:
        """SQL: the last pane index holding a row at `time` (hopping: e_k <= time + size)."""
        return f"({time} + {self.window.size} - {self.e0}) div {self.interval}" if self.hopping else self._slot(time)

    @property
    def _origin(self) -> list[str]:
        """The columns c and e0 a row carries (none when they are literals)."""
        return [] if self.c != "`#c`" else ["`#c`", "`#e0`"]

    def _steps(self) -> dict[str, str]:
        return {"ticks": self._ticks(), "placed": self._placed()}

    def _joined(self) -> str:
        return _select([f"{self.TICKS_HINT}*"], "placed JOIN (SELECT "
                       f"{', '.join([*self.trace, _K, 'after', f'due AS {_DUE}'])} FROM ticks) ticks",
                       using=[*self.trace, _K])

    def _ticks(self) -> str:
        """The fired ticks, one row per (trace, k): `after` (the seq of the
        item that fires it), `due`, the pane's bounds, and `filled` (whether
        the pane holds a row). Slot d's admitted rows lie in panes d ..
        last(latest) (each holds the slot's latest or its earliest row),
        pane 0 only from its left bound on. The slots are aggregated once: the
        ticks and the filled panes are one explode of each slot's row."""
        w, trace, origin = self.window, [*self.trace], self._origin
        firsts = [f"first({c}) AS {c}" for c in origin]
        lo = (f"CASE WHEN slot = 0 AND latest < {self.c} + {w.hop - w.size} THEN 1 ELSE slot END"
              if self.hopping else "slot")
        last = self._last_pane("latest")
        fired = "transform(sequence(coalesce(before, 0), slot - 1), k -> named_struct('#k', k, 'after', first))"
        filled = f"transform(sequence({lo}, {last}), k -> named_struct('#k', k, 'after', CAST(NULL AS BIGINT)))"
        slots = _select([*trace, *origin, "seq", f"{self._slot()} AS slot",
                         f"CASE WHEN kind = 'event' AND ({self.admit}) THEN time END AS admitted"],
                        _CLEAN, "kind IN ('event', 'advance')")
        by_slot = _select([*trace, "slot", "min(seq) AS first", "max(admitted) AS latest", *firsts], f"({slots})",
                          group=[*trace, "slot"])
        partition = f"PARTITION BY {', '.join(trace)} " if trace else ""
        before = _select(["*", f"lag(slot) OVER ({partition}ORDER BY slot) AS before"], f"({by_slot})")
        marks = _select([*trace, *origin, f"inline(concat(IF(slot > 0, {fired}, array()), "
                                          f"IF(latest IS NULL OR {lo} > {last}, array(), {filled})))"],
                        f"({before})")
        panes = _select([*trace, _K, "max(after) AS after", "count(1) > count(after) AS filled", *firsts],
                        f"({marks})", group=[*trace, _K])
        bounds = self._bounds()
        return _select([*trace, _K, "after", f"{bounds['wend']} AS due", f"{bounds['wstart']} AS wstart",
                        f"{bounds['wend']} AS wend", "filled"], f"({panes})", "after IS NOT NULL")

    def _placed(self) -> str:
        """The admitted rows with the index k of each pane they belong to (a
        pane that never fires is dropped by the join with the ticks) and its
        bounds (read by `window_start()`/`window_end()` in an aggregate)."""
        keep, bounds = self._keep(), self._bounds()
        admitted = f"kind = 'event' AND ({self.admit})"
        placed = [*keep, _K, f"{bounds['wstart']} AS wstart", f"{bounds['wend']} AS wend"]
        if not self.hopping:
            return _select(placed, f"({_select([*keep, *self._origin, f'{self._slot()} AS {_K}'], _CLEAN, admitted)})")
        # the ends in (t, t + size]; pane 0 from its left bound on (the others': their end - size)
        first, last = self._slot(), self._last_pane("time")
        spread = _select([*keep, *self._origin, f"explode(sequence({first}, greatest({first}, {last}))) AS {_K}"],
                         _CLEAN, admitted)
        return _select(placed, f"({spread})", f"{_K} <= {last} AND ({_K} > 0 OR time >= {bounds['lft']})")


#: the pane index and, beside the properties, its due time (a property is never named `#...`: `_SetPlan.of`)
_K, _DUE = "`#k`", "`#due`"
#: the clean items' place in `_SetPlan.statement` (a DataFrame bound by `spark.sql`)
_CLEAN = "\x00clean\x00"


def _run(statement: str, clean: DataFrame) -> DataFrame:
    """A plan's statement over the clean items: one statement, analysed once
    (a DataFrame step is analysed on its own: 5 to 40 ms each)."""
    bound = statement.replace("{", "{{").replace("}", "}}").replace(_CLEAN, "{clean}")
    return clean.sparkSession.sql(bound, clean=clean)


def _select(columns: list[str], source: str, where: str | None = None, *, group: list[str] | None = None,
            using: list[str] | None = None) -> str:
    """SQL: one SELECT."""
    sql = f"SELECT {', '.join(columns)} FROM {source}"
    if using is not None:
        sql += f" USING ({', '.join(using)})"
    if where is not None:
        sql += f" WHERE {where}"
    if group:
        sql += f" GROUP BY {', '.join(group)}"
    return sql


_SQL_TYPES = (("long", "BIGINT"), ("double", "DOUBLE"), ("string", "STRING"), ("boolean", "BOOLEAN"),
              ("json", "STRING"))


def sequential(items: DataFrame, window, query, ctx: Context | None, fields=(), properties: tuple = ()) -> DataFrame:
    """Every trace of `items` through the pane kernel (`fields`: a query's, with their kinds)."""
    names = tuple(ctx.properties if ctx is not None else properties)
    json_names = frozenset(f.name for f in items.schema.fields
                           if f.name in names and f.metadata.get(JSON_TEXT))
    run = kernel(window, query, pushed_where(window, query), names, json_names, fields)
    rows = items.selectExpr("trace_id", "seq", "kind", "time", "id", *(quoted(n) for n in names))
    posted = rows.groupBy("trace_id").applyInArrow(run, _kernel_schema(fields))
    return _contract(posted, fields)


def _contract(posted: DataFrame, fields=(), properties=()) -> DataFrame:
    """Kernel or set rows in the family contract's columns (plus ordinal and
    bounds, a query's fields, and the properties where the rows carry them)."""
    props = [quoted(p) for p in properties if p in posted.columns]
    return posted.selectExpr("trace_id", "seq", "phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
                             "side", "pos", "id", *_field_columns(fields), "error", "ordinal", "wstart", "wend",
                             *props)


# --------------------------------------------------------------------------- COUNTWINDOW: panes from row indices


def count_posts(items: DataFrame, window: CountPanes, query, ctx: Context, fields=()) -> DataFrame:
    """COUNTWINDOW(n, m) (kuiper.md §5) without a count: its panes derived
    from each admitted row's index (`_count_steps`).

    The events are admitted first (the FILTER; a pushed WHERE too): in SQL
    where the conditions compile, else by Spark's own evaluator row by row
    (`_admission`; a condition that errs posts its error at the row, and the
    row stays out). The panes then post as a `_CountPlan` statement where the
    WHERE after the window and the query compile, else each pane is one
    group of a grouped Arrow task (`_count_pane`) that posts it as the kernel
    posts a closed pane (`pane_kernel.pane_output`). A property named `#...`
    (as the plans' own columns are) keeps the panes out of SQL; out of SQL
    every property is read under a column name of its own, `#p<n>`."""
    names = tuple(ctx.properties)
    json_names = frozenset(f.name for f in items.schema.fields if f.name in names and f.metadata.get(JSON_TEXT))
    types = _types(items, names)
    pushed = pushed_where(window, query)
    conditions = [c for c in (window.filter, query.where if pushed else None) if c is not None]
    after_where = query.where if query is not None and not pushed else None
    where = None if after_where is None else _row_condition(after_where, types)
    select = None if query is None else compile_select(query, types)
    in_sql = (not any(p.startswith("#") for p in names) and (after_where is None or where is not None)
              and (query is None or select is not None))
    columns = names if in_sql else tuple(f"#p{n}" for n in range(len(names)))
    admit = [_row_condition(c, types) for c in conditions]
    admitted_in_sql = all(a is not None for a in admit)
    events = items.where("kind = 'event'").selectExpr(
        "trace_id", "seq", "time", "id", *(f"{quoted(p)} AS {quoted(c)}" for p, c in zip(names, columns)),
        *([f"{' AND '.join(admit) or 'true'} AS `#admit`"] if admitted_in_sql else []))
    errors = None
    if not admitted_in_sql:
        schema = T.StructType([*events.schema.fields, T.StructField("#admit", T.BooleanType()),
                               T.StructField("#error", T.StringType())])
        events = events.mapInArrow(_admission(conditions, tuple(zip(columns, names)), json_names), schema)
        errors = _contract(events.where("`#error` IS NOT NULL").selectExpr(
            "trace_id", "seq", "CAST(1 AS INT) AS phase", "time", "CAST(0 AS INT) AS ordinal", "'error' AS side",
            "CAST(0 AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id", *_null_fields(fields),
            "`#error` AS error", "CAST(NULL AS BIGINT) AS wstart", "CAST(NULL AS BIGINT) AS wend"), fields)
    if in_sql:
        posted = _run(_CountPlan(window, query, select, where, types, ctx, fields).statement(), events)
    else:
        keep = ["trace_id", "seq", "time", "id", *(quoted(c) for c in columns)]
        steps = _count_steps(window, ["trace_id"], keep)
        members = _run(f"WITH {', '.join(f'{n} AS ({sql})' for n, sql in steps.items())}\n"
                       f"{_select([*keep, _K, 'after', _DUE], 'members')}", events)
        run = _count_pane(query, after_where, tuple(zip(columns, names)), json_names, fields)
        posted = _query_rows_only(
            _contract(members.groupBy("trace_id", F.col(_K)).applyInArrow(run, _kernel_schema(fields)), fields), ctx)
    return posted if errors is None else posted.unionByName(errors, allowMissingColumns=True)


def _row_condition(condition, types: dict) -> str | None:
    """A FILTER or a WHERE read row by row, as SQL (or None): no window
    bounds are in its reach (`window_start()` is null there)."""
    return sql_condition(condition, types, pane=("CAST(NULL AS BIGINT)", "CAST(NULL AS BIGINT)"))


def _count_steps(window: CountPanes, trace: list[str], keep: list[str]) -> dict[str, str]:
    """The panes of COUNTWINDOW(n, m) as arithmetic on row indices, over the
    clean events (`#admit`: the row enters). The steps: `admitted` (r, a
    row's 0-based index among its trace's admitted rows in arrival order),
    `fires` (a pane `#k` = r per firing row: `after` its seq, `#due` its time)
    and `members` (a row beside each fired pane it is in).

    Derivation. The count restarts at every m-th row: the triggers are the
    rows r with (r + 1) % m = 0. Until the first pane no row leaves, so a
    trigger r holds r + 1 rows and fires iff r + 1 >= n. After a pane n - 1
    rows stay and m >= 1 more arrive by the next trigger, n - 1 + m >= n: it
    fires too, and so does every later one. So a pane fires exactly at the
    rows r with (r + 1) % m = 0 and r >= n - 1, and holds the last n rows,
    r - n + 1 .. r; row i is in the panes of those r in [i, i + n - 1]: from
    the first trigger at or past max(i, n - 1), in steps of m (at most
    ceil(n / m) of them), each one fired once its row has arrived (the join
    with `fires`). Arithmetic on indices: no state runs along the trace."""
    n, m = window.size, window.every
    partition = f"PARTITION BY {', '.join(trace)} " if trace else ""
    lowest = f"((greatest(`#r`, {n - 1}) + {m}) div {m}) * {m} - 1"  # the first trigger at or past max(r, n - 1)
    highest = f"`#r` + {n - 1}"
    index = f"CAST(row_number() OVER ({partition}ORDER BY seq) - 1 AS BIGINT) AS `#r`"
    spread = _select([*keep, f"explode(sequence({lowest}, {highest}, CAST({m} AS BIGINT))) AS {_K}"], "admitted",
                     f"{lowest} <= {highest}")
    return {
        "admitted": _select([*keep, index], _CLEAN, "`#admit`"),
        "fires": _select([*trace, f"`#r` AS {_K}", "seq AS after", f"time AS {_DUE}"], "admitted",
                         f"(`#r` + 1) % {m} = 0 AND `#r` >= {n - 1}"),
        "members": _select(["*"], f"({spread}) JOIN fires", using=[*trace, _K]),
    }


class _CountPlan(_PaneSQL):
    """COUNTWINDOW(n, m)'s posts as one SQL statement: the panes of
    `_count_steps`, posted at their firing row's arrival (phase 1), start and
    end its time. A pane holds n rows; a WHERE after the window (compiled,
    so aggregate-free) drops rows, and a pane it leaves empty does not fire
    (no pane is empty: `EMPTY_PANES` false). The fired panes are as many as
    a trace's rows over m: no broadcast."""

    PHASE, EMPTY_PANES, TICKS_HINT = 1, False, ""

    def __init__(self, window: CountPanes, query, select: dict | None, where: str | None, types: dict, ctx: Context,
                 fields=()):
        super().__init__(query, select, types, ctx, fields)
        self.window, self.where = window, where

    def _steps(self) -> dict[str, str]:
        keep = self._keep()
        steps = _count_steps(self.window, self.trace, keep)
        steps["placed"] = _select([*keep, _K, f"{_DUE} AS wstart", f"{_DUE} AS wend", "after", _DUE], "members",
                                  self.where)
        pane = [*self.trace, _K, "after", _DUE]
        ticks = [*pane[:-1], f"{_DUE} AS due", f"{_DUE} AS wstart", f"{_DUE} AS wend", "true AS filled"]
        steps["ticks"] = (_select(ticks, "fires") if self.where is None
                          else _select(ticks, "placed", group=pane))
        return steps

    def _joined(self) -> str:
        return _select(["*"], "placed")


def _admission(conditions: list, columns: tuple, json_names: frozenset[str]):
    """The Arrow map over events that admits each one (`#admit`) by Spark's
    own evaluator, at its arrival time: every condition true; the first one
    that errs is the row's `#error` (posted at the row; it stays out).
    `columns`: (column, property) pairs."""
    def run(batches):
        import pyarrow as pa

        for batch in batches:
            cols = {c: batch.column(c).to_pylist() for c in ("time", "id", *(c for c, _ in columns))}
            admit, errors = [], []
            for i in range(batch.num_rows):
                row = event_row(cols["id"][i], ((p, cols[c][i]) for c, p in columns), json_names)
                passed = True
                for condition in conditions:
                    passed = row_passes(condition, row, cols["time"][i])
                    if passed is not True:
                        break
                admit.append(passed is True)
                errors.append(passed.message if isinstance(passed, Failure) else None)
            text = batch.schema.field("id").type  # Spark's string type in Arrow
            yield pa.RecordBatch.from_arrays([*batch.columns, pa.array(admit, pa.bool_()), pa.array(errors, text)],
                                             names=[*batch.schema.names, "#admit", "#error"])

    return run


def _count_pane(query, after_where, columns: tuple, json_names: frozenset[str], fields=()):
    """The grouped Arrow map over one fired count pane's rows (any order):
    its posts at its firing row (`pane_kernel.pane_output`, rows in arrival
    order). `columns`: (column, property) pairs; `fields`: the query's, with
    their kinds."""
    def run(table):
        cols = {c: table.column(c).to_pylist() for c in ("seq", "time", "id", *(c for c, _ in columns))}
        order = sorted(range(table.num_rows), key=lambda i: cols["seq"][i])
        timed = [(cols["time"][i], event_row(cols["id"][i], ((p, cols[c][i]) for c, p in columns), json_names))
                 for i in order]
        trace, after, due = (table.column(c)[0].as_py() for c in ("trace_id", "after", "#due"))
        out = KernelRows(fields)
        for side, pos, id_, row, error, pane in pane_output(timed, (due, due), query, after_where):
            out.add(trace, after, 1, due, 0, side, pos, id_, row, error, pane)
        return out.table()

    return run


def open_panes(items: DataFrame, spec, ctx: Context) -> DataFrame | None:
    """The state of a processing-time tumbling or hopping window (or a
    query over one: a pane's rows read nothing but the pane's events)
    after `items` (`spark_impl.incremental`): per trace, the events of the
    panes not yet closed at its clock C, those of time at least C - size -
    hop, and more: an event of a closed pane read again closes its pane again
    before the cut, whose posts the next call drops. A trace with a jump
    keeps every item (a jump moves the ticks off their first alignment).
    An event-time window keeps every item (its watermark reads every event
    time), as do sliding and session windows (None)."""
    window, _ = _split(spec)
    if not isinstance(window, (Tumbling, Hopping)) or window.event_time:
        return None
    span = window.size + (window.hop if isinstance(window, Hopping) else window.size)
    if ctx.lasts is not None and not ctx.jumps:  # the clocks known, and no jump anywhere
        clock = trace_clocks(items, ctx).withColumn("#jumped", F.lit(False))
    else:
        clock = items.where("kind <> 'start'").groupBy("trace_id").agg(
            F.max("time").alias("#clock"), F.max(F.expr("kind = 'jump'")).alias("#jumped"))
    return items.where("kind NOT IN ('start', 'set')").join(clock, "trace_id") \
        .where(f"`#jumped` OR (kind = 'event' AND time >= `#clock` - {span})").drop("#clock", "#jumped")


def last_count_panes(items: DataFrame, window: CountPanes, query, ctx: Context) -> DataFrame:
    """COUNTWINDOW(n, m)'s state: with K rows admitted so far (`_count_steps`'
    r, admitted as `count_posts` admits them: the FILTER, a pushed WHERE), the
    admitted events from index s on, s the largest multiple of m at most
    K - n + 1 (0 if none). A later pane fires at a trigger r >= K and holds
    rows r - n + 1 .. r, all kept; the resumed run counts from s, a multiple
    of m, so its triggers are the same rows, and past index s + n - 1 <= K
    every one fires in both runs. A row not admitted never counts (its error
    was posted at its arrival). A query reads a pane's rows alone."""
    names = tuple(ctx.properties)
    json_names = frozenset(f.name for f in items.schema.fields if f.name in names and f.metadata.get(JSON_TEXT))
    types = _types(items, names)
    pushed = pushed_where(window, query)
    conditions = [c for c in (window.filter, query.where if pushed else None) if c is not None]
    admit = [_row_condition(c, types) for c in conditions]
    found = items.where("kind = 'event'")
    if all(a is not None for a in admit):
        admitted = found.where(" AND ".join(f"coalesce({a}, false)" for a in admit) or "true") \
            .select("trace_id", "seq")
    else:
        columns = tuple(f"#p{n}" for n in range(len(names)))
        renamed = found.selectExpr("trace_id", "seq", "time", "id",
                                   *(f"{quoted(p)} AS {quoted(c)}" for p, c in zip(names, columns)))
        schema = T.StructType([*renamed.schema.fields, T.StructField("#admit", T.BooleanType()),
                               T.StructField("#error", T.StringType())])
        admitted = renamed.mapInArrow(_admission(conditions, tuple(zip(columns, names)), json_names), schema) \
            .where("`#admit`").select("trace_id", "seq")
    n, m = window.size, window.every
    indexed = admitted.selectExpr("*", "row_number() OVER (PARTITION BY trace_id ORDER BY seq) - 1 AS `#r`",
                                  "count(1) OVER (PARTITION BY trace_id) AS `#k`")
    kept = indexed.where(f"`#r` >= greatest(0, ((`#k` - {n - 1}) div {m}) * {m})").select("trace_id", "seq")
    return found.join(kept, ["trace_id", "seq"], "left_semi")


def recent_slides(items: DataFrame, window: Sliding) -> DataFrame | None:
    """A processing-time SLIDINGWINDOW's state: the events of time at least
    C - size - delay, C the trace's clock. A later trigger at t >= C reads the
    rows of `[t - size, t]`; a delayed one pending at the cut (t + delay > C:
    one due at or before C fired at or before the cut) the rows of `[t -
    size, t + delay)`; a kept trigger that fired before the cut fires again
    before it. No tick reads the creation, nor a jump what follows it. An
    OVER (WHEN ...) reading `last_hit_time()` or `last_hit_count()` reads
    every hit so far (a count): None, every item kept."""
    if window.trigger is not None and any(isinstance(node, Call) and node.function in ("last_hit_time", "last_hit_count")
                                          for node in expression_nodes(window.trigger)):
        return None
    clock = items.where("kind <> 'start'").groupBy("trace_id").agg(F.max("time").alias("#clock"))
    return items.where("kind = 'event'").join(F.broadcast(clock), "trace_id") \
        .where(f"time >= `#clock` - {window.size + window.delay}").drop("#clock")


def watermark_panes(items: DataFrame, window, ctx: Context) -> DataFrame | None:
    """An event-time tumbling or hopping window's state: with W the
    watermark after `items` (from the largest event time, which a kept row
    holds), the rows not late of event time above W - size (every pane not
    closed, ending after W, holds only such rows; the waiting ones are above
    W), every row not late while a tumbling window's first pane is open (it
    holds every row before its end, aligned(r0), which Go's alignment in a
    repeated hour puts more than a size after r0), and the first row to enter, the least event time of the rows not late
    that the FILTER admits: it fixes the ends and the first start, and in the
    resumed run, entering first again, fixes the same. A kept row is not late
    there either (its watermark there is at most the first run's), and one of
    a pane closed at or before W closes it again before the cut. A FILTER
    that does not compile to SQL, or calls a function (`event_time()` reads
    the row's event time): None, every item kept."""
    condition = window.filter
    admit = "true"
    if condition is not None:
        if any(isinstance(node, Call) for node in expression_nodes(condition)):
            return None
        admit = _row_condition(condition, _types(items, ctx.properties))
        if admit is None:
            return None
    ts, tol = quoted(window.timestamp), window.late_tolerance
    kept, _ = late_rows(items, window)
    rows = kept.where(f"kind = 'event' AND {ts} IS NOT NULL").selectExpr(
        "*", f"coalesce({admit}, false) AS `#admitted`")
    marks = rows.groupBy("trace_id").agg(
        F.expr(f"greatest(max({ts}), {tol}) - {tol}").alias("#w"),
        F.expr(f"min(CASE WHEN `#admitted` THEN {ts} END)").alias("#first"))
    recent = f"{ts} > `#w` - {window.size} OR ({ts} = `#first` AND `#admitted`)"
    if isinstance(window, Tumbling):
        # the first pane holds every row before the first end, aligned(r0), which may lie more than a size
        # after r0 (Go's alignment in a repeated hour): while it is open every row is kept
        from zoneinfo import ZoneInfo

        count, unit, zone = window.size // window.unit, window.unit, window.time_zone
        first_end = F.udf(lambda t: None if t is None else aligned_end(t, count, unit, ZoneInfo(zone)), "long")
        marks = marks.withColumn("#e0", first_end(F.col("`#first`")))
        recent = f"`#e0` IS NULL OR `#e0` > `#w` OR {recent}"
    return rows.join(F.broadcast(marks), "trace_id").where(recent).drop("#w", "#first", "#admitted", "#e0")


class _SessionProbe:
    """A processing-time session machine (`pane_kernel.TimedSessions`)
    replayed to find its last epoch: the seq of the last admitted row that
    found no timeout timer armed (none before the first admitted row, none
    after a timeout closed a pane of held rows)."""

    def __init__(self, machine):
        self.machine, self.epoch = machine, None

    def due(self):
        return self.machine.due()

    def fire(self, now: int) -> None:
        self.machine.fire(now)

    def arrive(self, payload, now: int) -> None:
        seq, row = payload
        fresh, held = self.machine.timeout_at is None, len(self.machine.held)
        self.machine.arrive(row, now)
        if fresh and len(self.machine.held) > held:
            self.epoch = seq

    def on_unit(self, seq: int, phase: int, time: int) -> None:
        self.machine.posts.clear()

    def kept(self) -> list[tuple[str, int]]:
        return [] if self.epoch is None else [("from", self.epoch)]


class _WatermarkSessionProbe(_SessionProbe):
    """An event-time session machine (`pane_kernel.Watermark` over
    `WatermarkSessions`) replayed to find what its state reads: the open
    session's entered rows, the waiting rows, the rows of the last pane
    posted, and the row of the largest event time not late (the watermark)."""

    def __init__(self, machine, timestamp: str):
        super().__init__(machine)
        self.timestamp, self.top, self.top_seq, self.last_pane = timestamp, None, None, []

    def due(self):
        return None

    def arrive(self, payload, now: int) -> None:
        seq, row = payload
        ts = row.get(self.timestamp)
        if isinstance(ts, float) and ts.is_integer():
            ts = int(ts)
        if isinstance(ts, int) and not isinstance(ts, bool) and ts >= self.machine.mark and (
                self.top is None or ts > self.top):
            self.top, self.top_seq = ts, seq
        self.machine.arrive(row, now)

    def on_unit(self, seq: int, phase: int, time: int) -> None:
        for post in self.machine.posts:
            if post[0] != "error" and post[0]:
                self.last_pane = post[0]
        self.machine.posts.clear()

    def kept(self) -> list[tuple[str, int]]:
        rows = [r for _, r in self.machine.window.rows] + [r for _, _, r in self.machine.waiting] + \
            [r for _, r in self.last_pane]
        seqs = {r[_SEQ] for r in rows} | ({self.top_seq} if self.top_seq is not None else set())
        return [("one", n) for n in sorted(seqs)]


#: the key of an event's seq in a probed row (a name no condition can read)
_SEQ = "#seq"
_PROBE_SCHEMA = T.StructType([T.StructField("trace_id", T.StringType()), T.StructField("mode", T.StringType()),
                              T.StructField("seq", T.LongType())])


def _session_probe(window, query, names: tuple[str, ...], json_names: frozenset[str]):
    """The grouped-map function over one trace's items: what a session
    window's state keeps (`session_state`), as rows (trace_id, mode, seq):
    mode `all` (a processing-time trace with a jump), `from` (the events from
    seq on), `one` (the event of seq)."""
    conditions = tuple(c for c in (window.filter, query.where if pushed_where(window, query) else None)
                       if c is not None)

    def run(table):
        import pyarrow as pa

        cols = {c: table.column(c).to_pylist() for c in ("seq", "kind", "time", "id", *names)}
        order = sorted(range(table.num_rows), key=cols["seq"].__getitem__)
        trace = table.column("trace_id")[0].as_py() if table.num_rows else None
        created = next((cols["time"][i] for i in order if cols["kind"][i] == "start"), 0)
        if not window.event_time and any(cols["kind"][i] == "jump" for i in order):
            found = [("all", None)]
        else:
            machine = machine_for(window, conditions, created)
            probe = (_WatermarkSessionProbe(machine, window.timestamp) if window.event_time
                     else _SessionProbe(machine))

            def payload(i):
                row = event_row(cols["id"][i], ((n, cols[n][i]) for n in names), json_names)
                row[_SEQ] = cols["seq"][i]
                return cols["seq"][i], row

            items = ((cols["seq"][i], cols["kind"][i], cols["time"][i],
                      payload(i) if cols["kind"][i] == "event" else None) for i in order)
            replay(items, probe, probe.on_unit, created)
            found = probe.kept()
        return pa.table({"trace_id": pa.array([trace] * len(found), pa.string()),
                         "mode": pa.array([m for m, _ in found], pa.string()),
                         "seq": pa.array([n for _, n in found], pa.int64())})

    return run


def session_state(items: DataFrame, window: Session, query, ctx: Context) -> DataFrame:
    """A SESSIONWINDOW's state, found by replaying its machine
    (`pane_kernel`) over each trace once more (`_session_probe`):

    * processing time: the events from the last epoch on, the last admitted
      row that found no timeout timer armed (the first one, or the first
      after a timeout closed a pane). That row finds the same there in the
      resumed run: no row held, no timer, so it sets the timer and the
      session's start; the checks' ticks are arithmetic on the clock from
      the creation (`start` row kept), so every later check, cut and timeout
      is the first run's. A trace with a jump keeps every item (a jump moves
      the ticks off their alignment).
    * event time: the open session's rows, the rows waiting for the
      watermark, the largest event time's row (the watermark), and the rows
      of the last pane posted: replayed first, they end where they did (a
      session's end is read off its rows: a gap, a check passed, or the
      watermark past its last row + timeout), so the open session starts at
      that pane's end again where a check cut it (else at its first row),
      and its checks start from its first row. Kept rows are not late in the
      resumed run (its watermark there is at most the first run's)."""
    names = tuple(ctx.properties)
    json_names = frozenset(f.name for f in items.schema.fields if f.name in names and f.metadata.get(JSON_TEXT))
    # in event time the kernel meets no late row nor one without an event time (`late_rows`)
    source = late_rows(items, window)[0] if window.event_time else items
    rows = source.selectExpr("trace_id", "seq", "kind", "time", "id", *(quoted(n) for n in names))
    found = rows.groupBy("trace_id").applyInArrow(_session_probe(window, query, names, json_names), _PROBE_SCHEMA)
    marks = found.groupBy("trace_id").agg(
        F.expr("max(mode = 'all')").alias("#all"), F.expr("min(CASE WHEN mode = 'from' THEN seq END)").alias("#from"),
        F.expr("collect_set(CASE WHEN mode = 'one' THEN seq END)").alias("#ones"))
    return items.where("kind NOT IN ('start', 'set')").join(marks, "trace_id").where(
        "`#all` OR (kind = 'event' AND (seq >= `#from` OR array_contains(`#ones`, seq)))").drop(
        "#all", "#from", "#ones")


def held(items: DataFrame, spec, ctx: Context) -> DataFrame | None:
    """The state of a pane window (or a query over one: a pane's rows read
    nothing but the pane's events) after `items` (`spark_impl.incremental`):
    `open_panes` (processing-time tumbling and hopping), `last_count_panes`,
    `recent_slides` (processing-time sliding), `watermark_panes` (event-time
    tumbling and hopping), `session_state`. None, every item kept, for an
    event-time sliding window: which triggers a rise handles hangs on the
    newest row the last handling reached (a trigger tying it waits for a
    newer row), and kept rows replayed enter in other rises, so ties would
    be handled before the cut that the first run handles after it (not
    derived here)."""
    window, query = _split(spec)
    if isinstance(window, CountPanes):
        return last_count_panes(items, window, query, ctx)
    if isinstance(window, Sliding) and not window.event_time:
        return recent_slides(items, window)
    if isinstance(window, (Tumbling, Hopping)) and window.event_time:
        return watermark_panes(items, window, ctx)
    if isinstance(window, Session):
        return session_state(items, window, query, ctx)
    return open_panes(items, spec, ctx)


#: the state each window's future reads (`spark_impl.incremental`): `held`
HELD = {Tumbling: held, Hopping: held, Sliding: held, Session: held, CountPanes: held, Statement: held}
POSTS = {Tumbling: pane_posts, Hopping: pane_posts, Sliding: pane_posts, Session: pane_posts,
         CountPanes: pane_posts, Statement: pane_posts}
FIELDS = {Statement: query_fields}
PANE_BOUNDS = True

"""eKuiper's pane windows on Spark: TUMBLINGWINDOW, HOPPINGWINDOW,
SLIDINGWINDOW, SESSIONWINDOW, COUNTWINDOW, alone or under a query
(kuiper.md §5; the family contract: `spark_impl/windows/__init__.py`).

A pane is one update: its rows (side `insert`, in pane order: arrival order in
processing time, event-time order in event time), its bounds (`wstart`,
`wend`, the output's `window`), with a query its output rows as JSON
(`values`); several panes of one unit of work are told apart by `ordinal`, in
the order they close. An empty pane is one row of side null (a query whose
output is no row: `values` "[]"). A late event-time row is one row of side
`error`: "late row: event time T ms is before the watermark W ms".

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

* Tumbling and hopping, set-oriented (`_tumbling_hopping`), where the ends are
  arithmetic: event time always; processing time for traces without a jump
  and without a creation time that lands 50 ms or more behind its aligned end
  (the alignment quirk). Ends are `E0 + k * interval`; the first end E0 is
  eKuiper's aligned end of the creation time (processing) or of the earliest
  row that enters the window (event time), computed by a vectorised UDF in
  the case's time zone (DST as zoneinfo has it). A row's panes are found by
  arithmetic on its time (tumbling: one; hopping: the ends in `(t, t +
  size]`), empty panes by a range of ends per trace; each end is placed on
  the trace's items by the first item whose time (processing: clock;
  event time: watermark) reaches it. A query then is a Spark aggregation by
  (pane, keys) (`pane_query.compile_query`) where it compiles, else a grouped
  task per pane evaluates it.
* Everything else (sliding, session, count windows; tumbling and hopping
  traces whose ticks re-align) replays per trace in a grouped Arrow kernel
  (`pane_kernel.py`, whose docstring says why each is sequential).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T

from oracle.errors import UnsupportedWindow
from oracle.model import CountPanes, Hopping, Query, Session, Sliding, Tumbling
from spark_impl.errors import InvalidFrame
from spark_impl.frames import JSON_TEXT
from spark_impl.windows import Context
from spark_impl.windows.base import quoted
from spark_impl.windows.pane_kernel import LATE_TICK, aligned_end, kernel
from spark_impl.windows.pane_query import compile_select, sql_condition

#: windows a processing-time query's WHERE is pushed into (eKuiper's planner)
PUSHED_DOWN = (Tumbling, Hopping, Session)

_KERNEL_SCHEMA = T.StructType([
    T.StructField("trace_id", T.StringType()), T.StructField("seq", T.LongType()),
    T.StructField("phase", T.IntegerType()), T.StructField("time", T.LongType()),
    T.StructField("ordinal", T.IntegerType()), T.StructField("side", T.StringType()),
    T.StructField("pos", T.LongType()), T.StructField("id", T.StringType()),
    T.StructField("values", T.StringType()), T.StructField("error", T.StringType()),
    T.StructField("wstart", T.LongType()), T.StructField("wend", T.LongType()),
])


def _split(spec) -> tuple:
    return (spec.window, spec) if isinstance(spec, Query) else (spec, None)


def pushed_where(window, query) -> bool:
    return query is not None and query.where is not None and not window.event_time and isinstance(window, PUSHED_DOWN)


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
    if isinstance(window, (Tumbling, Hopping)) and not window.event_time:
        plan = _SetPlan.of(items, window, query, ctx)
        if plan is not None:
            return plan.posts(items, ctx.jumps)
    if window.event_time:
        kept, late = late_rows(items, window)
        return _query_rows_only(sequential(kept, window, query, ctx), ctx).unionByName(late)
    return _query_rows_only(sequential(items, window, query, ctx), ctx)


def _query_rows_only(posted: DataFrame, ctx: Context) -> DataFrame:
    """Without the panes' rows when the caller asked for the query's rows only."""
    return posted if ctx.pane_rows else posted.where("NOT (side = 'insert' AND `values` IS NULL)")


def late_rows(items: DataFrame, window) -> tuple[DataFrame, DataFrame]:
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
        "CAST(0 AS BIGINT) AS pos", "CAST(NULL AS STRING) AS id", "CAST(NULL AS STRING) AS `values`",
        f"concat('late row: event time ', {ts}, ' ms is before the watermark ', `#watermark`, ' ms') AS error",
        "CAST(NULL AS BIGINT) AS wstart", "CAST(NULL AS BIGINT) AS wend")
    return kept.drop("#watermark"), _contract(late)


def _types(items: DataFrame, names) -> dict[str, str]:
    """Property -> the value kind the SQL compiler reads (JSON text: `json`)."""
    kinds = {T.LongType: "long", T.IntegerType: "long", T.DoubleType: "double", T.StringType: "string",
             T.BooleanType: "boolean"}
    out = {"id": "string"}
    for f in items.schema.fields:
        if f.name in names:
            out[f.name] = "json" if f.metadata.get(JSON_TEXT) else kinds.get(type(f.dataType), "json")
    return out


class _SetPlan:
    """Processing-time tumbling and hopping panes as set operations, for the
    traces whose ticks never re-align (no jump; a creation time not 50 ms or
    more past its aligned end); the other traces go through the kernel.

    Per trace: creation c, first end E0 = aligned(c). If E0 > c the ticks are
    due at their ends e_k = E0 + k i (k >= 0). Else (the alignment quirk, E0
    <= c, lag = c - E0 < 50 ms) the pane at the creation is empty and not
    posted, and tick k >= 1 is due at c + k i, ending e_k. The pane of tick k
    holds the admitted rows of `[left_k, e_k)`: tumbling `left_k` = e_{k-1}
    (the first pane: every row before e_k); hopping `left_k` = trigger +
    hop - size, the trigger being e_{k-1}, or for the first pane the creation
    (the quirk: E0). Reported start: tumbling the trigger, hopping trigger -
    hop; a start <= 0 is `e_k - size`.

    A tick fires in the walk of the first item (event or advance) whose time
    reaches its due: items are grouped by the number of ticks due by their
    time (a hash aggregate: the first item of each count), and each such item
    fires the ticks since the previous count. A row finds its panes by
    arithmetic (tumbling one, hopping those with e_k in `(t, t + size]`)
    and joins the fired ticks (a small broadcast table)."""

    def __init__(self, window, query, admit: str, select: dict | None, types: dict, properties: tuple,
                 pane_rows: bool = True):
        self.window, self.query, self.admit, self.select = window, query, admit, select
        self.pane_rows = pane_rows
        self.types, self.properties = types, properties
        self.hopping = isinstance(window, Hopping)
        self.interval = window.hop if self.hopping else window.size

    @classmethod
    def of(cls, items: DataFrame, window, query, ctx: Context):
        """The plan, or None when a condition or the query does not compile to SQL."""
        types = _types(items, ctx.properties)
        conditions = [c for c in (window.filter, query.where if query is not None else None) if c is not None]
        admit = [sql_condition(c, types) for c in conditions]
        if any(a is None for a in admit):
            return None
        select = None
        if query is not None:
            select = compile_select(query, types)
            if select is None:
                return None
        return cls(window, query, " AND ".join(admit) or "true", select, types, ctx.properties, ctx.pane_rows)

    def _param(self, c: int) -> tuple[int, int, int, bool]:
        """(E0, k0, lag, dirty) of a trace created at c (module docstring of the class)."""
        from zoneinfo import ZoneInfo

        w = self.window
        e0 = aligned_end(c, self.interval // w.unit, w.unit, ZoneInfo(w.time_zone))
        if e0 > c:
            return e0, 0, 0, False
        return e0, 1, c - e0, c - e0 >= LATE_TICK

    def split(self, items: DataFrame, jumps: bool) -> tuple[DataFrame, DataFrame | None]:
        """(the clean traces' items with columns c, e0, k0, lag; the other
        traces' items, or None when there are none). The creation times are few
        (one per trace at most, most traces sharing one): they are collected
        (one small job; an event table without a `start` row skips the scan)
        and each one's first end computed here, in the zone."""
        from pyspark.sql import functions as F

        starts = {row[0] for row in items.where("kind = 'start'").select("time").distinct().collect()}
        params = {c: self._param(c) for c in starts | {0}}
        bad = {c for c, p in params.items() if p[3]}
        if starts <= {0}:  # every trace created at 0: constants
            e0, k0, lag, _ = params[0]
            marked = items.selectExpr("*", "CAST(0 AS BIGINT) AS c", f"CAST({e0} AS BIGINT) AS e0",
                                      f"CAST({k0} AS BIGINT) AS k0", f"CAST({lag} AS BIGINT) AS lag")
            created = None
        else:
            spark = items.sparkSession
            table = spark.createDataFrame([(c, *p[:3]) for c, p in params.items()], "c long, e0 long, k0 long, lag long")
            created = items.where("kind = 'start'").selectExpr("trace_id", "time AS c")
            marked = (items.join(F.broadcast(created), "trace_id", "left").withColumn("c", F.coalesce("c", F.lit(0)))
                      .join(F.broadcast(table), "c"))
        if not bad and not jumps:
            return marked, None
        troubled = None
        if bad:
            troubled = created.where(F.col("c").isin(sorted(bad))).select("trace_id")
        if jumps:
            jumped = items.where("kind = 'jump'").select("trace_id")
            troubled = jumped if troubled is None else troubled.unionByName(jumped)
        troubled = F.broadcast(troubled.distinct())
        return (marked.join(troubled, "trace_id", "left_anti"),
                items.join(troubled, "trace_id", "left_semi"))

    def posts(self, items: DataFrame, jumps: bool) -> DataFrame:
        from pyspark.sql import functions as F

        w, i = self.window, self.interval
        clean, dirty = self.split(items, jumps)
        moved = clean.where("kind IN ('event', 'advance')")
        # ticks due by an item's time: d_k = e0 + lag + k i for k >= k0
        first_due = f"(e0 + lag + k0 * {i})"
        counted = moved.selectExpr(
            "trace_id", "seq", "time", "e0", "lag", "k0", "c",
            f"CASE WHEN time < {first_due} THEN 0 ELSE (time - {first_due}) div {i} + 1 END AS due_count")
        firsts = (counted.where("due_count > 0").groupBy("trace_id", "due_count")
                  .agg(*(F.min(c).alias(c) for c in ("seq", "e0", "lag", "k0", "c"))))
        ticks = firsts.selectExpr(
            "trace_id", "seq AS after", "e0", "lag", "k0", "c", "due_count",
            "coalesce(lag(due_count) OVER (PARTITION BY trace_id ORDER BY due_count), 0) AS before")
        ticks = ticks.selectExpr("*", "explode(sequence(before + 1, due_count)) AS n").selectExpr(
            "trace_id", "after", "k0 + n - 1 AS k", f"e0 + (k0 + n - 1) * {i} AS e", "e0", "lag", "k0", "c")
        trigger = f"CASE WHEN k = k0 THEN (CASE WHEN k0 = 1 THEN e0 ELSE c END) ELSE e - {i} END"
        if self.hopping:
            bounds = [f"{trigger} + {w.hop - w.size} AS lft", f"{trigger} - {w.hop} AS rstart"]
        else:
            bounds = ["CAST(NULL AS BIGINT) AS lft", f"{trigger} AS rstart"]
        ticks = ticks.selectExpr("trace_id", "after", "k", "e AS wend", "e + lag AS due", *bounds)
        ticks = ticks.selectExpr("trace_id", "after", "k", "wend", "due", "lft",
                                 f"CASE WHEN rstart <= 0 THEN wend - {w.size} ELSE rstart END AS wstart")
        # a few rows per trace (one per fired tick), read by every branch below: computed once, here
        ticks = ticks.localCheckpoint(eager=True)
        rows = self._rows(clean)
        joined = rows.join(F.broadcast(ticks), ["trace_id", "k"])
        if self.hopping:
            joined = joined.where("time >= lft")
        out = self._output(joined, ticks)
        if dirty is None:
            return out
        # the kernel's rows lack the properties: joined back from their own traces' events
        rest = sequential(dirty, self.window, self.query, None, self.properties)
        if not self.pane_rows:
            rest = rest.where("NOT (side = 'insert' AND `values` IS NULL)")
        props = dirty.where("kind = 'event'").select("trace_id", "id", *(F.col(quoted(p)) for p in self.properties))
        return out.unionByName(rest.join(props, ["trace_id", "id"], "left"))

    def _rows(self, clean: DataFrame) -> DataFrame:
        """The admitted rows with the index k of each pane they belong to."""
        w, i = self.window, self.interval
        events = clean.where(f"kind = 'event' AND ({self.admit})")
        first_end = f"(e0 + k0 * {i})"
        kmin = f"CASE WHEN time < {first_end} THEN k0 ELSE (time - e0) div {i} + 1 END"
        props = [quoted(p) for p in self.properties]
        if not self.hopping:
            return events.selectExpr("trace_id", "seq", "time", "id", *props, f"{kmin} AS k")
        kmax = f"(time + {w.size} - e0) div {i}"
        return events.selectExpr("trace_id", "seq", "time", "id", *props,
                                 f"explode(sequence({kmin}, greatest({kmin}, {kmax}))) AS k").where(
            f"k <= {kmax}")

    def _output(self, joined: DataFrame, ticks: DataFrame) -> DataFrame:
        """Event rows, the query's rows, and the empty panes' rows, in the kernel's columns."""
        props = [quoted(p) for p in self.properties]
        nulls = [f"CAST(NULL AS {dict(_SQL_TYPES).get(self.types.get(p), 'STRING')}) AS {quoted(p)}"
                 for p in self.properties]
        key = ["trace_id", "after AS seq", "CAST(0 AS INT) AS phase", "due AS time", "CAST(0 AS INT) AS ordinal"]
        event_rows = joined.selectExpr(*key, "'insert' AS side", "seq AS pos", "id", "CAST(NULL AS STRING) AS `values`",
                                       "CAST(NULL AS STRING) AS error", "wstart", "wend", *props)
        if self.select is None:
            empty = ticks.join(joined.select("trace_id", "k").distinct(), ["trace_id", "k"], "left_anti")
            marker = empty.selectExpr(*key, "CAST(NULL AS STRING) AS side", "CAST(NULL AS BIGINT) AS pos",
                                      "CAST(NULL AS STRING) AS id", "CAST(NULL AS STRING) AS `values`",
                                      "CAST(NULL AS STRING) AS error", "wstart", "wend", *nulls)
            return _contract(event_rows.unionByName(marker), self.properties)
        values, empty = self._values(joined, ticks)
        value_rows = values.selectExpr(*key, "'insert' AS side", "pos", "CAST(NULL AS STRING) AS id", "`values`",
                                       "CAST(NULL AS STRING) AS error", "wstart", "wend", *nulls)
        out = event_rows.unionByName(value_rows) if self.pane_rows else value_rows
        if empty is not None:
            out = out.unionByName(empty.selectExpr(*key, "CAST(NULL AS STRING) AS side", "CAST(NULL AS BIGINT) AS pos",
                                                   "CAST(NULL AS STRING) AS id", "'[]' AS `values`",
                                                   "CAST(NULL AS STRING) AS error", "wstart", "wend", *nulls))
        return _contract(out, self.properties)

    def _values(self, joined: DataFrame, ticks: DataFrame):
        """(the query's output rows with `values` and `pos`; the fired panes
        whose output is no row, or None when every pane has one). An
        aggregating query without keys has one group per pane, an empty one
        too: every fired pane adds a marker row (no id, no seq: `count(*)` is
        `count(id)`, and `min_by(col, seq)`, `min(seq)` skip it)."""
        from pyspark.sql import functions as F

        plan = self.select
        pane = ["trace_id", "k", "after", "due", "wstart", "wend"]
        rows = joined.select(*pane, "seq", "id", *(F.col(quoted(p)) for p in self.properties))
        star = ["'id', min_by(id, seq)" if plan["group"] else "'id', id"] + [
            (f"'{p}', min_by({quoted(p)}, seq)" if plan["group"] else f"'{p}', {quoted(p)}") for p in self.properties]
        parts = []
        for name, sql in plan["fields"]:
            parts += star if name is None else [f"'{name}', {sql}"]
        record = f"to_json(named_struct({', '.join(parts)}))"
        orders = [f"o{n}" for n in range(len(plan["order"]))]
        order_by = ", ".join([f"o{n} {'DESC NULLS LAST' if d else 'ASC NULLS FIRST'}"
                              for n, (_, d) in enumerate(plan["order"])] + ["first_seq"])
        empty = None
        if plan["group"]:
            if not plan["keys"]:
                markers = ticks.selectExpr(*pane, "CAST(NULL AS BIGINT) AS seq", "CAST(NULL AS STRING) AS id",
                                           *(f"CAST(NULL AS {dict(_SQL_TYPES).get(self.types.get(p), 'STRING')}) "
                                             f"AS {quoted(p)}" for p in self.properties))
                rows = rows.unionByName(markers)
            keys = [f"{k} AS g{n}" for n, k in enumerate(plan["keys"])]
            # grouped by (trace, pane index, keys) only; the pane's columns joined back from the ticks
            grouped = rows.selectExpr("*", *keys).groupBy("trace_id", "k", *(f"g{n}" for n in range(len(keys))))
            out = grouped.agg(F.expr(f"{record} AS `values`"), F.expr("min(seq) AS first_seq"),
                              *(F.expr(f"{sql} AS o{n}") for n, (sql, _) in enumerate(plan["order"])))
            out = out.join(F.broadcast(ticks.select(*pane)), ["trace_id", "k"])
            if plan["keys"]:  # the panes with a row: a distinct of (trace, pane index), not of the groups
                empty = ticks.join(rows.select("trace_id", "k").distinct(), ["trace_id", "k"], "left_anti")
        else:
            out = rows.selectExpr(*pane, f"{record} AS `values`", "seq AS first_seq",
                                  *(f"{sql} AS o{n}" for n, (sql, _) in enumerate(plan["order"])))
            empty = ticks.join(rows.select("trace_id", "k").distinct(), ["trace_id", "k"], "left_anti")
        if orders:
            out = out.selectExpr("*", f"row_number() OVER (PARTITION BY trace_id, k ORDER BY {order_by}) AS pos")
        else:
            out = out.selectExpr("*", "coalesce(first_seq, 0) AS pos")
        return out, empty


_SQL_TYPES = (("long", "BIGINT"), ("double", "DOUBLE"), ("string", "STRING"), ("boolean", "BOOLEAN"),
              ("json", "STRING"))


def sequential(items: DataFrame, window, query, ctx: Context | None, properties: tuple = ()) -> DataFrame:
    """Every trace of `items` through the pane kernel."""
    names = tuple(ctx.properties if ctx is not None else properties)
    json_names = frozenset(f.name for f in items.schema.fields
                           if f.name in names and f.metadata.get(JSON_TEXT))
    run = kernel(window, query, pushed_where(window, query), names, json_names)
    rows = items.selectExpr("trace_id", "seq", "kind", "time", "id", *(quoted(n) for n in names))
    posted = rows.groupBy("trace_id").applyInArrow(run, _KERNEL_SCHEMA)
    return _contract(posted)


def _contract(posted: DataFrame, properties=()) -> DataFrame:
    """Kernel or set rows in the family contract's columns (plus ordinal and
    bounds, and the properties where the rows carry them)."""
    props = [quoted(p) for p in properties if p in posted.columns]
    return posted.selectExpr("trace_id", "seq", "phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
                             "side", "pos", "id", "`values`", "error", "ordinal", "wstart", "wend", *props)


POSTS = {Tumbling: pane_posts, Hopping: pane_posts, Sliding: pane_posts, Session: pane_posts,
         CountPanes: pane_posts, Query: pane_posts}

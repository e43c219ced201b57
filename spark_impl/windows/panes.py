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
from spark_impl.windows.pane_kernel import kernel

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
    return sequential(items, window, query, ctx)


def sequential(items: DataFrame, window, query, ctx: Context) -> DataFrame:
    """Every trace of `items` through the pane kernel."""
    names = tuple(ctx.properties)
    json_names = frozenset(f.name for f in items.schema.fields
                           if f.name in names and f.metadata.get(JSON_TEXT))
    run = kernel(window, query, pushed_where(window, query), names, json_names)
    rows = items.selectExpr("trace_id", "seq", "kind", "time", "id", *(quoted(n) for n in names))
    posted = rows.groupBy("trace_id").applyInArrow(run, _KERNEL_SCHEMA)
    return _contract(posted)


def _contract(posted: DataFrame) -> DataFrame:
    """Kernel or set rows in the family contract's columns (plus ordinal and bounds)."""
    return posted.selectExpr("trace_id", "seq", "phase", "time", "time AS slot_due", "CAST(0 AS BIGINT) AS slot",
                             "side", "pos", "id", "`values`", "error", "ordinal", "wstart", "wend")


POSTS = {Tumbling: pane_posts, Hopping: pane_posts, Sliding: pane_posts, Session: pane_posts,
         CountPanes: pane_posts, Query: pane_posts}

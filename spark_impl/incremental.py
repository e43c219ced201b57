"""Windows that resume from their state: `apply_window_incrementally`.

A unit of work after a trace's last item reads only the window's state at
that item; so a window run over the items up to a cut, then resumed over the
rest with its state, posts exactly what one run over all the items posts.
The state is rows of the input frame (`spark_impl.frames`'s columns), which
a Spark plan reads and writes and Parquet holds:

* the items the window's future reads, as its family declares them
  (`spark_impl.windows`, `HELD`; each rule in its function's docstring):
  `#length(n)` its sub-windows' last n events, `#time(t)` the events its
  clock has not yet expired (and under `#groupwin` each group's first
  event), a batch window its open and last batches, an eKuiper pane window
  the rows of its open panes, a statement over them the same where its rows
  read nothing else. A window whose family declares nothing (intersections,
  unions, derived values: their future reads running doubles), or a spec
  its family cannot bound exactly, keeps every item so far: exact, but the
  next call replays the whole history (`Incremental.replays` says so);
* each trace's last item, or in its place an `advance` to the trace's clock
  (the clock at the cut), its `start` row (the window's creation) and its
  `set` items (the variables' values);
* `state_of`: the window's fingerprint; a state is refused by another window.

The next call runs the window's own plan (`spark_impl.pipeline.apply`) over
the state's rows and the new items together and keeps the updates of the
new items: those after each trace's cut, its last item's seq. The update
keys continue the earlier run's (a new item's seq is its order value).

A new item must come after its trace's cut: its seq above the cut's, its
clock not before the cut's. One that does not fails the job, naming the
trace, the seq and the cut (the check runs inside the plan: no job of its
own). The id check of a call sees the state's events and the new ones, not
events the state no longer holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from attrs import frozen
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from oracle.dialects import parse
from oracle.model import WindowSpec
from spark_impl import frames, pipeline
from spark_impl.session import interpreted
from spark_impl.errors import EVENT_TABLE, TRACE_FRAME, InvalidFrame, check_frame
from spark_impl.event_table import (
    ONE_TRACE,
    _check_ids,
    check_clock,
    check_events,
    check_statement_columns,
    check_trace_frame,
    event_rows,
    passes_checks,
)
from spark_impl.windows import Context
from spark_impl.windows.base import quoted

#: the state's column holding the window's fingerprint
STATE_OF = "state_of"


@frozen
class Incremental:
    """One call's result: `updates`, the new items' updates (the schema of
    `apply_window`'s output), and `state`, the rows the next call resumes
    from. `replays`: the window's family declares no state, so `state`
    holds every item so far."""

    updates: DataFrame
    state: DataFrame
    replays: bool


def fingerprint(spec: WindowSpec) -> str:
    """The window's identity in a state: a hash of its parsed spec."""
    return hashlib.sha256(repr(spec).encode()).hexdigest()[:32]


def apply_window_incrementally(events_df: DataFrame, window: str | WindowSpec, *, order_col: str | None = None,
                               time_col: str | None = None, trace_col: str | None = None,
                               state: DataFrame | None = None, start: int | None = None, dialect: str = "esper",
                               pane_rows: bool = True, validate: bool = True, jumps: bool | None = None) -> Incremental:
    """The window over `events_df`, resumed from `state` (a previous call's
    `Incremental.state`; None: from the start). `events_df` is an event
    table (`order_col`, `time_col`, `trace_col`, `start`: as
    `apply_window_to_events`'s; `start` for traces the state does not hold)
    or, without `order_col` and `time_col`, a trace frame (`apply_window`'s
    input). `validate`: the checks of `apply_window_to_events` (or
    `apply_window`) over the new items; `jumps`: as `apply_window`'s (False
    given: neither the items nor the state hold a jump).

        >>> first = apply_window_incrementally(monday, "#groupwin(k)#length(10)", order_col="n", time_col="t")
        >>> first.state.write.parquet("state/monday")
        >>> second = apply_window_incrementally(tuesday, "#groupwin(k)#length(10)", order_col="n",
        ...                                     time_col="t", state=spark.read.parquet("state/monday"))

    `first.updates` and `second.updates` together are the rows of one
    `apply_window_to_events` over both days."""
    spec = parse(window, dialect) if isinstance(window, str) else window
    traced = order_col is None and time_col is None
    if traced:
        check_frame(events_df, "apply_window_incrementally", "events_df", TRACE_FRAME)
        items, jumps = _trace_items(events_df, spec, validate, jumps)
    else:
        if order_col is None or time_col is None:
            raise InvalidFrame("give both order_col and time_col (an event table), or neither (a trace frame)")
        check_frame(events_df, "apply_window_incrementally", "events_df", EVENT_TABLE)
        check_clock("start", start)
        check_statement_columns(spec, events_df, order_col=order_col, time_col=time_col, trace_col=trace_col)
        items, jumps = event_rows(events_df, order_col=order_col, time_col=time_col, trace_col=trace_col), False
        has_ids = "id" in events_df.columns
        if validate and not passes_checks(items, traced=trace_col is not None, ids="true" if has_ids else None):
            check_events(items, order_col=order_col, time_col=time_col, trace_col=trace_col, until=None, order=True,
                         start=None)
            if has_ids:
                _check_ids(items, trace_col)
    if state is not None:
        _check_state(state)
        if validate and not jumps:  # the items' check found no jump: one the state holds is input too
            jumps = holds_jump(state)
    one_trace = ONE_TRACE if not traced and trace_col is None else None
    return resume(items, spec, state=state, start=None if traced else start, jumps=jumps, pane_rows=pane_rows,
                  one_trace=one_trace)


def resume(items: DataFrame, spec: WindowSpec, *, state: DataFrame | None,
           cuts: Mapping[str, tuple[int, int]] | None = None,
           start: int | None = None, jumps: bool = True, pane_rows: bool = True,
           one_trace: str | None = None, placed: bool = False,
           lasts: Mapping[str, tuple[int, int]] | None = None) -> Incremental:
    """`apply_window_incrementally` after its checks: the window over checked
    trace items resumed from `state`. `cuts`: trace id -> (its last seq, its
    latest clock) in the state, where the caller knows them (a stream's
    survey): looked up as literals, so no job computes them, nor broadcasts
    them in each plan that reads the state (a broadcast is a job however
    small its rows). `placed`: the caller has checked, with `cuts`, that
    the state is this window's and that each item comes after its trace's
    cut (a stream's survey does), so no row is checked again here.
    `lasts`: trace id -> (seq, time) of its last item among the state and
    `items`, for every trace they hold, where the caller knows them: the
    state's plan reads them as literals (`held`)."""
    mark = fingerprint(spec)
    if state is not None and placed:
        if not isinstance(cuts, Mapping):
            raise ValueError("resume: `placed` is taken with the `cuts` its checks read")
        items = state.drop(STATE_OF).unionByName(items, allowMissingColumns=True)
    elif state is not None:
        items, cuts = _resumed(items, state, mark, cuts)
    else:
        cuts = None
    if start is not None:
        starts = items.select("trace_id").distinct()
        if isinstance(cuts, Mapping):
            raise ValueError("resume: `start` is taken with the state's own cuts, not with `cuts` given")
        if cuts is not None:
            starts = starts.join(cuts, "trace_id", "left_anti")
        items = items.unionByName(starts.select("trace_id", F.lit(frames.START_SEQ).cast("long").alias("seq"),
                                                F.lit("start").alias("kind"), F.lit(start).cast("long").alias("time")),
                                  allowMissingColumns=True)
    out = pipeline.apply(items, spec, jumps=jumps, pane_rows=pane_rows, one_trace=one_trace)
    if isinstance(cuts, Mapping):
        cut = lookup({t: c for t, (c, _) in cuts.items()})
        out = out.where(f"{cut} IS NULL OR after > {cut}")
    elif cuts is not None:
        out = out.join(F.broadcast(cuts.select("trace_id", "#cut")), "trace_id", "left") \
                 .where("`#cut` IS NULL OR after > `#cut`").drop("#cut")
    kept, replays = held(items, spec, jumps=jumps, lasts=lasts)
    return Incremental(out, kept.withColumn(STATE_OF, F.lit(mark)), replays)


def holds_jump(frame: DataFrame) -> bool:
    """Whether a frame of trace items holds a `jump` item (one small job)."""
    return bool(frame.where("kind = 'jump'").limit(1).count())


def _trace_items(trace_df: DataFrame, spec: WindowSpec, validate: bool,
                 jumps: bool | None) -> tuple[DataFrame, bool]:
    """A trace frame's items, checked as `apply_window` checks them; whether they may hold jumps."""
    if not validate:
        return trace_df, jumps is not False
    pipeline.check_input(trace_df, spec, jumps=jumps is not False)
    found = check_trace_frame(trace_df.selectExpr("trace_id", "CAST(seq AS BIGINT) AS seq", "kind",
                                                  "CAST(time AS BIGINT) AS time", "id"))
    return trace_df, (found if jumps is None else jumps) is not False


def _resumed(items: DataFrame, state: DataFrame, mark: str,
             cuts: Mapping[str, tuple[int, int]] | None = None) -> tuple[DataFrame, DataFrame | Mapping]:
    """The state's rows and the new items as one input, each new item checked
    to come after its trace's cut; and the cuts: given (trace id -> last seq,
    latest clock), else a frame aggregated from the state (`trace_id`, `#cut`,
    `#clock`), one row per trace the state holds."""
    _check_state(state)
    checked = state.selectExpr(
        f"CASE WHEN {STATE_OF} = '{mark}' THEN trace_id ELSE raise_error(concat('the state of trace ', trace_id, "
        f"' was written by another window; resume a state with the window that wrote it')) END AS trace_id",
        *(quoted(c) for c in state.columns if c not in ("trace_id", STATE_OF)))
    if cuts is None:
        cuts = checked.groupBy("trace_id").agg(F.max("seq").alias("#cut"), F.max("time").alias("#clock"))
        placed = items.join(F.broadcast(cuts), "trace_id", "left")
    else:
        placed = items.selectExpr("*", f"{lookup({t: c for t, (c, _) in cuts.items()})} AS `#cut`",
                                  f"{lookup({t: k for t, (_, k) in cuts.items()})} AS `#clock`")
    after = placed.selectExpr(
        *(quoted(c) for c in items.columns if c != "seq"),
        "CASE WHEN `#cut` IS NOT NULL AND seq <= `#cut` THEN raise_error(concat('trace ', trace_id, ' seq ', seq, "
        "': the state already holds this trace up to seq ', `#cut`, '; resume with the items after it')) "
        "WHEN `#cut` IS NOT NULL AND kind <> 'start' AND time < `#clock` THEN raise_error(concat('trace ', trace_id, "
        "' seq ', seq, ': its clock ', time, ' ms is before the state''s clock ', `#clock`, ' ms')) "
        "ELSE seq END AS seq")
    return checked.unionByName(after, allowMissingColumns=True), cuts


def _literal_array(values: list) -> str:
    """SQL of an array of literals (`pane_query.sql_literal`), a string as its UTF-8 bytes in hex: a trace
    id is user data, so nothing in it for the SQL's variable substitution (`${...}`) to touch."""
    from spark_impl.windows.pane_query import sql_literal

    return "array(" + ", ".join(f"CAST(X'{v.encode().hex()}' AS STRING)" if isinstance(v, str) else sql_literal(v)[0]
                                for v in values) + ")"


def lookup(values: Mapping[str, int | str | None], key: str = "trace_id", sql_type: str = "BIGINT") -> str:
    """SQL of `values[key]` (null for a key not in it; `sql_type` the values'): a map of literals, where a
    join with a frame of them would broadcast it in a job of its own."""
    if not values:
        return f"CAST(NULL AS {sql_type})"
    return (f"element_at(map_from_arrays({_literal_array(list(values))}, {_literal_array(list(values.values()))}), "
            f"{key})")


def _check_state(state: DataFrame) -> None:
    if STATE_OF not in state.columns:
        raise InvalidFrame(f"state has no column {STATE_OF!r}: pass the `state` of an earlier "
                           "apply_window_incrementally call")


def held(items: DataFrame, spec: WindowSpec, *, jumps: bool = True,
         lasts: Mapping[str, tuple[int, int]] | None = None) -> tuple[DataFrame, bool]:
    """The state after `items`: the rows the window's family declares its
    future reads (`HELD`; every item where it declares none), each trace's
    `start` row, and its last item or an `advance` to its clock in its
    place (module docstring); and whether every item was kept. `lasts`:
    each trace's last item (seq, time), known to the caller: literal rows,
    where an aggregate over `items` finds them otherwise."""
    validated = pipeline.check_input(items, spec, jumps=jumps)
    window, keys = pipeline.split_groupwin(spec)
    runner = pipeline.family_of(spec)
    props = tuple(c for c in validated.columns if c not in frames.BASE_COLUMNS)
    literal = None if lasts is None else tuple((t, s, c) for t, (s, c) in lasts.items())
    ctx = Context(partition=("trace_id",) + keys, group_keys=keys, properties=props, jumps=jumps, lasts=literal)
    kept = runner.held(validated, window, ctx) if runner.held is not None else None
    columns = [quoted(c) for c in validated.columns]
    if kept is None:
        return validated, True
    # a `set` item's variables hold until the next one: every one is kept (they are few)
    kept = kept.selectExpr(*columns).where("kind NOT IN ('start', 'set')").unionByName(
        validated.where("kind IN ('start', 'set')"))
    if literal is not None:
        last = items.sparkSession.createDataFrame(list(literal), "trace_id string, seq long, time long")
    else:
        last = validated.where("kind <> 'start'").groupBy("trace_id").agg(
            F.max("seq").alias("seq"), F.max("time").alias("time"))
    marker = last.selectExpr("trace_id", "seq", "'advance' AS kind", "time")
    # the marker gives way to a kept item of its seq: a flag over the rows of each (trace, seq), so the
    # family's plan of `kept` runs once (an anti-join of the marker against `kept` would run it twice) and
    # its rows are sorted once (an aggregate of whole rows by (trace, seq) sorts them before and after
    # its shuffle)
    rows = kept.selectExpr(*columns, "false AS `#marker`").unionByName(
        marker.selectExpr("*", "true AS `#marker`"), allowMissingColumns=True)
    only = rows.selectExpr("*", "min(`#marker`) OVER (PARTITION BY trace_id, seq) AS `#kept_at`") \
        .where("`#marker` = `#kept_at`")
    return only.selectExpr(*columns), False


def in_two_calls(trace_df: DataFrame, window: str | WindowSpec, dialect: str = "esper", *, validate: bool = True,
                 cut: str | None = None, jumps: bool | None = None) -> DataFrame:
    """`apply_window`'s output computed in two calls: each trace cut after
    an item drawn from its trace id (`cut`: SQL of the last seq of the first
    call, over `trace_id` and `#n`, the trace's item count), the first call's
    state handed to the second. The same rows as one call, or resuming is
    wrong: `difftest run --impl spark_impl.incremental:in_two_calls`."""
    spec = parse(window, dialect) if isinstance(window, str) else window
    cut = cut or "pmod(xxhash64(trace_id, 45), `#n` + 1) - 1"
    sized = trace_df.selectExpr("*", "count(CASE WHEN kind <> 'start' THEN 1 END) OVER (PARTITION BY trace_id) AS `#n`")
    placed = sized.selectExpr(*(quoted(c) for c in trace_df.columns), f"seq <= {cut} AS `#first`")
    first = placed.where("`#first`").drop("#first")
    rest = placed.where("NOT `#first`").drop("#first")
    kind = {} if jumps is None else {"jumps": jumps}
    one = apply_window_incrementally(first, spec, validate=validate, **kind)
    # the state collected and handed back as data, as a state read back from a table is: its plan is not
    # copied into each of the second call's reads of it (a job of many windows' plans would not fit the
    # driver's memory); a job of its own per call, the price of a harness that resumes every trace
    spark = trace_df.sparkSession
    with interpreted(spark):  # a harness's traces are small: compiling the job would cost more than running it
        rows = one.state.collect()
    state = spark.createDataFrame(rows, one.state.schema)
    two = apply_window_incrementally(rest, spec, state=state, validate=validate, **kind)
    return one.updates.unionByName(two.updates)


def unsupported(spec: WindowSpec) -> str | None:
    """As `spark_impl.unsupported` (the harness asks the module of an `--impl`)."""
    from spark_impl import unsupported as spark_unsupported

    return spark_unsupported(spec)

"""The shared pipeline: input checks, clock, grouping, a family's posts, and the
numbering of updates and positions (the family contract: spark_impl/windows/__init__.py).

    validated = check_input(trace_df, spec)       # columns, types, kinds, op codes
    items     = clock.prepare(validated)          # + prev_time (pruned when unused)
    items     = with_slot(items, ctx)             # + slot on event rows
    items     = number_arrivals(items)            # + arrival_no, for one-post-per-arrival windows
    posted    = family.posts(items, window, ctx)
    output    = finalize(posted, validated, ctx)  # + update_no (unless numbered by arrival), pos

`#groupwin(keys)` around a window is nothing but more partition columns: every
family partitions its window functions by `ctx.partition` = trace_id + keys, so a
keyed window spreads over the cluster by key and is never forced onto one
partition. `trace_id` leads every partitioning, so many traces run as one job.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import types as T
from pyspark.sql.functions import broadcast

from oracle.errors import UnsupportedWindow
from oracle.model import GroupWin, Intersection, RetainUnion, WindowSpec, spec_kind
from spark_impl import clock
from spark_impl.errors import InvalidFrame
from spark_impl.frames import BASE_COLUMNS, KINDS, OUTPUT_COLUMNS, RESERVED, spec_properties
from spark_impl.windows import Context, Family, family
from spark_impl.windows.base import events, over, quoted

# Update numbering works in blocks of 2**BLOCK_BITS items of a trace (see `number_updates`).
BLOCK_BITS = 16

_INTEGRAL = (T.LongType, T.IntegerType, T.ShortType, T.ByteType)
_REQUIRED = {
    "trace_id": ("the trace a row belongs to", (T.StringType,)),
    "seq": ("the item's position in its trace", _INTEGRAL),
    "kind": ("start, event, advance, jump or set", (T.StringType,)),
    "time": ("ms: the clock an item moves to, or an event's arrival clock", _INTEGRAL),
    "id": ("the event's id", (T.StringType,)),
}
_OPTIONAL = {"op": (T.StringType,), "vars": (T.StringType,)}


def split_groupwin(spec: WindowSpec) -> tuple[WindowSpec, tuple[str, ...]]:
    """The grouped window and its group keys (none without `#groupwin`)."""
    if isinstance(spec, GroupWin):
        return spec.window, spec.keys
    return spec, ()


def family_of(spec: WindowSpec) -> Family:
    """The family that runs `spec` (inside its groupwin), or `UnsupportedWindow`."""
    window, _ = split_groupwin(spec)
    if isinstance(window, (Intersection, RetainUnion)):
        raise UnsupportedWindow(f"the Spark implementation does not implement the {spec_kind(spec)} window")
    return family(window)


# --------------------------------------------------------------------------- input


def check_input(trace_df: DataFrame, spec: WindowSpec) -> DataFrame:
    """The input with `seq` and `time` as long and `op`/`vars` present; raises
    `InvalidFrame` naming a missing or mistyped column. Bad values (an unknown
    kind, an event with an operation code other than insert) raise when the
    frame is computed, naming the trace and seq."""
    fields = {f.name: f.dataType for f in trace_df.schema.fields}
    for name, (meaning, types) in _REQUIRED.items():
        if name not in fields:
            raise InvalidFrame(f"the input has no column {name!r} ({meaning})")
        _check_type(name, fields[name], types)
    for name, types in _OPTIONAL.items():
        if name in fields:
            _check_type(name, fields[name], types)
    for name in spec_properties(spec):
        if name not in fields:
            raise InvalidFrame(f"the window reads property {name!r}, but the input has no column {name!r}")
    clashes = [c for c in fields if c.lower() in RESERVED and c not in BASE_COLUMNS]
    if clashes:
        raise InvalidFrame(f"column {clashes[0]!r} clashes with a column name the window output uses")
    props = [quoted(c) for c in trace_df.columns if c not in BASE_COLUMNS]
    op = "op" if "op" in fields else "CAST(NULL AS STRING)"
    vars_ = "vars" if "vars" in fields else "CAST(NULL AS STRING)"
    return trace_df.selectExpr(
        "trace_id", "CAST(seq AS BIGINT) AS seq", _CHECKED_KIND.format(op=op), "CAST(time AS BIGINT) AS time", "id",
        f"{op} AS op", f"{vars_} AS vars", *props,
    )


def _check_type(name: str, actual: T.DataType, allowed: tuple) -> None:
    if not isinstance(actual, allowed):
        wanted = "an integer type (long)" if allowed is _INTEGRAL else "string"
        raise InvalidFrame(f"column {name!r} must be {wanted}, not {actual.simpleString()}")


_WHERE = "concat('trace ', trace_id, ' seq ', seq, ': ')"
_CHECKED_KIND = (
    f"CASE WHEN kind IS NULL OR kind NOT IN ({', '.join(repr(k) for k in KINDS)}) "
    f"THEN raise_error(concat({_WHERE}, 'kind must be one of {', '.join(KINDS)}, not ', coalesce(kind, 'null'))) "
    "WHEN kind = 'event' AND {op} IS NOT NULL AND {op} <> 'insert' "
    f"THEN raise_error(concat({_WHERE}, 'operation code ', {{op}}, ' is not supported by this window')) "
    "ELSE kind END AS kind"
)


# --------------------------------------------------------------------------- pipeline


def apply(trace_df: DataFrame, spec: WindowSpec, *, short_traces: bool | None = None) -> DataFrame:
    """The window's output rows (OUTPUT_COLUMNS, then the properties), unsorted.
    `short_traces`: every trace has fewer than 2**BLOCK_BITS items, so updates are
    numbered in one block per trace; None: decided by `bounded_short`. Both paths
    give the same numbers; the blocked one scales to a trace of any length."""
    if short_traces is None:
        short_traces = bounded_short(trace_df)
    runner = family_of(spec)
    window, keys = split_groupwin(spec)
    validated = check_input(trace_df, spec)
    props = tuple(c for c in validated.columns if c not in BASE_COLUMNS)
    ctx = Context(partition=("trace_id",) + keys, group_keys=keys, properties=props,
                  arrival_numbers=runner.one_post_per_arrival)
    items = with_slot(clock.prepare(validated), ctx)
    if ctx.arrival_numbers:
        items = number_arrivals(items, short_traces=short_traces)
    posted = runner.posts(items, window, ctx)
    return finalize(posted, validated, ctx, short_traces=short_traces)


def bounded_short(frame: DataFrame) -> bool:
    """True when Spark's optimized plan bounds the frame to fewer than
    2**BLOCK_BITS rows (a table of local data, a LIMIT): then no trace can be
    long. Reading the bound runs no job; a plan without one (files, tables,
    RDDs) or a session that does not expose it (Spark Connect) answers False."""
    try:
        bound = frame._jdf.queryExecution().optimizedPlan().maxRows()
        return bool(bound.isDefined()) and int(bound.get()) < 2**BLOCK_BITS
    except Exception:  # noqa: BLE001 - no JVM plan to read: take the path that always scales
        return False


def with_slot(items: DataFrame, ctx: Context) -> DataFrame:
    """`slot` on event rows: the seq of the group's first event (a running min by
    seq over the group, which shares the families' partitioning and order), or 0
    without groupwin (esper.md §0.1: timers of one instant fire in slot order)."""
    if not ctx.group_keys:
        return items.selectExpr("*", "CASE WHEN kind = 'event' THEN CAST(0 AS BIGINT) END AS slot")
    first = f"min(CASE WHEN kind = 'event' THEN seq END) {over(ctx)}"
    return items.selectExpr("*", f"CASE WHEN kind = 'event' THEN {first} END AS slot")


def number_arrivals(items: DataFrame, *, short_traces: bool) -> DataFrame:
    """`arrival_no` on event rows: the number of events before it in its trace, a
    running count in blocks of 2**BLOCK_BITS items plus the block's offset (as in
    `number_updates`). Only for windows whose updates are exactly the arrivals."""
    is_event = "kind = 'event'"
    block = f"shiftright(seq, {BLOCK_BITS})"
    partition = "trace_id" if short_traces else f"trace_id, {block}"
    before = (f"count(CASE WHEN {is_event} THEN 1 END) OVER (PARTITION BY {partition} ORDER BY seq "
              "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)")
    if short_traces:
        return items.selectExpr("*", f"CASE WHEN {is_event} THEN {before} END AS arrival_no")
    counts = items.where(is_event).selectExpr("trace_id", f"{block} AS _block").groupBy("trace_id", "_block").count()
    offsets = broadcast(block_offsets(counts))
    with_offsets = items.selectExpr("*", f"{block} AS _block").join(offsets, ["trace_id", "_block"], "left")
    return with_offsets.selectExpr(
        *(quoted(c) for c in items.columns), f"CASE WHEN {is_event} THEN {before} + _offset END AS arrival_no"
    )


def block_offsets(counts: DataFrame) -> DataFrame:
    """(trace_id, _block, count) -> (trace_id, _block, _offset): the counts of the
    trace's earlier blocks, summed (a small table: one row per block)."""
    return counts.selectExpr(
        "trace_id", "_block",
        "coalesce(sum(count) OVER (PARTITION BY trace_id ORDER BY _block "
        "ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS _offset",
    )


def finalize(posted: DataFrame, validated: DataFrame, ctx: Context, *, short_traces: bool) -> DataFrame:
    """Posts -> output rows: update numbers, positions, properties."""
    numbered = posted if ctx.arrival_numbers else number_updates(posted, short_traces=short_traces)
    missing = [p for p in ctx.properties if p not in posted.columns]
    if missing:
        props = events(validated).select("trace_id", "id", *missing)
        numbered = numbered.join(props, ["trace_id", "id"], "left")
    return numbered.selectExpr(
        "trace_id", "CAST(update_no AS BIGINT) AS update_no", "seq AS after", "time", "side",
        "CAST(CASE WHEN side IS NOT NULL THEN pos END AS INT) AS pos", "id", *(quoted(p) for p in ctx.properties),
    )


def number_updates(posted: DataFrame, *, short_traces: bool) -> DataFrame:
    """`update_no`: the rank of the row's unit (seq, phase, time) among its trace's
    units; `pos`: the row's rank among its update's rows of its side, in
    (slot_due, slot, pos) order.

    Numbering a trace's units is a prefix count over the whole trace, the one step
    that is global per trace. Rather than sort a huge trace in one task, the units
    are numbered in blocks of 2**BLOCK_BITS items (`seq >> BLOCK_BITS`): a
    dense_rank within each (trace, block) partition, plus the block's offset, the
    number of units in the trace's earlier blocks (a running sum over the small
    per-block count table, one row per block, joined back by broadcast). A unit
    never spans blocks, since all its rows share its seq. For short traces the
    block is the trace and the offset 0.

    Spark shares no result between two consumers of one plan (only a shuffle that
    both read unchanged), so on the blocked path the family's posts are computed
    twice: for the counts and for the rows."""
    block = f"shiftright(seq, {BLOCK_BITS})"
    partition = "trace_id" if short_traces else f"trace_id, {block}"
    # One partitioning and one sort serve all three ranks: each order is a prefix of
    # the row order, and rank() gives a row the row number of its (unit, side)'s first row.
    unit = "seq, phase, time"
    row = f"row_number() OVER (PARTITION BY {partition} ORDER BY {unit}, side, slot_due, slot, pos)"
    first_of_side = f"rank() OVER (PARTITION BY {partition} ORDER BY {unit}, side)"
    local = f"dense_rank() OVER (PARTITION BY {partition} ORDER BY {unit}) - 1"
    others = [quoted(c) for c in posted.columns if c != "pos"]
    if short_traces:
        return posted.selectExpr(*others, f"{row} - {first_of_side} AS pos", f"{local} AS update_no")
    ranked = posted.selectExpr(*others, f"{row} - {first_of_side} AS pos", f"{local} AS _local", f"{block} AS _block")
    counts = posted.selectExpr("trace_id", f"{block} AS _block", "seq", "phase", "time").distinct().groupBy(
        "trace_id", "_block"
    ).count()
    numbered = ranked.join(broadcast(block_offsets(counts)), ["trace_id", "_block"])
    return numbered.selectExpr(*others, "pos", "_offset + _local AS update_no")


__all__ = ["OUTPUT_COLUMNS", "apply", "check_input", "family_of", "split_groupwin"]

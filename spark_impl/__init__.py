"""The Spark implementation of the window specification: the same updates as the
oracle, computed for many traces and keys at once as relational operations.

* `apply_window(trace_df, window)`: a window over an input frame of traces (the
  frame's columns: `spark_impl.frames`). One output row per posted event.
* `apply_window_to_events(events_df, window, ...)`: the same over an ordinary
  event table (an order column, an arrival-time column, optional trace column).
* `run_cases(pairs)`: (spec, Trace) pairs in, updates out, one Spark job for all.
* `apply_window_incrementally(events_df, window, ..., state=)`: a window
  resumed from an earlier call's state (`spark_impl.incremental`).

Output of `apply_window` / `apply_window_to_events`:

| column   | type   | meaning                                                           |
|----------|--------|-------------------------------------------------------------------|
| trace_id | string | the trace                                                         |
| after    | long   | the seq of the item that caused the update                        |
| phase    | int    | 0: a timer firing on the item's walk or jump; 1: the event's arrival |
| time     | long   | the clock the update was posted at, ms                            |
| ordinal  | int    | the update's order among those of one unit of work (0 for Esper,  |
|          |        | which posts at most one update per unit)                          |
| side     | string | 'insert' or 'remove'; 'update' (CCL's update code: a keyed window's |
|          |        | replaced row, an aggregation window's changed group row);           |
|          |        | 'error' (a rejected item); null for an empty update (FORCE_UPDATE) |
| pos      | struct | the row's order within its update's side: compare (due, slot, n)   |
|          |        | as a tuple (null for an empty update)                             |
| id       | string | the event's id (a window posting events only)                     |
| error    | string | on an 'error' row, the message naming the operation and the key;  |
|          |        | null on other rows                                                |
| window   | struct | eKuiper pane windows only: the pane's (start, end), ms; other      |
|          |        | windows' output has no such column                                |
| pane_event | string | an eKuiper query's pane rows (`pane_rows=True`): the pane's event |
| ...      | typed  | a window posting events: the event's properties; a statement or a |
|          |        | derived-value window (`#size`, `#uni`, `select ...`): one column  |
|          |        | per field of its rows, typed by the engine's rules; the schema    |
|          |        | without running: `output_schema`                                  |

An update is identified by (trace_id, after, phase, time, ordinal), values each
row computes on its own: no step counts updates over a trace. Updates of a
trace are in that order: an item's walk stops in time order (phase 0), then its
arrival (phase 1); a jump is one stop. The total order of the rows is
`.orderBy("trace_id", "after", "phase", "time", "ordinal", "side", "pos")`
('insert' sorts before 'remove'); an empty update has a single row. The frame
is returned unsorted (a total order costs a global sort, which a consumer
writing to a table does not need). `numbered=True` adds `update_no` (0-based,
consecutive per trace) and `pos_no` (0-based within the side), at the cost of
one more shuffle and sort (`pipeline.numbered`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from functools import reduce

from oracle.dialects import parse
from oracle.errors import InvalidTrace, UnsupportedWindow, WindowOracleError
from oracle.model import Jump, Spec, Trace, Update, WindowSpec
from spark_impl import frames, pipeline
from spark_impl.errors import (
    TRACE_FRAME, InvalidFrame, JobFailed, SparkUnavailable, WrongArgument, cause, check_frame, described)
from spark_impl.event_table import apply_window_to_events, check_trace_frame
from spark_impl.frames import OUTPUT_COLUMNS, ROW_OUTPUT_COLUMNS, UPDATE_KEY, PropertyTypes
from spark_impl.session import get_spark, interpreted


def _spec(window: str | WindowSpec, dialect: str) -> WindowSpec:
    return parse(window, dialect) if isinstance(window, str) else window


def apply_window(trace_df, window: str | WindowSpec, dialect: str = "esper", *, jumps: bool | None = None,
                 numbered: bool = False, pane_rows: bool = True, validate: bool = True):
    """The updates `window` (a clause in `dialect`'s syntax, or a spec) posts over
    every trace of `trace_df`, one row per posted event (module docstring).

    `jumps`: whether the input may hold a `jump` item; windows whose jumps
    need more work (a grouped `#time`, `#time_batch`) plan without that work
    where it holds none. None (the default): as the validation found (planned
    for jumps without `validate`); `False` promises there is none (a jump row
    then fails the job naming it). `numbered`: add `update_no` and
    `pos_no` (one more shuffle and sort). `pane_rows=False` (an eKuiper query):
    only the query's output rows (its fields) and empty panes, not the panes' rows.

    Raises `InvalidFrame` naming a missing or mistyped input column, the parser's
    errors for a bad clause, `UnsupportedWindow` for a window not implemented.
    `validate` (the default): first check that the frame describes traces
    (`event_table.check_trace_frame`: one Spark job for a frame in order), raising `InvalidFrame`
    naming the column, the trace and the value; `validate=False` skips it for a
    frame known to be valid (an invalid one then gives wrong output). Any
    other `trace_df` (a list, a pandas frame) is a `WrongArgument` naming it."""
    check_frame(trace_df, "apply_window", "trace_df", TRACE_FRAME)
    spec = _spec(window, dialect)
    if validate:  # the columns first (no job), then their values, read as given (check_input's frame raises)
        pipeline.check_input(trace_df, spec, jumps=jumps is not False)
        found = check_trace_frame(trace_df.selectExpr("trace_id", "CAST(seq AS BIGINT) AS seq", "kind",
                                                      "CAST(time AS BIGINT) AS time", "id"))
        jumps = found if jumps is None else jumps
    jumps = jumps is not False
    out = pipeline.apply(trace_df, spec, jumps=jumps, pane_rows=pane_rows)
    return pipeline.numbered(out) if numbered else out


def output_schema(window: str | WindowSpec, columns, dialect: str = "esper", *, pane_rows: bool = True):
    """The StructType `apply_window` and `apply_window_to_events` give for
    `window` over an input whose property columns are `columns` (a
    StructType, such as an input frame's schema, or a mapping of name to a
    Spark type or its name, `{"symbol": "string", "price": "double"}`), found
    without running anything: build a sink's table from it. A window posting
    events: OUTPUT_COLUMNS, then the properties as given; a statement or a
    derived-value window: ROW_OUTPUT_COLUMNS (an eKuiper query: then `window`
    and `pane_event`), then one column per field, typed by the engine's rules
    (README, "Statements"). `pane_rows`: as `apply_window`'s (an eKuiper
    query without its panes' rows has no `pane_event`)."""
    return pipeline.output_schema(_spec(window, dialect), columns, pane_rows=pane_rows)


def unsupported(spec: WindowSpec) -> str | None:
    """Why this implementation does not run `spec` (`UnsupportedWindow`'s
    message), or None when it does: the harness asks before planning."""
    try:
        pipeline.family_of(spec)
    except UnsupportedWindow as exc:
        return str(exc)
    return None


#: a job of `run_cases` holds at most this many window plans and input rows: the
#: plans of one job run in one Spark action, whose memory grows with both
PLANS_PER_JOB = 24
ROWS_PER_JOB = 250_000


def run_cases(pairs: Sequence[tuple[WindowSpec, Trace]], spark=None,
              progress: Callable[[int, int], None] | None = None,
              on_rows: Callable[[list], None] | None = None,
              plan: Callable | None = None, plans_per_job: int | None = None) -> list[tuple[Update, ...] | WindowOracleError]:
    """The updates of each (spec, trace) pair, in order; a pair that cannot run
    (`UnsupportedWindow`, `InvalidTrace`) gets its exception and the others run.

    Pairs are grouped by spec; each group's traces become one input frame (traces
    whose property types clash go to separate frames). The frames' outputs are
    unioned into jobs of at most PLANS_PER_JOB plans and ROWS_PER_JOB input rows,
    each collected by one Spark action (`progress(done, total)` after each), so
    a replay of thousands of cases runs in a few jobs of bounded memory. A job
    of small traces (frames.ONE_PARTITION_ROWS rows in all) runs without code
    generation (`session.interpreted`). A plan refused while it is made (a
    `WindowOracleError`: a statement Esper's compiler refuses) is its pairs'
    error, the job's other plans run. A job that fails gives each of its pairs
    a `JobFailed` naming the error's cause (`errors.cause`); the other jobs run. `on_rows(rows)` sees each
    job's collected output rows (HARNESS_COLUMNS, `window` where a plan has it;
    `trace_id` the pair's index) before they become updates. `plan(frame,
    spec, jumps)`: the output of a spec over a frame of its traces (default
    `pipeline.apply`; the resumption tests run each trace in two calls,
    whose plans are bigger: `plans_per_job` fewer)."""
    check_pairs(pairs, "run_cases")
    plan = plan or (lambda frame, spec, jumps: pipeline.apply(frame, spec, jumps=jumps))
    plans_per_job = plans_per_job or PLANS_PER_JOB
    results: list = [None] * len(pairs)
    groups: dict[WindowSpec, list[tuple[str, Trace, PropertyTypes]]] = defaultdict(list)
    for index, (spec, trace) in enumerate(pairs):
        trace_id = str(index)
        try:
            pipeline.family_of(spec)
            frames.check_pair(spec, trace)
            types = PropertyTypes(frames.spec_properties(spec), mixed=spec.MIXED_KINDS)
            types.merge(PropertyTypes.of_trace(trace_id, trace, mixed=spec.MIXED_KINDS))
            groups[spec].append((trace_id, trace, types))
        except InvalidTrace as exc:  # told as the case's own: its item, not the internal trace id
            results[index] = InvalidTrace(exc.reason.removeprefix(f"trace {trace_id!r}: "), exc.index)
        except WindowOracleError as exc:
            results[index] = exc
    if not groups:
        return results
    spark = spark or get_spark()
    pieces = [(spec, types, batch) for spec, members in groups.items() for types, batch in _batches(members)]
    jobs: list[list] = [[]]
    for piece in pieces:
        rows = sum(len(trace) + 1 for _, trace in piece[2])
        job = jobs[-1]
        if job and (len(job) >= plans_per_job or sum(r for *_, r in job) + rows > ROWS_PER_JOB):
            jobs.append(job := [])
        job.append((*piece, rows))
    for done, job in enumerate(jobs, 1):
        traces = {tid: trace for _, _, batch, _ in job for tid, trace in batch}
        readers: dict[str, frames.RowFields] = {}
        try:
            outputs = []
            for spec, types, batch, _ in job:
                frame = frames.frame_of(spark, batch, types)
                jumps = any(isinstance(item, Jump) for _, trace in batch for item in trace.items)
                try:
                    out = plan(frame, spec, jumps)
                except WindowOracleError as exc:  # refused while planning (a statement Esper does not compile)
                    for trace_id, _ in batch:
                        results[int(trace_id)] = exc
                        del traces[trace_id]
                    continue
                columns, reader = frames.harness_columns(out, spec)
                outputs.append(out.selectExpr(*columns))
                if reader is not None:
                    readers.update((trace_id, reader) for trace_id, _ in batch)
            collected = []
            if outputs:
                union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), outputs)
                small = sum(rows for *_, rows in job) <= frames.ONE_PARTITION_ROWS
                with interpreted(spark) if small else nullcontext():
                    collected = union.collect()
        except Exception as exc:  # noqa: BLE001 - a failed job fails its own cases, not the others
            failure = JobFailed(f"the Spark job failed: {cause(exc)}")
            for trace_id in traces:
                results[int(trace_id)] = failure
        else:
            if on_rows:
                on_rows(collected)
            for trace_id, found in frames.updates_from_rows(collected, traces, readers).items():
                results[int(trace_id)] = found
        if progress:
            progress(done, len(jobs))
    return results


def check_pairs(pairs, function: str) -> None:
    """Raise `WrongArgument` unless `pairs` is a sequence of (window spec, Trace) pairs."""
    if not isinstance(pairs, Sequence) or isinstance(pairs, str):
        raise WrongArgument(f"{function}: `pairs` must be a list of (window spec, Trace) pairs, "
                            f"got {described(pairs)}")
    for index, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], Spec)
                and isinstance(pair[1], Trace)):
            raise WrongArgument(f"{function}: `pairs[{index}]` must be a (window spec, Trace) pair "
                                f"(oracle.parse gives a spec), got {pair!r:.80}")


def _batches(members):
    """Greedy split of one spec's traces into frames whose property types agree."""
    batches: list[tuple[PropertyTypes, list]] = []
    for trace_id, trace, types in members:
        for n, (merged, batch) in enumerate(batches):
            trial = merged.copy()
            try:
                trial.merge(types)
            except InvalidTrace:
                continue
            batches[n] = (trial, batch + [(trace_id, trace)])
            break
        else:
            batches.append((types, [(trace_id, trace)]))
    return batches


from spark_impl.incremental import Incremental, apply_window_incrementally  # noqa: E402 (it imports pipeline)

__all__ = ["apply_window", "apply_window_to_events", "apply_window_incrementally", "Incremental", "run_cases", "unsupported", "InvalidFrame", "SparkUnavailable",
           "WrongArgument", "get_spark",
           "UPDATE_KEY", "OUTPUT_COLUMNS", "ROW_OUTPUT_COLUMNS", "output_schema"]

"""The windows on a live stream of trace items: Spark Structured Streaming,
run by spark_impl's own plans, exact and restartable.

    from spark_impl import streaming
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet("in/")
    out = streaming.apply_window(stream, "#groupwin(symbol)#time(10 sec)", location="window/")
    out.writeStream.outputMode("append").option("checkpointLocation", "ckpt/").foreachBatch(sink).start()

`apply_window(stream_df, window, dialect, location=...)` takes a streaming
DataFrame of trace items (the input schema of `spark_impl.frames`:
`trace_id`, `seq`, `kind`, `time`, `id`, `op`, `vars`, properties) and
returns a streaming DataFrame with the batch `spark_impl.apply_window`'s
output schema (`spark_impl.output_schema(window, columns, dialect)`), in
append mode, for every window kind and statement of every dialect.

**What runs.** `apply_window` starts the window's own query
(`spark_impl.streaming.micro_batch`: `foreachBatch`, each micro-batch's
items put in order per trace and run by `apply_window_incrementally`, the
batch plans resumed from the state the micro-batch before left), which
writes each micro-batch's updates under `location`; the frame returned reads
them (`window_query`, an attribute of the frame, is the window's query).
The rows are the batch's, update keys and `pos` included: over the whole
stream, exactly the rows of one batch `apply_window` over every item. The
rules of order (items in any order across micro-batches, held back ahead of
a gap; a start row no later than seq 0's micro-batch; a replayed item fails
the query naming the trace and seq) and of restart are
`micro_batch`'s.

**Scale.** A micro-batch is one set of Spark jobs over every trace and key,
so a keyed window (`#groupwin`, CCL `PER`, Apama `partition by`, an eKuiper
`GROUP BY` over panes) spreads over every core and worker as the batch plan
does. An ungrouped window over one trace is one sequence by its semantics:
its plan orders the trace's items in one task, as the batch's does.

This module also holds the harness's helpers: cases cut into micro-batches
and written as files (`micro_batches`, `write_files`), run to the end
(`run_files`, `run_cases`, `apply_window_as_stream`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from oracle.dialects import parse
from oracle.errors import InvalidTrace, WindowOracleError
from oracle.model import PANE_WINDOWS, Spec, Statement, WindowSpec
from spark_impl.errors import TRACE_FRAME, InvalidFrame, WrongArgument, check_frame
from spark_impl.frames import START_SEQ


def has_panes(spec: WindowSpec) -> bool:
    """Whether the batch output of `spec` has the `window` column (an eKuiper
    pane window, or a query over one)."""
    return isinstance(spec, PANE_WINDOWS) or (isinstance(spec, Statement) and spec.rules.posted == "pane")


def apply_window(stream_df, window: str | WindowSpec, dialect: str = "esper", *, validate: bool = True,
                 set_provider: bool = True, location: str | None = None, trigger: Mapping | None = None):
    """The updates `window` (a clause in `dialect`'s syntax, or a spec) posts
    over every trace of the streaming frame `stream_df`, as a streaming frame
    with the batch `apply_window`'s output schema, to write in append mode.

    It starts the window's own query (`micro_batch.start_window`: spark_impl's
    plans over each micro-batch, resumed from the state the one before left),
    which writes each micro-batch's updates under `location`
    (`micro_batch.UpdatesTable`); the frame returned reads them, each once.
    The window's query is the frame's `window_query` attribute
    (`StreamingQuery`); `trigger` its trigger (`{"availableNow": True}`).
    `location`: where the window keeps its state, checkpoint and updates; a
    query restarted with the same `location` resumes where it stopped
    (None: a new temporary folder, so no restart). `validate=False` skips the
    batch's checks of each micro-batch's items (a repeated id is then not
    caught). `set_provider` is kept for callers of the earlier design (no
    state store is used). Raises `InvalidFrame` naming a missing or mistyped
    column (the batch's check), the parser's errors for a bad clause."""
    check_frame(stream_df, "streaming.apply_window", "stream_df", STREAM_OF_TRACES)
    spec = parse(window, dialect) if isinstance(window, str) else window
    _check_streaming(stream_df)
    return _updates_stream(stream_df, spec, validate=validate, location=location, trigger=trigger)


def apply_windows(stream_df, specs: Mapping[str, WindowSpec], *, validate: bool = True, set_provider: bool = True,
                  location: str | None = None, trigger: Mapping | None = None):
    """Each trace under its own window (`specs`: trace id -> spec; a trace
    not named fails the query naming it): many windows in one query, as the
    differential harness runs them, otherwise as `apply_window`. The output
    is the union of the windows' output schemas (`output.merged`: a column
    two windows give differently is `InvalidFrame`); a trace's rows leave
    the other windows' columns null."""
    check_frame(stream_df, "streaming.apply_windows", "stream_df", STREAM_OF_TRACES)
    table = check_specs(specs, "streaming.apply_windows")
    _check_streaming(stream_df)
    return _updates_stream(stream_df, table, validate=validate, location=location, trigger=trigger)


def _updates_stream(stream_df, specs, *, validate: bool, location: str | None, trigger: Mapping | None):
    from spark_impl.streaming.micro_batch import output_schema_of, start_window, updates_stream

    schema = output_schema_of(stream_df, specs)  # refused before any query starts
    return updates_stream(stream_df.sparkSession, schema, location, lambda where, sink: start_window(
        stream_df, specs, location=where.path, sink=sink, trigger=trigger, validate=validate))


#: what the streaming functions' frame argument is, for `errors.check_frame`'s message
STREAM_OF_TRACES = "a streaming DataFrame of trace rows (spark.readStream...)"
STREAM_OF_EVENTS = "a streaming DataFrame of events (spark.readStream...)"


def check_specs(specs, function: str) -> dict:
    """`specs` as a dict of trace id -> window spec; `WrongArgument` for any other value, `ValueError` when empty."""
    if not isinstance(specs, Mapping) or not all(isinstance(s, Spec) for s in specs.values()):
        raise WrongArgument(f"{function}: `specs` must be a mapping of trace id to window spec (oracle.parse gives "
                            f"a spec), got {specs!r:.80}")
    if not specs:
        raise ValueError(f"{function} needs at least one (trace id, spec) pair")
    return dict(specs)


def _check_streaming(frame) -> None:
    if not frame.isStreaming:
        raise InvalidFrame("streaming.apply_window takes a streaming DataFrame (spark.readStream...); "
                           "for a recorded frame use spark_impl.apply_window")


# --------------------------------------------------------------------------- cases as a stream of files


#: the file source reads one file per micro-batch
FILES_PER_TRIGGER = 1


def micro_batches(rows: list[tuple], batches: int, rng, early: float = 0.0, seq_at: int = 1) -> list[list[tuple]]:
    """One trace's input rows (in seq order, the start row first) cut at
    random points into `batches` runs, one per micro-batch (none empty when
    the trace has that many rows). With `early` > 0 each item is moved, with that probability, to a
    random earlier micro-batch: it arrives ahead of a gap and is held. The
    start row goes no later than seq 0 (the processor's rule)."""
    if len(rows) >= batches:  # every micro-batch gets some of the trace
        cuts = sorted(rng.sample(range(1, len(rows)), batches - 1))
    else:
        cuts = sorted(rng.randint(0, len(rows)) for _ in range(batches - 1))
    where = []
    for index in range(len(rows)):
        batch = sum(1 for c in cuts if c <= index)
        if early and batch and rng.random() < early:
            batch = rng.randint(0, batch - 1)
        where.append(batch)
    seqs = [row[seq_at] for row in rows]
    if START_SEQ in seqs and 0 in seqs:
        start, first = seqs.index(START_SEQ), seqs.index(0)
        where[start] = min(where[start], where[first])
    out: list[list[tuple]] = [[] for _ in range(batches)]
    for row, batch in zip(rows, where):
        out[batch].append(row)
    return out


def write_files(folder, batches: list[list[tuple]], schema, first: int = 0) -> int:
    """Each non-empty micro-batch's rows as one Parquet file in `folder`, in
    order (names and modification times ascending, as the file source takes
    them), numbered from `first` (more files for a stream already read);
    the number of files."""
    import os
    import time
    from pathlib import Path

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow = to_arrow_schema(schema, timezone="UTC")  # a timestamp column: instants, written as UTC
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = 0
    stamp = time.time() - 10_000 + first
    for rows in batches:
        if not rows:
            continue
        path = folder / f"batch-{first + written:05d}.parquet"
        columns = list(zip(*rows))
        pq.write_table(pa.Table.from_arrays([pa.array(list(c), type=f.type) for c, f in zip(columns, arrow)],
                                            schema=arrow), path)
        os.utime(path, (stamp + written, stamp + written))
        written += 1
    return written


def run_files(spark, folder, schema, specs: Mapping[str, WindowSpec], checkpoint, *,
              fail_after: int | None = None) -> dict[int, list]:
    """Run the files of `folder` through the window's query (`start_window`,
    a window per trace) to the end (`availableNow`, one file per
    micro-batch), its state and checkpoint under `checkpoint`: the rows each
    micro-batch posted, by batch id (a sink that keeps rows by batch id: a
    batch run again replaces its rows). `fail_after`: the sink fails from that
    batch id on (a crash, for restart tests; the micro-batch's state is
    written by then); the batches before it are returned."""
    from spark_impl.streaming.micro_batch import run_to_end, start_window

    stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_TRIGGER)
              .parquet(str(folder)))
    return run_to_end(lambda sink: start_window(stream, dict(specs), location=str(checkpoint), sink=sink,
                                                trigger={"availableNow": True}), fail_after)


def run_cases(pairs, spark=None, *, batches: int = 3, seed: int = 0, early: float = 0.1, folder=None,
              progress: Callable[[int, int], None] | None = None) -> list:
    """The updates of each (spec, trace) pair, as `spark_impl.run_cases` gives
    them, computed on a stream: each trace's rows cut at random points
    (`seed`) into `batches` micro-batches, some items moved ahead of a gap
    (`early`), written as one file per micro-batch and read by a streaming
    query per group of traces whose property types agree and whose windows'
    outputs can share one schema (`apply_windows`, `Queries`). The typed rows
    are read back as the batch's are (`output.harness_rows`,
    `frames.RowFields`). A pair that cannot run gets its exception
    (`InvalidTrace` as the batch names it; a window whose output schema
    cannot be built, what `output_schema` raises); a query that fails gives
    each of its pairs a `JobFailed`."""
    import random
    import shutil
    import tempfile
    from pathlib import Path

    from spark_impl import check_pairs
    from spark_impl.errors import JobFailed, cause
    from spark_impl.frames import PropertyTypes, check_pair, spec_properties, trace_rows, updates_from_rows
    from spark_impl.session import get_spark
    from spark_impl.streaming.output import harness_rows

    check_pairs(pairs, "streaming.run_cases")
    results: list = [None] * len(pairs)
    members: dict[bool, Queries] = {}
    for index, (spec, trace) in enumerate(pairs):
        trace_id = str(index)
        try:
            check_pair(spec, trace)
            types = PropertyTypes(spec_properties(spec), mixed=spec.MIXED_KINDS)
            types.merge(PropertyTypes.of_trace(trace_id, trace, mixed=spec.MIXED_KINDS))
            members.setdefault(spec.MIXED_KINDS, Queries()).add(trace_id, trace, spec, types)
        except InvalidTrace as exc:
            results[index] = InvalidTrace(exc.reason.removeprefix(f"trace {trace_id!r}: "), exc.index)
        except WindowOracleError as exc:
            results[index] = exc
    groups = [query for queries in members.values() for query in queries.queries]
    if not groups:
        return results
    spark = spark or get_spark()
    rng = random.Random(seed)
    root = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="window-oracle-stream-"))
    try:
        for done, query in enumerate(groups, 1):
            schema_map, schema = query.types.schema(), query.input_schema()
            files: list[list[tuple]] = [[] for _ in range(batches)]
            for trace_id, trace, _ in query.members:
                for n, rows in enumerate(micro_batches(trace_rows(trace_id, trace, schema_map), batches, rng, early)):
                    files[n] += rows
            for rows in files:
                rng.shuffle(rows)  # a micro-batch's rows come in no order
            here = root / f"group-{done}"
            write_files(here / "in", files, schema)
            traces = {trace_id: trace for trace_id, trace, _ in query.members}
            specs = {trace_id: spec for trace_id, _, spec in query.members}
            try:
                posted = run_files(spark, here / "in", schema, specs, here / "checkpoint")
            except Exception as exc:  # noqa: BLE001 - a failed query fails its own cases, not the others
                failure = JobFailed(f"the streaming query failed: {cause(exc)}")
                for trace_id in traces:
                    results[int(trace_id)] = failure
            else:
                rows = [row for batch_id in sorted(posted) for row in posted[batch_id]]
                readers = query.readers()
                for trace_id, found in updates_from_rows(harness_rows(rows, readers), traces, readers).items():
                    results[int(trace_id)] = found
            if progress:
                progress(done, len(groups))
    finally:
        if folder is None:
            shutil.rmtree(root, ignore_errors=True)
    return results


class Query:
    """Traces that run in one streaming query (`run_cases`): their merged
    property types (`types`), each member (trace id, trace, spec), and each
    window's output schema over the query's columns (`schemas`), which agree
    column by column (`output.agree`)."""

    def __init__(self, types, members: list, schemas: dict, key: tuple, columns: dict):
        self.types, self.members, self.schemas, self.key, self.columns = types, members, schemas, key, columns

    def input_schema(self):
        """The input's schema: the property columns, the always-null ones marked `NO_VALUES` (as the batch's)."""
        from spark_impl.frames import input_schema

        return input_schema(self.types.schema(), self.types.valueless())

    def readers(self) -> dict:
        """Each row-posting trace's `RowFields`, over its own window's schema (`output.reader`)."""
        from spark_impl.streaming.output import reader

        found = {}
        for trace_id, _, spec in self.members:
            fields = reader(spec, self.schemas[spec])
            if fields is not None:
                found[trace_id] = fields
        return found


class Queries:
    """`run_cases`' greedy split of traces into `Query`s: a trace joins the
    first query whose property types take its own and where every window's
    output schema can still be built and shares the query's columns (a
    field `total` a long in one window and a double in another cannot);
    else it starts a query. A window whose schema cannot be built even over
    its own trace's columns raises that error (`UnsupportedWindow`,
    `InvalidFrame`): its pair's result."""

    def __init__(self):
        self.queries: list[Query] = []
        self._schemas: dict[tuple, Any] = {}

    def add(self, trace_id: str, trace, spec: WindowSpec, types) -> None:
        for n, query in enumerate(self.queries):
            trial = query.types.copy()
            try:
                trial.merge(types)
            except InvalidTrace:
                continue
            joined = self._joined(query, spec, trial)
            if joined is not None:
                joined.types = trial
                joined.members.append((trace_id, trace, spec))
                self.queries[n] = joined
                return
        key = self._key(types)
        schema = self._schema(spec, types, key)
        self.queries.append(Query(types, [(trace_id, trace, spec)], {spec: schema}, key,
                                  {f.name.lower(): f for f in schema.fields}))

    def _joined(self, query: Query, spec: WindowSpec, types) -> Query | None:
        """`query` with `spec` and `types` merged in, or None where they cannot share it."""
        from spark_impl.streaming.output import agree

        key = self._key(types)
        if key == query.key and spec in query.schemas:
            return query
        try:
            if key == query.key:  # the same columns: only the new window's schema to check
                schemas = {**query.schemas, spec: self._schema(spec, types, key)}
                checked, columns = [schemas[spec]], dict(query.columns)
            else:
                schemas = {other: self._schema(other, types, key) for other in (*query.schemas, spec)}
                checked, columns = list(schemas.values()), {}
        except WindowOracleError:
            return None
        for schema in checked:
            for field in schema.fields:
                twin = columns.setdefault(field.name.lower(), field)
                if not agree(twin, field):
                    return None
        return Query(types, query.members, schemas, key, columns)

    @staticmethod
    def _key(types) -> tuple:
        return tuple(types.schema().items()), types.valueless()

    def _schema(self, spec: WindowSpec, types, key: tuple):
        """`spec`'s output schema over the columns of `types` (cached by spec and columns)."""
        from spark_impl.frames import input_schema
        from spark_impl.streaming.output import window_schema

        found = self._schemas.get((spec, key))
        if found is None:
            found = self._schemas[(spec, key)] = window_schema(spec, input_schema(types.schema(), types.valueless()))
        return found


def apply_window_as_stream(trace_df, window: str | WindowSpec, dialect: str = "esper", *, batches: int = 3,
                           seed: int = 0, early: float = 0.1):
    """`spark_impl.apply_window`'s shape, computed on a stream (the harness's
    `--impl spark_impl.streaming:apply_window_as_stream`, `difftest run
    --engine streaming`): the recorded frame's rows are collected, each
    trace's cut at random points (`seed`) into `batches` micro-batches (some
    items moved ahead of a gap, `early`), written as one Parquet file per
    micro-batch, read by a streaming query of `apply_window` to the end, and
    the rows it posted returned as a recorded frame."""
    import random
    import shutil
    import tempfile
    from pathlib import Path

    check_frame(trace_df, "streaming.apply_window_as_stream", "trace_df", TRACE_FRAME)
    spark = trace_df.sparkSession
    spec = parse(window, dialect) if isinstance(window, str) else window
    schema = trace_df.schema
    rng = random.Random(seed)
    by_trace: dict[str, list[tuple]] = {}
    for row in trace_df.collect():
        by_trace.setdefault(row["trace_id"], []).append(tuple(row))
    files: list[list[tuple]] = [[] for _ in range(batches)]
    seq_at = schema.fieldNames().index("seq")
    for rows in by_trace.values():
        rows.sort(key=lambda r: r[seq_at])
        for n, part in enumerate(micro_batches(rows, batches, rng, early, seq_at=seq_at)):
            files[n] += part
    for rows in files:
        rng.shuffle(rows)
    root = Path(tempfile.mkdtemp(prefix="window-oracle-stream-"))
    try:
        write_files(root / "in", files, schema)
        stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_TRIGGER).parquet(str(root / "in"))
        out = apply_window(stream, spec, location=str(root / "window"), trigger={"availableNow": True})
        posted = _drain(out, root / "checkpoint")
        rows = [row for batch_id in sorted(posted) for row in posted[batch_id]]
        return spark.createDataFrame(rows, out.schema)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _drain(out, checkpoint, fail_after: int | None = None) -> dict[int, list]:
    """Run the streaming frame `out` over what its source has now
    (`availableNow`), from `checkpoint`, to its end (`micro_batch.run_to_end`):
    each micro-batch's rows by batch id, the batches before `fail_after`."""
    from spark_impl.streaming.micro_batch import run_to_end

    window_query = getattr(out, "window_query", None)
    if window_query is not None:  # the updates the frame reads are written by the window's own query first
        window_query.awaitTermination()
    return run_to_end(lambda sink: out.writeStream.outputMode("append").option("checkpointLocation", str(checkpoint))
                      .foreachBatch(sink).trigger(availableNow=True).start(), fail_after)


__all__ = ["apply_window", "apply_window_as_stream", "apply_windows", "micro_batches", "run_cases", "run_files", "write_files", "has_panes"]

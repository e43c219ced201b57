"""The windows on a live stream: Spark Structured Streaming, exact and restartable.

    from spark_impl import streaming
    stream = spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet("in/")
    out = streaming.apply_window(stream, "#groupwin(symbol)#time(10 sec)")
    out.writeStream.outputMode("append").option("checkpointLocation", "ckpt/").foreachBatch(sink).start()

`apply_window(stream_df, window, dialect)` takes a streaming DataFrame of trace
items (the input schema of `spark_impl.frames`: `trace_id`, `seq`, `kind`,
`time`, `id`, `op`, `vars`, properties) and returns a streaming DataFrame with
the batch `spark_impl.apply_window`'s output schema, the one
`spark_impl.output_schema(window, columns, dialect)` gives (a window posting
events: the update key `(trace_id, after, phase, time, ordinal)`, `side`,
`pos`, `id`, `error`, the properties, and `window` for eKuiper pane windows;
a statement or a derived-value window: the key, `side`, `pos`, `error`, an
eKuiper query's `window` and `pane_event`, then one typed column per field:
the same columns of the same types and metadata; whether a struct's field may
be null can differ, as it does between the batch's own families), in append
mode, for every window kind and statement of every dialect. The rows are the
oracle's, written as `spark_impl.streaming.output` states (a row's fields
typed as declared; a value its column cannot hold fails the query).

**What runs per key: the oracle.** The operator is `transformWithStateInPandas`
keyed by `trace_id`, and its processor runs the oracle's own window state
machine (`oracle.driver.Driver.step_keyed`, one item at a time): the
specification itself, run per trace, so this module adds only the plumbing
(order, state, rows). It is the one module of `spark_impl` allowed to use the
oracle's runtime (tests/spark/test_spark_imports.py), and it imports it only in
the processor; the batch plans (`spark_impl.pipeline`, `spark_impl.windows`) stay
a formulation of their own and never import this module. A differential run
(`difftest replay --engine streaming`) so checks the plumbing against the oracle
and, through the same cases, against the batch plans.

**Rules.**

* A trace's items may arrive over any number of micro-batches, in any order
  within and across them. Items run in `seq` order: an item whose `seq` is
  ahead of a gap is held in state until the gap fills (an item that never
  comes holds back everything after it: its updates are not posted, never
  guessed).
* The optional `start` row (seq -1: the creation clock and the declared
  variables) must arrive no later than seq 0's micro-batch: the window is
  created when seq 0 runs, at clock 0 without variables if no start row has
  come. A start row after that fails the query, naming the trace.
* An item whose `seq` has run already, or arrives twice, fails the query
  naming the trace and seq: it is a replayed input (files read twice), never
  silently dropped or run twice. So does an item the oracle refuses (time going
  back, a repeated event id, a property of two kinds: `oracle.model.TraceCheck`;
  what a window refuses, as `oracle.driver` names it) and a bad `kind` or
  operation code (`pipeline.check_input`, the batch's own check).
  A window whose spec rejects bad items (a CCL keyed window) posts an `error`
  row instead, as in batch.
* Time is the trace's logical clock (advances, jumps, event arrival clocks),
  as in batch: no Spark timer and no watermark; the end of a trace (no more
  items) flushes nothing.
* Updates are posted in the micro-batch their causing item runs in; every
  row carries its update key, so a consumer orders them exactly as the batch
  output (`orderBy(trace_id, after, phase, time, ordinal, side, pos)`). `pos`
  is `(due, slot, n)` = (the update's time, 0, the row's place within its
  side): it orders a side's rows as the batch's `pos` does, but its values are
  not the batch's (which name the timer and sub-window that posted a row).
* Property values leave as they came, re-encoded from the event: a JSON text
  column's values (lists, objects; eKuiper's mixed kinds) in canonical form
  (keys sorted, no spaces), as `spark_impl.frames` writes them.

**State per key** (one `ValueState` of one binary column, `trace`): a pickle
(protocol 5) of the trace's driver (the window with its held events, pending
timers and variables, the clock), the item check (`TraceCheck`: the clock,
each property's kind and, with `validate`, every event id seen: one entry per
event, the only part that grows with the trace rather than the window), the
next `seq` to run, and the items held ahead of a gap (as the oracle's trace
items; a set item as the dict of its values, since the oracle's
`SetVariables` holds a read-only mapping that does not pickle). Its size is the window's contents plus the held items (plus the
ids); it is read and written once per key per micro-batch that has rows of
the key. The pickle holds the spec it runs; a restart from a checkpoint with
a different window fails naming both. The oracle's classes are in the
pickle, so a checkpoint is read back by the same version of this package
(`STATE_VERSION`: a checkpoint of another format is refused naming both).

**Output rows.** Built as tuples while the items run (by the window's
`output.Writer`: the fixed columns, then every other column as text, cast
back after the operator), then one pandas frame
column by column: the integer columns are nullable integer arrays made from
the Python ints themselves (a frame made from the rows would make an integer
column holding a null a float column, and a clock past 2**53 inexact).

**Throughput, and why sub-windows are not keyed apart.** A trace is one key:
its items run one after another in one Python worker, so one trace goes at
the speed of one core running the oracle plus this module's plumbing,
whatever the cluster; many traces spread over the cluster by trace. The
bench (`difftest bench --engine streaming`, spark_impl/streaming/bench.py;
its figures in its docstring) measures each window beside a bare
stream: the same operator, key and output schema with a processor that
posts each event as one row and keeps a counter. On `local[2]`, one trace of
1 M events over 10,000 keys in 100,000-row micro-batches: the bare stream
does 67,000 events/s keyed by trace and 5,100 keyed by the events' key
(10,000 keys: a call and a state read and write per key per micro-batch);
the windows 18,000 to 27,000 events/s, the oracle alone 62,000 to 161,000.

Keying the sub-windows apart (one key per trace and group, issue 28) would
so cost more than it spreads, and is not exact with the input this module
takes:

* A group's items are numbered by the trace's `seq`, not the group's: a
  processor holding group g's rows cannot tell whether g's next item is still
  to come (held ahead of a gap) or belongs to another group. Only a stage
  that sees the whole trace can order it, and that stage is a key per trace
  again (a chained second stateful operator, fed items numbered per group).
* A time-based sub-window fires on the trace's clock: its removal is posted
  by the first item of any group whose time passes the due time (`after` is
  that item's seq), and two groups due at one time post one update. Each
  group would need every clock-moving item of its trace (every event, in a
  stream of events: the whole trace copied to every group), or a third stage
  joining each due time to the clock.

So the sub-windows run in their trace's key, exactly as in the oracle.

**Restart.** State is versioned by Spark per micro-batch; a query stopped (or
failed) after any micro-batch and started again from its checkpoint re-runs
the micro-batch that did not commit from the state before it, so the stream's
output is exactly a run without a stop, to a sink that is idempotent per batch
id (`foreachBatch` writing by batch id, a file sink).

**Settings.** The operator needs the RocksDB state store provider
(`spark.sql.streaming.stateStore.providerClass =
org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider`);
`apply_window` sets it on the session (`set_provider=False`: it raises
`InvalidFrame` naming the setting where it is not set). The state clients need
`protobuf`.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from oracle.dialects import parse, spec_text
from oracle.errors import InvalidTrace, WindowOracleError
from oracle.model import PANE_WINDOWS, Spec, Statement, WindowSpec
from spark_impl import pipeline
from spark_impl.errors import TRACE_FRAME, InvalidFrame, WrongArgument, check_frame
from spark_impl.frames import BASE_COLUMNS, JSON_TEXT, START_SEQ
from spark_impl.streaming.output import CANONICAL_JSON, FIXED, Output, double_text
from spark_impl.windows.base import quoted

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
#: the state's format: a checkpoint written by another format is refused by name
STATE_VERSION = 2
_INTEGRAL = ("bigint", "int", "smallint", "tinyint")
_TIMESTAMPS = ("timestamp", "timestamp_ntz")


def has_panes(spec: WindowSpec) -> bool:
    """Whether the batch output of `spec` has the `window` column (an eKuiper
    pane window, or a query over one)."""
    return isinstance(spec, PANE_WINDOWS) or (isinstance(spec, Statement) and spec.rules.posted == "pane")


def ensure_provider(spark, set_provider: bool = True) -> None:
    """The RocksDB state store the operator needs: set on the session, or
    (`set_provider=False`) `InvalidFrame` naming the setting if it is not."""
    if spark.conf.get(PROVIDER, None) == ROCKSDB:
        return
    if not set_provider:
        raise InvalidFrame(f"streaming windows keep their state with transformWithStateInPandas, which needs "
                           f"the RocksDB state store: set {PROVIDER}={ROCKSDB} on the session")
    spark.conf.set(PROVIDER, ROCKSDB)


def apply_window(stream_df, window: str | WindowSpec, dialect: str = "esper", *, validate: bool = True,
                 set_provider: bool = True):
    """The updates `window` (a clause in `dialect`'s syntax, or a spec) posts
    over every trace of the streaming frame `stream_df`, as a streaming frame
    with the batch `apply_window`'s output schema (module docstring), to write
    in append mode. `validate=False` keeps no event ids in state (a repeated id
    is then not caught). Raises `InvalidFrame` naming a missing or mistyped
    column (the batch's check), the parser's errors for a bad clause."""
    check_frame(stream_df, "streaming.apply_window", "stream_df", STREAM_OF_TRACES)
    spec = parse(window, dialect) if isinstance(window, str) else window
    _check_streaming(stream_df)
    validated = pipeline.check_input(stream_df, spec)  # the batch's columns, kinds and operation codes
    return _apply(validated, lambda _trace_id: spec, [spec], window=False, validate=validate,
                  set_provider=set_provider)


def apply_windows(stream_df, specs: Mapping[str, WindowSpec], *, validate: bool = True, set_provider: bool = True):
    """Each trace under its own window (`specs`: trace id -> spec; a trace
    not named fails the query naming it): many windows in one query, as the
    differential harness runs them. The frame must have the columns of every
    window (checked as the batch checks them); an operation code a window
    does not take fails the query naming the item (the oracle's refusal). The
    output is the union of the windows' output schemas (`output.merged`: a
    column two windows give differently is `InvalidFrame`), always with the
    `window` column (null but for pane windows); a trace's rows leave the
    other windows' columns null."""
    check_frame(stream_df, "streaming.apply_windows", "stream_df", STREAM_OF_TRACES)
    table = check_specs(specs, "streaming.apply_windows")
    _check_streaming(stream_df)
    for spec in dict.fromkeys(table.values()):
        pipeline.check_input(stream_df, spec)
    props = [c for c in stream_df.columns if c not in BASE_COLUMNS]
    validated = stream_df.selectExpr("trace_id", "CAST(seq AS BIGINT) AS seq", "kind", "CAST(time AS BIGINT) AS time",
                                     "id", "op" if "op" in stream_df.columns else "CAST(NULL AS STRING) AS op",
                                     "vars" if "vars" in stream_df.columns else "CAST(NULL AS STRING) AS vars",
                                     *(quoted(c) for c in props))

    def spec_of(trace_id: str) -> WindowSpec:
        try:
            return table[trace_id]
        except KeyError:
            raise InvalidTrace(f"trace {trace_id!r} has no window (apply_windows names a spec per trace)") from None

    return _apply(validated, spec_of, list(dict.fromkeys(table.values())), window=True, validate=validate,
                  set_provider=set_provider)


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


def _apply(validated, spec_of: Callable[[str], WindowSpec], specs: list[WindowSpec], *, window: bool,
           validate: bool, set_provider: bool):
    output = Output.of(specs, validated.schema, window=window)  # the batch's schema: refused before any state
    ensure_provider(validated.sparkSession, set_provider)
    items, _, codec = operator_input(validated)
    processor = TraceProcessor(spec_of, codec, validate, output)
    posted = items.groupBy("trace_id").transformWithStateInPandas(
        statefulProcessor=processor, outputStructType=output.operator_schema(), outputMode="Append", timeMode="None")
    return output.select(posted)


def operator_input(validated):
    """What crosses into the operator, from a frame of the batch's input
    columns (`pipeline.check_input`'s): (the frame of `BASE_COLUMNS` and every
    property as text, the properties as (name, Spark type, is JSON text), the
    codec: (name, codec) per property). Every property crosses as text: a long
    stays exact and a NaN stays apart from a null; a timestamp crosses as
    epoch ms (what the window reads; sub-millisecond digits are dropped).
    Other columns are left out. Raises `InvalidFrame` naming a property of a
    type a stream cannot take."""
    props = [(f.name, f.dataType.simpleString(), bool(f.metadata.get(JSON_TEXT)))
             for f in validated.schema.fields if f.name not in BASE_COLUMNS]
    for name, kind, _ in props:
        if kind not in _INTEGRAL + _TIMESTAMPS + ("double", "float", "boolean", "string"):
            raise InvalidFrame(f"property column {name!r} is {kind}; a streaming window takes integer, double, "
                               "boolean, string and timestamp properties (lists and objects as JSON text)")
    codec = tuple((name, _codec(kind, is_json)) for name, kind, is_json in props)
    items = validated.selectExpr(*(quoted(c) for c in BASE_COLUMNS), *(
        f"CAST(unix_millis(CAST({quoted(n)} AS TIMESTAMP)) AS STRING) AS {quoted(n)}" if kind in _TIMESTAMPS
        else f"CAST({quoted(n)} AS STRING) AS {quoted(n)}" for n, kind, _ in props))
    return items, props, codec


# --------------------------------------------------------------------------- values across the operator


def _codec(kind: str, is_json: bool) -> str:
    if is_json:
        return "json"
    if kind in _INTEGRAL + _TIMESTAMPS:
        return "long"
    return {"double": "double", "float": "double", "boolean": "boolean"}.get(kind, "string")


def _decode(text: str, codec: str) -> Any:
    if codec == "string":
        return text
    if codec == "long":
        return int(text)
    if codec == "double":
        return float(text)  # Spark writes NaN, Infinity, -Infinity, 1.0E-5: float() reads them all
    if codec == "boolean":
        return text == "true"
    return json.loads(text)


def _encode(value: Any, codec: str) -> str | None:
    if value is None:
        return None
    if codec == "json":
        return CANONICAL_JSON(value)
    if codec == "boolean":
        return "true" if value else "false"
    if codec == "double":
        return double_text(float(value))
    if codec == "long":
        return str(int(value))
    return str(value)


#: per codec, `_decode` of a non-null text, as one function each
_DECODERS = {"string": str, "long": int, "double": float, "boolean": lambda text: text == "true",
             "json": json.loads}
#: the operator's integer columns, as the nullable pandas types its output frame gives them
_INT_COLUMNS = {name: "Int64" if kind == "bigint" else "Int32" for name, kind in FIXED if kind in ("bigint", "int")}


# --------------------------------------------------------------------------- the processor


def _stateful_processor_base():
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    return StatefulProcessor


class KeyedProcessor(_stateful_processor_base()):
    """What the stream processors share: one `ValueState` (`trace`) per key
    holding a pickle of the key's state, read and written once per call;
    the update rows an oracle update becomes (the `output.Writer` of the
    key's window, set by `load`); the output frame."""

    def __init__(self, codec: tuple[tuple[str, str], ...], output: Output):
        self.codec = codec
        self.writers = output.writers  # not the schemas: the processor crosses to the workers pickled
        self.columns = output.operator_columns()
        self.writer = None

    def init(self, handle) -> None:
        self.handle = handle
        self.state = handle.getValueState("trace", "blob binary")

    def close(self) -> None:
        pass

    def load(self, trace_id: str, spec: WindowSpec, fresh: Callable[[], dict]) -> dict:
        """The key's state, or `fresh()` (with the format and the spec) when it
        has none; `InvalidTrace` naming the trace for a state of another
        format or window (a checkpoint of another query)."""
        if not self.state.exists():
            self.writer = self.writers[spec]
            return {"version": STATE_VERSION, "spec": spec, **fresh()}
        state = pickle.loads(self.state.get()[0])
        if state.get("version") != STATE_VERSION:
            raise InvalidTrace(f"trace {trace_id!r}: the checkpoint's state has format {state.get('version')!r}, "
                               f"this version reads format {STATE_VERSION}")
        if state["spec"] != spec:
            raise InvalidTrace(f"trace {trace_id!r}: the checkpoint's state was made by the window "
                               f"{spec_text(state['spec'])}, not {spec_text(spec)}: restart a changed window from a "
                               "new checkpoint")
        self.writer = self.writers[spec]
        return state

    def save(self, state: dict) -> None:
        self.state.update((pickle.dumps(state, protocol=5),))

    def frame(self, out: list[tuple]):
        """The output rows as the operator's pandas frame (`_frame`: integer columns nullable and exact)."""
        return _frame(out, self.columns)

    def _rows(self, trace_id: str, phase: int, ordinal: int, update, out: list) -> None:
        self.writer.rows(trace_id, phase, ordinal, update, out)


class TraceProcessor(KeyedProcessor):
    """One trace per key: its rows of a micro-batch (unordered) are held by
    `seq`, then every item whose turn has come runs through the trace's oracle
    driver, and each update it posts becomes its output rows (module
    docstring)."""

    def __init__(self, spec_of: Callable[[str], WindowSpec], codec: tuple[tuple[str, str], ...], validate: bool,
                 output: Output):
        super().__init__(codec, output)
        self.spec_of, self.validate = spec_of, validate

    def handleInputRows(self, key, rows, timerValues) -> Iterator:
        trace_id = key[0]
        state = self._load(trace_id)
        out: list[tuple] = []
        for frame in rows:
            self._hold(trace_id, state, frame)
        self._run(trace_id, state, out)
        self.save(state)
        if out:
            yield self.frame(out)

    # ----------------------------------------------------------- state

    def _load(self, trace_id: str) -> dict:
        return self.load(trace_id, self.spec_of(trace_id),
                         lambda: {"driver": None, "check": None, "next": None, "held": {}, "start": None})

    def _hold(self, trace_id: str, state: dict, frame) -> None:
        """Every row of `frame` checked and held by `seq` as the trace item it
        is (all of a micro-batch's rows before any runs, so a bad row fails
        the batch whatever its place). Column by column, then one pass over
        the rows: an event's properties decoded by their codec."""
        Arrive, Event = _model().Arrive, _model().Event
        seqs, kinds, times = frame["seq"].tolist(), frame["kind"].tolist(), frame["time"].tolist()
        ids, ops = frame["id"].tolist(), frame["op"].tolist()
        props = [(name, _DECODERS[codec], frame[name].tolist()) for name, codec in self.codec]
        held, after = state["held"], state["next"]
        for i, seq in enumerate(seqs):
            if kinds[i] == "event" and seq >= 0 and (after is None or seq >= after) and seq not in held \
                    and ids[i] is not None:  # the common row, checked as the general path below checks it
                held[seq] = Arrive(Event(ids[i], {name: decode(column[i]) for name, decode, column in props
                                                  if column[i] is not None}), time=times[i], op=ops[i])
            else:
                self._hold_other(trace_id, state, frame, i, props)

    def _hold_other(self, trace_id: str, state: dict, frame, i: int, props) -> None:
        """Row `i` of `frame` that is not a plainly new event: a start row, an
        advance, jump or set, or a row that fails the query."""
        seq, kind, time = int(frame["seq"].iat[i]), frame["kind"].iat[i], int(frame["time"].iat[i])
        vars_ = frame["vars"].iat[i]
        where = f"trace {trace_id!r} seq {seq}"
        if kind == "start":
            if seq != START_SEQ:
                raise InvalidTrace(f"{where}: a start row has seq {START_SEQ}")
            if state["start"] is not None or state["next"] is not None:
                raise InvalidTrace(f"{where}: a start row after the trace began (it must come no later "
                                   "than seq 0's micro-batch) or a second one")
            state["start"] = (time, json.loads(vars_) if vars_ else {})
            return
        if seq < 0:
            raise InvalidTrace(f"{where}: a {kind} item with a negative seq")
        if (state["next"] is not None and seq < state["next"]) or seq in state["held"]:
            raise InvalidTrace(f"{where}: the item arrived twice (a replayed input?)")
        state["held"][seq] = _item(where, kind, time, frame["id"].iat[i], frame["op"].iat[i], vars_,
                                   [(name, decode, column[i]) for name, decode, column in props])

    def _run(self, trace_id: str, state: dict, out: list) -> None:
        held = state["held"]
        if state["driver"] is None:
            if 0 not in held:
                return
            self._start(trace_id, state)
            state["next"] = 0
        driver, check, seq = state["driver"], state["check"], state["next"]
        rows = self._rows
        try:
            while seq in held:
                item = held.pop(seq)
                if type(item) is dict:  # a set item, held as its plain values (module docstring)
                    item = _model().SetVariables(item)
                check.item(seq, item)
                for phase, ordinal, update in driver.step_keyed(seq, item):
                    rows(trace_id, phase, ordinal, update, out)
                seq += 1
        except WindowOracleError as exc:
            reason = exc.reason if isinstance(exc, InvalidTrace) else str(exc)
            raise InvalidTrace(f"trace {trace_id!r} seq {seq}: {reason}") from None
        state["next"] = seq

    def _start(self, trace_id: str, state: dict) -> None:
        from oracle.driver import start  # the oracle's runtime: this module only, in the processor only
        from oracle.model import Trace, TraceCheck

        spec = state["spec"]
        start_time, variables = state["start"] or (0, {})
        try:
            trace = Trace((), start_time, variables)
            state["driver"] = start(spec, trace)
            state["check"] = TraceCheck(start_time, trace.variables, spec.MIXED_KINDS, ids=self.validate)
        except WindowOracleError as exc:
            raise InvalidTrace(f"trace {trace_id!r} start: {exc}") from None


def _model():
    """`oracle.model`, imported once the processor first runs (on the worker)."""
    import oracle.model

    return oracle.model


def _frame(out: list[tuple], columns: list[str]):
    """The operator's output rows as a pandas frame, column by column: an
    integer column is a nullable integer array built from the Python ints
    themselves (a frame built from the rows would make a column holding a
    null a float column, and a clock past 2**53 inexact)."""
    import numpy as np
    import pandas as pd

    data = {}
    for name, values in zip(columns, zip(*out)):
        kind = _INT_COLUMNS.get(name)
        if kind is None:
            data[name] = pd.array(values, dtype=object)
            continue
        try:  # no null: one numpy array of the ints (a long past 64 bits raises too, and is refused below)
            data[name] = pd.array(np.array(values, dtype=np.int64), dtype=kind)
        except (TypeError, OverflowError):
            data[name] = pd.array(values, dtype=kind)
    return pd.DataFrame(data, copy=False)


def _item(where: str, kind: str, time: int, id_, op, vars_, props):
    """A row as it is held: the trace item it is (an event's properties
    decoded), but a set item as the dict of its values (made a `SetVariables`
    when it runs)."""
    model = _model()
    if kind == "event":
        if id_ is None:
            raise InvalidTrace(f"{where}: an event without an id")
        return model.Arrive(model.Event(id_, {name: decode(text) for name, decode, text in props if text is not None}),
                            time=time, op=op)
    if kind == "advance":
        return model.Advance(time)
    if kind == "jump":
        return model.Jump(time)
    if kind == "set":  # its values as a plain dict: `SetVariables` holds a read-only mapping, which does not pickle
        return json.loads(vars_) if vars_ else {}
    raise InvalidTrace(f"{where}: kind must be one of event, advance, jump, set, not {kind!r}")


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
    """Run the files of `folder` through `apply_windows` to the end
    (`availableNow`, one file per micro-batch), from `checkpoint`: the rows
    each micro-batch posted, by batch id (a sink that writes by batch id).
    `fail_after`: the sink fails on the batch after that many (a crash, for
    restart tests); the batches before it are returned with the exception."""
    stream = (spark.readStream.schema(schema).option("maxFilesPerTrigger", FILES_PER_TRIGGER)
              .parquet(str(folder)))
    return _drain(apply_windows(stream, specs), checkpoint, fail_after)


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
        out = apply_window(stream, spec)
        posted = _drain(out, root / "checkpoint")
        rows = [row for batch_id in sorted(posted) for row in posted[batch_id]]
        return spark.createDataFrame(rows, out.schema)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _drain(out, checkpoint, fail_after: int | None = None) -> dict[int, list]:
    """Run the streaming frame `out` over what its source has now
    (`availableNow`), from `checkpoint`, into a sink that keeps each
    micro-batch's rows by batch id (a batch run again replaces its rows).
    `fail_after`: the sink fails from that batch id on (a crash, for restart
    tests), and the batches before it are returned."""
    posted: dict[int, list] = {}

    def sink(frame, batch_id):
        if fail_after is not None and batch_id >= fail_after:
            raise RuntimeError(f"the sink stops at batch {batch_id} (a crash, on purpose)")
        posted[batch_id] = frame.collect()

    query = (out.writeStream.outputMode("append").option("checkpointLocation", str(checkpoint))
             .foreachBatch(sink).trigger(availableNow=True).start())
    try:
        query.awaitTermination()
    except Exception:  # noqa: BLE001 - a crash the caller asked for; any other error is raised
        if fail_after is None:
            raise
    finally:
        query.stop()
    return posted


__all__ = ["apply_window", "apply_window_as_stream", "apply_windows", "micro_batches", "run_cases", "run_files", "write_files", "ensure_provider", "has_panes", "ROCKSDB", "PROVIDER"]

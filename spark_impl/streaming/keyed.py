"""The plumbing of a stream whose keys run the oracle's window state machine
inside `transformWithStateInPandas` (`spark_impl.streaming.events`): the
processor's state (a pickle per key), the values across the operator (every
property as text, decoded by its codec), the output frame. The only module
of `spark_impl`, with `events`, that runs the oracle's runtime
(tests/spark/test_spark_imports.py)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from typing import Any

from oracle.dialects import spec_text
from oracle.errors import InvalidTrace
from oracle.model import WindowSpec
from spark_impl.errors import InvalidFrame
from spark_impl.frames import BASE_COLUMNS, JSON_TEXT
from spark_impl.streaming.output import CANONICAL_JSON, FIXED, Output, double_text
from spark_impl.windows.base import quoted

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
#: the state's format: a checkpoint written by another format is refused by name
STATE_VERSION = 2
_INTEGRAL = ("bigint", "int", "smallint", "tinyint")
_TIMESTAMPS = ("timestamp", "timestamp_ntz")



def ensure_provider(spark, set_provider: bool = True) -> None:
    """The RocksDB state store the operator needs: set on the session, or
    (`set_provider=False`) `InvalidFrame` naming the setting if it is not."""
    if spark.conf.get(PROVIDER, None) == ROCKSDB:
        return
    if not set_provider:
        raise InvalidFrame(f"streaming windows keep their state with transformWithStateInPandas, which needs "
                           f"the RocksDB state store: set {PROVIDER}={ROCKSDB} on the session")
    spark.conf.set(PROVIDER, ROCKSDB)



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

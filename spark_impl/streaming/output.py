"""The streaming functions' output: the batch's schema, filled from the oracle's updates.

    output = Output.of(specs, validated.schema)      # the schema, the operator's columns, a writer per spec
    posted = items.groupBy("trace_id").transformWithStateInPandas(..., outputStructType=output.operator_schema())
    return output.select(posted)                     # the public columns, typed, with their metadata

**The schema.** One window's output schema is the batch's:
`spark_impl.output_schema(spec, columns)` over the input's property columns
(`pipeline.output_schema`): a window posting events, OUTPUT_COLUMNS and the
properties; a window posting rows (`frames.posts_rows`), ROW_OUTPUT_COLUMNS,
an eKuiper pane's `window` and a query's `pane_event`, then one typed column
per field. A query running several windows (`apply_windows`: a window per
trace) has the union of theirs: each window's columns in order, the first
window's first, a column named by several windows once. A column two windows
give must agree in name (case too: Spark resolves names ignoring case), type
and `JSON_TEXT`; else `InvalidFrame` naming both windows (`merged`: run them
in separate queries). A trace's rows leave null the columns its window lacks.

**Across the operator.** `transformWithStateInPandas` posts the fixed
columns (`FIXED`: the update key, `side`, `pos` as three longs, `error`, a
pane's bounds) and every other output column as text (`#c<i>`: `id`,
`pane_event`, a property, a field); `select` casts each
back to its type (a timestamp from epoch ms; a list, map or struct type by
`from_json`), builds `pos` and `window`, and names each column with its
metadata (`JSON_TEXT` survives).

**What a trace's rows hold** (`Writer`, one per window):

* a window posting events: `id` and the event's properties;
* a window posting rows: each oracle row (a `DerivedValues` dict) as its
  fields: a field the row lacks is null (a property `*` copied that the
  event has not); a `JSON_TEXT` field holds the value's JSON (keys sorted,
  no spaces, as the input's JSON text); an integer in a double column is a
  float. A value its column's type does not hold (a float in a long column,
  a long past an int column, a string in a boolean one), or a row key no
  field is named by, fails the query naming the trace, the field, the value
  and the type (`FieldTypeError`: the declared schema and the oracle
  disagree), never a silent null. The events of an eKuiper query's pane
  rows fill `pane_event`, the fields null;
* an update of no row: one row of side null (for a window posting rows, a
  pane of no output row).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from typing import Any

from oracle.dialects import spec_text
from oracle.model import WindowSpec
from spark_impl.errors import InvalidFrame
from spark_impl.frames import JSON_TEXT, LONG_MAX, LONG_MIN, posts_rows

#: the operator's own columns before the text columns (structs built after it)
FIXED = (("trace_id", "string"), ("after", "bigint"), ("phase", "int"), ("time", "bigint"),
         ("ordinal", "int"), ("side", "string"), ("#due", "bigint"), ("#slot", "bigint"), ("#n", "bigint"),
         ("error", "string"), ("#wstart", "bigint"), ("#wend", "bigint"))
#: the output columns `select` builds from FIXED
BUILT = ("trace_id", "after", "phase", "time", "ordinal", "side", "pos", "error", "window")

#: `json.dumps(value, sort_keys=True, separators=(",", ":"))` and the same without sorting, made once
CANONICAL_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":")).encode
COMPACT_JSON = json.JSONEncoder(separators=(",", ":")).encode

_INT_RANGES = {"bigint": (LONG_MIN, LONG_MAX), "int": (-(2**31), 2**31 - 1), "smallint": (-(2**15), 2**15 - 1),
               "tinyint": (-(2**7), 2**7 - 1)}
_TIMESTAMPS = ("timestamp", "timestamp_ntz")


class FieldTypeError(TypeError):
    """A value the oracle posts that its output column's declared type does
    not hold (or a row's key no column is named by): the schema and the
    oracle disagree. It fails the query, naming the trace, the field, the
    value and the type."""


# --------------------------------------------------------------------------- the schema


def window_schema(spec: WindowSpec, columns):
    """`spec`'s batch output schema over the property `columns` (a
    StructType): `pipeline.output_schema`. Raises what it raises
    (`InvalidFrame`, `UnsupportedWindow`)."""
    from spark_impl import pipeline

    return pipeline.output_schema(spec, columns)


def merged(schemas: Iterable[tuple[WindowSpec, Any]]):
    """The union of (spec, schema) pairs' columns (module docstring), or
    `InvalidFrame` naming a column two windows give differently."""
    from pyspark.sql import types as T

    found: dict[str, tuple[Any, WindowSpec]] = {}
    for spec, schema in schemas:
        for field in schema.fields:
            twin = found.get(field.name.lower())
            if twin is None:
                found[field.name.lower()] = (field, spec)
            elif not agree(twin[0], field):
                raise InvalidFrame(
                    f"the windows {spec_text(twin[1])} and {spec_text(spec)} cannot share an output: the "
                    f"first's column {_described(twin[0])} is {_described(field)} in the second; run them in "
                    "separate queries")
    return T.StructType([field for field, _ in found.values()])


def agree(a, b) -> bool:
    """Whether two windows' columns can be one column: the same name, type and `JSON_TEXT`."""
    return (a.name == b.name and a.dataType == b.dataType
            and bool(a.metadata.get(JSON_TEXT)) == bool(b.metadata.get(JSON_TEXT)))


def _described(field) -> str:
    return f"{field.name!r} {field.dataType.simpleString()}" + (" (JSON text)" if field.metadata.get(JSON_TEXT) else "")


# --------------------------------------------------------------------------- the output of a query


class Output:
    """A query's output (module docstring): `schema`, the public columns;
    `text`, those that cross the operator as text (`#c<i>`); a `Writer` per
    window, which the processor asks for by spec (`writer`)."""

    def __init__(self, schema, schemas: dict[WindowSpec, Any], writers: dict[WindowSpec, Writer]):
        self.schema, self.schemas, self.writers = schema, schemas, writers
        self.text = tuple(f for f in schema.fields if f.name not in BUILT)

    @classmethod
    def of(cls, specs: Iterable[WindowSpec], columns, *, window: bool = False) -> Output:
        """The output of `specs` over the input's columns (a StructType:
        its property columns, with their metadata); `window`: the `window`
        column even where no window has one (null: `apply_windows`).
        Raises `InvalidFrame` for windows that cannot share an output, a
        column of a type that cannot cross, what `output_schema` raises."""
        from pyspark.sql import types as T

        specs = list(dict.fromkeys(specs))
        own = {spec: window_schema(spec, columns) for spec in specs}
        schema = merged(own.items())
        if window and "window" not in schema.fieldNames():
            pane = T.StructType([T.StructField("start", T.LongType()), T.StructField("end", T.LongType())])
            schema = T.StructType([*schema.fields, T.StructField("window", pane)])
        text = [f for f in schema.fields if f.name not in BUILT]
        for field in text:
            _check_crossing(field.name, field.dataType)
        at = {f.name: i for i, f in enumerate(text)}
        writers, shared = {}, {}
        for spec in specs:  # windows of one layout share a writer (a smaller pickle of the processor)
            writer = Writer.of(spec, own[spec], at, len(text))
            writers[spec] = shared.setdefault(writer.key(), writer)
        return cls(schema, own, writers)

    def writer(self, spec: WindowSpec) -> Writer:
        return self.writers[spec]

    def reader(self, spec: WindowSpec):
        """`reader` of `spec`'s own schema."""
        return reader(spec, self.schemas[spec])

    def operator_columns(self) -> list[str]:
        """The operator's output columns, in order."""
        return [name for name, _ in FIXED] + [f"#c{i}" for i in range(len(self.text))]

    def operator_schema(self) -> str:
        """The operator's output schema (DDL): FIXED, then each text column."""
        return ", ".join(f"`{n}` {t}" for n, t in FIXED) + "".join(f", `#c{i}` string" for i in range(len(self.text)))

    def select(self, posted):
        """The operator's output as the public schema: `pos` and `window`
        built, each text column cast back to its type, every column named
        with its metadata."""
        from pyspark.sql import functions as F

        built = {
            "pos": F.expr("CASE WHEN side IS NOT NULL THEN named_struct('due', `#due`, 'slot', `#slot`, 'n', `#n`) END"),
            "window": F.expr("CASE WHEN `#wend` IS NOT NULL THEN named_struct('start', `#wstart`, 'end', `#wend`) END"),
        }
        at = {f.name: i for i, f in enumerate(self.text)}
        columns = []
        for field in self.schema.fields:
            if field.name in at:
                column = _from_text(F.col(f"`#c{at[field.name]}`"), field.dataType)
            else:
                column = built.get(field.name, F.col(f"`{field.name}`"))
            columns.append(column.alias(field.name, metadata=dict(field.metadata)))
        return posted.select(*columns)


def _from_text(column, data_type):
    """SQL of a text column read back as `data_type` (`_check_crossing`'s types)."""
    from pyspark.sql import functions as F

    kind = data_type.simpleString()
    if kind == "string":
        return column
    if kind in _TIMESTAMPS:
        return F.timestamp_millis(column.cast("bigint")).cast(data_type)
    if data_type.typeName() in ("array", "map", "struct"):
        return F.from_json(column, data_type, {"allowNonNumericNumbers": "true"})
    return column.cast(data_type)


_SCALARS = ("string", "boolean", "double", "float", *_INT_RANGES)


def _check_crossing(name: str, data_type, nested: bool = False) -> None:
    """`InvalidFrame` for a column of a type the operator's text cannot carry."""
    kind = data_type.typeName()
    simple = data_type.simpleString()
    if simple in _SCALARS or (simple in _TIMESTAMPS and not nested):
        return
    if kind == "array":
        return _check_crossing(name, data_type.elementType, True)
    if kind == "map" and data_type.keyType.simpleString() == "string":
        return _check_crossing(name, data_type.valueType, True)
    if kind == "struct":
        for inner in data_type.fields:
            _check_crossing(name, inner.dataType, True)
        return
    raise InvalidFrame(f"output column {name!r} is {simple}: a streaming window posts integer, double, boolean, "
                       "string and timestamp columns, and lists, maps (of string keys) and structs of those but "
                       "timestamps")


# --------------------------------------------------------------------------- values into text


def _encoder(name: str, field) -> Callable[[Any], str]:
    """A non-null value of column `field` -> its text across the operator;
    `FieldTypeError` naming `name`, the value and the type where the type
    does not hold it."""
    data_type = field.dataType
    kind = data_type.simpleString()

    def misfit(value):
        return FieldTypeError(f"field {name!r} is {value!r} ({type(value).__name__}), which its column type "
                              f"{kind} does not hold")

    if field.metadata.get(JSON_TEXT):
        def json_text(value):
            try:
                return CANONICAL_JSON(value)
            except (TypeError, ValueError):
                raise misfit(value) from None
        return json_text
    if kind == "string":
        def string(value):
            if type(value) is not str:
                raise misfit(value)
            return value
        return string
    if kind == "boolean":
        def boolean(value):
            if type(value) is not bool:
                raise misfit(value)
            return "true" if value else "false"
        return boolean
    if kind in _INT_RANGES or kind in _TIMESTAMPS:
        low, high = _INT_RANGES.get(kind, _INT_RANGES["bigint"])

        def integral(value):
            if type(value) is not int or not low <= value <= high:
                raise misfit(value)
            return str(value)
        return integral
    if kind in ("double", "float"):
        def double(value):
            if type(value) is not float:
                if type(value) is not int:
                    raise misfit(value)
                try:
                    value = float(value)
                except OverflowError:
                    raise misfit(value) from None
            return double_text(value)
        return double

    def nested(value):
        if not _fits(value, data_type):
            raise misfit(value)
        return COMPACT_JSON(value)
    return nested


def double_text(value: float) -> str:
    """A double as Spark casts text to one: NaN, Infinity, -Infinity, or its repr."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


def _fits(value, data_type) -> bool:
    """Whether a value (of a list, map or struct column) is of `data_type`, null anywhere allowed."""
    if value is None:
        return True
    kind = data_type.typeName()
    simple = data_type.simpleString()
    if kind == "array":
        return isinstance(value, (list, tuple)) and all(_fits(v, data_type.elementType) for v in value)
    if kind == "map":
        return isinstance(value, dict) and all(type(k) is str and _fits(v, data_type.valueType)
                                               for k, v in value.items())
    if kind == "struct":
        names = {f.name: f.dataType for f in data_type.fields}
        return isinstance(value, dict) and all(k in names and _fits(v, names[k]) for k, v in value.items())
    if simple == "string":
        return type(value) is str
    if simple == "boolean":
        return type(value) is bool
    if simple in _INT_RANGES:
        low, high = _INT_RANGES[simple]
        return type(value) is int and low <= value <= high
    if simple in ("double", "float"):
        return type(value) in (int, float)
    return False


# --------------------------------------------------------------------------- updates into rows


class Writer:
    """One window's rows of the query's output (module docstring): each a
    tuple of FIXED's values, then the `width` text columns, the columns of
    another window null. `rows`: the window posts rows of typed fields;
    `columns`: the (place, StructField) of each text column its own schema
    has. It pickles as these arguments (the processor crosses to the
    workers pickled): its encoders are made again where it is read."""

    def __init__(self, rows: bool, columns: tuple[tuple[int, Any], ...], width: int):
        self._args = (rows, columns, width)
        self.blank = (None,) * width
        at = {field.name: i for i, field in columns}
        self.fields = {f.name: (i, _encoder(f.name, f)) for i, f in columns if f.name != "pane_event"} if rows else None
        self.pane_at = at.get("pane_event")
        self.id_at = None if rows else at.get("id")
        # a window posting events: its properties, by name
        self.props = () if rows else tuple((i, f.name, _encoder(f.name, f)) for i, f in columns if f.name != "id")

    def __reduce__(self):
        return Writer, self._args

    @classmethod
    def of(cls, spec: WindowSpec, schema, at: dict[str, int], width: int) -> Writer:
        """The writer of `spec`'s own output `schema` into text columns placed by `at`."""
        rows = posts_rows(spec)
        return cls(rows, tuple((at[f.name], f) for f in schema.fields if f.name not in BUILT), width)

    def key(self) -> tuple:
        """What makes two writers the same (windows of one layout share one)."""
        rows, columns, width = self._args
        return rows, width, tuple((i, f.name, f.dataType.simpleString(), bool(f.metadata.get(JSON_TEXT)))
                                  for i, f in columns)

    def rows(self, trace_id: str, phase: int, ordinal: int, update, out: list) -> None:
        """Append the rows of one oracle update (`Driver.step_keyed`'s) to `out`."""
        try:
            self._rows(trace_id, phase, ordinal, update, out)
        except FieldTypeError as exc:
            raise FieldTypeError(f"trace {trace_id!r} after {update.after}: {exc} (the output schema, "
                                 "spark_impl.output_schema, and the oracle disagree)") from None

    def _rows(self, trace_id: str, phase: int, ordinal: int, update, out: list) -> None:
        after, at = update.after, update.time
        w0, w1 = (update.window.start, update.window.end) if update.window is not None else (None, None)
        if update.error is not None:
            out.append((trace_id, after, phase, at, ordinal, "error", at, 0, 0, update.error, None, None, *self.blank))
            return
        event_cells, n = self._event_cells, 0
        for side in ("insert", "remove", "update"):
            events = getattr(update, side)
            if events:
                for i, event in enumerate(events):
                    out.append((trace_id, after, phase, at, ordinal, side, at, 0, i, None, w0, w1, *event_cells(event)))
                n += len(events)
            if update.values is not None:
                for i, row in enumerate(getattr(update.values, side)):
                    out.append((trace_id, after, phase, at, ordinal, side, at, 0, i, None, w0, w1, *self._row_cells(row)))
                    n += 1
        if n == 0:  # an empty update (FORCE_UPDATE), or a query's pane of no row
            out.append((trace_id, after, phase, at, ordinal, None, None, None, None, None, w0, w1, *self.blank))

    def _put(self, found: dict[int, Any]) -> list:
        cells = list(self.blank)
        for i, text in found.items():
            cells[i] = text
        return cells

    def _event_cells(self, event) -> list:
        if self.fields is not None:  # a window posting rows: an event is a pane row's (eKuiper's query)
            if self.pane_at is None:
                raise FieldTypeError(f"the window posts event {event.id!r}, but its output has rows of fields "
                                     "and no pane_event column")
            return self._put({self.pane_at: event.id})
        cells = list(self.blank)
        if self.id_at is not None:
            cells[self.id_at] = event.id
        props = event.props
        for i, name, encode in self.props:
            value = props.get(name)
            if value is not None:
                cells[i] = encode(value)
        return cells

    def _row_cells(self, row) -> list:
        if self.fields is None:
            raise FieldTypeError("the window posts a row of fields, but its output has events")
        cells = list(self.blank)
        fields = self.fields
        for name, value in row.items():
            found = fields.get(name)
            if found is None:
                raise FieldTypeError(f"the row has a field {name!r} the output has no column for "
                                     f"(it has {', '.join(fields)})")
            if value is not None:
                cells[found[0]] = found[1](value)
        return cells

    def rejected(self, head: tuple, id_: str | None, texts: dict[str, str | None]) -> tuple:
        """A rejected row's output row (`events`): `head` (FIXED's values),
        then its own `id` and properties (`texts`, by name, as the operator
        posts them) where the window's output has those columns: a window
        posting rows has neither, its message alone."""
        found = {}
        if self.id_at is not None:
            found[self.id_at] = id_
        for i, name, _ in self.props:
            if texts.get(name) is not None:
                found[i] = texts[name]
        return (*head, *self._put(found))


# --------------------------------------------------------------------------- rows read back (the harness)


def reader(spec: WindowSpec, schema):
    """The `frames.RowFields` that reads the rows of `spec`'s own output
    `schema` (`window_schema`); None for a window posting events."""
    from spark_impl.frames import RowFields

    return RowFields.of(spec, schema)


def harness_rows(rows, readers: dict) -> list[dict]:
    """Collected output rows of a query as `frames.updates_from_rows` reads
    them (HARNESS_COLUMNS and `window`), as `frames.harness_columns` makes
    them of one window's output: the fields of a trace with a reader
    (`readers`: trace id -> `RowFields`) packed into `values` as JSON text
    (nulls kept; "[]" on a row of side null; null on a query's pane rows,
    whose event, `pane_event`, is the `id`); other traces' `id` as it is.
    A row is a pyspark Row or a dict."""
    out = []
    for row in rows:
        found = row.asDict() if hasattr(row, "asDict") else row
        reader = readers.get(found["trace_id"])
        picked = {name: found.get(name) for name in ("trace_id", "after", "phase", "time", "ordinal", "side", "pos",
                                                      "error", "window")}
        if reader is None:
            picked["id"], picked["values"] = found.get("id"), None
        else:
            event = found.get("pane_event")
            picked["id"] = event
            picked["values"] = ("[]" if found["side"] is None else None if event is not None
                              else COMPACT_JSON({name: found[name] for name in reader.names}))
        out.append(picked)
    return out


__all__ = ["Output", "Writer", "FieldTypeError", "FIXED", "BUILT", "window_schema", "merged", "reader", "harness_rows"]

"""The only place that turns (spec, Trace) pairs into the input DataFrame and the
collected output rows back into `oracle.model.Update` tuples.

Input DataFrame (one row per trace item, many traces in one frame):

| column   | type    | meaning                                                                  |
|----------|---------|--------------------------------------------------------------------------|
| trace_id | string  | the trace the row belongs to                                             |
| seq      | long    | the item's position in its trace (the corpus item index, so an update's  |
|          |         | `after` is the causing row's seq); the optional `start` row has seq -1   |
| kind     | string  | `start`, `event`, `advance`, `jump` or `set`                             |
| time     | long    | ms. `start`: the clock when the window is created (no `start` row: 0).   |
|          |         | `advance` / `jump`: the target. `event`: the clock at its arrival; an    |
|          |         | event whose time is later than the clock before it first walks there     |
|          |         | (the corpus shorthand `{"event": ..., "time": T}`). `set`: the clock.    |
| id       | string  | the event's id (null on other rows)                                      |
| op       | string  | the event's operation code, nullable (Esper windows take only `insert`)  |
| vars     | string  | a `set` item's variables as a JSON object; on the `start` row the        |
|          |         | declared variables' starting values (the trace's `variables`); null else |
| ...      | typed   | one column per event property, null where an event lacks it              |

A property column's type is inferred over all traces of the batch: `long` if every
value is an int, `double` if the values are numbers and one is a float, `string`,
`boolean`; a list or object value is stored as its JSON text (`string`, keys
sorted), so lists compare by content as keys. A property whose values mix
incompatible types (a string and a number, a bool and an int) raises
`InvalidTrace` naming the trace and the item, rather than being cast silently.
Property names must be identifiers, distinct from each other and from the
reserved column names ignoring case (Spark resolves columns case-insensitively).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from oracle.errors import InvalidTrace
from oracle.model import (
    Advance,
    Arrive,
    DERIVED_WINDOWS,
    DerivedValues,
    Event,
    GroupWin,
    Intersection,
    Jump,
    Pane,
    RetainUnion,
    SetVariables,
    Statement,
    Trace,
    Update,
    RESERVED_NAMES,
    WindowSpec,
    check_properties,
    check_trace,
    expression_names,
    item_problem,
    nested_specs,
    null_unsafe_member,
    spec_expression_names,
    spec_extras,
    spec_keys,
    spec_sort_properties,
    spec_values,
    spec_timestamps,
)

KINDS = ("start", "event", "advance", "jump", "set")
BASE_COLUMNS = ("trace_id", "seq", "kind", "time", "id", "op", "vars")
#: a window posting events: its output's columns before the properties (`spark_impl`'s docstring)
OUTPUT_COLUMNS = ("trace_id", "after", "phase", "time", "ordinal", "side", "pos", "id", "error")
#: the rows `updates_from_rows` reads: any output's, a row's fields packed into `values` (`harness_columns`)
HARNESS_COLUMNS = ("trace_id", "after", "phase", "time", "ordinal", "side", "pos", "id", "values", "error")
#: the sides of an output row: a posted event (CCL's `update` code: `update`), or a
#: rejected item's `error` row (its message in the `error` column)
SIDES = ("insert", "remove", "update", "error")
#: the columns that identify an update within a frame of many traces, in its order
UPDATE_KEY = ("trace_id", "after", "phase", "time", "ordinal")
#: the output columns of a window that posts rows (a statement, a derived-value window) besides its fields:
#: the update key, the row's side and place, a rejected item's message, an eKuiper pane's bounds (`window`)
#: and, on a query's pane rows, the pane's event (`pane_event`); `numbered` adds `update_no` and `pos_no`
ROW_OUTPUT_COLUMNS = (*UPDATE_KEY, "side", "pos", "error")
NOT_FIELDS = frozenset({*ROW_OUTPUT_COLUMNS, "window", "pane_event", "update_no", "pos_no"})
# Columns of the pipeline and of the family contract (spark_impl/windows/__init__.py):
# a property may not be named like one of them.
RESERVED = RESERVED_NAMES | {"id"}
assert set(BASE_COLUMNS + HARNESS_COLUMNS) <= RESERVED, "a frame column the model does not reserve"
START_SEQ = -1
# A frame of at most this many rows is one partition: every window function of the
# pipeline is then planned without a shuffle (a partition satisfies any grouping),
# which for a differential batch of small traces saves one task set per shuffle.
ONE_PARTITION_ROWS = 50_000
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_identifier(name: str) -> bool:
    """Whether `name` can be a property column (letters, digits and _, not first a digit)."""
    return bool(_IDENTIFIER.match(name))


#: the metadata key of a string column holding JSON text (a list or object property)
JSON_TEXT = "json_text"
#: the metadata key of a column no event gives a value (a string column of nulls): a property of no kind,
#: which a statement reads as null, as it reads a property no event has
NO_VALUES = "no_values"
_WIDER = {frozenset({"long", "double"}): "double"}
_NAMES = {"long": "an integer", "double": "a float", "string": "a string", "boolean": "a boolean",
          "json": "a list or object"}


# --------------------------------------------------------------------------- specs


def spec_properties(spec: WindowSpec) -> tuple[str, ...]:
    """Every property `spec` reads, each a column of the input; `id` is the
    event's id (a base column), not a property column; nor is a field a
    statement reads off a derived-value window's rows (`row_fields`)."""
    read = (spec_keys(spec) + spec_timestamps(spec) + spec_sort_properties(spec) + spec_values(spec) + spec_extras(spec)
            + spec_expression_names(spec))
    fields = row_fields(spec)
    return tuple(name for name in dict.fromkeys(read) if name != "id" and name not in fields)


def row_fields(spec: WindowSpec) -> frozenset[str]:
    """The fields of a derived-value window's rows, for a statement over one
    (under `#groupwin` too): its select items, WHERE, GROUP BY and HAVING
    name them there, not an event's property (or a variable); a name its
    window or its stream filter reads stays the event's."""
    if not isinstance(spec, Statement):
        return frozenset()
    window = spec.window.window if isinstance(spec.window, GroupWin) else spec.window
    if not isinstance(window, DERIVED_WINDOWS):
        return frozenset()
    events = {*spec_properties(spec.window), *(expression_names(spec.filter) if spec.filter is not None else ())}
    return frozenset(f for f in window.FIELDS if f not in events)


def check_pair(spec: WindowSpec, trace: Trace) -> None:
    """Raise `InvalidTrace`, naming the item, where the oracle would refuse the trace
    for this window: `check_trace`'s rules, an operation code other than `insert`
    (Esper windows take none), a key property holding an object, a timestamp
    property that is not an integer (esper.md §2, `oracle.windows.keys`' decisions),
    a sort property holding a list or an object (`oracle.windows.sort`), a
    derived-value window's statistic property holding anything but a number,
    under its `*` a property named like a field it posts
    (`oracle.windows.derived`), and an event with a null an intersection's or
    union's member cannot take (`null_unsafe_member`; under a statement's
    stream filter the plan fails the job instead, for the events the filter
    lets through: `spark_impl.windows.several`). A null timestamp is accepted
    where Esper's view throws on it and posts nothing (`Spec.unsafe_nulls`),
    refused elsewhere (an eKuiper event time).
    """
    check_trace(trace, spec.MIXED_KINDS)
    check_properties(spec, trace)
    keys, stamps, sorts = spec_keys(spec), spec_timestamps(spec), spec_sort_properties(spec)
    numbers = spec_values(spec)
    checked = {f.lower(): f for f in spec.CHECKED_FIELDS} if isinstance(spec, DERIVED_WINDOWS) and spec.all_properties else {}
    nested = nested_specs(spec)
    posts_nothing_on_null = {name for inner in nested for name in inner.unsafe_nulls()}
    filtered = isinstance(spec, Statement) and spec.filter is not None  # what reaches a composite: the plan's to say
    composites = [] if filtered else [inner for inner in nested if isinstance(inner, (Intersection, RetainUnion))]
    for index, item in enumerate(trace.items):
        if not isinstance(item, Arrive):
            continue
        problem = item_problem(spec, item)
        if problem is not None:  # a code the window does not take (a keyed window takes every code): invalid
            raise InvalidTrace(problem, index)
        event = item.event
        for name in keys:
            if isinstance(event.get(name), Mapping):
                raise InvalidTrace(f"event {event.id!r}: property {name!r} is an object, which cannot be a key", index)
        for name in sorts:
            if isinstance(event.get(name), (Mapping, list)):
                raise InvalidTrace(f"event {event.id!r}: sort property {name!r} holds a list or object, "
                                   "which cannot be compared", index)
        for name in numbers:
            value = event.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
                raise InvalidTrace(f"event {event.id!r}: {spec.KIND} reads property {name!r}, which is {value!r}, "
                                   "not a number", index)
        clash = next((name for name in event.props if name.lower() in checked), None)
        if clash is not None:
            raise InvalidTrace(f"event {event.id!r}: property {clash!r} overlaps the field {checked[clash.lower()]!r} "
                               f"that {spec.KIND} posts, so * cannot copy it", index)
        for composite in composites:
            problem = null_unsafe_member(composite, event)
            if problem is not None:
                raise InvalidTrace(problem, index)
        for name in stamps:
            value = event.get(name)
            if value is None and name in posts_nothing_on_null:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                what = "is missing" if value is None else f"is {value!r}, not an integer"
                raise InvalidTrace(f"event {event.id!r}: timestamp property {name!r} {what}", index)


# --------------------------------------------------------------------------- property types


def value_type(value: Any) -> str | None:
    """The column type a single value asks for; None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple, Mapping)):
        return "json"
    raise TypeError(f"a property value of type {type(value).__name__} cannot be a column value")


class PropertyTypes:
    """The column type of each property over a batch of traces, and where each
    type was first seen (for the error naming a conflicting item). With
    `mixed` (a spec's `MIXED_KINDS`: eKuiper's schemaless streams) values of
    kinds no one column type holds make the property a JSON text column: each
    value its JSON (`"abc"`, `3`, `true`), read back value by value where the
    window's kernel reads the property. Decided over Spark's VARIANT: the
    kernels take JSON text columns already (lists and objects), through Arrow."""

    def __init__(self, extra: Iterable[str] = (), mixed: bool = False):
        self.types: dict[str, str | None] = {}
        self.seen_at: dict[str, tuple[str, int]] = {}
        self.mixed = mixed
        for name in extra:
            self.types[name] = None

    @classmethod
    def of_trace(cls, trace_id: str, trace: Trace, mixed: bool = False) -> PropertyTypes:
        """The types one trace asks for; raises `InvalidTrace` if it mixes types
        itself (unless `mixed`)."""
        types = cls(mixed=mixed)
        for index, item in enumerate(trace.items):
            if isinstance(item, Arrive):
                for name, value in item.event.props.items():
                    types.add(trace_id, index, name, value)
        return types

    def add(self, trace_id: str, index: int, name: str, value: Any) -> None:
        try:
            kind = value_type(value)
        except TypeError as exc:
            raise InvalidTrace(f"trace {trace_id!r}: property {name!r}: {exc}", index) from None
        if kind == "long" and not LONG_MIN <= value <= LONG_MAX:
            raise InvalidTrace(f"trace {trace_id!r}: property {name!r} = {value} does not fit in a long", index)
        self._combine(name, kind, trace_id, index)

    def merge(self, other: PropertyTypes) -> None:
        """Add another batch's types; raises `InvalidTrace` (naming `other`'s item) on a conflict."""
        for name, kind in other.types.items():
            trace_id, index = other.seen_at.get(name, ("?", None))
            self._combine(name, kind, trace_id, index)

    def copy(self) -> PropertyTypes:
        twin = PropertyTypes(mixed=self.mixed)
        twin.types, twin.seen_at = dict(self.types), dict(self.seen_at)
        return twin

    def _combine(self, name: str, kind: str | None, trace_id: str, index: int | None) -> None:
        where = f"trace {trace_id!r}: "
        if name not in self.types:
            self._check_name(where, index, name)
            self.types[name] = None
        old = self.types[name]
        if kind is None or kind == old:
            return
        if old is None:
            self.types[name], self.seen_at[name] = kind, (trace_id, index)
            return
        # eKuiper keeps each value's own kind (an integer and a float sum differently): JSON text
        wider = "json" if self.mixed else _WIDER.get(frozenset({old, kind}))
        if wider is None:
            first_trace, first_index = self.seen_at[name]
            raise InvalidTrace(
                f"{where}property {name!r} is {_NAMES[kind]} here but {_NAMES[old]} in trace {first_trace!r} "
                f"item {first_index}; a property needs one column type",
                index,
            )
        self.types[name] = wider

    def _check_name(self, where: str, index: int | None, name: str) -> None:
        if not _IDENTIFIER.match(name):
            raise InvalidTrace(f"{where}property name {name!r} is not an identifier, so it cannot be a column", index)
        folded = name.lower()
        if folded in RESERVED:
            raise InvalidTrace(f"{where}property {name!r} clashes with the reserved column {folded!r}", index)
        twin = next((other for other in self.types if other.lower() == folded), None)
        if twin is not None:
            raise InvalidTrace(f"{where}properties {twin!r} and {name!r} differ only in case", index)

    def schema(self) -> dict[str, str]:
        """Property -> column type; a property that is always null is a string column."""
        return {name: kind or "string" for name, kind in self.types.items()}

    def valueless(self) -> frozenset[str]:
        """The properties that are always null (`NO_VALUES`)."""
        return frozenset(name for name, kind in self.types.items() if kind is None)


# --------------------------------------------------------------------------- rows


#: the Python types a column of each type takes (exactly: a bool is not an integer)
_TAKES = {"string": (str,), "long": (int,), "double": (float, int), "boolean": (bool,)}


def _cell(value: Any, kind: str) -> Any:
    if value is None:
        return None
    if kind == "json":
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    if type(value) not in _TAKES[kind]:
        raise TypeError(kind)
    if kind == "double":
        return float(value)
    return value


def trace_rows(trace_id: str, trace: Trace, schema: Mapping[str, str]) -> list[tuple]:
    """The input rows of one trace (columns: BASE_COLUMNS, then `schema`'s
    properties). A value its column's type does not take (a number under a
    string column: `PropertyTypes` of names alone makes string columns) raises
    `InvalidTrace` naming the trace, the item and the property."""
    props = list(schema.items())
    blank = (None,) * len(props)
    declared = json.dumps(dict(trace.variables), sort_keys=True) if trace.variables else None
    rows = [(trace_id, START_SEQ, "start", trace.start_time, None, None, declared) + blank]
    clock = trace.start_time
    for seq, item in enumerate(trace.items):
        if isinstance(item, Arrive):
            clock = item.time if item.time is not None else clock
            try:
                values = tuple(_cell(item.event.props.get(name), kind) for name, kind in props)
            except TypeError:
                raise _mistyped(trace_id, seq, item.event, props) from None
            rows.append((trace_id, seq, "event", clock, item.event.id, item.op, None) + values)
        elif isinstance(item, (Advance, Jump)):
            clock = item.time
            rows.append((trace_id, seq, "advance" if isinstance(item, Advance) else "jump", clock, None, None, None) + blank)
        elif isinstance(item, SetVariables):
            rows.append((trace_id, seq, "set", clock, None, None, json.dumps(dict(item.values), sort_keys=True)) + blank)
        else:
            raise InvalidTrace(f"trace {trace_id!r}: unknown trace item {item!r}", seq)
    return rows


def _mistyped(trace_id: str, seq: int, event: Event, props: list[tuple[str, str]]) -> InvalidTrace:
    for name, kind in props:
        value = event.props.get(name)
        if value is not None and kind != "json" and type(value) not in _TAKES[kind]:
            return InvalidTrace(f"trace {trace_id!r}: event {event.id!r}: property {name!r} is {value!r}, but its "
                                f"column is {_NAMES[kind]} column (declare its type, or take the types from the "
                                "traces: PropertyTypes.of_trace)", seq)
    raise AssertionError("no mistyped property")


def input_schema(schema: Mapping[str, str], valueless: Iterable[str] = ()):
    """The Spark schema of the input frame for these property types, the
    `valueless` ones marked `NO_VALUES`."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

    spark_type = {"long": LongType(), "double": DoubleType(), "string": StringType(), "boolean": BooleanType(),
                  "json": StringType()}
    base = [
        StructField("trace_id", StringType(), False),
        StructField("seq", LongType(), False),
        StructField("kind", StringType(), False),
        StructField("time", LongType(), False),
        StructField("id", StringType(), True),
        StructField("op", StringType(), True),
        StructField("vars", StringType(), True),
    ]
    # a list or object property is its JSON text, marked so that an output writing it as JSON embeds it as is
    valueless = frozenset(valueless)
    return StructType(base + [StructField(name, spark_type[kind], True, {JSON_TEXT: True} if kind == "json" else
                                          {NO_VALUES: True} if name in valueless else {})
                              for name, kind in schema.items()])


def to_dataframe(spark, traces: Sequence[tuple[str, Trace]], extra_properties: Iterable[str] = (),
                 mixed: bool = False):
    """One input frame for `(trace_id, trace)` pairs. `extra_properties` become
    columns even when no event has them (the properties a spec reads: a missing
    property is null, and null is a key like any other). With `mixed` (the
    window's `MIXED_KINDS`) a property whose kind changes is a JSON text column."""
    types = PropertyTypes(extra_properties, mixed=mixed)
    for trace_id, trace in traces:
        types.merge(PropertyTypes.of_trace(trace_id, trace, mixed=mixed))
    return frame_of(spark, traces, types)


def frame_of(spark, traces: Sequence[tuple[str, Trace]], types: PropertyTypes):
    """The input frame for traces whose property types were already merged into `types`."""
    schema = types.schema()
    rows = [row for trace_id, trace in traces for row in trace_rows(trace_id, trace, schema)]
    typed = input_schema(schema, types.valueless())
    frame = spark.createDataFrame(_arrow_table(rows, typed), typed)
    frame = frame.coalesce(1) if len(rows) <= ONE_PARTITION_ROWS else frame
    return _off_the_plan(frame)


def _off_the_plan(frame):
    """The frame's rows as an RDD the plan refers to, not as data inside it.

    `createDataFrame` of local data is a `LocalRelation`: its rows live in the
    logical plan, and Spark's analyser and optimizer go over them at each step
    a window's plan takes (a join of the frame with itself, a cached-data
    lookup), so building a plan cost time in proportion to the rows (measured:
    eKuiper's tumbling plan over 8,000 traces 12.7 s, 1.0 s as an RDD) and
    running it more (26.9 against 14.5 s). A lazy local checkpoint keeps the
    rows in the block manager once the first job reads them, keeps the
    relation's statistics (joins broadcast as before) and runs no job here.
    A Spark Connect frame (no `_jdf`) is left as it is: the server decides."""
    if not hasattr(frame, "_jdf"):
        return frame
    return frame.localCheckpoint(eager=False)


def _arrow_table(rows: list[tuple], schema):
    """Rows as a pyarrow Table (Spark reads it without pickling row by row)."""
    import pyarrow as pa

    arrow_type = {"StringType()": pa.string(), "LongType()": pa.int64(), "DoubleType()": pa.float64(),
                  "BooleanType()": pa.bool_()}
    columns = list(zip(*rows)) if rows else [()] * len(schema.fields)
    return pa.Table.from_arrays(
        [pa.array(list(col), type=arrow_type[repr(f.dataType)]) for col, f in zip(columns, schema.fields)],
        names=[f.name for f in schema.fields],
    )


# --------------------------------------------------------------------------- posted rows


def posts_rows(spec: WindowSpec) -> bool:
    """Whether `spec` posts rows of fields (a statement, a derived-value
    window, under `#groupwin` too) rather than events."""
    inner = spec.window if isinstance(spec, GroupWin) else spec
    return (isinstance(spec, Statement) and not spec.posts_events) or isinstance(inner, DERIVED_WINDOWS)


def named_fields(spec: WindowSpec) -> tuple[str, ...]:
    """The fields of `spec`'s rows it names itself: a statement's select
    items other than `*` (and, for its `*` over a derived-value window,
    that window's; none where the engine's rows hold no null field,
    `Rules.null_fields`); a derived-value window's fields, additional
    properties and `#groupwin` keys. A row's other fields are the event's
    properties `*` copies, which a row holds only where they are not null."""
    if isinstance(spec, Statement):
        if not spec.rules.null_fields:  # no field of a row is null: every null is an absent field
            return ()
        named = tuple(n for n in spec.field_names if n is not None)
        star = any(n is None for n in spec.field_names) and posts_rows(spec.window)
        return named + (named_fields(spec.window) if star else ())  # `*` over a derived window's rows
    keys = spec.keys if isinstance(spec, GroupWin) else ()
    inner = spec.window if isinstance(spec, GroupWin) else spec
    added = keys if not all(inner.has_field(k) for k in keys) else ()  # the keys a row has through `*` are `*`'s
    return tuple(dict.fromkeys((*inner.FIELDS, *inner.extra, *added)))


class RowFields:
    """How an output's field columns read back as the case format's rows
    (`DerivedValues`' dicts): each field by its column's value; a field `*`
    copied (not in `named_fields`) left out where null; a column marked
    `JSON_TEXT` parsed. `packed()` is SQL of the fields as one JSON text (a
    harness unions the outputs of many windows, whose fields differ) and
    `unpack` reads it back (Spark writes NaN and the infinities as strings)."""

    def __init__(self, spec: WindowSpec, schema) -> None:
        named = set(named_fields(spec))
        self.fields = tuple(f for f in schema.fields if f.name not in NOT_FIELDS)
        self.names = tuple(f.name for f in self.fields)
        self.star = frozenset(n for n in self.names if n not in named)
        self.json_text = frozenset(f.name for f in self.fields if f.metadata.get(JSON_TEXT))
        self.doubles = frozenset(f.name for f in self.fields if f.dataType.typeName() in ("double", "float"))

    @classmethod
    def of(cls, spec: WindowSpec, schema) -> RowFields | None:
        """The reader of an output of `spec` with `schema`, or None where `spec` posts events."""
        return cls(spec, schema) if posts_rows(spec) else None

    def read(self, row) -> dict:
        """A collected output row's fields as the format's row."""
        return self._row((name, row[name]) for name in self.names)

    def packed(self) -> str:
        """SQL: the fields as one JSON object (nulls kept)."""
        parts = ", ".join(f"'{name}', `{name}`" for name in self.names)
        return (f"to_json(named_struct({parts}), map('ignoreNullFields', 'false'))" if self.names
                else "'{}'")

    def unpack(self, text: str) -> dict:
        """A `packed` row as the format's row."""
        found = json.loads(text)
        return self._row((name, _float_text(found[name]) if name in self.doubles else found[name])
                         for name in self.names)

    def _row(self, pairs) -> dict:
        out = {}
        for name, value in pairs:
            if value is None and name in self.star:
                continue
            out[name] = json.loads(value) if name in self.json_text and value is not None else value
        return out


def _float_text(value):
    """A double as Spark's JSON writes it: a number, or NaN and the infinities as strings."""
    return float(value) if isinstance(value, str) else value


# --------------------------------------------------------------------------- results


def harness_columns(out, spec: WindowSpec) -> tuple[list[str], RowFields | None]:
    """SQL of HARNESS_COLUMNS (and `window` where `out` has it) from an output
    of `spec`, as `updates_from_rows` reads them, and the reader of its
    `values` (None: events): a row-posting window's fields packed into
    `values` (`RowFields.packed`; "[]" on a pane's row of no output row, null
    on a query's pane rows, whose event is `id`)."""
    names = set(out.columns)
    pick = [c if c in names else f"CAST(NULL AS STRING) AS `{c}`" for c in HARNESS_COLUMNS if c not in ("id", "values")]
    reader = RowFields.of(spec, out.schema)
    if reader is None or "values" in names:  # events, or an --impl's rows still as JSON text (the former format)
        reader = None
        own = ["id" if "id" in names else "CAST(NULL AS STRING) AS id",
               "`values`" if "values" in names else "CAST(NULL AS STRING) AS `values`"]
    else:
        event = "pane_event" if "pane_event" in names else "CAST(NULL AS STRING)"
        own = [f"{event} AS id",
               f"CASE WHEN side IS NULL THEN '[]' WHEN {event} IS NOT NULL THEN NULL ELSE {reader.packed()} END AS `values`"]
    return [*pick[:7], *own, *pick[7:], *(["window"] if "window" in names else [])], reader


def updates_from_rows(rows: Iterable[Any], traces: Mapping[str, Trace],
                      readers: Mapping[str, RowFields] | None = None) -> dict[str, tuple[Update, ...]]:
    """Collected output rows (HARNESS_COLUMNS) as updates per trace id, holding the
    traces' own Event objects (found by id). The rows of an update share its key
    (after, phase, time, ordinal); updates follow in key order, and each side's
    rows in `pos` order: `insert`, `remove`, `update` (CCL's update code) rows
    by the posted event's id, a derived-value row by its `values`, and an
    `error` row (a rejected item: one per update) as the update's `error`, its
    message from the `error` column. A row's optional `window` (a struct of
    `start` and `end`: an eKuiper pane) is the update's pane; an empty update's
    row (side null) whose `values` is "[]" is a query's pane of no output row
    (`values` present, both sides empty). A trace without rows has no update.

    Rows no window posts are kept, so a comparison shows them (they come from an
    implementation under test): an id of no event of the trace is an `Event` of
    that id without properties, two rows at one position are both posted, and
    two error rows of one update join their messages."""
    return updates_from_columns(_columns_of(rows), traces, readers)


#: the columns `updates_from_columns` reads: HARNESS_COLUMNS and an eKuiper pane's `window`
READ_COLUMNS = (*HARNESS_COLUMNS, "window")


def collect_columns(out) -> dict[str, list]:
    """The rows of `out` as a list per column (every column of `out`), for
    `updates_from_columns`. Collected as Arrow batches where the session gives
    them (a column at a time: a row costs a few microseconds where a pickled
    `Row` cost tens), else by `collect()`; a struct value is then a dict, whose
    values are in the struct's field order."""
    collect = getattr(out, "_collect_as_arrow", None)
    if collect is not None:
        try:
            batches = collect()
        except Exception:  # noqa: BLE001 - a type Arrow does not carry: read as Rows (a failing job fails there again)
            pass
        else:
            import pyarrow as pa

            if not batches:
                return {name: [] for name in out.columns}
            table = pa.Table.from_batches(batches)
            return {name: table.column(name).to_pylist() for name in table.column_names}
    return _columns_of(out.collect())


def _columns_of(rows: Iterable[Any]) -> dict[str, list]:
    """Rows (Spark's `Row`s, or mappings) as READ_COLUMNS' lists; a column a
    row lacks is None in it."""
    columns: dict[str, list] = {name: [] for name in READ_COLUMNS}
    appends = [columns[name].append for name in READ_COLUMNS]
    places: dict[tuple, list] = {}
    for row in rows:
        fields = getattr(row, "__fields__", None)
        if fields is not None:  # a Row: its values by place, the places found once per field list
            key = tuple(fields)
            where = places.get(key)
            if where is None:
                where = places[key] = [fields.index(n) if n in fields else None for n in READ_COLUMNS]
            for append, i in zip(appends, where):
                append(None if i is None else row[i])
        else:
            for append, name in zip(appends, READ_COLUMNS):
                append(_optional(row, name))
    return columns


def updates_from_columns(columns: Mapping[str, Sequence], traces: Mapping[str, Trace],
                         readers: Mapping[str, RowFields] | None = None) -> dict[str, tuple[Update, ...]]:
    """`updates_from_rows` of rows given as a list per column (`collect_columns`;
    a column not given is None on every row)."""
    readers = readers or {}
    count = len(columns["trace_id"])
    rows = [columns.get(name) or [None] * count for name in READ_COLUMNS]
    trace_ids, after, phase, time, ordinal = rows[:5]
    events = {tid: {e.id: e for e in trace.events()} for tid, trace in traces.items()}
    units: dict[tuple, list[int]] = defaultdict(list)  # an update's rows, by (trace, after, phase, time, ordinal)
    for i, key in enumerate(zip(trace_ids, after, phase, time, ordinal)):
        units[key].append(i)
    by_trace: dict[str, list] = defaultdict(list)
    for key in sorted(units, key=lambda k: (str(k[0]), k[1:])):  # a trace's updates in key order
        by_trace[key[0]].append(key)
    result: dict[str, tuple[Update, ...]] = {tid: () for tid in traces}
    for tid, keys in by_trace.items():
        read = readers[tid].unpack if tid in readers else json.loads
        found = events.get(tid, {})
        result[tid] = tuple(_update(key[1:], units[key], rows, found, read) for key in keys)
    return result


def _optional(row, column: str) -> Any:
    """A mapping row's value of `column`, or None where it has none."""
    try:
        return row[column]
    except (KeyError, ValueError, IndexError):
        return None


def _orderable(value: Any) -> Any:
    """A `pos` value as a tuple (a struct's fields in order, as a `Row`
    compares; a dict from Arrow likewise), nested structs too."""
    if isinstance(value, dict):
        return tuple(_orderable(v) for v in value.values())
    if isinstance(value, tuple):  # a Row, whose nested structs are Rows
        return tuple(_orderable(v) for v in value)
    if isinstance(value, list):
        return [_orderable(v) for v in value]
    return value


_SIDE, _POS, _ID, _VALUES, _ERROR, _WINDOW = (READ_COLUMNS.index(c)
                                              for c in ("side", "pos", "id", "values", "error", "window"))


def _update(key: tuple, indices: list[int], columns: list[list], events: Mapping[str, Any], read=json.loads) -> Update:
    side_of, pos_of, id_of, values_of = columns[_SIDE], columns[_POS], columns[_ID], columns[_VALUES]
    error_of, window_of = columns[_ERROR], columns[_WINDOW]
    sides: dict[str, list[int]] = {}  # a side's rows posting events
    derived: dict[str, list[int]] = {}  # a side's rows of fields, packed (`RowFields`)
    errors: list[str] = []
    pane = None
    no_rows = False  # a query's pane whose output is no row: values, both sides empty
    for i in indices:
        bounds = window_of[i]
        if bounds is not None:
            pane = Pane(bounds["start"], bounds["end"])
        side = side_of[i]
        if side is None:
            no_rows = no_rows or values_of[i] == "[]"
        elif side == "error":
            errors.append(error_of[i] or "")
        else:
            (sides if values_of[i] is None else derived).setdefault(side, []).append(i)

    def in_order(rows: list[int] | None) -> list[int]:  # by `pos`; rows at one position as they came
        if rows and len(rows) > 1:
            rows.sort(key=lambda i: _orderable(pos_of[i]))
        return rows or []

    def posted(side: str) -> tuple:
        return tuple(events.get(id_of[i]) or Event(str(id_of[i]), {}) for i in in_order(sides.get(side)))

    values = None
    if derived or no_rows:
        rows = {side: [read(values_of[i]) for i in in_order(derived.get(side))] for side in ("insert", "remove", "update")}
        values = DerivedValues(rows["insert"], rows["remove"], update=rows["update"])
    return Update(after=key[0], time=key[2], insert=posted("insert"), remove=posted("remove"),
                  update=posted("update"), error=" | ".join(errors) if errors else None, values=values, window=pane)

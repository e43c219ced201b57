"""The data model shared by every part of the project. Data only, no behaviour.

Time is integer milliseconds everywhere.

* `Event`: an `id` and properties.
* Trace items: `Arrive` (an event, optionally after walking the clock to `time`,
  optionally with a CCL operation code), `Advance` (a walk), `Jump`, `SetVariables`.
* `Update`: what a subscriber receives for one unit of work.
* Window specs: frozen attrs classes, one per window kind, each field a real
  semantic variation. Engines whose windows behave alike map to the same spec.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar, Union

import attrs
from attrs import field, frozen

from oracle.errors import InvalidSpec, InvalidTrace, UnsupportedWindow

# --------------------------------------------------------------------------- events

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _freeze_props(props: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(props or {}))


@frozen
class Event:
    """An event: a unique `id` and its properties (`id` is not among `props`)."""

    id: str = field(validator=attrs.validators.instance_of(str))
    props: Mapping[str, Any] = field(factory=dict, converter=_freeze_props, hash=False)

    def get(self, name: str) -> Any:
        """The value of a property; `id` is a property too; a missing one is None (null)."""
        if name == "id":
            return self.id
        return self.props.get(name)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, **self.props}

    def __repr__(self) -> str:
        return f"Event({self.id!r})"

    def __deepcopy__(self, memo) -> Event:
        return self  # immutable: a copy would be equal and interchangeable

    def __reduce__(self):
        return (Event, (self.id, dict(self.props)))


# --------------------------------------------------------------------------- trace items

OPCODES = ("insert", "update", "upsert", "delete", "safedelete")


def _check_opcode(_inst, _attr, value):
    if value is not None and value not in OPCODES:
        raise InvalidTrace(f"unknown operation code {value!r}; known: {', '.join(OPCODES)}")


@frozen
class Arrive:
    """An event arrives at the current clock; with `time`, the clock first walks to
    `time` (the corpus shorthand `{"event": ..., "time": T}`)."""

    event: Event
    time: int | None = None
    op: str | None = field(default=None, validator=_check_opcode)


@frozen
class Advance:
    """The clock walks to `time`, stopping at every due time on the way (Esper
    `advanceTimeSpan`)."""

    time: int


@frozen
class Jump:
    """The clock is set to `time` at once; every timer due by then fires once,
    seeing `time` (Esper `advanceTime`)."""

    time: int


@frozen
class SetVariables:
    """Variables used by a window expression change (Esper `#expr(... SIZE)`)."""

    values: Mapping[str, Any] = field(converter=_freeze_props, hash=False)


TraceItem = Union[Arrive, Advance, Jump, SetVariables]


def _check_variables(_inst, _attr, value):
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidTrace(f"a variable name must be an identifier, got {name!r}")


@frozen
class Trace:
    """Trace items in arrival order, the clock when the window is created, and
    the declared variables with their starting values (a window expression
    reads them; `set` items change them)."""

    items: tuple[TraceItem, ...] = field(converter=tuple)
    start_time: int = 0
    variables: Mapping[str, Any] = field(factory=dict, converter=_freeze_props, validator=_check_variables, hash=False)

    def __len__(self) -> int:
        return len(self.items)

    def events(self) -> list[Event]:
        return [item.event for item in self.items if isinstance(item, Arrive)]


#: a clock value lies within this many ms of 0 (about 146 million years), so that a
#: clock plus a window's period fits a 64-bit long, as every engine computes it
MAX_CLOCK = 2**62


def check_trace(trace: Trace, mixed_kinds: bool = False) -> None:
    """Raise `InvalidTrace`, naming the item's index, for a trace no window can run:
    the clock going backwards, a duplicate id, an empty id, a clock further than
    `MAX_CLOCK` ms from 0 (the start time: no index), a `set` of a variable the
    trace does not declare (as Esper refuses to set an undeclared variable), an
    event property `TraceProperties(mixed_kinds)` refuses."""
    clock = trace.start_time
    if abs(clock) > MAX_CLOCK:
        raise InvalidTrace(f"the start time {clock} ms is further than 2**62 ms from 0")
    seen: dict[str, int] = {}
    properties = TraceProperties(mixed_kinds)
    for index, item in enumerate(trace.items):
        kind = type(item)
        time = item.time if kind is not SetVariables else None
        if time is not None:
            if abs(time) > MAX_CLOCK:
                raise InvalidTrace(f"the time {time} ms is further than 2**62 ms from 0 (clocks are 64-bit longs)",
                                   index)
            if time < clock:
                raise InvalidTrace(f"time goes backwards: {time} ms is before the clock at {clock} ms", index)
            clock = time
        if kind is SetVariables:
            undeclared = sorted(set(item.values) - set(trace.variables))
            if undeclared:
                raise InvalidTrace(f"set: variable {undeclared[0]!r} is not declared (the case's 'variables' key "
                                   "declares each variable and its starting value)", index)
        if kind is Arrive:
            event_id = item.event.id
            if event_id in seen or not event_id:
                if not event_id:
                    raise InvalidTrace("an event has an empty id", index)
                raise InvalidTrace(f"duplicate event id {event_id!r} (first at item {seen[event_id]})", index)
            seen[event_id] = index
            for name, value in item.event.props.items():
                problem = properties.problem(name, value, index)
                if problem is not None:
                    raise InvalidTrace(problem, index)


def _value_type(value: Any) -> str | None:
    """The kind of value a property holds, for `TraceProperties` (None: missing)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list or an object"


class TraceProperties:
    """What the events of one trace may hold, one rule for both engines (a
    Spark frame holds each property as one typed column beside its own
    columns, and Spark resolves names without case):

    * a property name is an identifier (letters, digits, `_`, not first a
      digit) and not one of the trace frame's own columns (`RESERVED_NAMES`,
      any case);
    * two names of one trace never differ in case only (`Symbol` beside `symbol`);
    * a property holds one kind of value across the trace: numbers (integers
      and floats mix), strings, booleans, or lists and objects; missing (null)
      anywhere. With `mixed_kinds` (a spec's `MIXED_KINDS`) its kind may change
      from row to row."""

    def __init__(self, mixed_kinds: bool = False):
        self.names: dict[str, tuple[str, int]] = {}  # folded name -> (name as first written, item)
        self.kinds: dict[str, tuple[str, int]] = {}  # name -> (kind, item it was first seen at)
        self.mixed_kinds = mixed_kinds

    def problem(self, name: str, value: Any, index: int) -> str | None:
        if name not in self.kinds:
            if not isinstance(name, str) or not _NAME.match(name):
                return f"property name {name!r} is not an identifier (letters, digits and _, not first a digit)"
            folded = name.lower()
            if folded in RESERVED_NAMES:
                return f"property {name!r} is named like the trace frame's own column {folded!r}"
            first = self.names.get(folded)
            if first is not None:
                return f"properties {first[0]!r} (item {first[1]}) and {name!r} differ only in case"
            self.names[folded] = (name, index)
            self.kinds[name] = (None, index)
        kind = _value_type(value)
        seen, at = self.kinds[name]
        if kind is None or self.mixed_kinds:
            return None
        if seen is None:
            self.kinds[name] = (kind, index)
        elif seen != kind:
            return f"property {name!r} holds {kind} here but {seen} at item {at}; a property holds one kind of value"
        return None


def clock_times(trace: Trace) -> list[int]:
    """The clock after each item: an advance's or jump's target, an event's arrival time."""
    clock, times = trace.start_time, []
    for item in trace.items:
        if isinstance(item, (Advance, Jump)) or (isinstance(item, Arrive) and item.time is not None):
            clock = item.time
        times.append(clock)
    return times


# --------------------------------------------------------------------------- updates


@frozen
class Pane:
    """The bounds of a pane a window emits (eKuiper), in ms, as the engine reports
    them (which is not always the span of the pane's rows)."""

    start: int
    end: int


@frozen
class DerivedValues:
    """Rows a derived-value window posts instead of events (Esper `#size`, `#uni`)."""

    insert: tuple[Mapping[str, Any], ...] = field(default=(), converter=lambda rows: tuple(_freeze_props(r) for r in rows), hash=False)
    remove: tuple[Mapping[str, Any], ...] = field(default=(), converter=lambda rows: tuple(_freeze_props(r) for r in rows), hash=False)


SIDES = ("insert", "remove")


def _tuple(items) -> tuple:
    return items if type(items) is tuple else tuple(items)


_NO_SIDES: frozenset[str] = frozenset()


class Update(tuple):
    """What a subscriber receives for one unit of work (one event, one stop of a
    walk, one jump): inserted then removed events, each in posting order.

    `update` holds rows posted with the CCL `update` code, `error` a rejected
    item's message, `window` a pane's bounds, `values` derived rows. `unordered`
    is only set on expectations: sides whose order the engine leaves open.

    An immutable value. A tuple underneath, not an attrs class, because the
    oracle makes one per event: `Update.posted` is the driver's fast path."""

    __slots__ = ()
    FIELDS = ("after", "time", "insert", "remove", "update", "error", "window", "values", "unordered")

    def __new__(cls, after: int, time: int, insert=(), remove=(), update=(), error: str | None = None,
                window: Pane | None = None, values: DerivedValues | None = None, unordered=_NO_SIDES):
        return tuple.__new__(cls, (after, time, _tuple(insert), _tuple(remove), _tuple(update), error, window,
                                   values, unordered if type(unordered) is frozenset else frozenset(unordered)))

    @classmethod
    def posted(cls, after: int, time: int, insert: tuple[Event, ...], remove: tuple[Event, ...]) -> Update:
        """An update of events only, from tuples (no conversion)."""
        return tuple.__new__(cls, (after, time, insert, remove, (), None, None, None, _NO_SIDES))

    after: int = property(operator.itemgetter(0))  # type: ignore[assignment]
    time: int = property(operator.itemgetter(1))  # type: ignore[assignment]
    insert: tuple[Event, ...] = property(operator.itemgetter(2))  # type: ignore[assignment]
    remove: tuple[Event, ...] = property(operator.itemgetter(3))  # type: ignore[assignment]
    update: tuple[Event, ...] = property(operator.itemgetter(4))  # type: ignore[assignment]
    error: str | None = property(operator.itemgetter(5))  # type: ignore[assignment]
    window: Pane | None = property(operator.itemgetter(6))  # type: ignore[assignment]
    values: DerivedValues | None = property(operator.itemgetter(7))  # type: ignore[assignment]
    unordered: frozenset[str] = property(operator.itemgetter(8))  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return type(other) is Update and tuple.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = tuple.__hash__

    def __getnewargs__(self):
        return tuple(self)

    def __deepcopy__(self, memo) -> Update:
        return self

    def __repr__(self) -> str:
        shown = [f"after={self.after!r}", f"time={self.time!r}", f"insert={self.insert!r}", f"remove={self.remove!r}"]
        shown += [f"{name}={value!r}" for name, value in zip(self.FIELDS[4:], self[4:]) if value not in ((), None, _NO_SIDES)]
        return f"Update({', '.join(shown)})"


# --------------------------------------------------------------------------- window specs

def _positive(inst, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        what = "a time period" if attribute.name == "span" else "a size"
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be {what} above 0, got {value!r}")


def _not_negative(inst, attribute, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a time period of 0 or more, got {value!r}")


def _optional_int(inst, attribute, value):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be whole milliseconds, got {value!r}")


#: the fields of a trace item and of an update in the engines' tables (CORPUS.md, the
#: Spark schemas in the README): no property may be named like one, ignoring case,
#: and no window reads one. `id`, the event's id, is readable as a property.
RESERVED_NAMES = frozenset({
    "trace_id", "seq", "kind", "time", "op", "vars",
    "after", "phase", "ordinal", "side", "pos", "update_no", "pos_no", "slot", "slot_due", "values", "error",
})


def reserved_name_error(name: str) -> str | None:
    """Why a window cannot read property `name`, or None if it can."""
    if name.lower() in RESERVED_NAMES:
        return (f"property {name!r} is a reserved name (a field of the trace and update tables: "
                f"{', '.join(sorted(RESERVED_NAMES))}); a window cannot read it")
    return None


def _property_name(inst, attribute, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a property name, got {value!r}")
    if reserved_name_error(value):
        raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(value)}")


def _property_names(inst, attribute, value):
    if not value:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least one property name")
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidSpec(f"{type(inst).KIND}: {name!r} is not a property name")
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")
    if len(set(value)) != len(value):
        raise InvalidSpec(f"{type(inst).KIND}: a property is named twice in {list(value)}")


class Spec:
    """What every window spec declares besides its fields (class attributes,
    read once for both engines through `item_problem`):

    * `KIND`: the model's name of the kind (no engine's syntax: each dialect
      names and writes a kind its own way).
    * `OPCODES`: the operation codes an arriving event may carry (CCL's
      `update`, `delete`, ...); no code means `insert`.
    * `REJECTS_BAD_ITEMS`: what an item the window cannot take does. False (an
      Esper window): the trace is invalid, `InvalidTrace` naming the item. True
      (a CCL window): the item is rejected, an update with its `error`, the
      window unchanged, and the trace goes on.
    * `APPLIES_OPCODES`: the spec applies the operation codes itself (a keyed
      window), so the specs inside it see inserts only and do not narrow its
      `OPCODES` (`accepted_opcodes`).
    * `MIXED_KINDS`: a property may hold values of different kinds in different
      rows (eKuiper's schemaless streams: a string `size` in one row, a
      number in the next); otherwise a property holds one kind across a trace
      (`TraceProperties`), as engines with typed events require.

    A field holding a property name carries its role in its metadata
    (`role="key"` or `role="timestamp"`); `spec_keys` and `spec_timestamps`
    find them in any spec, nested ones included."""

    KIND: ClassVar[str]
    OPCODES: ClassVar[frozenset[str]] = frozenset({"insert"})
    REJECTS_BAD_ITEMS: ClassVar[bool] = False
    APPLIES_OPCODES: ClassVar[bool] = False
    MIXED_KINDS: ClassVar[bool] = False

    def kind_name(self) -> str:
        """The kind's name in reports (`spec_kind`): `KIND`, unless a kind is
        split further (a statement by its shape)."""
        return self.KIND


def _role(role: str) -> dict:
    return {"role": role}


@frozen
class Length(Spec):
    KIND: ClassVar[str] = "length"
    size: int = field(validator=_positive)


@frozen
class LengthBatch(Spec):
    KIND: ClassVar[str] = "length_batch"
    size: int = field(validator=_positive)


@frozen
class Time(Spec):
    KIND: ClassVar[str] = "time"
    span: int = field(validator=_positive)


@frozen
class ExtTimed(Spec):
    KIND: ClassVar[str] = "ext_timed"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_positive)


@frozen
class TimeBatch(Spec):
    """`reference`: the batch grid's reference point (None: the first arrival's
    time). `start_eager` implies `force_update` (Esper's TimeBatchFlags)."""

    KIND: ClassVar[str] = "time_batch"
    span: int = field(validator=_positive)
    reference: int | None = field(default=None, validator=_optional_int)
    force_update: bool = False
    start_eager: bool = False

    def __attrs_post_init__(self):
        if self.start_eager and not self.force_update:
            raise InvalidSpec("time_batch: START_EAGER implies FORCE_UPDATE; set force_update too")


@frozen
class TimeLengthBatch(Spec):
    """A batch released when it holds `size` events or `span` after the timer
    was armed, whichever comes first. `start_eager` implies `force_update`."""

    KIND: ClassVar[str] = "time_length_batch"
    span: int = field(validator=_positive)
    size: int = field(validator=_positive)
    force_update: bool = False
    start_eager: bool = False

    def __attrs_post_init__(self):
        if self.start_eager and not self.force_update:
            raise InvalidSpec("time_length_batch: START_EAGER implies FORCE_UPDATE; set force_update too")


@frozen
class ExtTimedBatch(Spec):
    KIND: ClassVar[str] = "ext_timed_batch"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_positive)
    reference: int | None = field(default=None, validator=_optional_int)


@frozen
class TimeAccum(Spec):
    """Events accumulate while they keep arriving; `span` after the last arrival
    they all leave at once."""

    KIND: ClassVar[str] = "time_accum"
    span: int = field(validator=_positive)


@frozen
class TimeOrder(Spec):
    """Events held until the clock passes their timestamp property plus `span`,
    released in timestamp order; `span` 0 holds each event until the clock
    reaches its timestamp (Esper's `#timetolive`, which is `#time_order(ts, 0)`)."""

    KIND: ClassVar[str] = "time_order"
    timestamp: str = field(validator=_property_name, metadata=_role("timestamp"))
    span: int = field(validator=_not_negative)


def _criteria(inst, attribute, value):
    if not value:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least one sort criterion")
    for criterion in value:
        if not isinstance(criterion, SortKey):
            raise InvalidSpec(f"{type(inst).KIND}: {criterion!r} is not a sort criterion")


@frozen
class SortKey:
    """One sort criterion: a property, ascending unless `descending`. Null sorts
    before every value ascending (after every value descending)."""

    property: str = field()
    descending: bool = False

    @property.validator
    def _check(self, attribute, value):
        if not isinstance(value, str) or not _NAME.match(value):
            raise InvalidSpec(f"sort: {attribute.name} must be a property name, got {value!r}")
        if reserved_name_error(value):
            raise InvalidSpec(f"sort: {reserved_name_error(value)}")


@frozen
class Sort(Spec):
    """The `size` best events by `criteria` (compared in order); among equal
    criteria the newer is better."""

    KIND: ClassVar[str] = "sort"
    size: int = field(validator=_positive)
    criteria: tuple[SortKey, ...] = field(converter=tuple, validator=_criteria, metadata=_role("sort"))


@frozen
class Rank(Spec):
    """The latest event per unique `keys`, and of those the `size` best by
    `criteria`."""

    KIND: ClassVar[str] = "rank"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    size: int = field(validator=_positive)
    criteria: tuple[SortKey, ...] = field(converter=tuple, validator=_criteria, metadata=_role("sort"))


@frozen
class KeepAll(Spec):
    KIND: ClassVar[str] = "keepall"


@frozen
class FirstLength(Spec):
    KIND: ClassVar[str] = "firstlength"
    size: int = field(validator=_positive)


@frozen
class FirstTime(Spec):
    KIND: ClassVar[str] = "firsttime"
    span: int = field(validator=_positive)


@frozen
class FirstEvent(Spec):
    KIND: ClassVar[str] = "firstevent"


@frozen
class LastEvent(Spec):
    KIND: ClassVar[str] = "lastevent"


@frozen
class Unique(Spec):
    KIND: ClassVar[str] = "unique"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))


@frozen
class FirstUnique(Spec):
    KIND: ClassVar[str] = "firstunique"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))


# --------------------------------------------------------------------------- expressions
# An expiry expression of an expression window (Esper `#expr`, `#expr_batch`),
# as a tree of the nodes below. Values follow Java's rules as Esper applies
# them; the windows' docstrings state the evaluation.

#: the built-in values an expiry expression reads (esper.md §4)
BUILTINS = ("current_count", "expired_count", "oldest_timestamp", "newest_timestamp")
#: the built-in events, read through a property (`newest_event.symbol`)
BUILTIN_EVENTS = ("oldest_event", "newest_event")
AGGREGATES = ("sum", "count", "avg", "min", "max")
ARITHMETIC = ("+", "-", "*", "/", "%")
COMPARISONS = ("=", "!=", "<", "<=", ">", ">=")
LOGICAL = ("and", "or")


def _literal_value(_inst, _attr, value):
    if value is not None and not isinstance(value, (bool, int, float, str)):
        raise InvalidSpec(f"a literal is a number, a string, a boolean or null, got {value!r}")
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidSpec(f"a literal number must be finite, got {value!r}")


def _one_of(options: tuple[str, ...], what: str):
    def check(_inst, _attr, value):
        if value not in options:
            raise InvalidSpec(f"{what} must be one of {', '.join(options)}, got {value!r}")
    return check


def _expression(_inst, attribute, value):
    if not isinstance(value, EXPRESSIONS):
        raise InvalidSpec(f"{attribute.name} must be an expression node, got {value!r}")


def _identifier(_inst, attribute, value):
    if not isinstance(value, str) or not _NAME.match(value):
        raise InvalidSpec(f"{attribute.name} must be a name, got {value!r}")


@frozen
class Literal:
    """A constant: an int, a float, a string, a boolean or None (null)."""

    value: Any = field(validator=_literal_value)

    def __eq__(self, other):  # 1 == 1.0 == True in Python; not here
        return type(other) is Literal and type(self.value) is type(other.value) and self.value == other.value

    def __hash__(self):
        return hash((type(self.value), self.value))


@frozen
class Name:
    """An identifier: the variable of that name when the trace declares one
    (Esper resolves declared variables first), else the property of the event
    the expression is evaluated for (null when there is none)."""

    name: str = field(validator=_identifier)


@frozen
class Builtin:
    """One of `BUILTINS`, the window's state at the evaluation."""

    name: str = field(validator=_one_of(BUILTINS, "a built-in value"))


@frozen
class EventProperty:
    """A property of a built-in event (`newest_event.symbol`); null when the
    window holds no such event."""

    event: str = field(validator=_one_of(BUILTIN_EVENTS, "a built-in event"))
    name: str = field(validator=_identifier)


@frozen
class Negate:
    """Arithmetic negation."""

    operand: Any = field(validator=_expression)


@frozen
class Not:
    """Logical negation (three-valued: not null is null)."""

    operand: Any = field(validator=_expression)


@frozen
class Binary:
    """`left op right`: arithmetic (`ARITHMETIC`), a comparison (`COMPARISONS`)
    or a logical connective (`LOGICAL`)."""

    op: str = field(validator=_one_of(ARITHMETIC + COMPARISONS + LOGICAL, "an operator"))
    left: Any = field(validator=_expression)
    right: Any = field(validator=_expression)


@frozen
class Aggregate:
    """An aggregation over the events the window holds (`sum(price)`);
    `argument` None is `count(*)`. The argument reads each held event's
    properties and literals only. `distinct`: over the distinct non-null
    values only (Esper's `count(distinct x)`)."""

    function: str = field(validator=_one_of(AGGREGATES, "an aggregation function"))
    argument: Any = field(default=None)
    distinct: bool = field(default=False, kw_only=True)

    @argument.validator
    def _check_argument(self, attribute, value):
        if value is None:
            if self.function != "count":
                raise InvalidSpec(f"{self.function}(*) is not an aggregation; only count(*) is")
            return
        _row_argument(self.function, attribute, value)

    @distinct.validator
    def _check_distinct(self, attribute, value):
        if value and self.argument is None:
            raise InvalidSpec("count(distinct *) is not an aggregation; distinct takes an expression")


def _row_argument(function: str, attribute, value) -> None:
    """An aggregate's argument reads one row: no aggregate in it (eKuiper:
    "aggregate argument is not allowed"), no Esper built-in."""
    _expression(None, attribute, value)
    for node in expression_nodes(value):
        if isinstance(node, GROUP_NODES + (Builtin, EventProperty)):
            raise InvalidSpec(f"the argument of {function} may read the events' properties and literals only")


#: functions of a query over a pane (eKuiper) that are not aggregates: the
#: pane's bounds, the output row's number, and the state of a sliding
#: window's trigger condition (the row time and count of its last hit)
CALLS = ("window_start", "window_end", "row_number", "last_hit_time", "last_hit_count", "event_time")


@frozen
class Call:
    """A function of no arguments (`CALLS`): `window_start()`."""

    function: str = field(validator=_one_of(CALLS, "a function"))


@frozen
class Collect:
    """`collect(*)`: the rows of a group, each an object of its fields (`argument`
    None), or `collect(x)`: the values of `x`, one per row, nulls included."""

    argument: Any = field(default=None)

    @argument.validator
    def _check_argument(self, attribute, value):
        if value is not None:
            _row_argument("collect", attribute, value)


@frozen
class Deduplicate:
    """eKuiper's `deduplicate(key, all)` over a group's rows, each an object of
    its fields, told apart by the text of `key`'s value (Go's `%v`: 1 and 1.0
    and "1" are one key, null is "<nil>"). `all`: the rows whose key was not
    seen before, in order (a list); else the group's last row if its key was
    not seen before it, or null (the output field then missing: the sink gets
    an empty object), as eKuiper's `dedup` (common_array_funcs.go)."""

    key: Any = field()
    all: bool = field(validator=attrs.validators.instance_of(bool))

    @key.validator
    def _check_key(self, attribute, value):
        _row_argument("deduplicate", attribute, value)


@frozen
class Index:
    """`operand[index]`: an element of a list (null when out of range or not a list)."""

    operand: Any = field(validator=_expression)
    index: int = field(validator=attrs.validators.instance_of(int))


@frozen
class Member:
    """`operand->name`: a field of an object (null when missing or not an object)."""

    operand: Any = field(validator=_expression)
    name: str = field(validator=_identifier)


EXPRESSIONS = (Literal, Name, Builtin, EventProperty, Negate, Not, Binary, Aggregate, Call, Collect, Deduplicate, Index,
               Member)
Expression = Union[Literal, Name, Builtin, EventProperty, Negate, Not, Binary, Aggregate, Call, Collect, Deduplicate,
                   Index, Member]
#: nodes that aggregate over a group of rows
GROUP_NODES = (Aggregate, Collect, Deduplicate)


def expression_nodes(node: Expression) -> tuple[Expression, ...]:
    """`node` and every node under it, depth first, parents first."""
    children = {Negate: ("operand",), Not: ("operand",), Binary: ("left", "right"), Aggregate: ("argument",),
                Collect: ("argument",), Deduplicate: ("key",), Index: ("operand",), Member: ("operand",)}
    found = [node]
    for name in children.get(type(node), ()):
        child = getattr(node, name)
        if child is not None:
            found += expression_nodes(child)
    return tuple(found)


def expression_names(node: Expression) -> tuple[str, ...]:
    """The identifiers an expression reads (`Name`s and built-in events'
    properties), each once: properties, or variables the trace declares."""
    names = [n.name for n in expression_nodes(node) if isinstance(n, (Name, EventProperty))]
    return tuple(dict.fromkeys(names))


def _expiry(inst, attribute, value):
    _expression(inst, attribute, value)
    for name in expression_names(value):
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")


@frozen
class Expr(Spec):
    """Events held while `expiry`, evaluated for the oldest, holds (Esper `#expr`)."""

    KIND: ClassVar[str] = "expr"
    expiry: Expression = field(validator=_expiry, metadata=_role("expression"))


@frozen
class ExprBatch(Spec):
    """Events buffered until `expiry`, evaluated for each arrival, holds; then
    released as a batch, with the triggering event or (not `include_trigger`)
    without it (Esper `#expr_batch`)."""

    KIND: ClassVar[str] = "expr_batch"
    expiry: Expression = field(validator=_expiry, metadata=_role("expression"))
    include_trigger: bool = True


DataWindow = Union[
    Length, LengthBatch, Time, ExtTimed, TimeBatch, TimeLengthBatch, ExtTimedBatch, TimeAccum, TimeOrder, Sort, Rank, KeepAll,
    FirstLength, FirstTime, FirstEvent, LastEvent, Unique, FirstUnique, Expr, ExprBatch,
]
DATA_WINDOWS: tuple[type, ...] = DataWindow.__args__  # type: ignore[attr-defined]
BATCH_WINDOWS = (LengthBatch, TimeBatch, TimeLengthBatch, ExtTimedBatch, ExprBatch)
#: data windows that cannot be members of an intersection or union here (an
#: expression window re-evaluates when another member removes an event)
NOT_MEMBERS = (Expr, ExprBatch)


# --------------------------------------------------------------------------- retention policies
# CCL's count and time retention policies whose rule no other kind has (apama-ccl.md
# §2.3, §2.4, §2.6). The policies that are an existing kind's rule map to that kind:
# `KEEP n ROWS` is `Length`, `KEEP t` is `Time`, `KEEP ALL` is `KeepAll`.


@frozen
class SlackLength(Spec):
    """The last `size` rows, cleaned `slack` at a time: when an insert makes the
    window hold `size + slack` rows, the `slack` oldest leave. Slack 1 is
    `Length`'s rule, so `slack` is 2 or more here (one spec per rule)."""

    KIND: ClassVar[str] = "length_slack"
    size: int = field(validator=_positive)
    slack: int = field()

    @slack.validator
    def _check_slack(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"length_slack: slack must be a size of 2 or more (slack 1 is the length window), got {value!r}")


@frozen
class JumpingLength(Spec):
    """At most `size` rows: an insert that would make `size + 1` deletes the
    `size` held before it and stays, alone."""

    KIND: ClassVar[str] = "jumping_length"
    size: int = field(validator=_positive)


@frozen
class JumpingTime(Spec):
    """Rows held until the end of the `span`-long interval they arrived in;
    intervals are `[k * span, (k + 1) * span)` of the clock, every row held
    leaving together at an interval's end."""

    KIND: ClassVar[str] = "jumping_time"
    span: int = field(validator=_positive)


RetentionWindow = Union[SlackLength, JumpingLength, JumpingTime]
RETENTION_WINDOWS: tuple[type, ...] = RetentionWindow.__args__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- lot windows
# Apama's stream-query windows whose rule no other kind has (apama-ccl.md §1.5 to
# §1.8): batched entry, and a uniqueness applied after the rest of the window. A
# form that is an existing kind's rule maps to that kind (`oracle.dialects.apama`).
# Their rules: `oracle.windows.lots`; one activation posts one lot, the change of
# what the window shows, and nothing when it did not change.


def _optional_positive(inst, attribute, value):
    if value is not None:
        _positive(inst, attribute, value)


def _optional_names(inst, attribute, value):
    if value:
        _property_names(inst, attribute, value)


@frozen
class BatchedTime(Spec):
    """Items enter in batches on the grid `creation + k * period` (k >= 0): an
    item arriving on the grid at once, any other at the next grid point; each
    leaves at the first grid point at or after its arrival + `span`, so one
    that would leave where it would enter never enters. With `size`, the
    newest `size` of a partition stay; with `unique`, only the latest item per
    key of a partition shows (after the rest). `partition` keys partitions
    sharing the one grid (not a `GroupWin`: a group's copy would start its
    own grid)."""

    KIND: ClassVar[str] = "batched_time"
    span: int = field(validator=_positive)
    period: int = field()
    size: int | None = field(default=None, validator=_optional_positive)
    unique: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))
    partition: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))

    @period.validator
    def _check_period(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"batched_time: period must be a time period of 2 ms or more (a 1 ms grid is the "
                              f"sliding window's rule), got {value!r}")

    def __attrs_post_init__(self):
        if self.partition and self.size is None and not self.unique:
            raise InvalidSpec("batched_time: a partition changes nothing without a size or a unique key; leave it out")


@frozen
class BatchedLength(Spec):
    """Items enter `batch` at a time, when the `batch`-th item since the last
    batch arrives; the newest `size` stay, so a batch's items that newer ones
    of the same batch displace never enter. With `unique`, only the latest item
    per key shows (after the rest). A batch of 1 is the sliding rule, and
    `size == batch` without `unique` is `LengthBatch`'s rule."""

    KIND: ClassVar[str] = "batched_length"
    size: int = field(validator=_positive)
    batch: int = field()
    unique: tuple[str, ...] = field(default=(), converter=tuple, validator=_optional_names, metadata=_role("key"))

    @batch.validator
    def _check_batch(self, attribute, value):
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            raise InvalidSpec(f"batched_length: batch must be a size of 2 or more (a batch of 1 is the sliding "
                              f"rule), got {value!r}")

    def __attrs_post_init__(self):
        if not self.unique and self.batch == self.size:
            raise InvalidSpec("batched_length: a batch as large as the size, without a unique key, is the "
                              "length_batch rule")


@frozen
class LengthUnique(Spec):
    """The newest `size` items (of those that arrived in the last `span` ms,
    with a span), of which only the latest per `unique` key shows: a hidden
    item still holds one of the `size` places."""

    KIND: ClassVar[str] = "length_unique"
    size: int = field(validator=_positive)
    unique: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    span: int | None = field(default=None, validator=_optional_positive)


LotWindow = Union[BatchedTime, BatchedLength, LengthUnique]
LOT_WINDOWS: tuple[type, ...] = LotWindow.__args__  # type: ignore[attr-defined]


def _members(inst, attribute, value):
    if len(value) < 2:
        raise InvalidSpec(f"{type(inst).KIND}: needs at least two data windows")
    for member in value:
        if not isinstance(member, DATA_WINDOWS):
            raise InvalidSpec(f"{type(inst).KIND}: {member!r} cannot be a member")
        if isinstance(member, NOT_MEMBERS):
            raise UnsupportedWindow(f"{type(inst).KIND}: an {member.KIND} window as a member is not supported "
                                    "(it re-evaluates its expression when another member removes an event)")


@frozen
class Intersection(Spec):
    """Several data windows on one stream, an event held while every member holds it.

    `stale_time_timers`: when another member removes a `#time` member's events,
    True (Esper's `TimeWindowView`) leaves the `#time` member's timer where it
    was, to fire at that stale time; False (Apama's lots) moves it to the
    oldest event still held. It decides only which sub-window of a group posts
    first in one jump."""

    KIND: ClassVar[str] = "intersection"
    members: tuple[DataWindow, ...] = field(converter=tuple, validator=_members)
    stale_time_timers: bool = field(default=True, validator=attrs.validators.instance_of(bool), kw_only=True)


@frozen
class RetainUnion(Spec):
    """Several data windows on one stream, an event held while any member holds it."""

    KIND: ClassVar[str] = "retain_union"
    members: tuple[DataWindow, ...] = field(converter=tuple, validator=_members)


#: lot windows a group may hold (a `BatchedTime` keeps its partitions itself: they share its grid)
GROUPED_LOT_WINDOWS: tuple[type, ...] = (BatchedLength, LengthUnique)


def _grouped(inst, attribute, value):
    if not isinstance(value, DATA_WINDOWS + RETENTION_WINDOWS + GROUPED_LOT_WINDOWS + (Intersection, RetainUnion)):
        raise InvalidSpec(f"groupwin: cannot group {value!r}")


@frozen
class GroupWin(Spec):
    """A complete copy of `window` per distinct value of `keys`, created on the
    key's first event (Esper `#groupwin`)."""

    KIND: ClassVar[str] = "groupwin"
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    window: DataWindow | RetentionWindow | Intersection | RetainUnion = field(validator=_grouped)


# --------------------------------------------------------------------------- keyed windows

#: the retention policies a keyed window applies to its rows, and those it may apply per group
KEYED_POLICIES: tuple[type, ...] = (KeepAll, Length, SlackLength, JumpingLength, Time, JumpingTime)
KEYED_GROUP_POLICIES: tuple[type, ...] = (Length, SlackLength, JumpingLength)


def _keyed_retention(inst, attribute, value):
    inner = value.window if isinstance(value, GroupWin) else value
    allowed = KEYED_GROUP_POLICIES if isinstance(value, GroupWin) else KEYED_POLICIES
    if not isinstance(inner, allowed):
        what = "per group" if isinstance(value, GroupWin) else "to its rows"
        raise InvalidSpec(f"keyed: applies a {', '.join(c.KIND for c in allowed)} policy {what}, not {value!r}")


@frozen
class Keyed(Spec):
    """A store of rows keyed by the values of `keys` (a primary key), changed
    by the operation codes of arriving events, with a retention policy over
    its rows (`retention`: keep-all, a count or time policy, or a count policy
    per group as a `GroupWin`). Its rules: `oracle.windows.keyed`. It applies
    the operation codes itself (`APPLIES_OPCODES`): its policy sees inserts only."""

    KIND: ClassVar[str] = "keyed"
    OPCODES: ClassVar[frozenset[str]] = frozenset(OPCODES)  # the module's OPCODES: every code
    REJECTS_BAD_ITEMS: ClassVar[bool] = True
    APPLIES_OPCODES: ClassVar[bool] = True
    keys: tuple[str, ...] = field(converter=tuple, validator=_property_names, metadata=_role("key"))
    retention: Any = field(factory=KeepAll, validator=_keyed_retention)


# --------------------------------------------------------------------------- derived-value windows


def _source(inst, attribute, value):
    if value is not None and not isinstance(value, DATA_WINDOWS + (Intersection, RetainUnion)):
        what = "a grouped window" if isinstance(value, GroupWin) else repr(value)
        raise InvalidSpec(f"{type(inst).KIND}: its source must be a data window, an intersection or a union "
                          f"(or none: the stream itself), not {what}")


def _extra_names(inst, attribute, value):
    for name in value:
        if not isinstance(name, str) or not _NAME.match(name):
            raise InvalidSpec(f"{type(inst).KIND}: additional property {name!r} is not a property name")
        if reserved_name_error(name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(name)}")
        clash = next((f for f in type(inst).CHECKED_FIELDS if f.lower() == name.lower()), None)
        if clash is not None:
            raise InvalidSpec(f"{type(inst).KIND}: the additional property {name!r} overlaps the field {clash!r} "
                              "that the window posts")


class Derived(Spec):
    """What the derived-value windows share (esper.md §7): `extra`, additional
    properties copied from the last new event into every posted row (each
    named once: a name written twice is one field), `all_properties` (Esper's
    `*` among them: every property of that event), and `source`, the window
    whose insert and remove streams feed the statistics (None: the stream
    itself, every event new and none removed).

    `FIELDS`: the fields of a posted row, in Esper's order. `CHECKED_FIELDS`:
    those an additional property may not be named like, ignoring case (Esper's
    `addCheckDupProperties`; `#linest` checks only two of its fields, and an
    additional property named like another one replaces it in the row).
    `VALUES`: the names of the fields holding the statistic's properties."""

    FIELDS: ClassVar[tuple[str, ...]]
    CHECKED_FIELDS: ClassVar[tuple[str, ...]]
    VALUES: ClassVar[tuple[str, ...]]

    def values(self) -> tuple[str, ...]:
        """The statistic's properties, in parameter order."""
        return tuple(getattr(self, name) for name in self.VALUES)


def _extra_field():
    return field(default=(), converter=lambda names: tuple(dict.fromkeys(names)), validator=_extra_names,
                 metadata=_role("extra"))


def _value_name(inst, attribute, value):
    _property_name(inst, attribute, value)
    if value == "id":
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be a numeric property; `id` is the event's id, a string")


def _value_field():
    return field(validator=_value_name, metadata=_role("value"))


def _source_field():
    return field(default=None, validator=_source, kw_only=True)


@frozen
class Size(Derived):
    """`#size([props])`: the number of events in the source, posted when it changes."""

    KIND: ClassVar[str] = "size"
    FIELDS: ClassVar[tuple[str, ...]] = ("size",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Uni(Derived):
    """`#uni(x[, props])`: univariate statistics of `x`."""

    KIND: ClassVar[str] = "uni"
    FIELDS: ClassVar[tuple[str, ...]] = ("datapoints", "total", "average", "variance", "stddev", "stddevpa")
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x",)
    x: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Linest(Derived):
    """`#linest(x, y[, props])`: the regression of `y` on `x` (the slope is
    d(y)/d(x); esper.md §7)."""

    KIND: ClassVar[str] = "linest"
    FIELDS: ClassVar[tuple[str, ...]] = (
        "slope", "YIntercept", "XAverage", "XStandardDeviationPop", "XStandardDeviationSample", "XSum", "XVariance",
        "YAverage", "YStandardDeviationPop", "YStandardDeviationSample", "YSum", "YVariance", "dataPoints", "n",
        "sumX", "sumXSq", "sumXY", "sumY", "sumYSq")
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = ("slope", "YIntercept")
    VALUES: ClassVar[tuple[str, ...]] = ("x", "y")
    x: str = _value_field()
    y: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class Correl(Derived):
    """`#correl(x, y[, props])`: the correlation of `x` and `y`."""

    KIND: ClassVar[str] = "correl"
    FIELDS: ClassVar[tuple[str, ...]] = ("correlation",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x", "y")
    x: str = _value_field()
    y: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


@frozen
class WeightedAvg(Derived):
    """`#weighted_avg(x, weight[, props])`: sum(x * weight) / sum(weight)."""

    KIND: ClassVar[str] = "weighted_avg"
    FIELDS: ClassVar[tuple[str, ...]] = ("average",)
    CHECKED_FIELDS: ClassVar[tuple[str, ...]] = FIELDS
    VALUES: ClassVar[tuple[str, ...]] = ("x", "weight")
    x: str = _value_field()
    weight: str = _value_field()
    extra: tuple[str, ...] = _extra_field()
    all_properties: bool = False
    source: Any = _source_field()


DerivedWindow = Union[Size, Uni, Linest, Correl, WeightedAvg]
DERIVED_WINDOWS: tuple[type, ...] = DerivedWindow.__args__  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- pane windows
# Windows that emit panes: each firing posts the rows of one pane with its
# bounds (eKuiper's TUMBLINGWINDOW, HOPPINGWINDOW, SLIDINGWINDOW, SESSIONWINDOW,
# COUNTWINDOW; kuiper.md). The rules are in oracle/windows/panes.py.

#: the units a pane window's periods are written in, ms each: the unit decides
#: how the first pane end is aligned (to the minute for seconds, the hour for
#: minutes, the local day for hours; kuiper.md §2)
MILLISECOND, SECOND, MINUTE, HOUR, DAY = 1, 1000, 60_000, 3_600_000, 86_400_000
PERIOD_UNITS = (MILLISECOND, SECOND, MINUTE, HOUR, DAY)


def _unit(inst, attribute, value):
    if value not in PERIOD_UNITS or isinstance(value, bool):
        raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} must be one of {', '.join(map(str, PERIOD_UNITS))} ms, "
                          f"got {value!r}")


def _optional_condition(inst, attribute, value):
    if value is None:
        return
    _expression(inst, attribute, value)
    for node in expression_nodes(value):
        if isinstance(node, GROUP_NODES):
            raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} is evaluated for one row; it cannot aggregate")
        if isinstance(node, (Builtin, EventProperty)):
            raise InvalidSpec(f"{type(inst).KIND}: {attribute.name} cannot read {node!r}")
        if isinstance(node, Name) and reserved_name_error(node.name):
            raise InvalidSpec(f"{type(inst).KIND}: {reserved_name_error(node.name)}")


def _optional_timestamp(inst, attribute, value):
    if value is not None:
        _property_name(inst, attribute, value)


def _time_zone(inst, attribute, value):
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    if not isinstance(value, str) or not value:
        raise InvalidSpec(f"{type(inst).KIND}: the time zone must be an IANA zone name, got {value!r}")
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidSpec(f"{type(inst).KIND}: unknown time zone {value!r} (an IANA name such as UTC or "
                          "Asia/Shanghai)") from None


class PaneWindow(Spec):
    """What the timed pane windows share besides their periods:

    * `unit`: the unit the periods are written in (`PERIOD_UNITS`); every
      period is a whole number of it, and it decides the alignment.
    * `filter`: a condition a row must meet to enter the window at all
      (eKuiper's `FILTER(WHERE ...)`), or None.
    * `timestamp`: None for processing time (a row's time is the clock at its
      arrival); else event time, the property holding each row's time in ms,
      with `late_tolerance`, how far the watermark trails the largest event
      time seen.
    * `time_zone`: the IANA zone whose local hours and days align `HOUR` and
      `DAY` periods.

    eKuiper's streams are schemaless JSON: `MIXED_KINDS`."""

    MIXED_KINDS: ClassVar[bool] = True
    PERIODS: ClassVar[tuple[str, ...]]

    def periods(self) -> tuple[int, ...]:
        return tuple(getattr(self, name) for name in self.PERIODS)

    @property
    def event_time(self) -> bool:
        return self.timestamp is not None

    def _check_periods(self) -> None:
        for name in self.PERIODS:
            value = getattr(self, name)
            if value % self.unit:
                raise InvalidSpec(f"{self.KIND}: {name} {value} ms is not a whole number of the unit ({self.unit} ms)")
        if self.timestamp is None and self.late_tolerance:
            raise InvalidSpec(f"{self.KIND}: a late tolerance needs event time (a timestamp property)")


def _filter_field():
    return field(default=None, validator=_optional_condition, kw_only=True, metadata=_role("expression"))


def _timestamp_field():
    return field(default=None, validator=_optional_timestamp, kw_only=True, metadata=_role("timestamp"))


def _tolerance_field():
    return field(default=0, validator=_not_negative, kw_only=True)


def _zone_field():
    return field(default="UTC", validator=_time_zone, kw_only=True)


@frozen
class Tumbling(PaneWindow):
    """Panes of `size` one after the other, each emitted at its end."""

    KIND: ClassVar[str] = "tumbling"
    PERIODS: ClassVar[tuple[str, ...]] = ("size",)
    size: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Hopping(PaneWindow):
    """Panes of `size` emitted every `hop` (a `hop` larger than `size` skips rows)."""

    KIND: ClassVar[str] = "hopping"
    PERIODS: ClassVar[tuple[str, ...]] = ("size", "hop")
    size: int = field(validator=_positive)
    hop: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Sliding(PaneWindow):
    """A pane per triggering row: the rows of the `size` before it, and with a
    `delay` the rows of the `delay` after it; `trigger` (eKuiper's `OVER (WHEN
    cond)`) decides which rows trigger (None: every row)."""

    KIND: ClassVar[str] = "sliding"
    PERIODS: ClassVar[tuple[str, ...]] = ("size", "delay")
    size: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    delay: int = field(default=0, validator=_not_negative)
    trigger: Any = field(default=None, validator=_optional_condition, kw_only=True, metadata=_role("expression"))
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class Session(PaneWindow):
    """Rows closer than `timeout` to the one before form a session, cut at
    aligned checks every `max_duration`."""

    KIND: ClassVar[str] = "session"
    PERIODS: ClassVar[tuple[str, ...]] = ("max_duration", "timeout")
    max_duration: int = field(validator=_positive)
    timeout: int = field(validator=_positive)
    unit: int = field(default=SECOND, validator=_unit)
    filter: Any = _filter_field()
    timestamp: str | None = _timestamp_field()
    late_tolerance: int = _tolerance_field()
    time_zone: str = _zone_field()

    def __attrs_post_init__(self):
        self._check_periods()


@frozen
class CountPanes(Spec):
    """Every `every`-th row, a pane of the last `size` rows if that many are held
    (eKuiper's `COUNTWINDOW(size[, every])`); no time involved."""

    KIND: ClassVar[str] = "count"
    MIXED_KINDS: ClassVar[bool] = True  # eKuiper's schemaless streams
    size: int = field(validator=_positive)
    every: int = field(validator=_positive)
    filter: Any = _filter_field()

    def __attrs_post_init__(self):
        if self.every > self.size:
            raise InvalidSpec(f"count: the interval {self.every} must not be larger than the size {self.size}")

    #: a count window has no clock of its own: processing time, no zone (declared,
    #: so every pane window answers the same questions)
    event_time: ClassVar[bool] = False
    timestamp: ClassVar[None] = None
    late_tolerance: ClassVar[int] = 0
    time_zone: ClassVar[str] = "UTC"


TIMED_PANE_WINDOWS: tuple[type, ...] = (Tumbling, Hopping, Sliding, Session)
PANE_WINDOWS: tuple[type, ...] = TIMED_PANE_WINDOWS + (CountPanes,)

# --------------------------------------------------------------------------- queries over panes


def _optional_expression(inst, attribute, value):
    if value is not None:
        _expression(inst, attribute, value)


@frozen
class SelectItem:
    """One item of a query's select list: an expression with an optional
    alias; `expression` None is `*` (every field of the row)."""

    expression: Any = field(default=None, validator=_optional_expression)
    alias: str | None = field(default=None)

    @alias.validator
    def _check_alias(self, attribute, value):
        if value is not None:
            _identifier(self, attribute, value)
            if self.expression is None:
                raise InvalidSpec("`*` takes no alias")


@frozen
class OrderKey:
    """One ORDER BY criterion: an expression, ascending unless `descending`."""

    expression: Any = field(validator=_expression)
    descending: bool = False


def _select(inst, attribute, value):
    if not value:
        raise InvalidSpec("query: the select list is empty")
    for item in value:
        if not isinstance(item, SelectItem):
            raise InvalidSpec(f"query: {item!r} is not a select item")


def _pane_window(inst, attribute, value):
    if not isinstance(value, PANE_WINDOWS):
        raise InvalidSpec(f"query: {value!r} is not a window that emits panes")


def _where_condition(inst, attribute, value):
    if value is None:
        return
    _expression(inst, attribute, value)
    if any(isinstance(node, GROUP_NODES) for node in expression_nodes(value)) and inst.where_in_window:
        raise InvalidSpec(f"query: {WHERE_AGGREGATE_IN_WINDOW}")


#: why an aggregate cannot stand in a WHERE that enters the window
WHERE_AGGREGATE_IN_WINDOW = (
    "an aggregate in WHERE is computed over each pane after the window, but over a processing-time "
    "TUMBLINGWINDOW, HOPPINGWINDOW or SESSIONWINDOW eKuiper's planner pushes WHERE into the window's own "
    "filter, where the aggregate has no value yet (every row would drop); not supported")


def _group_keys(inst, attribute, value):
    for key in value:
        _expression(inst, attribute, key)
        if any(isinstance(node, GROUP_NODES + (Call,)) for node in expression_nodes(key)):
            raise InvalidSpec("query: a GROUP BY key reads the row's fields only")


def _orders(inst, attribute, value):
    for key in value:
        if not isinstance(key, OrderKey):
            raise InvalidSpec(f"query: {key!r} is not an ORDER BY criterion")


@frozen
class Query(Spec):
    """A statement over the panes of `window`: each pane's rows (the WHERE
    condition applied), grouped by `keys` when the query aggregates, filtered
    by `having`, sorted by `order`, projected by `select`. `stream` is the
    name of the one stream read."""

    KIND: ClassVar[str] = "query"
    MIXED_KINDS: ClassVar[bool] = True  # eKuiper's schemaless streams
    select: tuple[SelectItem, ...] = field(converter=tuple, validator=_select, metadata=_role("expression"))
    stream: str = field(validator=_identifier)
    window: Any = field(validator=_pane_window)
    where: Any = field(default=None, validator=_where_condition, metadata=_role("expression"))
    keys: tuple[Any, ...] = field(default=(), converter=tuple, validator=_group_keys, metadata=_role("expression"))
    having: Any = field(default=None, validator=_optional_expression, metadata=_role("expression"))
    order: tuple[OrderKey, ...] = field(default=(), converter=tuple, validator=_orders, metadata=_role("expression"))

    @property
    def where_in_window(self) -> bool:
        """Whether WHERE filters rows as they enter the window: eKuiper's
        planner pushes it into the window's own filter for processing-time
        tumbling, hopping and session windows (windowPlan.go
        `PushDownPredicate`); for count and sliding windows and every
        event-time window it stays after the window and filters each pane's
        rows, an aggregate in it reading the whole pane (`AggFuncPlan`, below
        the filter: `a > avg(a)` keeps the pane's rows above its mean)."""
        return (self.where is not None and not self.window.event_time
                and isinstance(self.window, (Tumbling, Hopping, Session)))

    @property
    def aggregates(self) -> bool:
        """Whether the query groups rows: it has GROUP BY keys, or an aggregate
        in its select list or HAVING."""
        if self.keys:
            return True
        exprs = [item.expression for item in self.select if item.expression is not None]
        exprs += [self.having] if self.having is not None else []
        return any(isinstance(node, GROUP_NODES) for e in exprs for node in expression_nodes(e))

    @property
    def field_names(self) -> tuple[str | None, ...]:
        """Each select item's output field (None for `*`): its alias, else the
        column's name, the function's name, `collect`, else `kuiper_field_<i>`
        (i counting the unnamed items), as eKuiper names them."""
        names: list[str | None] = []
        unnamed = 0
        for item in self.select:
            node = item.expression
            if node is None:
                names.append(None)
            elif item.alias is not None:
                names.append(item.alias)
            elif isinstance(node, Name):
                names.append(node.name)
            elif isinstance(node, (Aggregate, Call)):
                names.append(node.function)
            elif isinstance(node, Collect):
                names.append("collect")
            elif isinstance(node, Deduplicate):
                names.append("deduplicate")
            else:
                names.append(f"{UNNAMED_FIELD}{unnamed}")
                unnamed += 1
        return tuple(names)


#: the prefix of an unnamed select item's output field (`Query.field_names`)
UNNAMED_FIELD = "kuiper_field_"

WindowSpec = Union[DataWindow, RetentionWindow, LotWindow, Intersection, RetainUnion, GroupWin, Keyed, DerivedWindow,
                   Tumbling, Hopping, Sliding, Session, CountPanes, Query]
WINDOW_SPECS: tuple[type, ...] = (DATA_WINDOWS + RETENTION_WINDOWS + LOT_WINDOWS
                                  + (Intersection, RetainUnion, GroupWin, Keyed) + DERIVED_WINDOWS + PANE_WINDOWS + (Query,))


def spec_kind(spec: WindowSpec) -> str:
    """A short name for reports: `length`, `groupwin/time_batch`, `intersection`."""
    if isinstance(spec, GroupWin):
        return f"groupwin/{spec_kind(spec.window)}"
    if isinstance(spec, Keyed):
        return f"keyed/{spec_kind(spec.retention)}"
    if isinstance(spec, Query):
        return f"query/{spec_kind(spec.window)}"
    return spec.kind_name()


def nested_specs(spec: WindowSpec) -> tuple[WindowSpec, ...]:
    """`spec` and every spec inside it (a grouped window, members), outermost first."""
    found = [spec]
    for value in attrs.astuple(spec, recurse=False):
        for inner in value if isinstance(value, tuple) else (value,):
            if isinstance(inner, Spec):
                found += nested_specs(inner)
    return tuple(found)


def _expressions_in(value) -> list:
    """The expressions a field holds: one, none (None), a tuple of them, or of
    items that hold one (a query's `SelectItem`s and `OrderKey`s)."""
    found = []
    for item in value if isinstance(value, tuple) else (value,):
        item = getattr(item, "expression", item)
        if item is not None:
            found.append(item)
    return found


def _with_role(spec: WindowSpec, role: str) -> tuple[str, ...]:
    names: list[str] = []
    for inner in nested_specs(spec):
        for attribute in attrs.fields(type(inner)):
            if attribute.metadata.get("role") == "expression" and role == "expression":
                for expression in _expressions_in(getattr(inner, attribute.name)):
                    names += expression_names(expression)
            elif attribute.metadata.get("role") == role:
                value = getattr(inner, attribute.name)
                for item in value if isinstance(value, tuple) else (value,):
                    if item is not None:
                        names.append(item.property if isinstance(item, SortKey) else item)
    return tuple(dict.fromkeys(names))


def spec_keys(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` keys events by (a grouping, a unique window's
    keys), outermost first, each once."""
    return _with_role(spec, "key")


def spec_timestamps(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` reads as event timestamps, each once."""
    return _with_role(spec, "timestamp")


def spec_expression_names(spec: WindowSpec) -> tuple[str, ...]:
    """The identifiers `spec`'s expressions read, each once: event properties,
    or variables where the trace declares them."""
    return _with_role(spec, "expression")


def spec_sort_properties(spec: WindowSpec) -> tuple[str, ...]:
    """The properties `spec` sorts events by, each once."""
    return _with_role(spec, "sort")


def spec_values(spec: WindowSpec) -> tuple[str, ...]:
    """The numeric properties a derived-value window computes its statistic of,
    each once."""
    return _with_role(spec, "value")


def spec_extras(spec: WindowSpec) -> tuple[str, ...]:
    """The additional properties a derived-value window copies into its rows
    (without `*`), each once."""
    return _with_role(spec, "extra")


def accepted_opcodes(spec: WindowSpec) -> frozenset[str]:
    """The operation codes `spec` takes: those every window inside it takes,
    except inside a spec that applies the codes itself (`APPLIES_OPCODES`, a
    keyed window: what it wraps sees inserts only), which takes its own."""
    if type(spec).APPLIES_OPCODES:
        return type(spec).OPCODES
    return frozenset.intersection(type(spec).OPCODES, *(accepted_opcodes(inner) for inner in _children(spec)))


def _children(spec: WindowSpec) -> tuple[WindowSpec, ...]:
    """The specs directly inside `spec` (a grouped window, members, a source)."""
    found = []
    for value in attrs.astuple(spec, recurse=False):
        found += [inner for inner in (value if isinstance(value, tuple) else (value,)) if isinstance(inner, Spec)]
    return tuple(found)


def rejects_bad_items(spec: WindowSpec) -> bool:
    """Whether an item `spec` cannot take is rejected (an error update, the trace
    goes on) rather than making the trace invalid (`Spec.REJECTS_BAD_ITEMS`)."""
    return any(type(inner).REJECTS_BAD_ITEMS for inner in nested_specs(spec))


def item_problem(spec: WindowSpec, item: TraceItem) -> str | None:
    """Why `spec` cannot take `item` (an operation code it does not accept), or
    None. What follows is the spec's rule (`Spec.REJECTS_BAD_ITEMS`)."""
    if type(item) is Arrive and item.op is not None and item.op not in accepted_opcodes(spec):
        return f"operation code {item.op!r} is not supported by this window"
    return None


def is_float_equal(a: Any, b: Any) -> bool:
    """Equality of property values under CORPUS.md: floats within relative 1e-9, NaN equal to NaN."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) or isinstance(b, bool):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=0.0) or a == b
    return a == b

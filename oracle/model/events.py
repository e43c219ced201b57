"""Events, traces and updates: `Event`, the trace items (`Arrive`, `Advance`,
`Jump`, `SetVariables`), `Trace` and its checks (`check_trace`,
`TraceProperties`), the operation codes (`OPCODES`), and what a subscriber
receives (`Update`, with a pane's bounds `Pane` and derived rows
`DerivedValues`)."""

from __future__ import annotations

import operator
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Union

import attrs
from attrs import field, frozen

from oracle.errors import InvalidTrace
from oracle.model.base import _NAME, RESERVED_NAMES


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
    check = TraceCheck(trace.start_time, trace.variables, mixed_kinds)
    for index, item in enumerate(trace.items):
        check.item(index, item)


class TraceCheck:
    """`check_trace`'s rules one item at a time, for a trace that arrives item
    by item (a stream): `item(index, item)` raises `InvalidTrace` naming the
    index. State: the clock, the declared variables' names, the properties'
    kinds (`TraceProperties`) and, unless `ids=False`, every event id seen
    (one entry per event: the only part that grows with the trace)."""

    def __init__(self, start_time: int = 0, variables: Mapping[str, Any] = MappingProxyType({}),
                 mixed_kinds: bool = False, ids: bool = True):
        if abs(start_time) > MAX_CLOCK:
            raise InvalidTrace(f"the start time {start_time} ms is further than 2**62 ms from 0")
        self.clock = start_time
        self.declared = frozenset(variables)
        self.properties = TraceProperties(mixed_kinds)
        self.seen: dict[str, int] | None = {} if ids else None

    def item(self, index: int, item: TraceItem) -> None:
        kind = type(item)
        time = item.time if kind is not SetVariables else None
        if time is not None:
            if abs(time) > MAX_CLOCK:
                raise InvalidTrace(f"the time {time} ms is further than 2**62 ms from 0 (clocks are 64-bit longs)",
                                   index)
            if time < self.clock:
                raise InvalidTrace(f"time goes backwards: {time} ms is before the clock at {self.clock} ms", index)
            self.clock = time
        if kind is SetVariables:
            undeclared = sorted(set(item.values) - self.declared)
            if undeclared:
                raise InvalidTrace(f"set: variable {undeclared[0]!r} is not declared (the case's 'variables' key "
                                   "declares each variable and its starting value)", index)
        if kind is Arrive:
            event_id = item.event.id
            if not event_id:
                raise InvalidTrace("an event has an empty id", index)
            if self.seen is not None:
                if event_id in self.seen:
                    raise InvalidTrace(f"duplicate event id {event_id!r} (first at item {self.seen[event_id]})", index)
                self.seen[event_id] = index
            for name, value in item.event.props.items():
                problem = self.properties.problem(name, value, index)
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
    """Rows a derived-value window or a statement posts instead of events
    (Esper `#size`, `#uni`, a `select`): inserted and removed rows, and rows
    posted with the `update` code (a CCL aggregation's changed group)."""

    insert: tuple[Mapping[str, Any], ...] = field(default=(), converter=lambda rows: tuple(_freeze_props(r) for r in rows), hash=False)
    remove: tuple[Mapping[str, Any], ...] = field(default=(), converter=lambda rows: tuple(_freeze_props(r) for r in rows), hash=False)
    update: tuple[Mapping[str, Any], ...] = field(default=(), converter=lambda rows: tuple(_freeze_props(r) for r in rows), hash=False,
                                                  kw_only=True)


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

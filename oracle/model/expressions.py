"""Expressions: the nodes of an expression tree (`Literal`, `Name`, `Builtin`,
`EventProperty`, `Negate`, `Not`, `Binary`, `Aggregate`, `Call`, `Collect`,
`Deduplicate`, `Index`, `Member`), their tables (`EXPRESSIONS`,
`GROUP_NODES`, ...) and walks (`expression_nodes`, `expression_names`).

An expiry expression of an expression window (Esper `#expr`, `#expr_batch`),
as a tree of the nodes below. Values follow Java's rules as Esper applies
them; the windows' docstrings state the evaluation. A query over panes
(eKuiper; `oracle.model.query`) and a pane window's conditions
(`oracle.model.panes`) are trees of the same nodes."""

from __future__ import annotations

import math
from typing import Any, Union

import attrs
from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import _identifier


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

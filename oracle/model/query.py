"""Queries over panes (eKuiper's statements): `Query`, its select list
(`SelectItem`) and ORDER BY criteria (`OrderKey`); the rules of a query over
one pane: `oracle.windows.query`."""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model.base import Spec, _identifier, _role
from oracle.model.expressions import (
    GROUP_NODES,
    Aggregate,
    Call,
    Collect,
    Deduplicate,
    Name,
    _expression,
    expression_nodes,
)
from oracle.model.panes import PANE_WINDOWS, Hopping, Session, Tumbling


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

"""An EPL statement over one window (Esper's `select ... from E<window>`):
what the statement posts to its listener for each update of its window. Data
only; the rules are in `oracle.windows.statement`.

`select [istream | irstream | rstream] items from E[(filter)]<window>
[where c] [group by k, ...] [having h]`:

* `select`: `SelectItem`s (an expression and an optional alias; `*` is the
  event's properties), `selector` the stream selector (`istream`, the
  default, posts the new rows; `irstream` new and old; `rstream` the old rows,
  delivered as new data).
* `filter`: a condition an event must meet to reach the window at all (the
  stream's filter, `E(price > 2)`); an event that fails it is not seen.
* `where`: a condition on the events the window posts, new and old, before
  they are aggregated or projected.
* `keys`: the GROUP BY expressions; `having` a condition on each output row.

* `output`: what the statement posts, declared by the dialect that writes
  it. `rows` (Esper): each update of the window gives the listener new and
  old rows, by the statement's shape (Esper's five processors). `store`
  (CCL's `SELECT ... FROM s KEEP ... GROUP BY ...`, an aggregation window):
  the statement is a window of one row per group, keyed by the GROUP BY
  values, and each update posts the changed groups' rows with their codes
  (insert, update, delete); it needs GROUP BY keys and a select list of keys
  and aggregates, over one of CCL's retention policies.

A case with the `query` key (corpus/README.md) runs a `Statement` whose
`window` is the case's `window`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec
from oracle.model import (
    DERIVED_WINDOWS,
    KEYED_GROUP_POLICIES,
    KEYED_POLICIES,
    GroupWin,
    GROUP_NODES,
    PANE_WINDOWS,
    WINDOW_SPECS,
    Aggregate,
    Binary,
    Builtin,
    EventProperty,
    Name,
    SelectItem,
    Spec,
    EXPRESSIONS,
    _identifier,
    expression_nodes,
)

SELECTORS = ("istream", "irstream", "rstream")
#: what a statement posts (`Statement.output`)
OUTPUTS = ("rows", "store")
#: Esper's processors (`Statement.shape`)
SHAPES = ("simple", "row_for_all", "row_per_event", "row_per_group", "aggregate_grouped")
_EXPRESSION = {"role": "expression"}  # the fields whose expressions read the events' properties


def _statement_window(inst, attribute, value):
    if not isinstance(value, WINDOW_SPECS) or isinstance(value, PANE_WINDOWS) or type(value).KIND == "query":
        raise InvalidSpec(f"statement: its window must be a data window (Esper's), got {value!r}")


def _items(inst, attribute, value):
    if not value:
        raise InvalidSpec("statement: the select list is empty")
    for item in value:
        if not isinstance(item, SelectItem):
            raise InvalidSpec(f"statement: {item!r} is not a select item")
        if item.expression is not None:
            _event_expression(item.expression, "a select item")
    aliases = [item.alias for item in value if item.alias is not None]
    twice = next((a for n, a in enumerate(aliases) if a in aliases[:n]), None)
    if twice is not None:
        raise InvalidSpec(f"statement: the alias {twice!r} names two select items")


def _event_expression(node: Any, where: str) -> None:
    if not isinstance(node, EXPRESSIONS):
        raise InvalidSpec(f"statement: {where} must be an expression node, got {node!r}")
    for inner in expression_nodes(node):
        if isinstance(inner, (Builtin, EventProperty)):
            raise InvalidSpec(f"statement: {where} reads an expression window's built-in ({inner!r}); "
                              "a statement reads the events' properties")


def _row_condition(inst, attribute, value):
    if value is None:
        return
    _event_expression(value, f"the {attribute.name} condition")
    if any(isinstance(node, GROUP_NODES) for node in expression_nodes(value)):
        raise InvalidSpec(f"statement: the {attribute.name} condition is evaluated for one event; it cannot "
                          "aggregate (Esper: aggregate functions are not allowed in WHERE)")


def _keys(inst, attribute, value):
    for key in value:
        _event_expression(key, "a GROUP BY key")
        if any(isinstance(node, GROUP_NODES) for node in expression_nodes(key)):
            raise InvalidSpec("statement: a GROUP BY key cannot aggregate")
    if len(set(value)) != len(value):
        raise InvalidSpec("statement: a GROUP BY key is named twice")


def _having(inst, attribute, value):
    if value is not None:
        _event_expression(value, "the having condition")


@frozen
class Statement(Spec):
    """`select` over `window` (module docstring); `source` is the stream's name."""

    KIND: ClassVar[str] = "statement"
    select: tuple[SelectItem, ...] = field(converter=tuple, validator=_items, metadata=_EXPRESSION)
    window: Any = field(validator=_statement_window)
    selector: str = field(default="istream")
    source: str = field(default="E", validator=_identifier)
    filter: Any = field(default=None, validator=_row_condition, metadata=_EXPRESSION)
    where: Any = field(default=None, validator=_row_condition, metadata=_EXPRESSION)
    keys: tuple[Any, ...] = field(default=(), converter=tuple, validator=_keys, metadata=_EXPRESSION)
    having: Any = field(default=None, validator=_having, metadata=_EXPRESSION)
    output: str = field(default="rows", kw_only=True)

    @output.validator
    def _check_output(self, attribute, value):
        if value not in OUTPUTS:
            raise InvalidSpec(f"statement: the output must be one of {', '.join(OUTPUTS)}, got {value!r}")
        if value != "store":
            return
        if not self.keys:
            raise InvalidSpec("statement: an aggregation window needs GROUP BY: its rows are keyed by the GROUP BY "
                              "values (CCL's PRIMARY KEY DEDUCED), and without them there is no key")
        if not (self.aggregates and self.fully_aggregated):
            raise InvalidSpec("statement: an aggregation window's select list holds GROUP BY keys and aggregates")
        if self.selector != "istream" or self.filter is not None or self.where is not None:
            raise InvalidSpec("statement: an aggregation window has no stream selector, filter or WHERE here")
        window = self.window.window if isinstance(self.window, GroupWin) else self.window
        if not isinstance(window, KEYED_POLICIES) or (window is not self.window and not isinstance(window, KEYED_GROUP_POLICIES)):
            raise InvalidSpec(f"statement: an aggregation window reads one of CCL's retention policies, got {self.window!r}")

    @selector.validator
    def _check_selector(self, attribute, value):
        if value not in SELECTORS:
            raise InvalidSpec(f"statement: the stream selector must be one of {', '.join(SELECTORS)}, got {value!r}")

    def kind_name(self) -> str:
        return "statement/store" if self.output == "store" else f"statement/{self.shape}"

    @property
    def shape(self) -> str:
        """Which of Esper's five processors the statement is (the rows it posts:
        `oracle.windows.statement`): `simple` (no aggregate), `row_for_all`
        (fully aggregated, no GROUP BY), `row_per_event` (aggregated, no GROUP
        BY), `row_per_group` (fully aggregated, grouped), `aggregate_grouped`
        (aggregated, grouped)."""
        if not self.aggregates:
            return "simple"
        if self.keys:
            return "row_per_group" if self.fully_aggregated else "aggregate_grouped"
        return "row_for_all" if self.fully_aggregated else "row_per_event"

    @property
    def aggregates(self) -> bool:
        """Whether an aggregate stands in the select list or HAVING."""
        exprs = [item.expression for item in self.select if item.expression is not None]
        exprs += [self.having] if self.having is not None else []
        return any(isinstance(node, GROUP_NODES) for e in exprs for node in expression_nodes(e))

    @property
    def fully_aggregated(self) -> bool:
        """Whether every property the select list reads outside an aggregate is a
        GROUP BY key (Esper's "fully aggregated": one row per group, not per event)."""
        if any(item.expression is None for item in self.select):
            return False
        return all(_outside_aggregates_only_keys(item.expression, self.keys) for item in self.select)

    @property
    def field_names(self) -> tuple[str | None, ...]:
        """Each item's output column: its alias, else a property's name, else
        the expression's text as Esper names it (None for `*`):
        `ExprNodeUtilityPrint.toExpressionStringMinPrecedenceSafe`, which writes
        `sum(price)`, `count(*)`, `count(distinct symbol)` and arithmetic
        without spaces (`price*2`). Decided: comparisons and `and`/`or` as the
        dialect renders them (no observed case names one)."""
        from oracle.dialects.esper import render_expression

        return tuple(None if item.expression is None else item.alias if item.alias is not None
                     else item.expression.name if isinstance(item.expression, Name)
                     else _esper_text(item.expression, render_expression) for item in self.select)


_STRENGTH = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def _esper_text(node: Any, render) -> str:
    """An expression's default column name (`Statement.field_names`)."""
    if isinstance(node, Binary) and node.op in _STRENGTH:
        left = _operand_text(node.left, node, render, right=False)
        right = _operand_text(node.right, node, render, right=True)
        return f"{left}{node.op}{right}"
    return render(node)


def _operand_text(child: Any, parent: Binary, render, right: bool) -> str:
    text = _esper_text(child, render)
    if not isinstance(child, Binary):
        return text
    if child.op not in _STRENGTH:
        return f"({text})"
    weaker = _STRENGTH[child.op] < _STRENGTH[parent.op]
    regrouped = right and _STRENGTH[child.op] == _STRENGTH[parent.op]  # a - (b - c)
    return f"({text})" if weaker or regrouped else text


def _outside_aggregates_only_keys(node: Any, keys: tuple) -> bool:
    if node in keys or isinstance(node, Aggregate):
        return True
    if isinstance(node, Name):
        return False
    children = (getattr(node, name, None) for name in ("operand", "left", "right"))
    return all(_outside_aggregates_only_keys(child, keys) for child in children if child is not None)

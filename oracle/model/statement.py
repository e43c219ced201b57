"""Statements over a window, for every engine: one model (`Statement`), the
engine's rules declared beside it (`Rules`), never decided by which dialect
wrote it. Data only; the rules are run by `oracle.windows.statement`
(`posted` "update", "store"), `oracle.windows.query` (panes) and
`oracle.windows.stream_query` (activations).

`select [istream | irstream | rstream] items from source[(filter)]<window>
[where c] [group by k, ...] [having h] [order by o, ...]`:

* `select`: `SelectItem`s (an expression and an optional alias; `*` is the
  event's properties); `selector` the stream selector (`istream`, the
  default, posts the new rows; `irstream` new and old; `rstream` the old
  rows, delivered as new data).
* `filter`: a condition an event must meet to reach the window at all (the
  stream's filter, Esper's `E(price > 2)`); an event that fails it is not seen.
* `where`: a condition on the rows the window posts, before they are
  aggregated or projected (where the rules push it into the window, its
  filter: `Statement.where_in_window`).
* `keys`: the GROUP BY expressions; `having` a condition on each output row;
  `order` ORDER BY criteria (`OrderKey`).
* `rules`: the engine's rules (`ESPER`, `CCL`, `KUIPER`, `APAMA`), set by the
  dialect that parses the statement:

| rules | aggregated over | posted | values | default names |
|---|---|---|---|---|
| `ESPER` | `posts`: new data enters, old data leaves | `update`: rows per window update (Esper's five processors) | `java` | `text` |
| `CCL` | `posts` | `store`: a window of one row per group, insert/update/delete | `java` | `text` |
| `KUIPER` | `pane`: each emitted pane's rows | `pane`: the pane's groups or rows | `go` | `function` |
| `APAMA` | `contents`: what the window shows after the activation | `activation`: one row (or the lot) per activation | none | `function` |

A case with the `query` key (CORPUS.md) runs a `Statement` whose `window` is
the case's `window`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any, Callable, ClassVar

from attrs import field, frozen

from oracle.errors import InvalidSpec, InvalidTrace
from oracle.model.base import Spec, _identifier
from oracle.model.derived import DERIVED_WINDOWS
from oracle.model.events import Arrive, Trace
from oracle.model.expressions import (
    EXPRESSIONS,
    GROUP_NODES,
    Aggregate,
    Binary,
    Builtin,
    Call,
    Collect,
    Deduplicate,
    EventProperty,
    Name,
    _expression,
    expression_nodes,
)
from oracle.model.groupwin import GroupWin
from oracle.model.keep import KeepAll
from oracle.model.keyed import KEYED_GROUP_POLICIES, KEYED_POLICIES
from oracle.model.panes import PANE_WINDOWS, Hopping, Session, Tumbling
from oracle.model.specs import WINDOW_SPECS, spec_kind

SELECTORS = ("istream", "irstream", "rstream")
#: Esper's processors (`Statement.shape`)
SHAPES = ("simple", "row_for_all", "row_per_event", "row_per_group", "aggregate_grouped")
#: what a statement's aggregates read (`Rules.aggregated`)
AGGREGATED = ("posts", "pane", "contents")
#: when a statement posts (`Rules.posted`)
POSTED = ("update", "store", "pane", "activation")
#: the value tables (`Rules.values`; `oracle.windows.values`)
VALUE_RULES = ("java", "go")
#: how an item without an alias is named (`Rules.names`)
NAMINGS = ("text", "function")
#: the prefix of an unnamed item's output field under the `function` naming (eKuiper's)
UNNAMED_FIELD = "kuiper_field_"
#: why an aggregate cannot stand in a WHERE that enters the window
WHERE_AGGREGATE_IN_WINDOW = (
    "an aggregate in WHERE is computed over each pane after the window, but over a processing-time "
    "TUMBLINGWINDOW, HOPPINGWINDOW or SESSIONWINDOW eKuiper's planner pushes WHERE into the window's own "
    "filter, where the aggregate has no value yet (every row would drop); not supported")
#: the property an Apama aggregate reads of a stream of plain values (`from v in values ... select sum(v)`)
ITEM_VALUE = "value"


def _optional_expression(inst, attribute, value):
    if value is not None:
        _expression(inst, attribute, value)


@frozen
class SelectItem:
    """One item of a select list: an expression with an optional alias;
    `expression` None is `*` (every field of the row)."""

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


@frozen
class Rules:
    """How an engine runs a statement, declared once per engine:

    * `engine`: its name, in messages.
    * `kind`: the statement's kind name (`spec_kind`), a pattern over
      `{shape}` (`Statement.shape`) and `{window}` (the window's kind).
    * `aggregated` (`AGGREGATED`): what an aggregate reads: `posts` (the
      window's new data enters and its old data leaves, one event at a time),
      `pane` (the rows of one emitted pane), `contents` (what the window
      shows after the activation).
    * `posted` (`POSTED`): when rows are posted and as what: `update` (for each
      window update, new and old rows by the statement's shape), `store` (the
      statement is a window of one row per group), `pane` (for each pane, its
      groups or rows), `activation` (for each activation of the window).
    * `values` (`VALUE_RULES`): the table of null propagation, arithmetic
      and comparisons every evaluator applies (`oracle.windows.values`);
      None where the engine's statements apply no operator.
    * `names` (`NAMINGS`): an item without an alias is named by its text
      (Esper's `sum(price)`, `price*2`) or by its function (`sum`, eKuiper's
      `kuiper_field_<n>` for other expressions).
    * `numeric_aggregates`: an aggregate's argument must be a number (Apama's
      `sum(v.p)` over an item whose `p` is not one is an error); otherwise
      its values may be of any kind the aggregate orders (`max(symbol)`).
    * `windows`: the window kinds a statement reads.
    * `where_into`: the windows whose own filter a WHERE becomes (eKuiper's
      planner pushes it into a processing-time tumbling, hopping or session
      window); elsewhere WHERE filters the window's output.
    * `declared_types`: the engine compiles a statement against the stream's
      declared type, so a property no event of the trace has (no column of an
      event table) is refused (`unknown_property`; Esper's compiler: "Property
      named 'nosuch' is not valid in any stream"); a property some events lack
      reads null. Without it (eKuiper's schemaless streams) every name reads
      null where an event lacks it.
    * `null_fields`: a row holds a field whose value is null (Esper's and
      CCL's typed rows); without it (eKuiper's rows are maps, which leave a
      nil out) a null field is absent from the row, as a property `*` copies
      from an event that lacks it is everywhere.
    * `check`: what the engine refuses besides (`InvalidSpec`).
    """

    engine: str
    kind: str
    aggregated: str = field()
    posted: str = field()
    values: str | None = field()
    names: str = field()
    windows: Callable[[Any], bool]
    numeric_aggregates: bool = False
    where_into: tuple[type, ...] = ()
    declared_types: bool = False
    null_fields: bool = True
    check: Callable[[Any], None] = lambda statement: None

    def __reduce__(self):
        """Pickled by name (to Spark's workers): the engine's one `Rules`, not a copy."""
        return (rules_named, (self.engine,))

    @aggregated.validator
    def _check_aggregated(self, attribute, value):
        _one_of(attribute, value, AGGREGATED)

    @posted.validator
    def _check_posted(self, attribute, value):
        _one_of(attribute, value, POSTED)

    @values.validator
    def _check_values(self, attribute, value):
        if value is not None:
            _one_of(attribute, value, VALUE_RULES)

    @names.validator
    def _check_names(self, attribute, value):
        _one_of(attribute, value, NAMINGS)


def _one_of(attribute, value, allowed):
    if value not in allowed:
        raise InvalidSpec(f"rules: {attribute.name} must be one of {', '.join(allowed)}, got {value!r}")


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


def _condition(inst, attribute, value):
    if value is not None:
        _event_expression(value, f"the {attribute.name} condition")


def _keys(inst, attribute, value):
    for key in value:
        _event_expression(key, "a GROUP BY key")
        if any(isinstance(node, GROUP_NODES) for node in expression_nodes(key)):
            raise InvalidSpec("statement: a GROUP BY key cannot aggregate")
    if len(set(value)) != len(value):
        raise InvalidSpec("statement: a GROUP BY key is named twice")


def _orders(inst, attribute, value):
    for key in value:
        if not isinstance(key, OrderKey):
            raise InvalidSpec(f"statement: {key!r} is not an ORDER BY criterion")


@frozen
class Statement(Spec):
    """`select` over `window` (module docstring), run by `rules`; `source` is
    the stream's name."""

    KIND: ClassVar[str] = "statement"
    select: tuple[SelectItem, ...] = field(converter=tuple, validator=_items, metadata={"role": "expression"})
    window: Any = field()
    selector: str = field(default="istream")
    source: str = field(default="E", validator=_identifier)
    filter: Any = field(default=None, validator=_condition, metadata={"role": "expression"})
    where: Any = field(default=None, validator=_condition, metadata={"role": "expression"})
    keys: tuple[Any, ...] = field(default=(), converter=tuple, validator=_keys, metadata={"role": "expression"})
    having: Any = field(default=None, validator=_condition, metadata={"role": "expression"})
    order: tuple[OrderKey, ...] = field(default=(), converter=tuple, validator=_orders,
                                        metadata={"role": "expression"})
    rules: Rules = field(kw_only=True, factory=lambda: ESPER)

    @selector.validator
    def _check_selector(self, attribute, value):
        if value not in SELECTORS:
            raise InvalidSpec(f"statement: the stream selector must be one of {', '.join(SELECTORS)}, got {value!r}")

    def __attrs_post_init__(self):
        if not isinstance(self.rules, Rules):
            raise InvalidSpec(f"statement: rules must be an engine's `Rules`, got {self.rules!r}")
        if not isinstance(self.window, WINDOW_SPECS) or not self.rules.windows(self.window):
            raise InvalidSpec(f"statement: {self.rules.engine}'s statements do not read a "
                              f"{spec_kind(self.window) if isinstance(self.window, Spec) else repr(self.window)} "
                              "window")
        self.rules.check(self)

    @property
    def MIXED_KINDS(self) -> bool:  # noqa: N802 (a spec's declared trait, `Spec.MIXED_KINDS`)
        return self.window.MIXED_KINDS

    def kind_name(self) -> str:
        return self.rules.kind.format(shape=self.shape, window=spec_kind(self.window))

    @property
    def aggregates(self) -> bool:
        """Whether an aggregate stands in the select list or HAVING."""
        exprs = [item.expression for item in self.select if item.expression is not None]
        exprs += [self.having] if self.having is not None else []
        return any(isinstance(node, GROUP_NODES) for e in exprs for node in expression_nodes(e))

    @property
    def aggregate_arguments(self) -> tuple[str, ...]:
        """The properties the aggregates read directly (`sum(price)`: `price`), each once."""
        exprs = [item.expression for item in self.select if item.expression is not None]
        exprs += [self.having] if self.having is not None else []
        return tuple(dict.fromkeys(node.argument.name for e in exprs for node in expression_nodes(e)
                                   if isinstance(node, Aggregate) and isinstance(node.argument, Name)))

    @property
    def groups(self) -> bool:
        """Whether rows are grouped: GROUP BY keys, or an aggregate."""
        return bool(self.keys) or self.aggregates

    @property
    def fully_aggregated(self) -> bool:
        """Whether every property the select list reads outside an aggregate is a
        GROUP BY key (Esper's "fully aggregated": one row per group, not per event)."""
        if any(item.expression is None for item in self.select):
            return False
        return all(_outside_aggregates_only_keys(item.expression, self.keys) for item in self.select)

    @property
    def posts_events(self) -> bool:
        """Whether the statement posts the window's events, not rows of
        fields: a select of the item alone where rows are posted per
        activation (Apama's `select v`, `oracle.windows.stream_query`)."""
        return self.rules.posted == "activation" and all(item.expression is None for item in self.select)

    @property
    def shape(self) -> str:
        """Which of Esper's five processors the statement is (`SHAPES`; the rows
        it posts: `oracle.windows.statement`): `simple` (no aggregate),
        `row_for_all` (fully aggregated, no GROUP BY), `row_per_event`
        (aggregated, no GROUP BY), `row_per_group` (fully aggregated, grouped),
        `aggregate_grouped` (aggregated, grouped)."""
        if not self.aggregates:
            return "simple"
        if self.keys:
            return "row_per_group" if self.fully_aggregated else "aggregate_grouped"
        return "row_for_all" if self.fully_aggregated else "row_per_event"

    @property
    def where_in_window(self) -> bool:
        """Whether WHERE filters rows as they enter the window (`Rules.where_into`):
        eKuiper's planner pushes it into the window's own filter for
        processing-time tumbling, hopping and session windows (windowPlan.go
        `PushDownPredicate`); elsewhere it filters the window's output (for a
        pane, its rows, an aggregate in it reading the whole pane:
        `a > avg(a)` keeps the pane's rows above its mean)."""
        return (self.where is not None and isinstance(self.window, self.rules.where_into)
                and not self.window.event_time)

    @property
    def field_names(self) -> tuple[str | None, ...]:
        """Each item's output field (None for `*`): its alias, else a
        property's name, else by `Rules.names`: `text`, the expression's text
        as Esper names it (`ExprNodeUtilityPrint.toExpressionStringMinPrecedenceSafe`:
        `sum(price)`, `count(*)`, `count(distinct symbol)`, arithmetic without
        spaces, `price*2`; decided: comparisons and `and`/`or` as the dialect
        renders them); `function`, a function's name (`count(*)` is `count`),
        `collect`, `deduplicate`, else `kuiper_field_<i>`, i counting such
        items (eKuiper's)."""
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
            elif self.rules.names == "text":
                from oracle.dialects.esper import render_expression

                names.append(_esper_text(node, render_expression))
            elif isinstance(node, (Aggregate, Call)):
                names.append(node.function)
            elif isinstance(node, (Collect, Deduplicate)):
                names.append(type(node).__name__.lower())
            else:
                names.append(f"{UNNAMED_FIELD}{unnamed}")
                unnamed += 1
        return tuple(names)


# ----------------------------------------------------------------------------- each engine's refusals


def _check_esper(statement: Statement) -> None:
    for name in ("filter", "where"):
        _no_aggregate(getattr(statement, name), f"the {name} condition is evaluated for one event; it cannot "
                      "aggregate (Esper: aggregate functions are not allowed in WHERE)")
    if statement.order:
        raise InvalidSpec("statement: ORDER BY is not supported in Esper's statements here")


def _check_store(statement: Statement) -> None:
    if not statement.keys:
        raise InvalidSpec("statement: an aggregation window needs GROUP BY: its rows are keyed by the GROUP BY "
                          "values (CCL's PRIMARY KEY DEDUCED), and without them there is no key")
    if not (statement.aggregates and statement.fully_aggregated):
        raise InvalidSpec("statement: an aggregation window's select list holds GROUP BY keys and aggregates")
    if (statement.selector != "istream" or statement.filter is not None or statement.where is not None
            or statement.order):
        raise InvalidSpec("statement: an aggregation window has no stream selector, filter, WHERE or ORDER BY here")


def _store_window(window: Any) -> bool:
    inner = window.window if isinstance(window, GroupWin) else window
    return isinstance(inner, KEYED_POLICIES) and (inner is window or isinstance(inner, KEYED_GROUP_POLICIES))


def _check_kuiper(statement: Statement) -> None:
    if statement.selector != "istream" or statement.filter is not None:
        raise InvalidSpec("statement: eKuiper's queries have no stream selector and no filter before the window")
    if statement.where_in_window:
        _no_aggregate(statement.where, WHERE_AGGREGATE_IN_WINDOW)
    for key in statement.keys:
        if any(isinstance(node, Call) for node in expression_nodes(key)):
            raise InvalidSpec("statement: a GROUP BY key reads the row's fields only")


def _check_apama(statement: Statement) -> None:
    """Apama's queries here select the item (`select v`, `select rstream v`)
    or one aggregate of it (`sum(v.p)`, `count()`), nothing else."""
    rest = (statement.filter, statement.where, statement.having, *statement.keys, *statement.order)
    if len(statement.select) != 1 or any(part is not None for part in rest) or (
            statement.select[0].alias is not None):
        raise InvalidSpec("statement: an Apama query here selects the item or one aggregate of it, with no "
                          "alias, where, group by or having")
    node = statement.select[0].expression
    if node is None:
        if statement.selector == "irstream":
            raise InvalidSpec("statement: an Apama query selects the istream or the rstream, not both")
        if statement.selector == "rstream" and isinstance(statement.window, KeepAll):
            raise InvalidSpec("statement: an unbounded window (retain all) never removes an item, so it cannot "
                              "be combined with select rstream")
        return
    if statement.selector != "istream":
        raise InvalidSpec("statement: an Apama aggregate query posts its values; it has no stream selector")
    if not isinstance(node, Aggregate) or node.distinct or node.function not in APAMA_AGGREGATES:
        raise InvalidSpec(f"statement: an Apama query aggregates with one of {', '.join(APAMA_AGGREGATES)}, "
                          f"got {node!r}")
    if node.function == "count":
        if node.argument is not None:
            raise InvalidSpec("statement: Apama's count() takes no argument: it counts the items in the window")
    elif not isinstance(node.argument, Name):
        raise InvalidSpec(f"statement: {node.function} reads a property of the item, got {node.argument!r}")
    elif node.argument.name == "id":
        raise InvalidSpec(f"statement: {node.function} reads a numeric property; `id` is the event's id")


#: the aggregates of Apama's queries here
APAMA_AGGREGATES = ("sum", "count", "avg", "min", "max")


def selection(statement: Statement) -> tuple[str, str | None]:
    """What a statement of one select item selects (an Apama query): `istream`
    or `rstream` (the item, `*`), else its aggregate's function; and the
    property that aggregate reads (None for `count()` and a projection)."""
    node = statement.select[0].expression
    if node is None:
        return statement.selector, None
    return node.function, (node.argument.name if node.argument is not None else None)


def _no_aggregate(node: Any, why: str) -> None:
    if node is not None and any(isinstance(inner, GROUP_NODES) for inner in expression_nodes(node)):
        raise InvalidSpec(f"statement: {why}")


ESPER = Rules("esper", "statement/{shape}", aggregated="posts", posted="update", values="java", names="text",
              windows=lambda w: not isinstance(w, PANE_WINDOWS), declared_types=True, check=_check_esper)
CCL = Rules("ccl", "statement/store", aggregated="posts", posted="store", values="java", names="text",
            windows=_store_window, declared_types=True, check=_check_store)
KUIPER = Rules("kuiper", "query/{window}", aggregated="pane", posted="pane", values="go", names="function",
               windows=lambda w: isinstance(w, PANE_WINDOWS), where_into=(Tumbling, Hopping, Session), null_fields=False,
               check=_check_kuiper)
APAMA = Rules("apama", "stream_query", aggregated="contents", posted="activation", values=None, names="function",
              windows=lambda w: not isinstance(w, PANE_WINDOWS + DERIVED_WINDOWS), numeric_aggregates=True,
              check=_check_apama)
#: every engine's rules
RULES: tuple[Rules, ...] = (ESPER, CCL, KUIPER, APAMA)


def statement_properties(statement: Statement) -> tuple[str, ...]:
    """The names the statement's own clauses (select items, stream filter,
    WHERE, GROUP BY, HAVING, ORDER BY) read as an event's properties, each
    once: not the fields of a derived-value window's rows (`average` over
    `#uni`), which its rows have; variables among them are the caller's to
    set apart."""
    window = statement.window.window if isinstance(statement.window, GroupWin) else statement.window
    fields = set(window.FIELDS) if isinstance(window, DERIVED_WINDOWS) else set()
    names: list[str] = []
    for value in (statement.select, statement.filter, statement.where, statement.keys, statement.having,
                  statement.order):
        for item in value if isinstance(value, tuple) else (value,):
            node = getattr(item, "expression", item)
            if node is not None:
                names += [n.name for n in expression_nodes(node) if isinstance(n, (Name, EventProperty))]
    return tuple(name for name in dict.fromkeys(names) if name != "id" and name not in fields)


def unknown_property(statement: Statement, properties: Collection[str], variables: Collection[str] = ()) -> str | None:
    """The first property the statement reads that is neither among
    `properties` (those any event of the trace has, or the event table's
    columns) nor a variable, where its engine refuses one (`declared_types`);
    else None."""
    if not statement.rules.declared_types:
        return None
    return next((name for name in statement_properties(statement)
                 if name not in properties and name not in variables), None)


def check_properties(spec: Any, trace: Trace) -> None:
    """Raise `InvalidTrace` where `spec` is a statement that reads a property
    no event of `trace` has (`unknown_property`: the trace's events make the
    stream's type); a trace without events has no type to check against."""
    if not isinstance(spec, Statement):
        return
    events = [item.event for item in trace.items if isinstance(item, Arrive)]
    if not events:
        return
    properties = {name for event in events for name in event.props}
    name = unknown_property(spec, properties, trace.variables)
    if name is not None:
        raise InvalidTrace(f"the statement reads property {name!r}, which no event of the trace has "
                           f"(the {spec.rules.engine} dialect refuses a property its stream's type lacks; "
                           "a property some events lack reads null)")


def rules_named(engine: str) -> Rules:
    """The rules of `engine` (`Rules.engine`)."""
    return next(rules for rules in RULES if rules.engine == engine)


# ----------------------------------------------------------------------------- Esper's default names

_STRENGTH = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


def _esper_text(node: Any, render) -> str:
    """An expression's default column name under the `text` naming."""
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

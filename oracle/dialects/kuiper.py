"""eKuiper's window functions and the statements over them:
`parse(text, settings) -> spec`, `render(spec) -> str`, `settings(spec) -> dict`.

A window clause is what stands in a statement's GROUP BY (the case key
`window`): a window function, optionally followed by `FILTER(WHERE cond)` and,
for a sliding window, `OVER(WHEN cond)` (kuiper.md §0; the order is fixed).
A statement (the case key `query`) is `SELECT ... FROM stream [WHERE cond]
GROUP BY <items> [HAVING cond] [ORDER BY ...]`, exactly one GROUP BY item
being a window clause; the others are the grouping keys. Both parse into the
model (`oracle.model.PaneWindow` kinds, `CountPanes`, a `Statement` with eKuiper's rules), and `render`
writes the canonical text back: `parse(render(s), settings(s)) == s`.

Syntax (kuiper.md §0; seed "Time-units"):

* `TUMBLINGWINDOW(unit, n)`, `HOPPINGWINDOW(unit, size, hop)` (a hop larger
  than the size is accepted, as eKuiper's SQL does), `SLIDINGWINDOW(unit,
  size[, delay])`, `SESSIONWINDOW(unit, max_duration, timeout)` (this order:
  kuiper.md §5), `COUNTWINDOW(n[, m])` with `m <= n`.
* Units `DD`, `HH`, `MI`, `SS`, `MS`, in any case (eKuiper's lexer upper-cases
  keywords); `mm` is not a unit (the seed's `SLIDINGWINDOW(mm, 1)` is old
  text). Sizes, hops and delays are whole numbers above 0 (a delay may be 0);
  anything else is an error naming its column.
* Keywords and function names are case-insensitive; identifiers are
  case-sensitive; a name that is a keyword is written in backquotes.
* Expressions: columns, numbers, strings in double (or single) quotes, `true`,
  `false`, `+ - * / %`, `= != <> < <= > >=`, `AND`, `OR`, parentheses (a `NOT`
  before a condition is refused: eKuiper's SQL has none),
  `count(*)`, `count(x)`, `sum`, `avg`, `min`, `max`, `collect(*)`,
  `collect(x)`, `deduplicate(x, true|false)`, `window_start()`, `window_end()`,
  `event_time()`, `row_number()`, and, in an
  `OVER(WHEN ...)` condition, `last_hit_time()` and `last_hit_count()`;
  `e[i]` indexes a list, `e->f` reads a field of an object.
* Select items: `*`, or an expression with an optional `AS alias` (`AS` may be
  left out). `ORDER BY` items take `ASC` or `DESC`.

Settings (corpus/README.md case keys; they are not part of eKuiper's SQL:
a rule option, the stream's TIMESTAMP, the server's zone): `time_mode`
(`processing`, the default, or `event`), `timestamp_field` (needed with event
time), `late_tolerance` (ms, event time only, default 0), `time_zone` (IANA,
default UTC; aligns HH and DD windows). A count window with event time is an
`InvalidSpec`: eKuiper refuses the rule (kuiper.md §8, decided).

Canonical text: window and function names upper-case as eKuiper's docs write
windows (`TUMBLINGWINDOW(ss, 10)`), units lower-case, keywords upper-case,
functions lower-case, the window first in GROUP BY, `AS` before every alias,
`COUNTWINDOW(n)` when m equals n, no delay when it is 0.
"""

from __future__ import annotations

import re

from collections.abc import Mapping
from typing import Any

from attrs import frozen
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from oracle.dialects.syntax import syntax_error
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    AGGREGATES,
    CALLS,
    DAY,
    HOUR,
    MILLISECOND,
    MINUTE,
    SECOND,
    WHERE_AGGREGATE_IN_WINDOW,
    Aggregate,
    Binary,
    Call,
    Collect,
    CountPanes,
    Deduplicate,
    GROUP_NODES,
    Hopping,
    Index,
    Literal,
    Member,
    Name,
    Negate,
    Not,
    KUIPER,
    OrderKey,
    SelectItem,
    Statement,
    Session,
    Sliding,
    Tumbling,
    expression_nodes,
    reserved_name_error,
)

#: eKuiper's built-in functions (internal/binder/function, `builtins[...]`) the
#: dialect does not model: named as eKuiper's and refused (`UnsupportedWindow`),
#: where a name eKuiper lacks is an unknown function (`InvalidSpec`)
EKUIPER_FUNCTIONS = frozenset("""
abs acc_avg acc_count acc_max acc_min acc_sum acos array_cardinality array_concat array_contains
array_contains_any array_create array_distinct array_except array_flatten array_intersect array_join
array_last_position array_map array_max array_min array_position array_remove array_shuffle array_sort
array_union asin atan atan2 bitand bitnot bitor bitxor bypass cardinality cast ceil ceiling changed_col
changed_cols chr coalesce concat conv convert_tz cos cosh cot crc32 cur_date cur_time current_date
current_time current_timestamp date_calc date_diff day day_name day_of_month day_of_week day_of_year
dec2hex decode degrees delay element_at encode endswith erase exp extract floor format format_time
from_days from_unix_time get_keyed_state had_changed hex2dec hour inc_avg inc_collect inc_count
inc_last_value inc_max inc_merge_agg inc_min inc_sum indexof isnull items json_path_exists
json_path_query json_path_query_first keys kvpair_array_to_obj lag last_agg_hit_count last_agg_hit_time
last_day last_value latest length ln local_time local_timestamp log lower lpad ltrim md5 median
merge_agg meta microsecond minute mod month month_name mqtt newuuid now numbytes obj_to_kvpair_array
object object_concat object_construct object_pick object_size parse_json percentile_cont
percentile_disc pi pow power props radians rand regexp_matches regexp_replace regexp_substr repeat
reverse round rpad rtrim rule_id rule_start second sequence sha1 sha256 sha384 sha512 sign sin sinh
split_value sqrt startswith stddev stddevs substring tan tanh to_json to_seconds trim trunc tstamp
unnest upper values var vars window_trigger zip
""".split())

GRAMMAR = r"""
statement: SELECT select_list FROM name where? GROUP BY group_list having? order?
clause: group_item

select_list: select_item ("," select_item)*
select_item: STAR -> star
    | expr (AS? name)? -> column
where: WHERE expr
having: HAVING expr
order: ORDER BY order_item ("," order_item)*
order_item: expr DIRECTION?
group_list: group_item ("," group_item)*
group_item: expr filter? over?
filter: FILTER LPAR WHERE expr RPAR
over: OVER LPAR WHEN expr RPAR

?expr: conjunction | expr OR conjunction -> logical
?conjunction: negation | conjunction AND negation -> logical
?negation: comparison | NOT negation -> not_
?comparison: sum | sum COMPARE sum -> binary
?sum: product | sum SIGN product -> binary
?product: unary | product (STAR | DIVIDE | MODULO) unary -> binary
?unary: postfix | SIGN unary -> signed
?postfix: atom | postfix "[" INTEGER "]" -> index | postfix ARROW name -> member
?atom: number | string | boolean | call | name | LPAR expr RPAR -> paren
call: NAME LPAR [STAR | expr ("," expr)*] RPAR
number: INTEGER | DECIMAL
string: STRING
boolean: BOOLEAN
name: NAME | QUOTED

SELECT.2: /select\b/i
FROM.2: /from\b/i
WHERE.2: /where\b/i
GROUP.2: /group\b/i
BY.2: /by\b/i
HAVING.2: /having\b/i
ORDER.2: /order\b/i
DIRECTION.2: /(asc|desc)\b/i
AS.2: /as\b/i
AND.2: /and\b/i
OR.2: /or\b/i
NOT.2: /not\b/i
FILTER.2: /filter\b/i
OVER.2: /over\b/i
WHEN.2: /when\b/i
BOOLEAN.2: /(true|false)\b/i
NAME: /[A-Za-z_][A-Za-z0-9_]*/
QUOTED: /`[^`]+`/
STRING: /"[^"]*"/ | /'[^']*'/
DECIMAL: /(\d+\.\d*|\.\d+)([eE][+-]?\d+)?|\d+[eE][+-]?\d+/
INTEGER: /\d+/
LPAR: "("
RPAR: ")"
STAR: "*"
DIVIDE: "/"
MODULO: "%"
SIGN: "+" | "-"
ARROW: "->"
COMPARE: "<=" | ">=" | "<>" | "!=" | "=" | "<" | ">"

%import common.WS
%ignore WS
"""

KEYWORDS = frozenset({"select", "from", "where", "group", "by", "having", "order", "asc", "desc", "as", "and", "or",
                      "not", "filter", "over", "when", "true", "false"})

#: unit keyword -> ms; the canonical spelling is the lower-case one
UNITS = {"dd": DAY, "hh": HOUR, "mi": MINUTE, "ss": SECOND, "ms": MILLISECOND}
UNIT_NAMES = {ms: name for name, ms in UNITS.items()}
WINDOW_FUNCTIONS = ("tumblingwindow", "hoppingwindow", "slidingwindow", "sessionwindow", "countwindow")
MAX_COUNT = 2**31 - 1
MAX_MS = 253_402_300_800_000  # 1970 to the end of 9999 (oracle.windows.panes.CALENDAR_END)

_DESCRIBE = {
    "SELECT": "SELECT", "FROM": "FROM", "WHERE": "WHERE", "GROUP": "GROUP BY", "BY": "BY", "HAVING": "HAVING",
    "ORDER": "ORDER BY", "DIRECTION": "ASC or DESC", "AS": "AS", "AND": "AND", "OR": "OR", "NOT": "NOT",
    "FILTER": "FILTER", "OVER": "OVER", "WHEN": "WHEN", "BOOLEAN": "true or false", "NAME": "a name",
    "QUOTED": "a `quoted` name", "STRING": "a string", "DECIMAL": "a number", "INTEGER": "a whole number",
    "LPAR": "'('", "RPAR": "')'", "STAR": "'*'", "DIVIDE": "'/'", "MODULO": "'%'", "SIGN": "a sign",
    "ARROW": "'->'", "COMPARE": "a comparison", "COMMA": "','", "LSQB": "'['", "RSQB": "']'",
    "$END": "the end of the text",
}


# --------------------------------------------------------------------------- parse tree pieces


@frozen
class _Expr:
    """An expression with the column (1-based) and text it was written at."""

    node: Any
    column: int
    text: str


@frozen
class _WindowCall:
    """A window function as written, before its FILTER and OVER."""

    name: str
    args: tuple[_Expr, ...]
    column: int
    text: str


@frozen
class _GroupItem:
    expr: Any  # _Expr or _WindowCall
    filter: _Expr | None
    over: _Expr | None
    column: int


class _Build(Transformer):
    """Parse tree -> model nodes, with columns for the errors."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def _span(self, meta) -> tuple[int, str]:
        return meta.start_pos + 1, self.text[meta.start_pos:meta.end_pos]

    def _wrap(self, meta, node) -> _Expr:
        column, text = self._span(meta)
        return _Expr(node, column, text)

    def _node(self, item) -> Any:
        if isinstance(item, _WindowCall):
            raise InvalidSpec(f"the window function {item.name} (column {item.column}) can only stand in GROUP BY")
        return item.node

    @v_args(inline=True)
    def number(self, token: Token) -> _Expr:
        text = str(token)
        value: Any = int(text) if token.type == "INTEGER" else float(text)
        if isinstance(value, float) and value in (float("inf"), float("-inf")):
            raise InvalidSpec(f"the number {text} at column {token.start_pos + 1} does not fit a double")
        return _Expr(Literal(value), token.start_pos + 1, text)

    @v_args(inline=True)
    def string(self, token: Token) -> _Expr:
        return _Expr(Literal(str(token)[1:-1]), token.start_pos + 1, str(token))

    @v_args(inline=True)
    def boolean(self, token: Token) -> _Expr:
        return _Expr(Literal(token.lower() == "true"), token.start_pos + 1, str(token))

    @v_args(inline=True)
    def name(self, token: Token) -> _Expr:
        value = str(token)[1:-1] if token.type == "QUOTED" else str(token)
        column = token.start_pos + 1
        if reserved_name_error(value):
            raise InvalidSpec(f"{value} at column {column}: {reserved_name_error(value)}")
        return _Expr(Name(value), column, str(token))

    @v_args(meta=True)
    def paren(self, meta, items) -> _Expr:
        return self._wrap(meta, self._node(items[1]))

    @v_args(meta=True)
    def signed(self, meta, items) -> _Expr:
        sign, operand = items
        node = self._node(operand)
        if sign == "+":
            return operand
        if isinstance(node, Literal) and not isinstance(node.value, (bool, str)) and operand.text[:1] != "(":
            return self._wrap(meta, Literal(-node.value))
        return self._wrap(meta, Negate(node))

    @v_args(meta=True)
    def binary(self, meta, items) -> _Expr:
        left, op, right = items
        operator = {"<>": "!="}.get(str(op), str(op))
        return self._wrap(meta, Binary(operator, self._node(left), self._node(right)))

    @v_args(meta=True)
    def logical(self, meta, items) -> _Expr:
        left, op, right = items
        return self._wrap(meta, Binary(op.lower(), self._node(left), self._node(right)))

    @v_args(meta=True)
    def not_(self, meta, items) -> _Expr:
        raise InvalidSpec(f"NOT at column {meta.start_pos + 1}: eKuiper's SQL has NOT only in NOT IN, NOT BETWEEN "
                          "and NOT LIKE, not before a condition; write the opposite condition (a <= 1 for NOT a > 1)")

    @v_args(meta=True)
    def index(self, meta, items) -> _Expr:
        operand, position = items
        return self._wrap(meta, Index(self._node(operand), int(position)))

    @v_args(meta=True)
    def member(self, meta, items) -> _Expr:
        operand, _, field = items
        return self._wrap(meta, Member(self._node(operand), field.node.name))

    @v_args(meta=True)
    def call(self, meta, items) -> Any:
        function = items[0]
        name, column = function.lower(), function.start_pos + 1
        inner = [i for i in items[2:-1] if i is not None]
        star = len(inner) == 1 and isinstance(inner[0], Token)
        args = [] if star else inner
        where, text = self._span(meta)
        if name in WINDOW_FUNCTIONS:
            if star:
                raise InvalidSpec(f"{name.upper()} at column {column} takes a time unit and whole numbers, not *")
            return _WindowCall(name, tuple(args), column, text)
        try:
            if name in AGGREGATES:
                if len(inner) != 1:
                    raise InvalidSpec(f"{name} takes one argument (or * for count)")
                return _Expr(Aggregate(name, None if star else self._node(args[0])), where, text)
            if name == "collect":
                if len(inner) != 1:
                    raise InvalidSpec("collect takes one argument, or *")
                return _Expr(Collect(None if star else self._node(args[0])), where, text)
            if name == "deduplicate":
                if star or len(inner) != 2:
                    raise InvalidSpec("deduplicate takes two arguments: the key and true or false (return all rows)")
                flag = self._node(args[1])
                if not (isinstance(flag, Literal) and isinstance(flag.value, bool)):
                    raise InvalidSpec("deduplicate's second argument must be true or false")
                return _Expr(Deduplicate(self._node(args[0]), flag.value), where, text)
            if name in CALLS:
                if inner:
                    raise InvalidSpec(f"{name}() takes no arguments")
                return _Expr(Call(name), where, text)
        except InvalidSpec as exc:
            raise InvalidSpec(f"{exc} (column {column})") from None
        known = ", ".join([*AGGREGATES, "collect", "deduplicate", *CALLS, *WINDOW_FUNCTIONS])
        if name in EKUIPER_FUNCTIONS:
            raise UnsupportedWindow(f"eKuiper's function {name}() at column {column} is not modelled here; the "
                                    f"functions modelled are: {known}")
        raise InvalidSpec(f"unknown function {str(function)!r} at column {column}; known: {known}")

    # ------------------------------------------------------------------ clauses

    def filter(self, items) -> tuple[str, _Expr]:
        return "filter", items[3]

    def over(self, items) -> tuple[str, _Expr]:
        return "over", items[3]

    @v_args(meta=True)
    def group_item(self, meta, items) -> _GroupItem:
        expr, *rest = items
        parts = dict(part for part in rest if part is not None)
        return _GroupItem(expr, parts.get("filter"), parts.get("over"), meta.start_pos + 1)

    def clause(self, items) -> _GroupItem:
        return items[0]

    def group_list(self, items) -> list[_GroupItem]:
        return list(items)

    def star(self, items) -> SelectItem:
        return SelectItem(None)

    def column(self, items) -> SelectItem:
        expr = items[0]
        alias = items[-1].node.name if len(items) > 1 and isinstance(items[-1], _Expr) else None
        return SelectItem(self._node(expr), alias)

    def select_list(self, items) -> list[SelectItem]:
        return list(items)

    def where(self, items) -> _Expr:
        return items[1]

    def having(self, items) -> _Expr:
        return items[1]

    def order_item(self, items) -> OrderKey:
        descending = len(items) > 1 and items[1] is not None and items[1].lower() == "desc"
        return OrderKey(self._node(items[0]), descending)

    def order(self, items) -> list[OrderKey]:
        return [i for i in items if isinstance(i, OrderKey)]

    def statement(self, items) -> dict:
        parts: dict[str, Any] = {}
        for item in items:
            if isinstance(item, list) and item and isinstance(item[0], SelectItem):
                parts["select"] = item
            elif isinstance(item, list) and item and isinstance(item[0], _GroupItem):
                parts["group"] = item
            elif isinstance(item, list) and item and isinstance(item[0], OrderKey):
                parts["order"] = item
            elif isinstance(item, _Expr) and "stream" not in parts:
                parts["stream"] = item
            elif isinstance(item, _Expr) and "group" not in parts:
                parts["where"] = item
            elif isinstance(item, _Expr):
                parts["having"] = item
        return parts


_PARSER = Lark(GRAMMAR, start=["statement", "clause"], parser="lalr", lexer="contextual", propagate_positions=True,
               maybe_placeholders=True)


def _syntax_error(exc: UnexpectedInput, text: str) -> WindowSyntaxError:
    return syntax_error(exc, text, _DESCRIBE, end="the text")


def _parse_tree(text: str, start: str):
    try:
        return _Build(text).transform(_PARSER.parse(text, start=start))
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    except VisitError as exc:
        raise exc.orig_exc from None


# --------------------------------------------------------------------------- windows


def _unit(call: _WindowCall) -> int:
    if not call.args:
        raise InvalidSpec(f"{call.name.upper()} (column {call.column}) needs a time unit first "
                          f"({', '.join(u.upper() for u in UNITS)})")
    first = call.args[0]
    if not isinstance(first.node, Name) or first.node.name.lower() not in UNITS:
        raise InvalidSpec(f"{call.name.upper()}: {first.text!r} at column {first.column} is not a time unit; "
                          f"units: {', '.join(u.upper() for u in UNITS)} (any case)")
    return UNITS[first.node.name.lower()]


def _whole(call: _WindowCall, index: int, what: str, zero: bool = False) -> int:
    arg = call.args[index]
    value = arg.node.value if isinstance(arg.node, Literal) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidSpec(f"{call.name.upper()}: the {what} ({arg.text!r} at column {arg.column}) must be a whole "
                          "number")
    if value < 0 or (value == 0 and not zero):
        raise InvalidSpec(f"{call.name.upper()}: the {what} ({arg.text!r} at column {arg.column}) must be "
                          f"{'0 or more' if zero else 'above 0'}")
    if value > MAX_COUNT:
        raise InvalidSpec(f"{call.name.upper()}: the {what} ({arg.text!r} at column {arg.column}) must be at most "
                          f"{MAX_COUNT:,}")
    return value


def _arity(call: _WindowCall, low: int, high: int, what: str) -> None:
    if not low <= len(call.args) <= high:
        raise InvalidSpec(f"{call.name.upper()} (column {call.column}) takes {what}, got {len(call.args)} "
                          f"argument{'s' if len(call.args) != 1 else ''}")


def _period(call: _WindowCall, index: int, unit: int, what: str, zero: bool = False) -> int:
    ms = _whole(call, index, what, zero) * unit
    if ms > MAX_MS:
        raise InvalidSpec(f"{call.name.upper()}: the {what} at column {call.args[index].column} must be at most "
                          f"{MAX_MS:,} ms (the calendar's years 1970 to 9999: eKuiper aligns windows to dates)")
    return ms


def _condition(item: _Expr | None, where: str) -> Any:
    if item is None:
        return None
    for node in expression_nodes(item.node):
        if isinstance(node, GROUP_NODES):
            raise InvalidSpec(f"{where} (column {item.column}) is evaluated for one row; it cannot aggregate")
    return item.node


def _window(group: _GroupItem, settings: Mapping[str, Any]) -> Any:
    call = group.expr
    filter_ = _condition(group.filter, "the FILTER condition")
    if group.over is not None and call.name != "slidingwindow":
        raise InvalidSpec(f"OVER (WHEN ...) (its condition at column {group.over.column}) is only for SLIDINGWINDOW; "
                          f"eKuiper would ignore it for {call.name.upper()}, so the dialect refuses it")
    trigger = _condition(group.over, "the OVER (WHEN ...) condition")
    if group.over is not None:
        for node in expression_nodes(trigger):
            if isinstance(node, Call) and node.function not in ("last_hit_time", "last_hit_count"):
                raise InvalidSpec(f"{node.function}() cannot stand in OVER (WHEN ...) (column {group.over.column})")
    time = _time_settings(settings, call)
    if call.name == "countwindow":
        _arity(call, 1, 2, "the size and an optional interval (COUNTWINDOW(n[, m]))")
        size = _whole(call, 0, "size")
        every = _whole(call, 1, "interval") if len(call.args) == 2 else size
        if every > size:
            raise InvalidSpec(f"COUNTWINDOW: the interval {every} (column {call.args[1].column}) must not be larger "
                              f"than the size {size}")
        if time:
            raise InvalidSpec(f"COUNTWINDOW (column {call.column}) cannot run in event time: eKuiper refuses the rule "
                              "(its event-time trigger has no count window)")
        return CountPanes(size, every, filter=filter_)
    unit = _unit(call)
    if call.name == "tumblingwindow":
        _arity(call, 2, 2, "a time unit and a size (TUMBLINGWINDOW(unit, n))")
        return Tumbling(_period(call, 1, unit, "size"), unit, filter=filter_, **time)
    if call.name == "hoppingwindow":
        _arity(call, 3, 3, "a time unit, a size and a hop (HOPPINGWINDOW(unit, size, hop))")
        return Hopping(_period(call, 1, unit, "size"), _period(call, 2, unit, "hop"), unit, filter=filter_, **time)
    if call.name == "slidingwindow":
        _arity(call, 2, 3, "a time unit, a size and an optional delay (SLIDINGWINDOW(unit, size[, delay]))")
        delay = _period(call, 2, unit, "delay", zero=True) if len(call.args) == 3 else 0
        return Sliding(_period(call, 1, unit, "size"), unit, delay, trigger=trigger, filter=filter_, **time)
    _arity(call, 3, 3, "a time unit, a maximum duration and a timeout (SESSIONWINDOW(unit, max_duration, timeout))")
    return Session(_period(call, 1, unit, "maximum duration"), _period(call, 2, unit, "timeout"), unit,
                   filter=filter_, **time)


SETTING_KEYS = ("time_mode", "timestamp_field", "late_tolerance", "time_zone")
TIME_MODES = ("processing", "event")


def _time_settings(settings: Mapping[str, Any], call: _WindowCall) -> dict[str, Any]:
    """The spec fields the case keys give (empty for the defaults)."""
    unknown = set(settings) - set(SETTING_KEYS)
    if unknown:
        raise InvalidSpec(f"unknown setting(s) {sorted(unknown)}; known: {', '.join(SETTING_KEYS)}")
    mode = settings.get("time_mode", "processing")
    if mode not in TIME_MODES:
        raise InvalidSpec(f"time_mode must be processing or event, got {mode!r}")
    out: dict[str, Any] = {}
    if mode == "event":
        field = settings.get("timestamp_field")
        if not isinstance(field, str) or not field:
            raise InvalidSpec("time_mode event needs timestamp_field, the event field holding the event time (ms)")
        out["timestamp"] = field
        tolerance = settings.get("late_tolerance", 0)
        if isinstance(tolerance, bool) or not isinstance(tolerance, int) or tolerance < 0:
            raise InvalidSpec(f"late_tolerance must be whole milliseconds, 0 or more, got {tolerance!r}")
        if tolerance:
            out["late_tolerance"] = tolerance
    else:
        for key in ("timestamp_field", "late_tolerance"):
            if key in settings:
                raise InvalidSpec(f"{key} needs time_mode event")
    zone = settings.get("time_zone", "UTC")
    if zone != "UTC":
        if call.name == "countwindow":
            raise InvalidSpec("time_zone: a count window is not aligned to any time")
        out["time_zone"] = zone
    return out


# --------------------------------------------------------------------------- parse


def parse(text: str, settings: Mapping[str, Any] | None = None):
    """The spec of a window clause (`TUMBLINGWINDOW(ss, 10)`) or of a statement
    (`SELECT ... GROUP BY TUMBLINGWINDOW(ss, 10), color`), with the case's
    settings (`SETTING_KEYS`) applied to its window."""
    if not isinstance(text, str):
        raise TypeError(f"a window clause is a string, got {type(text).__name__}")
    settings = dict(settings or {})
    statement = text.lstrip()[:6].lower() == "select"
    if not statement:
        group = _parse_tree(text, "clause")
        if not isinstance(group.expr, _WindowCall):
            raise InvalidSpec(f"{group.expr.text!r} at column {group.column} is not a window function; eKuiper's "
                              f"windows are {', '.join(w.upper() for w in WINDOW_FUNCTIONS)}")
        return _window(group, settings)
    parts = _parse_tree(text, "statement")
    groups = parts["group"]
    windows = [g for g in groups if isinstance(g.expr, _WindowCall)]
    if len(windows) != 1:
        where = f" (columns {', '.join(str(w.column) for w in windows)})" if windows else ""
        raise InvalidSpec(f"GROUP BY needs exactly one window function{where}")
    keys = []
    for group in groups:
        if group is windows[0]:
            continue
        if group.expr.node in keys:
            raise InvalidSpec(f"the GROUP BY key {group.expr.text!r} at column {group.column} is named twice")
        if group.filter is not None or group.over is not None:
            raise InvalidSpec(f"FILTER and OVER follow a window function, not the key at column {group.column}")
        for node in expression_nodes(group.expr.node):
            if isinstance(node, GROUP_NODES + (Call,)):
                raise InvalidSpec(f"the GROUP BY key at column {group.column} reads the row's fields only")
        keys.append(group.expr.node)
    window = _window(windows[0], settings)
    where_item = parts.get("where")
    where = where_item.node if where_item is not None else None
    if where is not None and any(isinstance(n, GROUP_NODES) for n in expression_nodes(where)):
        if isinstance(window, KUIPER.where_into) and not window.event_time:
            raise InvalidSpec(f"the WHERE condition (column {where_item.column}): {WHERE_AGGREGATE_IN_WINDOW}")
    for clause in ("where", "having"):
        item = parts.get(clause)
        for node in expression_nodes(item.node) if item is not None else ():
            if isinstance(node, Call) and node.function in ("last_hit_time", "last_hit_count"):
                raise InvalidSpec(f"{node.function}() reads a sliding window's trigger; it stands only in "
                                  f"OVER (WHEN ...) (column {item.column})")
    aliases = [item.alias for item in parts["select"] if item.alias is not None]
    twice = next((a for i, a in enumerate(aliases) if a in aliases[:i]), None)
    if twice is not None:  # eKuiper's map of output fields keeps the last: refused, not silently lost
        second = list(re.finditer(rf"\bas\s+`?{re.escape(twice)}\b", text, re.IGNORECASE))[1:2]
        where = f" at column {second[0].start() + 1}" if second else ""
        raise InvalidSpec(f"the alias {twice!r} names two select items{where}; one would be lost")
    having = parts.get("having")
    return Statement(parts["select"], window, source=parts["stream"].node.name, where=where, keys=tuple(keys),
                     having=having.node if having is not None else None, order=tuple(parts.get("order", ())),
                     rules=KUIPER)


# --------------------------------------------------------------------------- render

#: binding strength, loosest first
_PRECEDENCE = {"or": 1, "and": 2, "not": 3, "=": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5,
               "*": 6, "/": 6, "%": 6, "negate": 7, "postfix": 8}


def _name(name: str) -> str:
    return f"`{name}`" if name.lower() in KEYWORDS or name.lower() in WINDOW_FUNCTIONS else name


def render_expression(node: Any, outer: int = 0) -> str:
    """An expression's canonical text, parenthesized only where needed."""
    kind = type(node)
    if kind is Literal:
        value = node.value
        if isinstance(value, bool):
            return "true" if value else "false"
        if value is None:
            raise UnsupportedWindow("the kuiper dialect has no null literal")
        if isinstance(value, str):
            if '"' not in value:
                return f'"{value}"'
            if "'" not in value:
                return f"'{value}'"
            raise UnsupportedWindow(f"the kuiper dialect cannot write the string {value!r} (both quotes)")
        text = repr(value)
        return f"({text})" if value < 0 and outer >= _PRECEDENCE["negate"] else text
    if kind is Name:
        return _name(node.name)
    if kind is Aggregate:
        return f"{node.function}({'*' if node.argument is None else render_expression(node.argument)})"
    if kind is Collect:
        return f"collect({'*' if node.argument is None else render_expression(node.argument)})"
    if kind is Deduplicate:
        return f"deduplicate({render_expression(node.key)}, {'true' if node.all else 'false'})"
    if kind is Call:
        return f"{node.function}()"
    if kind is Index:
        return f"{render_expression(node.operand, _PRECEDENCE['postfix'])}[{node.index}]"
    if kind is Member:
        return f"{render_expression(node.operand, _PRECEDENCE['postfix'])}->{_name(node.name)}"
    if kind is Negate:
        inner = render_expression(node.operand, _PRECEDENCE["negate"])
        if isinstance(node.operand, (Literal, Negate)) and not inner.startswith("("):
            inner = f"({inner})"
        return _parenthesized(f"-{inner}", _PRECEDENCE["negate"], outer)
    if kind is Not:
        raise UnsupportedWindow("the kuiper dialect cannot write NOT before a condition: eKuiper's SQL has none")
    if kind is Binary:
        strength = _PRECEDENCE[node.op]
        left = render_expression(node.left, strength + (strength == 4))
        right = render_expression(node.right, strength + 1)
        op = node.op.upper() if node.op in ("and", "or") else node.op
        return _parenthesized(f"{left} {op} {right}", strength, outer)
    raise UnsupportedWindow(f"the kuiper dialect cannot write {node!r}")


def _parenthesized(text: str, strength: int, outer: int) -> str:
    return f"({text})" if strength < outer else text


def _count(ms: int, unit: int) -> str:
    return str(ms // unit)


def render_window(spec: Any) -> str:
    """The window clause of a pane window: the function, FILTER, OVER."""
    if isinstance(spec, CountPanes):
        text = f"COUNTWINDOW({spec.size})" if spec.every == spec.size else f"COUNTWINDOW({spec.size}, {spec.every})"
    else:
        unit = UNIT_NAMES[spec.unit]
        if isinstance(spec, Tumbling):
            args = [_count(spec.size, spec.unit)]
        elif isinstance(spec, Hopping):
            args = [_count(spec.size, spec.unit), _count(spec.hop, spec.unit)]
        elif isinstance(spec, Sliding):
            args = [_count(spec.size, spec.unit)] + ([_count(spec.delay, spec.unit)] if spec.delay else [])
        elif isinstance(spec, Session):
            args = [_count(spec.max_duration, spec.unit), _count(spec.timeout, spec.unit)]
        else:
            raise UnsupportedWindow(f"the kuiper dialect cannot write {spec!r}")
        text = f"{_FUNCTION[type(spec)]}({unit}, {', '.join(args)})"
    if spec.filter is not None:
        text += f" FILTER(WHERE {render_expression(spec.filter)})"
    if isinstance(spec, Sliding) and spec.trigger is not None:
        text += f" OVER(WHEN {render_expression(spec.trigger)})"
    return text


_FUNCTION = {Tumbling: "TUMBLINGWINDOW", Hopping: "HOPPINGWINDOW", Sliding: "SLIDINGWINDOW",
             Session: "SESSIONWINDOW", CountPanes: "COUNTWINDOW"}


def render_query(query: Statement) -> str:
    if query.rules is not KUIPER:
        raise UnsupportedWindow(f"the kuiper dialect writes eKuiper's queries, not {query.rules.engine}'s statements")
    items = []
    for item in query.select:
        if item.expression is None:
            items.append("*")
        else:
            text = render_expression(item.expression)
            items.append(f"{text} AS {_name(item.alias)}" if item.alias is not None else text)
    text = f"SELECT {', '.join(items)} FROM {_name(query.source)}"
    if query.where is not None:
        text += f" WHERE {render_expression(query.where)}"
    text += " GROUP BY " + ", ".join([render_window(query.window), *map(render_expression, query.keys)])
    if query.having is not None:
        text += f" HAVING {render_expression(query.having)}"
    if query.order:
        text += " ORDER BY " + ", ".join(
            render_expression(k.expression) + (" DESC" if k.descending else "") for k in query.order)
    return text


#: spec class -> how the kuiper dialect writes it (the other kinds are unsupported)
SYNTAX: dict[type, Any] = {**{cls: render_window for cls in _FUNCTION}, Statement: render_query}


def render(spec: Any) -> str:
    """The canonical text of `spec`: a window clause, or a statement for a
    query (`Statement`); `parse(render(spec), settings(spec)) == spec`."""
    writer = SYNTAX.get(type(spec))
    if writer is None:
        raise UnsupportedWindow(f"the kuiper dialect cannot write the {spec.KIND} window: it is not an eKuiper "
                                "window")
    return writer(spec)


def settings(spec: Any) -> dict[str, Any]:
    """The case keys (`time_mode`, ...) that `spec` needs besides its text."""
    window = spec.window if isinstance(spec, Statement) else spec
    out: dict[str, Any] = {}
    if window.timestamp is not None:
        out["time_mode"] = "event"
        out["timestamp_field"] = window.timestamp
        if window.late_tolerance:
            out["late_tolerance"] = window.late_tolerance
    if window.time_zone != "UTC":
        out["time_zone"] = window.time_zone
    return out


def name(spec: Any) -> str:
    """A short, file-safe name of `spec`'s window in eKuiper's words:
    `tumblingwindow`, `query-countwindow`."""
    if isinstance(spec, Statement):
        return "query-" + name(spec.window)
    return _FUNCTION[type(spec)].lower() if type(spec) in _FUNCTION else spec.KIND


__all__ = ["parse", "render", "settings", "name", "render_expression", "SETTING_KEYS", "SYNTAX"]

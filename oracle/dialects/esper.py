"""Esper's data-window syntax: `parse(text) -> WindowSpec`, `render(spec) -> str`.

A window clause is what follows the stream name in `select irstream * from E<clause>`:
one or more data windows and an optional `retain-union` / `retain-intersection`.

Syntax (Esper's grammar `EsperEPL2Grammar.g4`, rules `viewExpressions`,
`timePeriod`, `numberconstant`; seed 14.1):

* `#name(params)` or `#ns:name(params)`, each window of the chain with `#`; or the
  old form `.ns:name(params)`, where every window needs its namespace. The two
  forms do not mix in one chain. A window without parameters may leave off the
  parentheses (`#keepall`, `#keepall()`; seed 14.1 "you may leave parenthesis off").
* Parameters: a time period (`2 minutes 5 seconds`, `1.5 sec`, `100 msec`), a
  number (`10` seconds where a time is needed, `5000L`), a quoted string
  (`"FORCE_UPDATE, START_EAGER"` or in single quotes), a property name (an
  identifier or a backquoted name). Esper allows any expression; this dialect
  takes these forms only, and anything else is a syntax error.
* Time period units, largest first, each at most once (the grammar's order):
  years/year, months/month, weeks/week, days/day, hours/hour,
  minutes/minute/min, seconds/second/sec, milliseconds/millisecond/msec,
  microseconds/microsecond/usec. Keywords are case-insensitive (Esper's lexer
  reads a case-folded stream); window names and namespaces are not (the lookup
  in `ViewEnum.forName` is an exact `equals`).

Decided and documented:

* Namespaces: Esper resolves `ns:name` in the registry of built-in windows, where
  each window has exactly one namespace (`ViewEnum`: `win:length`, `std:unique`,
  `ext:sort`, `stat:uni`; `PluggableObjectRegistryImpl.lookup`), so `#std:time(1)`
  fails with "View name 'std:time' is not a known view name". This dialect does
  the same: a namespace other than the window's own is an `InvalidSpec`.
* Time is converted exactly with `Decimal` (Esper multiplies doubles and rounds);
  a period that is not whole milliseconds (`0.0001 sec`, `1 usec`) is an
  `InvalidSpec`. Years and months are calendar-aware in Esper: `UnsupportedWindow`.
  A week is 7 days.
* A bare number where a time is needed means seconds (seed 14.3.3 "time(125)";
  esper.md §0.2): `#time(1.5)` is 1500 ms.
* A reference point is a whole number of milliseconds, `L` suffix or not; a
  fraction or a time period there is an `InvalidSpec` ("Time-Batch view requires a
  Long-typed reference point in msec", `TimeBatchViewForge`).
* Flow control (time_batch, time_length_batch): the string is split on commas, each word
  trimmed and case-folded, empty words skipped; FORCE_UPDATE sets force_update,
  START_EAGER sets both flags (`TimeBatchFlags.processKeywords`), so a word
  twice and the empty string `""` are accepted as Esper accepts them. With START_EAGER
  the reference point is kept in the spec as written, though Esper ignores it then
  (esper.md §2 `#time_batch`).
* Several data windows form an intersection, or with `retain-union` a union
  (seed 14.1; esper.md §6). With one data window the keyword changes nothing
  (`ViewFactoryForgeUtil.buildIntersectionsUnions` builds no union for one) and
  `render` leaves it off. At most one batch window in an intersection ("Cannot
  combined multiple batch data windows into an intersection").
* `#groupwin(keys)` must come first, once, and be followed by at least one data
  window (`ViewFactoryForgeUtil.verifyGroups`, `addMergeViews`; esper.md §5). The
  windows after it are grouped: one window, or their intersection / union.
* `#timetolive(ts)` is `#time_order(ts, 0)` (esper.md §2; `TimeOrder` with span
  0, written back as `#timetolive`); `#time_order` itself takes a period above
  0, as every window does here.
* Derived-value windows (`#size`, `#uni`, `#linest`, `#correl`,
  `#weighted_avg`; esper.md §7) close the chain: the data windows before one
  (one, or their intersection or union) are its `source`, none is the stream
  itself; nothing may follow one (`InvalidSpec`). Under `#groupwin` each group
  has its own (`GroupWin` around the derived window, its source the data
  windows between them): grouped statistics, the group keys added to its rows
  (`oracle.windows.groupwin`); after `#merge` one is `UnsupportedWindow`. Their statistic parameters are property names (a
  number, `*` or `id` there is an `InvalidSpec` naming the column); the
  additional properties are names or `*` (Esper's wildcard: every property of
  the event), written back named first, then `*`; a name written twice is one
  property, and a name that overlaps a field the window posts (ignoring case;
  `#linest` checks `slope` and `YIntercept` only, `StatViewAdditionalPropsForge`)
  is an `InvalidSpec`.
* Sort criteria (`#sort`, `#rank`) may name a property twice, as Esper allows
  (`SortWindowViewForge` checks no duplicates): the later key never decides a
  tie the earlier one left. `#rank`'s unique properties must differ.
* An expiry expression (`#expr`, `#expr_batch`) whose operands' kinds are known
  from the text (literals, built-ins, operators over them) must apply each
  operator to kinds it takes, as Esper's compiler requires ("Implicit
  conversion ... is not allowed"): `current_count <= 'abc'` is an `InvalidSpec`
  naming the parameter; a property's kind is checked per event (an event error).
* Windows Esper has but the oracle does not model (expr, expr_batch) raise `UnsupportedWindow` naming the window,
  whatever their parameters: a clause that GRAMMAR rejects is read again with
  LOOSE_GRAMMAR (any parameters in balanced parentheses) to name its windows, so
  `#sort(10, price desc)` is unsupported and `#foo(a b)` unknown, not a syntax error.

Errors: a clause that does not parse raises `WindowSyntaxError` with the 1-based
column (the character offset in the text plus one); a parameter the window cannot
take raises `InvalidSpec` naming the window, the parameter and its column.

`render` writes the canonical form: `#name(...)` without namespaces, periods as
`N sec` when whole seconds else `N msec`, reference points as `NL`, flow control
as `"FORCE_UPDATE"` or `"FORCE_UPDATE, START_EAGER"`, `retain-union` only for a
union. `parse(render(s)) == s` for every valid spec.

**The windows, one by one** (every one on the oracle and on Spark; each
window's module in `oracle/windows/` states its rules in full):

| window | notes |
|---|---|
| `#length(n)` |  |
| `#length_batch(n)` |  |
| `#time(t)` |  |
| `#ext_timed(ts, t)` | arrival-order deque, out-of-order events block expiry |
| `#time_batch(t[, ref][, "FORCE_UPDATE, START_EAGER"])` | grid kept for life; START_EAGER implies FORCE_UPDATE and ignores ref |
| `#ext_timed_batch(ts, t[, ref])` | the closing event starts the next batch |
| `#time_length_batch(t, n[, "FORCE_UPDATE, START_EAGER"])` | n events or t, whichever first; every release re-arms the timer at its own clock + t (never a grid); Spark: a grouped Arrow kernel, the cut being sequential |
| `#time_accum(t)` | all leave together t after the last arrival; an arrival exactly t later starts anew |
| `#time_order(ts, t)`, `#timetolive(ts)` | held until the clock reaches ts + t, released by timestamp; an event already that old is in and out at once; `#timetolive(ts)` is span 0 |
| `#sort(n, p [asc or desc], ...)` | the n best; ties: newest first, the oldest pushed out; null sorts first ascending, last descending |
| `#rank(k, ..., n, p [asc or desc], ...)` | the latest event per key, the n best of those; an arrival worse than the worst of a full window is in and out at once |
| `#expr(expiry)` | expiry evaluated for the oldest at each arrival, expiring from the front until it holds (false and null expire); no timer; a `set` of a variable it reads re-evaluates and posts, even an empty update; Spark: a grouped Arrow kernel with its own evaluator (`current_count <= n` is planned as `#length(n)`) |
| `#expr_batch(expiry[, include])` | evaluated for each arrival; true releases the buffer (without the trigger when `include` is false, keeping the batch start as Esper does); a `set` releases the whole buffer, even an empty one |
| `#keepall` |  |
| `#firstlength(n)` |  |
| `#firsttime(t)` | timer armed at creation |
| `#firstevent` |  |
| `#lastevent` |  |
| `#unique(k, ...)` | a missing key property is the null key |
| `#firstunique(k, ...)` |  |
| `#groupwin(k, ...)` + any of the above, optionally closed by `#merge(k, ...)` | a sub-window per group, created on first sight; a closing `#merge` with the same keys changes nothing (a merge followed by a data window, or with other keys, is an error) |
| `retain-union` of any data windows (and grouped) | an event leaves when its last member lets go; a first-X member that refused it keeps it for ever (Esper counts every member); old in member order; Spark: each member alone, then one aggregate per event |
| intersection (`#w1#w2...`, and grouped) | removed by any member, dropped quietly by the others; first-X members and one batch member as Esper's source (a refused arrival posted as old only, batch releases reset the others); old in member order (Esper: a HashSet). A `#time` member's timer stays where it was when another member removes its oldest events (Esper's `TimeWindowView` reschedules only on an empty window's arrival and after a firing; the spec's `stale_time_timers`): the stale timer posts nothing in a walk and orders a jump's sub-windows by its old due time (`esper/groupwin-unique-time-stale-timer-orders-a-jump`; Apama's partitions release by their items' own dues instead, `apama/partition-within-unique-jump-releases-by-own-due`). Spark: members that decide alone (`#time`, `#time_accum`, `#time_order`, `#unique`, `#lastevent`, `#keepall`) as set operations, an event leaving at its first member removal; any other member, and a `#time` member beside a quietly removing one where several timers share a jump (groups, several timed members), in a grouped Arrow kernel per sub-window that replays the members with the clock (spark_impl/windows/intersect.py), each member a small table of its own written from esper.md (which rows it holds, keyed how, its timer's due; spark_impl/windows/members.py), every removal dropped from all members by one operation |
| `#size([p, ...])` | derived values (rows in `values`, no events): `size`, posted only when the count changes; the first old row is size 0 with the additional properties null |
| `#uni(x[, p, ...])` | `datapoints`, `total`, `average`, `variance`, `stddev` (sample), `stddevpa`; posted on every source post, an empty FORCE_UPDATE batch too; null x skipped; sums reset to exactly 0 when the last point leaves |
| `#linest(x, y[, p, ...])` | the regression of y on x (x the first parameter; Esper's 19 fields); an additional property named like a field other than `slope`/`YIntercept` replaces it |
| `#correl(x, y[, p, ...])` | `correlation`, NaN while either sum of squares is 0 |
| `#weighted_avg(x, w[, p, ...])` | `average` = sum(xw)/sum(w), NaN when sum(w) is 0; its own sums start NaN and are never reset (Esper's `WeightedAverageView`) |
"""

from __future__ import annotations

import re
from decimal import Decimal
from collections.abc import Callable
from typing import Any

import attrs
from attrs import frozen
from lark import Lark, Token, Transformer, v_args
from lark.exceptions import UnexpectedInput, VisitError

from oracle.dialects.syntax import syntax_error
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import ESPER, SelectItem, Statement, expression_nodes, reserved_name_error
from oracle.model import (
    AGGREGATES,
    Expression,
    BATCH_WINDOWS,
    BUILTIN_EVENTS,
    BUILTINS,
    COMPARISONS,
    Aggregate,
    Binary,
    Builtin,
    EventProperty,
    Expr,
    ExprBatch,
    Literal,
    Name,
    Negate,
    Not,
    DERIVED_WINDOWS,
    Correl,
    Linest,
    Size,
    Uni,
    WeightedAvg,
    ExtTimed,
    ExtTimedBatch,
    FirstEvent,
    FirstLength,
    FirstTime,
    FirstUnique,
    GroupWin,
    Intersection,
    KeepAll,
    LastEvent,
    Length,
    LengthBatch,
    Rank,
    RetainUnion,
    Sort,
    SortKey,
    Time,
    TimeAccum,
    TimeBatch,
    TimeLengthBatch,
    TimeOrder,
    Unique,
    WindowSpec,
)

_TERMINALS = r"""
HASH: "#"
DOT: "."
COLON: ":"
LPAR: "("
RPAR: ")"
COMMA: ","
STAR: "*"
SIGN: "-" | "+"
TIMES: "*"
DIVIDE: "/"
MODULO: "%"
COMPARE: "<=" | ">=" | "<>" | "!=" | "=" | "<" | ">"
AND.2: /and\b/i
OR.2: /or\b/i
NOT.2: /not\b/i
BOOLEAN.2: /(true|false)\b/i
NULL.2: /null\b/i
NAME: /[A-Za-z_][A-Za-z0-9_]*/
TICKED: /`[^`]*`/
STRING: /"[^"\\]*"/ | /'[^'\\]*'/
NUMBER: /\d+[lL]|(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?[dDfF]?/
UNIT: /(years?|months?|weeks?|days?|hours?|minutes?|min|milliseconds?|msec|microseconds?|usec|seconds?|sec)\b/i
RETAIN: /retain-(union|intersection)\b/i
ORDER: /(asc|desc)\b/i
SELECT.2: /select\b/i
SELECTOR.2: /(istream|irstream|rstream)\b/i
FROM.2: /from\b/i
WHERE.2: /where\b/i
GROUP.2: /group\b/i
BY.2: /by\b/i
HAVING.2: /having\b/i
AS.2: /as\b/i
DISTINCT.2: /distinct\b/i

%import common.WS
%ignore WS
"""

GRAMMAR = r"""
clause: (hash_view+ | dot_view+) RETAIN?

hash_view: HASH (NAME COLON)? NAME params?
dot_view: DOT NAME COLON NAME params?
params: LPAR [param (COMMA param)*] RPAR

?param: period | expr | ordered | star
star: TIMES
ordered: name ORDER
period: SIGN? part+
part: NUMBER UNIT

// An expression (Esper's, esper.md §4), loosest binding first.
?expr: conjunction | expr OR conjunction -> logical
?conjunction: negation | conjunction AND negation -> logical
?negation: comparison | NOT negation -> not_
?comparison: sum | sum COMPARE sum -> binary
?sum: product | sum SIGN product -> binary
?product: unary | product (TIMES | DIVIDE | MODULO) unary -> binary
?unary: atom | SIGN unary -> signed
?atom: number | string | name | boolean | null | call | member | LPAR expr RPAR -> paren
number: NUMBER
string: STRING
name: NAME | TICKED
boolean: BOOLEAN
null: NULL
call: NAME LPAR (TIMES | DISTINCT? expr) RPAR
member: NAME DOT NAME

// A statement over a window (esper.md §8): select ... from E[(filter)]<clause> ...
statement: SELECT SELECTOR? select_list FROM NAME stream_filter? clause where? group_by? having?
select_list: STAR (COMMA select_item)* | select_item (COMMA select_item)*
select_item: expr (AS NAME)?
stream_filter: LPAR expr RPAR
where: WHERE expr
group_by: GROUP BY expr (COMMA expr)*
having: HAVING expr
""" + _TERMINALS

LOOSE_GRAMMAR = r"""
// Only to name the windows of a clause that GRAMMAR rejects, whatever their
// parameters (`#sort(10, price desc)`, `#expr(current_count <= 2)`).
loose: (loose_view+ | loose_dot_view+) RETAIN?
loose_view: HASH (NAME COLON)? NAME group?
loose_dot_view: DOT NAME COLON NAME group?
group: LPAR (group | STRING | OTHER)* RPAR
OTHER: /[^()"'\s#.][^()"'\s]*/
""" + _TERMINALS

_DESCRIBE = {
    "HASH": "'#'", "DOT": "'.'", "COLON": "':'", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "SIGN": "a sign", "TIMES": "'*'", "DIVIDE": "'/'", "MODULO": "'%'", "COMPARE": "a comparison",
    "AND": "and", "OR": "or", "NOT": "not", "BOOLEAN": "true or false", "NULL": "null", "NAME": "a name", "TICKED": "a `backquoted` name", "STRING": "a quoted string",
    "NUMBER": "a number", "UNIT": "a time unit (msec, sec, min, hour, day, ...)",
    "RETAIN": "retain-union or retain-intersection", "ORDER": "asc or desc",
    "SELECT": "select", "SELECTOR": "istream, irstream or rstream", "FROM": "from", "WHERE": "where",
    "GROUP": "group by", "BY": "by", "HAVING": "having", "AS": "as", "DISTINCT": "distinct",
    "$END": "the end of the clause",
}

# --------------------------------------------------------------------------- window names

# Every built-in window of Esper and its namespace (`ViewEnum`).
NAMESPACES = {
    "length": "win", "length_batch": "win", "time": "win", "ext_timed": "win", "time_batch": "win",
    "ext_timed_batch": "win", "time_length_batch": "win", "time_accum": "win", "keepall": "win",
    "firstlength": "win", "firsttime": "win", "expr": "win", "expr_batch": "win",
    "unique": "std", "groupwin": "std", "merge": "std", "lastevent": "std", "firstevent": "std",
    "firstunique": "std", "size": "std",
    "sort": "ext", "rank": "ext", "time_order": "ext", "timetolive": "ext",
    "uni": "stat", "linest": "stat", "correl": "stat", "weighted_avg": "stat",
}
UNSUPPORTED: tuple[str, ...] = ()

# --------------------------------------------------------------------------- time units

# The time units in the grammar's order, largest first: keywords, ms per unit
# (None: a calendar unit).
_UNIT_ORDER = (
    (("years", "year"), None),
    (("months", "month"), None),
    (("weeks", "week"), Decimal(7 * 86_400_000)),
    (("days", "day"), Decimal(86_400_000)),
    (("hours", "hour"), Decimal(3_600_000)),
    (("minutes", "minute", "min"), Decimal(60_000)),
    (("seconds", "second", "sec"), Decimal(1000)),
    (("milliseconds", "millisecond", "msec"), Decimal(1)),
    (("microseconds", "microsecond", "usec"), Decimal("0.001")),
)
# keyword (lower case) -> (rank in that order, ms per unit)
_UNITS = {word: (rank, ms) for rank, (words, ms) in enumerate(_UNIT_ORDER) for word in words}


# --------------------------------------------------------------------------- parse tree


@frozen
class Param:
    """One window parameter as written: `kind` is period, number, string or name.

    `value`: a period's milliseconds (Decimal), a number's value (Decimal), a
    string's contents, a name. `integral`: a number written as an integer literal.
    `column`: 1-based column of its first character; `text`: the source text."""

    kind: str
    value: Any
    column: int
    text: str
    integral: bool = False


@frozen
class View:
    """One `#ns:name(params)` of the chain (`params` empty when written without ())."""

    namespace: str | None
    name: str
    params: tuple[Param, ...]
    column: int


def _view(children: list, params: tuple[Param, ...]) -> View:
    """A View from a view rule's children: HASH or DOT, [NAME COLON] NAME, ..."""
    names = [t for t in children if isinstance(t, Token) and t.type == "NAME"]
    namespace = str(names[0]) if len(names) == 2 else None
    return View(namespace, str(names[-1]), params, children[0].start_pos + 1)


class _ToViews(Transformer):
    """Parse tree -> (list of `View`, retain keyword or None). Checks the order of
    time-period units, a rule of the grammar (a `WindowSyntaxError`)."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    @v_args(inline=True)
    def number(self, digits: Token) -> Param:
        body = str(digits)
        integral = body[-1] in "lL" or body.isdigit()
        value = Decimal(body.rstrip("lLdDfF"))
        return Param("number", value, digits.start_pos + 1, body, integral)

    @v_args(inline=True)
    def part(self, digits: Token, unit: Token) -> tuple[Param, Token]:
        return self.number(digits), unit

    def period(self, items: list) -> Param:
        sign = items[0] if isinstance(items[0], Token) else None
        parts: list[tuple[Param, Token]] = items[1:] if sign is not None else items
        total = Decimal(0)
        last_rank = -1
        for number, unit in parts:
            rank, ms = _UNITS[unit.lower()]
            if rank <= last_rank:
                raise WindowSyntaxError(
                    f"time period units go from years down to microseconds, each at most once; {str(unit)!r} is out of place",
                    self.text, unit.start_pos + 1)
            last_rank = rank
            if ms is None:
                raise UnsupportedWindow(
                    f"calendar time periods ({unit}) are not supported (column {unit.start_pos + 1}); "
                    "Esper computes years and months on the calendar")
            total += number.value * ms
        if sign == "-":
            total = -total
        start = sign.start_pos if sign is not None else parts[0][0].column - 1
        return Param("period", total, start + 1, self.text[start:parts[-1][1].end_pos])

    # Expressions: every piece is a Param; a compound one holds its tree.

    def _compound(self, meta, node) -> Param:
        return Param("expression", node, meta.start_pos + 1, self.text[meta.start_pos:meta.end_pos])

    @v_args(meta=True)
    def signed(self, meta, items: list) -> Param:
        sign, operand = items
        if sign == "+":
            return operand
        if operand.kind == "number":  # a negative literal
            return Param("number", -operand.value, meta.start_pos + 1, self.text[meta.start_pos:meta.end_pos],
                         operand.integral)
        return self._compound(meta, Negate(_node(operand)))

    @v_args(meta=True)
    def binary(self, meta, items: list) -> Param:
        left, op, right = items
        return self._compound(meta, Binary({"<>": "!="}.get(str(op), str(op)), _node(left), _node(right)))

    @v_args(meta=True)
    def logical(self, meta, items: list) -> Param:
        left, op, right = items
        return self._compound(meta, Binary(op.lower(), _node(left), _node(right)))

    @v_args(meta=True)
    def not_(self, meta, items: list) -> Param:
        return self._compound(meta, Not(_node(items[1])))

    @v_args(meta=True)
    def paren(self, meta, items: list) -> Param:
        return self._compound(meta, _node(items[1]))

    @v_args(meta=True)
    def call(self, meta, items: list) -> Param:
        function, argument = items[0], items[-2]
        distinct = any(isinstance(i, Token) and i.type == "DISTINCT" for i in items)
        name, column = function.lower(), function.start_pos + 1
        if name not in AGGREGATES:
            raise InvalidSpec(f"unknown function {str(function)!r} at column {column}; "
                              f"the aggregations are {', '.join(AGGREGATES)}")
        star = isinstance(argument, Token)
        try:
            return self._compound(meta, Aggregate(name, None if star else _node(argument), distinct=distinct))
        except InvalidSpec as exc:
            raise InvalidSpec(f"{exc} (column {column})") from None

    # A statement: its parts as (name, value) pairs for `_statement`.

    def select_item(self, items: list) -> tuple:
        expr, alias = items[0], (str(items[2]) if len(items) == 3 else None)
        return (expr, alias)

    def select_list(self, items: list) -> tuple:
        star = (None,) if isinstance(items[0], Token) and items[0].type == "STAR" else ()  # None: `*`
        return ("select", star + tuple(i for i in items if isinstance(i, tuple)))

    def stream_filter(self, items: list) -> tuple:
        return ("filter", items[1])

    def where(self, items: list) -> tuple:
        return ("where", items[1])

    def group_by(self, items: list) -> tuple:
        return ("keys", tuple(i for i in items if isinstance(i, Param)))

    def having(self, items: list) -> tuple:
        return ("having", items[1])

    def statement(self, items: list) -> dict:
        parts: dict = {"selector": None}
        for item in items:
            if isinstance(item, Token):
                if item.type == "SELECTOR":
                    parts["selector"] = item.lower()
                elif item.type == "NAME":
                    parts["source"] = item
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                parts[item[0]] = item[1]
            elif isinstance(item, tuple):  # the clause: (views, retain)
                parts["clause"] = item
        return parts

    @v_args(meta=True)
    def member(self, meta, items: list) -> Param:
        event, _, prop = items
        column = event.start_pos + 1
        if event not in BUILTIN_EVENTS:
            raise InvalidSpec(f"{event}.{prop} at column {column}: only {' and '.join(BUILTIN_EVENTS)} "
                              f"have properties here (as in newest_event.{prop})")
        if reserved_name_error(str(prop)):
            raise InvalidSpec(f"{event}.{prop} at column {column}: {reserved_name_error(str(prop))}")
        return self._compound(meta, EventProperty(str(event), str(prop)))

    @v_args(inline=True)
    def boolean(self, token: Token) -> Param:
        return Param("boolean", token.lower() == "true", token.start_pos + 1, str(token))

    @v_args(inline=True)
    def null(self, token: Token) -> Param:
        return Param("null", None, token.start_pos + 1, str(token))

    @v_args(inline=True)
    def string(self, token: Token) -> Param:
        return Param("string", str(token)[1:-1], token.start_pos + 1, str(token))

    @v_args(inline=True)
    def name(self, token: Token) -> Param:
        value = str(token)[1:-1] if token.type == "TICKED" else str(token)
        return Param("name", value, token.start_pos + 1, str(token))

    @v_args(inline=True)
    def star(self, token: Token) -> Param:
        return Param("star", "*", token.start_pos + 1, "*")

    @v_args(inline=True)
    def ordered(self, name: Param, order: Token) -> Param:
        return Param("ordered", (name.value, order.lower() == "desc"), name.column,
                     self.text[name.column - 1:order.end_pos])

    def params(self, items: list) -> tuple[Param, ...]:
        return tuple(p for p in items if isinstance(p, Param))

    def hash_view(self, items: list) -> View:
        return _view(items, items[-1] if isinstance(items[-1], tuple) else ())

    dot_view = hash_view

    def clause(self, items: list) -> tuple[list[View], str | None]:
        retain = items[-1].lower() if isinstance(items[-1], Token) else None
        return [v for v in items if isinstance(v, View)], retain


_PARSER = Lark(GRAMMAR, start="clause", parser="lalr", lexer="contextual", maybe_placeholders=True,
               propagate_positions=True)
_STATEMENT_PARSER = Lark(GRAMMAR, start="statement", parser="lalr", lexer="contextual", maybe_placeholders=True,
                         propagate_positions=True)
_LOOSE_PARSER = Lark(LOOSE_GRAMMAR, start="loose", parser="lalr", lexer="contextual")


def _loose_views(text: str) -> list[View]:
    """The windows named in a clause, whatever their parameters; [] if even that fails."""
    try:
        tree = _LOOSE_PARSER.parse(text)
    except UnexpectedInput:
        return []
    return [_view(view.children, ()) for view in tree.children if not isinstance(view, Token)]  # not RETAIN


def _syntax_error(exc: UnexpectedInput, text: str) -> WindowSyntaxError:
    return syntax_error(exc, text, _DESCRIBE, summarize=_expected)


#: terminals that continue an expression, and those that start one: an error
#: names them as one thing rather than listing each
_OPERATORS = {"TIMES", "DIVIDE", "MODULO", "COMPARE", "AND", "OR"}
_STARTS = {"NOT", "BOOLEAN", "NULL", "SIGN", "LPAR", "STRING", "TICKED", "NUMBER", "NAME"}


def _expected(expected: set[str]) -> str:
    shown = set()
    if expected & _OPERATORS:
        expected = expected - _OPERATORS - {"SIGN"}
        shown.add("an operator")
    if {"NUMBER", "NAME", "LPAR"} <= expected:
        expected = expected - _STARTS
        shown.add("a value (a number, a name, a string, an expression)")
    wanted = sorted(shown | {_DESCRIBE.get(name, name) for name in expected})
    return " or ".join(wanted)


# --------------------------------------------------------------------------- parameters


#: counts are Spark ints; time periods and reference points are ms in Spark longs, at
#: most 2**62 so that a clock plus a period (or minus a reference) still fits a long
MAX_COUNT = 2**31 - 1
MAX_MS = 2**62


def _where(view: View, index: int) -> str:
    param = view.params[index]
    text = param.text if len(param.text) <= 40 else param.text[:37] + "..."
    return f"{view.name}: parameter {index + 1} ({text!r} at column {param.column})"


def _arity(view: View, low: int, high: int | None, what: str) -> None:
    count = len(view.params)
    if count < low or (high is not None and count > high):
        raise InvalidSpec(f"{view.name} takes {what}, got {count} parameter{'s' if count != 1 else ''} (column {view.column})")


def _size(view: View, index: int) -> int:
    param = view.params[index]
    if param.kind != "number" or not param.integral:
        raise InvalidSpec(f"{_where(view, index)}: the size must be a whole number, got {_kind(param)}")
    if param.value <= 0:
        raise InvalidSpec(f"{_where(view, index)}: the size must be above 0")
    if param.value > MAX_COUNT:
        raise InvalidSpec(f"{_where(view, index)}: the size must be at most {MAX_COUNT:,} (a count is a 32-bit int)")
    return int(param.value)


def _period(view: View, index: int) -> int:
    """A time period, or a number of seconds."""
    param = view.params[index]
    if param.kind == "period":
        ms = param.value
    elif param.kind == "number":
        ms = param.value * 1000
    else:
        raise InvalidSpec(f"{_where(view, index)}: needs a time period or a number of seconds, got {_kind(param)}")
    if abs(ms) > MAX_MS:
        raise InvalidSpec(f"{_where(view, index)}: the time period must be at most 2**62 ms (about 146 million years), "
                          "so that a clock plus the period fits a 64-bit long")
    if ms != ms.to_integral_value():
        raise InvalidSpec(f"{_where(view, index)}: the time period must be whole milliseconds, got {ms.normalize():f} ms")
    if ms <= 0:
        raise InvalidSpec(f"{_where(view, index)}: the time period must be above 0, got {ms.normalize():f} ms")
    return int(ms)


def _property(view: View, index: int, role: str) -> str:
    param = view.params[index]
    if param.kind != "name":
        raise InvalidSpec(f"{_where(view, index)}: needs a property name ({role}), got {_kind(param)}")
    if reserved_name_error(param.value):
        raise InvalidSpec(f"{_where(view, index)}: {reserved_name_error(param.value)}")
    return param.value


def _properties(view: View, role: str) -> tuple[str, ...]:
    _arity(view, 1, None, f"one or more property names ({role})")
    return tuple(_property(view, i, role) for i in range(len(view.params)))


def _reference(view: View, index: int) -> int:
    param = view.params[index]
    if param.kind != "number" or not param.integral:
        raise InvalidSpec(f"{_where(view, index)}: the reference point must be a whole number of milliseconds (like 5000L), got {_kind(param)}")
    if abs(param.value) > MAX_MS:
        raise InvalidSpec(f"{_where(view, index)}: the reference point must lie within 2**62 ms of 0, "
                          "so that clock arithmetic on it fits a 64-bit long")
    return int(param.value)


FLOW_CONTROL = ("FORCE_UPDATE", "START_EAGER")
_JAVA_BLANKS = "".join(map(chr, range(33)))  # what Java's String.trim() removes


def _flags(view: View, index: int) -> tuple[bool, bool]:
    """(force_update, start_eager) from a flow-control string (`TimeBatchFlags`)."""
    param = view.params[index]
    if param.kind != "string":
        raise InvalidSpec(f"{_where(view, index)}: needs a quoted list of flow-control keywords ({', '.join(FLOW_CONTROL)}), got {_kind(param)}")
    force = eager = False
    for word in param.value.split(","):
        keyword = word.strip(_JAVA_BLANKS).upper()
        if not keyword:
            continue
        if keyword == "FORCE_UPDATE":
            force = True
        elif keyword == "START_EAGER":
            force = eager = True
        else:
            raise InvalidSpec(f"{_where(view, index)}: unknown flow-control keyword {word.strip(_JAVA_BLANKS)!r}; valid: {', '.join(FLOW_CONTROL)}")
    return force, eager


def _kind(param: Param) -> str:
    what = {"period": "a time period", "string": "a string", "name": "the property name",
            "ordered": "the sort criterion", "expression": "the expression", "boolean": "the boolean",
            "null": "the literal", "star": "the wildcard"}
    if param.kind == "number":
        return "the whole number " + param.text if param.integral else "the decimal number " + param.text
    return f"{what[param.kind]} {param.text}"


# --------------------------------------------------------------------------- expressions

#: words that a property name in an expression must be backquoted to be read as
_KEYWORDS = frozenset({"and", "or", "not", "true", "false", "null", *BUILTINS, *BUILTIN_EVENTS})


def _node(param: Param) -> Expression:
    """The expression tree of a parameter (a literal, a name, a compound)."""
    if param.kind == "expression":
        return param.value
    if param.kind == "number":
        if param.integral:
            return Literal(int(param.value))
        value = float(param.value)
        if value in (float("inf"), float("-inf")):
            raise InvalidSpec(f"the number {param.text} at column {param.column} does not fit a double")
        return Literal(value)
    if param.kind in ("string", "boolean", "null"):
        return Literal(param.value)
    if param.kind == "name":
        if param.text.startswith("`"):
            return Name(param.value)
        if param.value in BUILTINS:
            return Builtin(param.value)
        if param.value in BUILTIN_EVENTS:
            raise InvalidSpec(f"{param.value} at column {param.column} is an event: read one of its properties "
                              f"(as in {param.value}.symbol)")
        if param.value == "view_reference":
            raise UnsupportedWindow(f"view_reference (column {param.column}) is not supported: it serves functions "
                                    "of the application's own")
        if reserved_name_error(param.value):
            raise InvalidSpec(f"{param.value} at column {param.column}: {reserved_name_error(param.value)}")
        return Name(param.value)
    raise InvalidSpec(f"{_kind(param)} at column {param.column} cannot be part of an expression")


#: nodes that give a number or a string, never a truth value
_NOT_BOOLEAN = (Negate, Aggregate, Builtin)


def _expiry(view: View, index: int) -> Expression:
    """An expiry expression: a truth value (a comparison, and/or/not, a boolean
    literal, or a name whose value may be a boolean)."""
    param = view.params[index]
    try:
        node = _node(param)
    except InvalidSpec as exc:
        raise InvalidSpec(f"{_where(view, index)}: {exc}") from None
    arithmetic = isinstance(node, Binary) and node.op not in COMPARISONS + ("and", "or")
    literal = isinstance(node, Literal) and node.value is not None and not isinstance(node.value, bool)
    if arithmetic or literal or isinstance(node, _NOT_BOOLEAN):
        raise InvalidSpec(f"{_where(view, index)}: the expiry expression must give true or false, got {_kind(param)}")
    try:
        _static_kind(node)
    except InvalidSpec as exc:
        raise InvalidSpec(f"{_where(view, index)}: {exc}") from None
    return node


def _static_kind(node: Expression) -> str | None:
    """What a node gives where the text alone decides it ("number", "string",
    "boolean"; None for a property, null or a min/max of one, known only per
    event). Esper's compiler refuses an operator over kinds it cannot convert
    ("Implicit conversion from datatype 'String' to 'Integer' is not allowed"),
    so `current_count <= 'abc'` is refused here rather than on the first event."""
    if isinstance(node, Literal):
        value = node.value
        if value is None:
            return None
        return "boolean" if isinstance(value, bool) else "string" if isinstance(value, str) else "number"
    if isinstance(node, Builtin):
        return "number"
    if isinstance(node, (Name, EventProperty)):
        return None
    if isinstance(node, Aggregate):
        inner = None if node.argument is None else _static_kind(node.argument)
        if node.function in ("sum", "avg"):
            _need_kind(node.function, node.argument, inner, "number")
        return "number" if node.function in ("count", "sum", "avg") else inner
    if isinstance(node, Negate):
        _need_kind("-", node.operand, _static_kind(node.operand), "number")
        return "number"
    if isinstance(node, Not):
        _need_kind("not", node.operand, _static_kind(node.operand), "boolean")
        return "boolean"
    left, right = _static_kind(node.left), _static_kind(node.right)
    if node.op in ("and", "or"):
        _need_kind(node.op, node.left, left, "boolean")
        _need_kind(node.op, node.right, right, "boolean")
        return "boolean"
    if node.op in COMPARISONS:
        ordering = node.op not in ("=", "!=")
        if ordering and "boolean" in (left, right):
            raise InvalidSpec(f"{render_expression(node)} orders a boolean; only numbers and strings are ordered")
        if left and right and left != right:
            raise InvalidSpec(f"{render_expression(node)} {'orders' if ordering else 'compares'} a {left} with a "
                              f"{right}; Esper converts neither to the other")
        return "boolean"
    _need_kind(node.op, node.left, left, "number")
    _need_kind(node.op, node.right, right, "number")
    return "number"


def _need_kind(op: str, operand: Expression, kind: str | None, wanted: str) -> None:
    if kind is not None and kind != wanted:
        raise InvalidSpec(f"{op} applies to a {wanted}, and {render_expression(operand)} is a {kind}")


def _expr(view: View) -> Expr:
    _arity(view, 1, 1, "1 parameter (the expiry expression)")
    return Expr(_expiry(view, 0))


def _expr_batch(view: View) -> ExprBatch:
    _arity(view, 1, 2, "1 or 2 parameters (the expiry expression[, include the triggering event: true or false])")
    include = True
    if len(view.params) == 2:
        param = view.params[1]
        if param.kind != "boolean":
            raise InvalidSpec(f"{_where(view, 1)}: needs true or false (include the triggering event), got {_kind(param)}")
        include = param.value
    return ExprBatch(_expiry(view, 0), include)


#: binding strength, loosest first (the grammar's rules)
_PRECEDENCE = {"or": 1, "and": 2, "not": 3, **{op: 4 for op in COMPARISONS}, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6,
               "negate": 7}


def render_expression(node: Expression) -> str:
    """An expression's canonical text, parenthesized only where needed."""
    return _render_node(node, 0)


def _render_node(node: Expression, outer: int) -> str:
    if isinstance(node, Literal):
        value = node.value
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            if '"' not in value:
                return f'"{value}"'
            if "'" not in value and "\\" not in value:
                return f"'{value}'"
            raise InvalidSpec(f"the esper dialect cannot write the string {value!r} (both quotes)")
        text = repr(value)
        return f"({text})" if value < 0 and outer >= _PRECEDENCE["negate"] else text
    if isinstance(node, Name):
        plain = node.name.lower() not in _KEYWORDS and node.name != "view_reference"
        return node.name if plain else f"`{node.name}`"
    if isinstance(node, Builtin):
        return node.name
    if isinstance(node, EventProperty):
        return f"{node.event}.{node.name}"
    if isinstance(node, Aggregate):
        distinct = "distinct " if node.distinct else ""
        return f"{node.function}({distinct}{'*' if node.argument is None else _render_node(node.argument, 0)})"
    if isinstance(node, Negate):
        operand = node.operand
        inner = _render_node(operand, _PRECEDENCE["negate"])
        if isinstance(operand, (Literal, Negate)) and not inner.startswith("("):  # -(5) stays a negation
            inner = f"({inner})"
        return _parenthesized(f"-{inner}", _PRECEDENCE["negate"], outer)
    if isinstance(node, Not):
        return _parenthesized(f"not {_render_node(node.operand, _PRECEDENCE['not'])}", _PRECEDENCE["not"], outer)
    assert isinstance(node, Binary)
    strength = _PRECEDENCE[node.op]
    # operators bind left to right; a comparison takes no comparison as an operand
    left = _render_node(node.left, strength + (strength == 4))
    right = _render_node(node.right, strength + 1)
    return _parenthesized(f"{left} {node.op} {right}", strength, outer)


def _parenthesized(text: str, strength: int, outer: int) -> str:
    return f"({text})" if strength < outer else text


def _expr_params(spec: Expr) -> list[str]:
    return [render_expression(spec.expiry)]


def _expr_batch_params(spec: ExprBatch) -> list[str]:
    return [render_expression(spec.expiry)] + ([] if spec.include_trigger else ["false"])


# --------------------------------------------------------------------------- one window


def _no_params(cls):
    def build(view: View):
        _arity(view, 0, 0, "no parameters")
        return cls()
    return build


def _length_like(cls):
    def build(view: View):
        _arity(view, 1, 1, "1 parameter (size)")
        return cls(_size(view, 0))
    return build


def _time_like(cls):
    def build(view: View):
        _arity(view, 1, 1, "1 parameter (a time period)")
        return cls(_period(view, 0))
    return build


def _unique_like(cls):
    def build(view: View):
        return cls(_properties(view, "the unique key"))
    return build


def _ext_timed(view: View) -> ExtTimed:
    _arity(view, 2, 2, "2 parameters (timestamp property, time period)")
    return ExtTimed(_property(view, 0, "the timestamp"), _period(view, 1))


def _ext_timed_batch(view: View) -> ExtTimedBatch:
    _arity(view, 2, 3, "2 or 3 parameters (timestamp property, time period[, reference point])")
    reference = _reference(view, 2) if len(view.params) == 3 else None
    return ExtTimedBatch(_property(view, 0, "the timestamp"), _period(view, 1), reference)


def _criterion(view: View, index: int) -> SortKey:
    """A property, optionally followed by asc or desc (esper.md §3)."""
    param = view.params[index]
    if param.kind == "ordered":
        name, descending = param.value
    elif param.kind == "name":
        name, descending = param.value, False
    else:
        raise InvalidSpec(f"{_where(view, index)}: needs a sort criterion (a property name, then asc or desc), "
                          f"got {_kind(param)}")
    if reserved_name_error(name):
        raise InvalidSpec(f"{_where(view, index)}: {reserved_name_error(name)}")
    return SortKey(name, descending)


def _sort(view: View) -> Sort:
    _arity(view, 2, None, "a size, then one or more sort criteria")
    return Sort(_size(view, 0), tuple(_criterion(view, i) for i in range(1, len(view.params))))


def _rank(view: View) -> Rank:
    """(unique properties..., size, criteria...): the first number is the size."""
    at = next((i for i, p in enumerate(view.params) if p.kind == "number"), None)
    if at is None or at == 0 or at == len(view.params) - 1:
        raise InvalidSpec(f"rank takes one or more unique properties, a size, then one or more sort criteria "
                          f"(column {view.column})")
    keys = tuple(_property(view, i, "a unique key") for i in range(at))
    if len(set(keys)) != len(keys):
        raise InvalidSpec(f"rank: a unique property is named twice in {list(keys)} (column {view.column})")
    return Rank(keys, _size(view, at), tuple(_criterion(view, i) for i in range(at + 1, len(view.params))))


def _rank_params(spec: Rank) -> list[str]:
    return [*spec.keys, *_sort_params(Sort(spec.size, spec.criteria))]


def _sort_params(spec: Sort) -> list[str]:
    return [str(spec.size), *(f"{c.property} desc" if c.descending else c.property for c in spec.criteria)]


def _time_order(view: View) -> TimeOrder:
    _arity(view, 2, 2, "2 parameters (timestamp property, time period)")
    return TimeOrder(_property(view, 0, "the timestamp"), _period(view, 1))


def _time_to_live(view: View) -> TimeOrder:
    _arity(view, 1, 1, "1 parameter (timestamp property)")
    return TimeOrder(_property(view, 0, "the timestamp"), 0)


def _time_batch(view: View) -> TimeBatch:
    """(period), (period, ref), (period, "flags"), (period, ref, "flags"):
    a second parameter that is a string is the flow control (`TimeBatchViewForge`)."""
    _arity(view, 1, 3, "1 to 3 parameters (time period[, reference point][, flow control])")
    span = _period(view, 0)
    args = view.params
    if len(args) == 2 and args[1].kind == "string":
        return TimeBatch(span, None, *_flags(view, 1))
    reference = _reference(view, 1) if len(args) >= 2 else None
    force, eager = _flags(view, 2) if len(args) == 3 else (False, False)
    return TimeBatch(span, reference, force, eager)


def _time_length_batch(view: View) -> TimeLengthBatch:
    """(period, size[, "flags"])."""
    _arity(view, 2, 3, "2 or 3 parameters (time period, size[, flow control])")
    force, eager = _flags(view, 2) if len(view.params) == 3 else (False, False)
    return TimeLengthBatch(_period(view, 0), _size(view, 1), force, eager)


def _time_length_batch_params(spec: TimeLengthBatch) -> list[str]:
    params = [_render_period(spec.span), str(spec.size)]
    if spec.force_update:
        params.append('"FORCE_UPDATE, START_EAGER"' if spec.start_eager else '"FORCE_UPDATE"')
    return params


def _size_param(spec) -> list[str]:
    return [str(spec.size)]


def _period_param(spec) -> list[str]:
    return [_render_period(spec.span)]


def _key_params(spec) -> list[str]:
    return list(spec.keys)


def _ext_timed_params(spec) -> list[str]:
    return [spec.timestamp, _render_period(spec.span)]


def _ext_timed_batch_params(spec) -> list[str]:
    reference = [] if spec.reference is None else [f"{spec.reference}L"]
    return [spec.timestamp, _render_period(spec.span), *reference]


def _time_batch_params(spec) -> list[str]:
    params = [_render_period(spec.span)]
    if spec.reference is not None:
        params.append(f"{spec.reference}L")
    if spec.force_update:
        params.append('"FORCE_UPDATE, START_EAGER"' if spec.start_eager else '"FORCE_UPDATE"')
    return params


def _no_param(spec) -> list[str]:
    return []


def _extras(view: View, start: int) -> tuple[tuple[str, ...], bool]:
    """Additional properties from parameter `start` on: property names and
    `*` (every property of the last new event; esper.md §7)."""
    cls = _DERIVED_BY_NAME[view.name]
    names: list[str] = []
    wildcard = False
    for index in range(start, len(view.params)):
        if view.params[index].kind == "star":
            wildcard = True
            continue
        name = _property(view, index, "an additional property, or *")
        clash = next((f for f in cls.CHECKED_FIELDS if f.lower() == name.lower()), None)
        if clash is not None:
            raise InvalidSpec(f"{_where(view, index)}: the additional property {name!r} overlaps the field "
                              f"{clash!r} that {view.name} posts")
        names.append(name)
    return tuple(names), wildcard


def _derived(cls, roles: tuple[str, ...]):
    """(statistic properties..., [additional properties or *...])."""
    def build(view: View):
        wanted = ", ".join(roles)
        what = (f"{len(roles)} propert{'y' if len(roles) == 1 else 'ies'} ({wanted}), then optional additional "
                "properties or *") if roles else "optional additional properties or *"
        _arity(view, len(roles), None, what)
        values = []
        for index, role in enumerate(roles):
            if view.params[index].kind == "star":
                raise InvalidSpec(f"{_where(view, index)}: needs a numeric property name ({role}), got the wildcard *")
            name = _property(view, index, role)
            if name == "id":
                raise InvalidSpec(f"{_where(view, index)}: needs a numeric property ({role}); `id` is the event's id, a string")
            values.append(name)
        extras, wildcard = _extras(view, len(roles))
        return cls(*values, extras, wildcard)
    return build


def _derived_params(spec) -> list[str]:
    return [*spec.values(), *spec.extra, *(["*"] if spec.all_properties else [])]


@frozen
class Syntax:
    """How Esper writes one kind of data window: the builder of a spec from a
    parsed view, under each name the kind is written with, and the writer of
    the canonical text."""

    builds: dict[str, Callable[[View], Any]]
    write: Callable[[Any], str]


def _writer(name: str, params: Callable[[Any], list[str]]) -> Callable[[Any], str]:
    def write(spec) -> str:
        written = params(spec)
        return f"#{name}({', '.join(written)})" if written else f"#{name}"
    return write


def _syntax(name: str, build: Callable[[View], Any], params: Callable[[Any], list[str]]) -> Syntax:
    return Syntax({name: build}, _writer(name, params))


def _write_time_order(spec: TimeOrder) -> str:
    if spec.span == 0:
        return f"#timetolive({spec.timestamp})"
    return f"#time_order({spec.timestamp}, {_render_period(spec.span)})"


#: spec class -> its Esper syntax (the data windows; groupwin, intersection and
#: union are the chain's, below)
SYNTAX: dict[type, Syntax] = {
    Length: _syntax("length", _length_like(Length), _size_param),
    LengthBatch: _syntax("length_batch", _length_like(LengthBatch), _size_param),
    FirstLength: _syntax("firstlength", _length_like(FirstLength), _size_param),
    Time: _syntax("time", _time_like(Time), _period_param),
    FirstTime: _syntax("firsttime", _time_like(FirstTime), _period_param),
    ExtTimed: _syntax("ext_timed", _ext_timed, _ext_timed_params),
    TimeBatch: _syntax("time_batch", _time_batch, _time_batch_params),
    TimeLengthBatch: _syntax("time_length_batch", _time_length_batch, _time_length_batch_params),
    ExtTimedBatch: _syntax("ext_timed_batch", _ext_timed_batch, _ext_timed_batch_params),
    TimeAccum: _syntax("time_accum", _time_like(TimeAccum), _period_param),
    TimeOrder: Syntax({"time_order": _time_order, "timetolive": _time_to_live}, _write_time_order),
    Sort: _syntax("sort", _sort, _sort_params),
    Rank: _syntax("rank", _rank, _rank_params),
    KeepAll: _syntax("keepall", _no_params(KeepAll), _no_param),
    FirstEvent: _syntax("firstevent", _no_params(FirstEvent), _no_param),
    LastEvent: _syntax("lastevent", _no_params(LastEvent), _no_param),
    Unique: _syntax("unique", _unique_like(Unique), _key_params),
    FirstUnique: _syntax("firstunique", _unique_like(FirstUnique), _key_params),
    Expr: _syntax("expr", _expr, _expr_params),
    ExprBatch: _syntax("expr_batch", _expr_batch, _expr_batch_params),
    Size: _syntax("size", _derived(Size, ()), _derived_params),
    Uni: _syntax("uni", _derived(Uni, ("the value",)), _derived_params),
    Linest: _syntax("linest", _derived(Linest, ("x", "y")), _derived_params),
    Correl: _syntax("correl", _derived(Correl, ("x", "y")), _derived_params),
    WeightedAvg: _syntax("weighted_avg", _derived(WeightedAvg, ("the value", "the weight")), _derived_params),
}
#: window name -> derived-value spec class (esper.md §7)
_DERIVED_BY_NAME = {next(iter(SYNTAX[cls].builds)): cls for cls in DERIVED_WINDOWS}
_BY_NAME = {name: build for syntax in SYNTAX.values() for name, build in syntax.builds.items()}


def _build(view: View):
    """The spec of one view; a refusal of the model's validators (which know no
    text) is told with the view's column."""
    try:
        return _BY_NAME[view.name](view)
    except InvalidSpec as exc:
        if "column" in str(exc):
            raise
        raise InvalidSpec(f"{exc} (the view at column {view.column})") from None
#: the spec classes of the chain, written by `render` itself
CHAIN = (GroupWin, Intersection, RetainUnion)
assert not set(_BY_NAME) & set(UNSUPPORTED), "a window both built and unsupported"


def _resolve(view: View) -> None:
    """Check the window's name and namespace against Esper's built-in windows."""
    shown = f"{view.namespace}:{view.name}" if view.namespace else view.name
    if view.name not in NAMESPACES:
        hint = f" (names are case-sensitive: {view.name.lower()})" if view.name.lower() in NAMESPACES else ""
        raise InvalidSpec(f"unknown window {shown!r} at column {view.column}{hint}; Esper's windows are: {', '.join(sorted(NAMESPACES))}")
    if view.namespace is not None and view.namespace != NAMESPACES[view.name]:
        raise InvalidSpec(f"unknown window {shown!r} at column {view.column}: {view.name} is {NAMESPACES[view.name]}:{view.name}")
    if view.name in UNSUPPORTED:
        raise UnsupportedWindow(f"the {view.name} window (column {view.column}) is not supported")


# --------------------------------------------------------------------------- the chain


def _combine(windows: list, retain: str | None, views: list[View]):
    """One data window, or several as an intersection (default) or union."""
    if len(windows) == 1:
        return windows[0]
    if retain == "retain-union":
        return RetainUnion(windows)
    batches = [v for v, w in zip(views, windows) if isinstance(w, BATCH_WINDOWS)]
    if len(batches) > 1:
        raise InvalidSpec(f"an intersection takes at most one batch window; {batches[0].name} (column {batches[0].column}) "
                          f"and {batches[1].name} (column {batches[1].column}) are both batch windows")
    return Intersection(windows)


def _without_merge(views: list[View]) -> list[View]:
    """The chain without a closing `#merge(keys)`, which only marks the end of
    the grouped chain (seed: "the same as no merge"; esper.md §5): it needs a
    groupwin before it and the groupwin's keys, and may be followed only by a
    derived-value view (a merge before one gives it the merged stream, which
    needs a derived view: not supported)."""
    merges = [i for i, v in enumerate(views) if v.name == "merge"]
    if not merges:
        return views
    at = merges[0]
    merge = views[at]
    groups = [v for v in views[:at] if v.name == "groupwin"]
    if not groups:
        raise InvalidSpec(f"merge (column {merge.column}) needs a groupwin before it")
    if len(merges) > 1:
        raise InvalidSpec(f"only one merge per stream; a second one at column {views[merges[1]].column}")
    mine, theirs = _properties(merge, "the merge key"), _properties(groups[0], "the group key")
    if mine != theirs:
        raise InvalidSpec(f"merge (column {merge.column}) must name the groupwin's keys ({', '.join(theirs)}), "
                          f"got {', '.join(mine)}")
    if at != len(views) - 1:
        after = views[at + 1]
        raise InvalidSpec(f"merge (column {merge.column}) ends the grouped chain: no data window may follow it "
                          f"({after.name} at column {after.column})")
    return views[:at]


def parse(text: str) -> WindowSpec:
    """The spec of an Esper window clause (`#groupwin(symbol)#length(2)`), or of
    a statement over one (`select irstream sum(price) as total from E#length(3)`)."""
    if not isinstance(text, str):
        raise TypeError(f"a window clause is a string, got {type(text).__name__}")
    if re.match(r"\s*select\b", text, re.IGNORECASE):
        return _statement(text)
    try:
        views, retain = _ToViews(text).transform(_PARSER.parse(text))
    except UnexpectedInput as exc:
        for view in _loose_views(text):  # an unknown or unsupported window explains it better
            _resolve(view)
        raise _syntax_error(exc, text) from None
    except VisitError as exc:
        raise exc.orig_exc from None
    return _window_of(views, retain)


def _statement(text: str) -> Statement:
    """A statement's spec (`oracle.model.Statement`, Esper's rules); its window as a clause alone."""
    try:
        parts = _ToViews(text).transform(_STATEMENT_PARSER.parse(text))
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    except VisitError as exc:
        raise exc.orig_exc from None
    window = _window_of(*parts["clause"])
    select = [SelectItem() if item is None else SelectItem(_statement_node(item[0]), item[1])
              for item in parts["select"]]
    aliases = [item.alias for item in select if item.alias is not None]
    twice = next((a for n, a in enumerate(aliases) if a in aliases[:n]), None)
    if twice is not None:
        second = [m.start() for m in re.finditer(rf"\bas\s+{re.escape(twice)}\b", text, re.IGNORECASE)]
        where = f" at column {second[1] + 1}" if len(second) > 1 else ""
        raise InvalidSpec(f"the alias {twice!r} names two select items{where}")
    keys = tuple(_statement_node(k) for k in parts.get("keys", ()))
    for n, (key, param) in enumerate(zip(keys, parts.get("keys", ()))):
        if any(isinstance(node, Aggregate) for node in expression_nodes(key)):
            raise InvalidSpec(f"the GROUP BY key {param.text!r} at column {param.column} aggregates; a key "
                              "reads one event")
        if key in keys[:n]:
            raise InvalidSpec(f"the GROUP BY key {param.text!r} at column {param.column} is named twice")
    condition = {}
    for name in ("filter", "where", "having"):
        param = parts.get(name)
        condition[name] = _statement_node(param) if param is not None else None
        if name != "having" and param is not None and any(
                isinstance(n, Aggregate) for n in expression_nodes(condition[name])):
            what = "a filter" if name == "filter" else "WHERE"
            raise InvalidSpec(f"{what} (column {param.column}) is evaluated for one event; it cannot aggregate")
    return Statement(tuple(select), window, parts["selector"] or "istream", str(parts["source"]),
                     condition["filter"], condition["where"], keys, condition["having"])


def _statement_node(param: Param) -> Expression:
    """A statement's expression: the events' properties, literals, operators and
    aggregates (the expression windows' built-ins are theirs alone)."""
    if param.kind == "name" and param.value in BUILTINS + BUILTIN_EVENTS:
        raise InvalidSpec(f"{param.value} at column {param.column} is a built-in of the expression windows; "
                          "a statement reads the events' properties")
    node = _node(param)
    for inner in expression_nodes(node):
        if isinstance(inner, (Builtin, EventProperty)):
            raise InvalidSpec(f"{param.text!r} at column {param.column} reads an expression window's built-in; "
                              "a statement reads the events' properties")
    return node


def _window_of(views: list[View], retain: str | None) -> WindowSpec:
    """The window spec of a clause's views."""
    for view in views:
        _resolve(view)
    views, derived = _without_derived(views, retain)
    if derived is not None and not views:
        return derived
    if derived is not None and views[0].name == "groupwin":  # statistics per group: the group's own derived window
        group = views[0]
        if len(views) > 1 and any(v.name == "groupwin" for v in views[1:]):
            second = next(v for v in views[1:] if v.name == "groupwin")
            raise InvalidSpec(f"only one groupwin per stream; a second one at column {second.column}")
        inner = derived if len(views) == 1 else attrs.evolve(derived, source=_window_of(views[1:], retain))
        return GroupWin(_properties(group, "the group key"), inner)
    views = _without_merge(views)
    groups = [v for v in views if v.name == "groupwin"]
    if views[-1].name == "groupwin":
        raise InvalidSpec(f"groupwin (column {views[-1].column}) needs one or more data windows after it to group")
    if len(groups) > 1:
        raise InvalidSpec(f"only one groupwin per stream; a second one at column {groups[1].column}")
    if groups and views[0] is not groups[0]:
        raise InvalidSpec(f"groupwin (column {groups[0].column}) must come first, before the data windows")
    data_views = views[1:] if groups else views
    windows = [_build(v) for v in data_views]
    window = _combine(windows, retain, data_views)
    if groups:
        return GroupWin(_properties(groups[0], "the group key"), window)
    if derived is not None:
        return attrs.evolve(derived, source=window)
    return window


def _without_derived(views: list[View], retain: str | None) -> tuple[list[View], Any]:
    """The chain without its closing derived-value window, and that window's
    spec (None without one). A derived-value window ends the chain: nothing
    may follow it. Under `#groupwin` it is not supported (the grouped
    statistics would need the merged stream's rows keyed by group)."""
    at = next((i for i, v in enumerate(views) if v.name in _DERIVED_BY_NAME), None)
    if at is None:
        return views, None
    view = views[at]
    if at != len(views) - 1:
        after = views[at + 1]
        raise InvalidSpec(f"{view.name} (column {view.column}) is a derived-value window and ends the chain: "
                          f"nothing may follow it ({after.name} at column {after.column})")
    merge = next((v for v in views if v.name == "merge"), None)
    if merge is not None:
        raise UnsupportedWindow(f"a derived-value window ({view.name}, column {view.column}) after merge "
                                f"(column {merge.column}) is not supported: statistics over the merged groups")
    return views[:at], _build(view)


# --------------------------------------------------------------------------- render


def _render_period(ms: int) -> str:
    return f"{ms // 1000} sec" if ms % 1000 == 0 else f"{ms} msec"


def _render_window(spec) -> str:
    syntax = SYNTAX.get(type(spec))
    if syntax is None:
        raise UnsupportedWindow(f"the esper dialect cannot write {spec!r}")
    return syntax.write(spec)


def _render_chain(spec) -> str:
    if isinstance(spec, Intersection):
        if not spec.stale_time_timers:
            raise UnsupportedWindow(f"the esper dialect cannot write {spec!r}: Esper's #time keeps a stale timer "
                                    "(stale_time_timers=True)")
        return "".join(map(_render_window, spec.members))
    if isinstance(spec, RetainUnion):
        return "".join(map(_render_window, spec.members)) + " retain-union"
    return _render_window(spec)


def render(spec: WindowSpec) -> str:
    """The canonical Esper text of `spec`; `parse(render(spec)) == spec`."""
    if isinstance(spec, Statement):
        return _render_statement(spec)
    if isinstance(spec, DERIVED_WINDOWS):
        source = "" if spec.source is None else render(spec.source)
        retain = " retain-union" if source.endswith(" retain-union") else ""
        return source[:len(source) - len(retain)] + _render_window(spec) + retain
    if isinstance(spec, GroupWin):
        inner = render(spec.window) if isinstance(spec.window, DERIVED_WINDOWS) else _render_chain(spec.window)
        return f"#groupwin({', '.join(spec.keys)})" + inner
    return _render_chain(spec)


def _render_statement(spec: Statement) -> str:
    """`select <selector> items from E[(filter)]<window> [where] [group by] [having]`,
    the selector always written (`istream` too)."""
    if spec.rules is not ESPER:
        raise UnsupportedWindow(f"the esper dialect writes Esper's statements, not {spec.rules.engine}'s")
    items = ", ".join("*" if item.expression is None else render_expression(item.expression)
                      + (f" as {item.alias}" if item.alias is not None else "") for item in spec.select)
    text = f"select {spec.selector} {items} from {spec.source}"
    if spec.filter is not None:
        text += f"({render_expression(spec.filter)})"
    text += render(spec.window)
    if spec.where is not None:
        text += f" where {render_expression(spec.where)}"
    if spec.keys:
        text += " group by " + ", ".join(render_expression(k) for k in spec.keys)
    if spec.having is not None:
        text += f" having {render_expression(spec.having)}"
    return text


def name(spec: WindowSpec) -> str:
    """A short name of `spec`'s window in Esper's words, for file names:
    `length`, `groupwin-time_batch`, `unique-time`, `unique-time-retain_union`;
    `statement-length` for a statement."""
    if isinstance(spec, Statement):
        return "statement-" + name(spec.window)
    if isinstance(spec, DERIVED_WINDOWS):
        return (name(spec.source) + "-" if spec.source is not None else "") + spec.KIND
    if isinstance(spec, GroupWin):
        return "groupwin-" + name(spec.window)
    if isinstance(spec, (Intersection, RetainUnion)):
        members = "-".join(name(m) for m in spec.members)
        return members + ("-retain_union" if isinstance(spec, RetainUnion) else "")
    return _render_window(spec)[1:].split("(")[0]

"""SAP ESP / HANA smart data streaming CCL: the KEEP clause, optionally after a
PRIMARY KEY clause. `parse(text) -> WindowSpec`, `render(spec) -> str`.

Syntax (ccl-keep-clause.txt; apama-ccl.md §2.1):

    KEEP {{[EVERY] count ROW[S] [SLACK slackcount] [PER(col1[,...])]} | ALL [ROW[S]]}
    KEEP [EVERY] interval [PER (col1[,...])]

preceded, for a keyed window, by `PRIMARY KEY (col1[,...])` (the PRIMARY KEY
clause, ESP 5.1 CCL Reference; written before KEEP as in the seed's `CREATE
INPUT WINDOW TradesWin1 SCHEMA TradesSchema PRIMARY KEY(Id) KEEP 2 ROWS
PER(Symbol)`, apama-ccl.md §3 point 15).

* Intervals (ESP 5.1 CCL Reference, Intervals, infocenter dc01612.0512
  ksi1307643825421): `value | {value [{DAY[S] | {HOUR[S] | HR} | MIN[UTE[S]] |
  SEC[OND[S]] | {MILLISECOND[S] | MILLIS} | {MICROSECOND[S] | MICROS}] [...]}`.
  "If only value is specified, the timestamp default is MICROSECOND[S]. You can
  specify multiple time units by separating each unit with a space, however,
  you can specify each unit only once." The seeds also write `10 MINS`, so
  MINS is a minute too. Values are whole numbers.
* Keywords and units are case-insensitive (`keep 5 rows`); column names are
  matched exactly as written (they name the events' properties).

What each form is (the model's kinds; a form that is an existing kind's rule is
that kind, apama-ccl.md §2):

| CCL | spec | rule |
|---|---|---|
| `KEEP ALL [ROWS]`, no KEEP clause after PRIMARY KEY | `KeepAll` | `#keepall` |
| `KEEP n ROWS` (`SLACK 1`, the default) | `Length(n)` | `#length(n)` |
| `KEEP LAST [ROW]` | `Length(1)` | Studio's "Last row"; CEP 4: "functionally identical to a KEEP 1 ROW window" |
| `KEEP n ROWS SLACK s`, s >= 2 | `SlackLength(n, s)` | `oracle.windows.retention` |
| `KEEP EVERY n ROWS` | `JumpingLength(n)` | `oracle.windows.retention` |
| `KEEP interval` | `Time(t)` | `#time(t)` |
| `KEEP EVERY interval` | `JumpingTime(t)` | `oracle.windows.retention` |
| a count policy `... PER(cols)` | `GroupWin(cols, policy)` | `#groupwin(cols)` |
| a time policy `... PER(cols)` | the policy alone | see below |
| `PRIMARY KEY (cols) <policy>` | `Keyed(cols, policy)` | `oracle.windows.keyed` |
| `PRIMARY KEY DEDUCED <policy>` | the policy alone | see below |

Decided and documented:

* Sliding time expiry (apama-ccl.md §3 point 12): a row leaves at exactly its
  insert time + t, as Sybase CEP 4 states ("the row which entered at 07:15:05
  expires at 07:15:15") and as `#time(t)` does; ESP's "As each individual row
  exceeds the ... retention time limit" does not say otherwise. So `KEEP t`
  is `Time(t)`. Case `ccl/interval-expires-at-exactly-t`.
* A time policy with PER (§2.5, §3 point 11): ccl-retention.txt, "Note: Time
  based windows retain data for a specified time regardless of their
  grouping." A sliding row's expiry does not depend on its group, and the
  jumping grid is one for all groups (`oracle.windows.retention`), so PER
  changes nothing: it is checked (columns, duplicates) and dropped, and
  `render` never writes it. Rows of several groups leaving at one instant
  leave oldest first, where Esper's `#groupwin(k)#time(t)` posts them group by
  group: case `ccl/interval-per-expires-oldest-first-across-groups` and its
  Esper twin `esper/groupwin-time-beside-ccl-keep-interval-per`.
* A count policy with PER is `#groupwin`: "arrival of a third record (with
  the same Symbol value) will result in deletion of the oldest stored record
  with the same Symbol value"; a missing PER column is the null group, a
  group like any other (`oracle.windows.keys`). Case `ccl/rows-per-*`.
* Without a PRIMARY KEY clause, or with `PRIMARY KEY DEDUCED` (the key
  deduced from the source: here the events themselves), each event is its own
  row (§3 point 15): only inserts happen, and an event with another
  operation code makes the trace invalid, naming the item. With `PRIMARY KEY
  (cols)` the window is keyed and takes every operation code.
* PER naming a primary key column is accepted: the documentation calls it a
  compiler warning, not an error (each such group holds one row).
* `SLACK 1` is the default and parses to the same spec as no SLACK;
  `render` leaves it off. `KEEP ALL ROWS` and `KEEP LAST ROW` are written back
  as `KEEP ALL` and `KEEP 1 ROW`.
* Several interval parts may be separated by spaces or commas (the Intervals
  page's examples: `3 DAYS, 1 HOUR, 54 MINUTES`), in any order, each unit once.
  A bare number is microseconds (`KEEP 5000` is 5 ms).
* An interval must be whole milliseconds (the trace's clock unit), above 0;
  a count and a slack are 1 or more and fit a 32-bit int.

Errors: a clause that does not parse is a `WindowSyntaxError` with its
1-based column. What the documentation forbids is an `InvalidSpec` naming the
column: SLACK with EVERY ("The SLACK value cannot be used with the EVERY
modifier"), SLACK with a time policy ("Slack cannot be specified for windows
using time-based retention policies"), a column twice in PER ("A column can
only be used once in a PER sub-clause") or in PRIMARY KEY, a unit twice in an
interval, a count, slack or interval of 0, an interval that is not whole
milliseconds, a reserved column name.

`render` writes the canonical text: keywords in capitals, `ROWS` (`ROW` for
1), intervals in the largest unit that divides them exactly (`10 MINUTES`,
`1500 MILLISECONDS`), `PER(a, b)`, `PRIMARY KEY (a, b) `. `parse(render(s)) ==
s` for every spec the dialect writes; any other spec is `UnsupportedWindow`.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedInput, VisitError

from oracle.dialects.syntax import syntax_error
from oracle.errors import InvalidSpec, UnsupportedWindow, WindowSyntaxError
from oracle.model import (
    MAX_CLOCK,
    Aggregate,
    Binary,
    GroupWin,
    Literal,
    Name,
    Negate,
    Not,
    SelectItem,
    JumpingLength,
    JumpingTime,
    KeepAll,
    Keyed,
    KEYED_GROUP_POLICIES,
    Length,
    SlackLength,
    Time,
    WindowSpec,
    reserved_name_error,
)
from oracle.model import CCL, Statement

GRAMMAR = r"""
clause: primary_key keep? | keep

statement: SELECT items FROM NAME NAME? keep group_by? having?
items: item (COMMA item)*
item: expr (AS? NAME)?
group_by: GROUP BY expr (COMMA expr)*
having: HAVING expr
?expr: disjunction
?disjunction: conjunction (OR conjunction)*
?conjunction: negation (AND negation)*
?negation: NOT negation -> not_ | comparison
?comparison: arithmetic (COMPARE arithmetic)?
?arithmetic: term (ADD term)*
?term: factor (MUL factor)*
?factor: MINUS factor -> negate | atom
?atom: NUMBER -> number | DECIMAL -> number | STRING -> string | TRUE -> true | FALSE -> false | NULL -> null
     | NAME DOT NAME -> qualified | NAME -> column | aggregate | LPAR expr RPAR
aggregate: AGGREGATE LPAR (STAR | DISTINCT? expr) RPAR

primary_key: PRIMARY KEY LPAR columns RPAR | PRIMARY KEY DEDUCED
keep: KEEP policy
?policy: all | last | count | time
all: ALL ROWS?
last: LAST ROWS?
count: EVERY? NUMBER ROWS slack? per?
time: EVERY? interval slack? per?
interval: NUMBER | part (COMMA? part)*
part: NUMBER UNIT
slack: SLACK NUMBER
per: PER LPAR columns RPAR
columns: NAME (COMMA NAME)*

PRIMARY.2: /primary\b/i
KEY.2: /key\b/i
DEDUCED.2: /deduced\b/i
KEEP.2: /keep\b/i
EVERY.2: /every\b/i
ALL.2: /all\b/i
LAST.2: /last\b/i
ROWS.2: /rows?\b/i
SLACK.2: /slack\b/i
PER.2: /per\b/i
UNIT.2: /(days?|hours?|hr|minutes?|mins?|min|seconds?|sec|milliseconds?|millis|microseconds?|micros)\b/i
SELECT.2: /select\b/i
FROM.2: /from\b/i
GROUP.2: /group\b/i
BY.2: /by\b/i
HAVING.2: /having\b/i
AS.2: /as\b/i
AND.2: /and\b/i
OR.2: /or\b/i
NOT.2: /not\b/i
DISTINCT.2: /distinct\b/i
TRUE.2: /true\b/i
FALSE.2: /false\b/i
NULL.2: /null\b/i
AGGREGATE.2: /(sum|count|avg|min|max)(?=\s*\()/i
COMPARE: "<=" | ">=" | "<>" | "!=" | "=" | "<" | ">"
ADD: "+" | "-"
MINUS: "-"
MUL: "*" | "/" | "%"
STAR: "*"
DOT: "."
STRING: /'([^']|'')*'/
DECIMAL.2: /\d+\.\d+/
NAME: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /\d+/
LPAR: "("
RPAR: ")"
COMMA: ","

%import common.WS
%ignore WS
"""

_DESCRIBE = {
    "PRIMARY": "PRIMARY", "KEY": "KEY", "DEDUCED": "DEDUCED", "KEEP": "KEEP", "EVERY": "EVERY", "ALL": "ALL",
    "LAST": "LAST", "ROWS": "ROWS", "SLACK": "SLACK", "PER": "PER",
    "UNIT": "a time unit (DAYS, HOURS, MINUTES, SECONDS, MILLISECONDS, MICROSECONDS, ...)",
    "NAME": "a column name", "NUMBER": "a whole number", "LPAR": "'('", "RPAR": "')'", "COMMA": "','",
    "$END": "the end of the clause", "SELECT": "SELECT", "FROM": "FROM", "GROUP": "GROUP", "BY": "BY",
    "HAVING": "HAVING", "AS": "AS", "AND": "AND", "OR": "OR", "NOT": "NOT", "DISTINCT": "DISTINCT",
    "AGGREGATE": "an aggregate (sum, count, avg, min, max)", "COMPARE": "a comparison", "ADD": "'+' or '-'",
    "MINUS": "'-'", "MUL": "'*', '/' or '%'", "STAR": "'*'", "DOT": "'.'", "STRING": "a string ('...')",
    "DECIMAL": "a number", "TRUE": "TRUE", "FALSE": "FALSE", "NULL": "NULL",
}

#: unit keyword (lower case) -> (the unit's name, microseconds per unit)
_UNITS: dict[str, tuple[str, int]] = {}
for _name, _micros, _words in (
    ("DAYS", 86_400_000_000, ("day", "days")),
    ("HOURS", 3_600_000_000, ("hour", "hours", "hr")),
    ("MINUTES", 60_000_000, ("min", "mins", "minute", "minutes")),
    ("SECONDS", 1_000_000, ("sec", "second", "seconds")),
    ("MILLISECONDS", 1_000, ("millisecond", "milliseconds", "millis")),
    ("MICROSECONDS", 1, ("microsecond", "microseconds", "micros")),
):
    _UNITS.update({word: (_name, _micros) for word in _words})

MAX_COUNT = 2**31 - 1

_PARSER = Lark(GRAMMAR, start="clause", parser="lalr", lexer="contextual")
_STATEMENT_PARSER = Lark(GRAMMAR, start="statement", parser="lalr", lexer="contextual", propagate_positions=True)


def _syntax_error(exc: UnexpectedInput, text: str) -> WindowSyntaxError:
    return syntax_error(exc, text, _DESCRIBE)


def _column(token: Token) -> int:
    return token.start_pos + 1


# --------------------------------------------------------------------------- the parse tree to specs


def _count(token: Token, what: str) -> int:
    value = int(token)
    if value < 1:
        raise InvalidSpec(f"{what} must be 1 or more, got {value} at column {_column(token)}")
    if value > MAX_COUNT:
        raise InvalidSpec(f"{what} must fit a 32-bit int (at most {MAX_COUNT}), got {value} at column {_column(token)}")
    return value


def _names(tokens: list[Token], what: str) -> tuple[str, ...]:
    """Column names, each once and none reserved; an error names the column."""
    seen: dict[str, Token] = {}
    for token in tokens:
        name = str(token)
        if name in seen:
            raise InvalidSpec(f"{what}: column {name!r} is named twice (columns {_column(seen[name])} and "
                              f"{_column(token)}); a column can only be used once")
        problem = reserved_name_error(name)
        if problem:
            raise InvalidSpec(f"{what}: {problem} (column {_column(token)})")
        seen[name] = token
    return tuple(seen)


class _Policy:
    """A KEEP policy as written: the spec without PER, its PER columns, and
    where its words stand (for errors)."""

    def __init__(self, spec, keyword: Token, per: tuple[str, ...] = (), every: Token | None = None,
                 slack: Token | None = None, timed: bool = False):
        self.spec, self.keyword, self.per, self.every, self.slack, self.timed = spec, keyword, per, every, slack, timed


class _ToSpec(Transformer):
    """Parse tree -> spec, checking what the grammar cannot (InvalidSpec with a column)."""

    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def columns(self, items: list[Token]) -> list[Token]:
        return [t for t in items if t.type == "NAME"]

    def per(self, items: list) -> tuple[Token, tuple[str, ...]]:
        return items[0], _names(items[2], "PER")

    def slack(self, items: list[Token]) -> tuple[Token, int]:
        return items[0], _count(items[1], "SLACK")

    def part(self, items: list[Token]) -> tuple[Token, Token]:
        return items[0], items[1]

    def interval(self, items: list) -> tuple[Token, int]:
        """(the first token, milliseconds)."""
        parts = [p for p in items if isinstance(p, tuple)]
        if not parts:  # a bare number: microseconds
            number = items[0]
            return number, self._ms(number, Decimal(int(number)), f"{number} (a bare number is microseconds)")
        seen: dict[str, Token] = {}
        micros = 0
        for number, unit in parts:
            name, per_unit = _UNITS[unit.lower()]
            if name in seen:
                raise InvalidSpec(f"interval: the unit {name} is given twice (columns {_column(seen[name])} and "
                                  f"{_column(unit)}); each unit may be given once")
            seen[name] = unit
            micros += int(number) * per_unit
        first = parts[0][0]
        written = self.text[first.start_pos:parts[-1][1].end_pos]
        return first, self._ms(first, Decimal(micros), written)

    @staticmethod
    def _ms(first: Token, micros: Decimal, written: str) -> int:
        if micros == 0:
            raise InvalidSpec(f"interval {written} at column {_column(first)} must be above 0")
        ms = micros / 1000
        if ms != ms.to_integral_value():
            raise InvalidSpec(f"interval {written} at column {_column(first)} is not whole milliseconds "
                              "(the clock counts milliseconds)")
        if ms > MAX_CLOCK:
            raise InvalidSpec(f"interval {written} at column {_column(first)} is longer than 2**62 ms")
        return int(ms)

    def all(self, items: list[Token]) -> _Policy:
        return _Policy(KeepAll(), items[0])

    def last(self, items: list[Token]) -> _Policy:
        return _Policy(Length(1), items[0])

    def count(self, items: list) -> _Policy:
        every = next((t for t in items if isinstance(t, Token) and t.type == "EVERY"), None)
        number = next(t for t in items if isinstance(t, Token) and t.type == "NUMBER")
        slack, per = self._options(items)
        size = _count(number, "the row count")
        if every is not None:
            spec = JumpingLength(size)
        elif slack is None or slack[1] == 1:
            spec = Length(size)
        else:
            spec = SlackLength(size, slack[1])
        return _Policy(spec, number, per[1] if per else (), every, slack[0] if slack else None)

    def time(self, items: list) -> _Policy:
        every = next((t for t in items if isinstance(t, Token) and t.type == "EVERY"), None)
        first, span = next(t for t in items if isinstance(t, tuple) and isinstance(t[1], int))
        slack, per = self._options(items)
        spec = JumpingTime(span) if every is not None else Time(span)
        return _Policy(spec, first, per[1] if per else (), every, slack[0] if slack else None, timed=True)

    @staticmethod
    def _options(items: list):
        slack = next((t for t in items if isinstance(t, tuple) and t[0].type == "SLACK"), None)
        per = next((t for t in items if isinstance(t, tuple) and t[0].type == "PER"), None)
        return slack, per

    def keep(self, items: list) -> _Policy:
        return items[1]

    def primary_key(self, items: list) -> tuple[str, ...] | None:
        """The key columns; None for DEDUCED."""
        if isinstance(items[2], Token) and items[2].type == "DEDUCED":
            return None
        return _names(items[3], "PRIMARY KEY")

    def clause(self, items: list) -> WindowSpec:
        policy = items[-1] if isinstance(items[-1], _Policy) else None
        keys = items[0] if not isinstance(items[0], _Policy) else None
        spec = KeepAll() if policy is None else _retention(policy)
        return Keyed(keys, spec) if keys else spec


def _retention(policy: _Policy):
    """The policy's spec: the forbidden combinations refused, PER applied."""
    if policy.slack is not None and policy.every is not None:
        raise InvalidSpec(f"SLACK (column {_column(policy.slack)}) cannot be used with EVERY (column "
                          f"{_column(policy.every)}): a jumping window has no slack")
    if policy.slack is not None and policy.timed:
        raise InvalidSpec(f"SLACK (column {_column(policy.slack)}) cannot be used with a time policy: slack applies "
                          "to a count policy (n ROWS) only")
    if policy.per and not policy.timed:
        return GroupWin(policy.per, policy.spec)
    return policy.spec  # a time policy retains rows "regardless of their grouping": PER changes nothing


def parse(text: str) -> WindowSpec | Statement:
    """The spec of a CCL window clause (`PRIMARY KEY (Id) KEEP 2 ROWS PER(Symbol)`),
    or of an aggregation over an unnamed window (`SELECT ... FROM s KEEP ... GROUP BY ...`)."""
    if not isinstance(text, str):
        raise TypeError(f"a window clause is a string, got {type(text).__name__}")
    try:
        if text.lstrip()[:6].lower() == "select":
            return _ToStatement(text).transform(_STATEMENT_PARSER.parse(text))
        return _ToSpec(text).transform(_PARSER.parse(text))
    except UnexpectedInput as exc:
        raise _syntax_error(exc, text) from None
    except VisitError as exc:
        raise exc.orig_exc from None


# --------------------------------------------------------------------------- render

#: (unit, ms per unit), largest first: an interval is written in the largest that divides it
_RENDER_UNITS = (("DAY", 86_400_000), ("HOUR", 3_600_000), ("MINUTE", 60_000), ("SECOND", 1000), ("MILLISECOND", 1))


def render_interval(ms: int) -> str:
    """`ms` in the largest unit that divides it exactly: `10 MINUTES`, `1 SECOND`, `1500 MILLISECONDS`."""
    unit, per = next((u, p) for u, p in _RENDER_UNITS if ms % p == 0)
    count = ms // per
    return f"{count} {unit}" + ("" if count == 1 else "S")


def _rows(n: int) -> str:
    return f"{n} ROW" if n == 1 else f"{n} ROWS"


#: spec class -> the text of its KEEP clause (one table: what the dialect writes)
SYNTAX: dict[type, Callable[[Any], str]] = {
    KeepAll: lambda spec: "KEEP ALL",
    Length: lambda spec: f"KEEP {_rows(spec.size)}",
    SlackLength: lambda spec: f"KEEP {_rows(spec.size)} SLACK {spec.slack}",
    JumpingLength: lambda spec: f"KEEP EVERY {_rows(spec.size)}",
    Time: lambda spec: f"KEEP {render_interval(spec.span)}",
    JumpingTime: lambda spec: f"KEEP EVERY {render_interval(spec.span)}",
}


def _render_policy(spec) -> str:
    if isinstance(spec, GroupWin) and isinstance(spec.window, KEYED_GROUP_POLICIES):
        return f"{SYNTAX[type(spec.window)](spec.window)} PER({', '.join(spec.keys)})"
    write = SYNTAX.get(type(spec))
    if write is None:
        raise UnsupportedWindow(f"the ccl dialect cannot write {spec!r}: CCL's KEEP clause has no such policy")
    return write(spec)


def render(spec: WindowSpec | Statement) -> str:
    """The canonical CCL text of `spec`; `parse(render(spec)) == spec`."""
    if isinstance(spec, Statement):
        return _render_statement(spec)
    if isinstance(spec, Keyed):
        return f"PRIMARY KEY ({', '.join(spec.keys)}) {_render_policy(spec.retention)}"
    return _render_policy(spec)


_NAMES = {KeepAll: "all", Length: "rows", SlackLength: "rows-slack", JumpingLength: "every-rows",
          Time: "interval", JumpingTime: "every-interval"}


def name(spec: WindowSpec) -> str:
    """A short, file-safe name of `spec`'s window in CCL's words: `rows`,
    `every-interval`, `rows-per`, `primary_key-rows-slack-per`."""
    render(spec)  # UnsupportedWindow for what CCL cannot write
    if isinstance(spec, Statement):
        return "aggregation-" + name(spec.window)
    if isinstance(spec, Keyed):
        return "primary_key-" + name(spec.retention)
    if isinstance(spec, GroupWin):
        return name(spec.window) + "-per"
    return _NAMES[type(spec)]


# --------------------------------------------------------------------------- aggregation statements
# `SELECT keys, aggregates FROM s [alias] KEEP ... GROUP BY keys [HAVING c]`:
# an aggregation window over an unnamed window (`Statement`, CCL's rules: posted "store";
# its rules: `oracle.windows.statement`). Decided: a select item other than a
# column needs a name (AS): the documentation names no default; a GROUP BY
# key must stand in the select list ("Every expression in the GROUP BY clause
# must also be in at least one SELECT column expression"); a column may be
# qualified by the source's name or alias (`t.Price`); keywords and
# aggregate names are case-insensitive; strings are in single quotes ('' is
# one quote).

_OPS = {"=": "=", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _ToStatement(_ToSpec):
    """Parse tree -> Statement (CCL's rules: an aggregation window)."""

    def __init__(self, text: str):
        super().__init__(text)
        self.qualifiers: list[Token] = []  # the `t` of each `t.col`, checked against the source's names

    def number(self, items):
        text = str(items[0])
        return Literal(float(text) if "." in text else int(text))

    def string(self, items):
        return Literal(str(items[0])[1:-1].replace("''", "'"))

    def true(self, items):
        return Literal(True)

    def false(self, items):
        return Literal(False)

    def null(self, items):
        return Literal(None)

    def column(self, items):
        token = items[0]
        problem = reserved_name_error(str(token))
        if problem:
            raise InvalidSpec(f"{problem} (column {_column(token)})")
        return _At(Name(str(token)), token)

    def qualified(self, items):
        self.qualifiers.append(items[0])
        return _At(Name(str(items[2])), items[0], qualifier=str(items[0]))

    def negate(self, items):
        return Negate(_node(items[1]))

    def not_(self, items):
        return Not(_node(items[1]))

    def _chain(self, items):
        node = _node(items[0])
        for op, right in zip(items[1::2], items[2::2]):
            node = Binary(_OPS.get(str(op), str(op).lower()), node, _node(right))
        return node

    disjunction = conjunction = comparison = arithmetic = term = _chain

    def aggregate(self, items):
        function = str(items[0]).lower()
        star = any(isinstance(i, Token) and i.type == "STAR" for i in items)
        distinct = any(isinstance(i, Token) and i.type == "DISTINCT" for i in items)
        argument = None if star else _node(next(i for i in items[2:] if not isinstance(i, Token)))
        if star and function != "count":
            raise InvalidSpec(f"{function}(*) at column {_column(items[0])}: only count takes *")
        if distinct and function != "count":
            raise InvalidSpec(f"{function}(DISTINCT ...) at column {_column(items[0])}: only count takes DISTINCT here")
        return _At(Aggregate(function, argument, distinct=distinct), items[0])

    def item(self, items):
        expression = items[0]
        alias = next((i for i in items[1:] if isinstance(i, Token) and i.type == "NAME"), None)
        node = _node(expression)
        if alias is None and not isinstance(node, Name):
            raise InvalidSpec(f"the select item at column {_column(_first_token(expression))} needs a name: "
                              "write `AS name` (a column other than a source column has no default name)")
        return (SelectItem(node, str(alias) if alias is not None else None), expression)

    def items(self, items):
        return [i for i in items if isinstance(i, tuple)]

    def group_by(self, items):
        return [i for i in items[2:] if not isinstance(i, Token)]

    def having(self, items):
        return items[1]

    def statement(self, items):
        select = items[1]
        source = [i for i in items[3:] if isinstance(i, Token) and i.type == "NAME"]
        policy = next(i for i in items if isinstance(i, _Policy))
        keys = next((i for i in items if isinstance(i, list) and i is not select), [])
        having = items[-1] if not isinstance(items[-1], (list, _Policy, Token)) else None
        names = {str(t) for t in source}
        for token in self.qualifiers:
            if str(token) not in names:
                raise InvalidSpec(f"{str(token)!r} at column {_column(token)} is not the source's name or alias "
                                  f"({', '.join(sorted(names))})")
        plain_keys = [_node(k) for k in keys]
        written = {_node(e) for _, e in select}
        for item, expression in select:
            node = item.expression
            if node not in plain_keys and any(isinstance(n, Name) and n not in plain_keys
                                              for n in _outside_aggregates(node)):
                raise InvalidSpec(f"the select item at column {_column(_first_token(expression))} reads a column "
                                  "outside an aggregate that is not a GROUP BY key: an aggregation's row is its "
                                  "group's keys and aggregates")
        for key in keys:
            if _node(key) not in written:
                raise InvalidSpec(f"the GROUP BY key at column {_column(_first_token(key))} is not in the select "
                                  "list: every GROUP BY expression must also be a select column")
        if not keys:
            raise InvalidSpec(f"an aggregation needs GROUP BY (column {_column(items[0])}): its rows are keyed by "
                              "the GROUP BY columns (PRIMARY KEY DEDUCED), and without them there is no key")
        try:
            return Statement(tuple(item for item, _ in select), _retention(policy), keys=tuple(plain_keys),
                             having=_node(having) if having is not None else None, source=str(source[0]),
                             rules=CCL)
        except InvalidSpec as exc:
            raise InvalidSpec(f"{exc} (the statement at column {_column(items[0])})") from None


class _At:
    """An expression node and where it was written (for errors)."""

    def __init__(self, node, token: Token, qualifier: str | None = None):
        self.node, self.token, self.qualifier = node, token, qualifier


def _node(value):
    """A parsed expression without positions."""
    if isinstance(value, _At):
        return value.node
    if isinstance(value, Binary):
        return Binary(value.op, _node(value.left), _node(value.right))
    if isinstance(value, Negate):
        return Negate(_node(value.operand))
    if isinstance(value, Not):
        return Not(_node(value.operand))
    if isinstance(value, Aggregate) and value.argument is not None:
        return Aggregate(value.function, _node(value.argument), distinct=value.distinct)
    return value


def _outside_aggregates(node) -> list:
    """The nodes of an expression not inside an aggregate."""
    if isinstance(node, Aggregate):
        return []
    children = [getattr(node, a) for a in ("operand", "left", "right") if hasattr(node, a)]
    return [node] + [n for child in children for n in _outside_aggregates(child)]


def _first_token(value) -> Token:
    if isinstance(value, _At):
        return value.token
    return Token("NAME", "", start_pos=0)


_STRENGTH = {"or": 1, "and": 2, "=": 4, "!=": 4, "<": 4, "<=": 4, ">": 4, ">=": 4, "+": 5, "-": 5, "*": 6, "/": 6, "%": 6}


def render_expression(node, outer: int = 0) -> str:
    """An expression's canonical CCL text, parenthesized only where needed."""
    if isinstance(node, Literal):
        value = node.value
        if value is None:
            return "NULL"
        if isinstance(value, bool):
            return "TRUE" if value else "FALSE"
        if isinstance(value, str):
            return "'" + value.replace("'", "''") + "'"
        return repr(value)
    if isinstance(node, Name):
        return node.name
    if isinstance(node, Aggregate):
        inner = "*" if node.argument is None else ("DISTINCT " if node.distinct else "") + render_expression(node.argument)
        return f"{node.function}({inner})"
    if isinstance(node, Negate):
        return f"-{render_expression(node.operand, 7)}"
    if isinstance(node, Not):
        text = f"NOT {render_expression(node.operand, 3)}"
        return f"({text})" if outer > 3 else text
    if isinstance(node, Binary):
        strength = _STRENGTH[node.op]
        op = node.op.upper() if node.op in ("and", "or") else node.op
        left = render_expression(node.left, strength)
        right = render_expression(node.right, strength + 1)
        text = f"{left} {op} {right}"
        return f"({text})" if strength < outer else text
    raise UnsupportedWindow(f"the ccl dialect cannot write the expression {node!r}")


def _render_statement(spec: Statement) -> str:
    if spec.rules is not CCL:
        raise UnsupportedWindow(f"the ccl dialect writes aggregation windows, not {spec.rules.engine}'s statements")
    items = ", ".join(render_expression(i.expression) + (f" AS {i.alias}" if i.alias is not None else "")
                      for i in spec.select)
    text = f"SELECT {items} FROM {spec.source} {_render_policy(spec.window)}"
    text += " GROUP BY " + ", ".join(render_expression(k) for k in spec.keys)
    if spec.having is not None:
        text += f" HAVING {render_expression(spec.having)}"
    return text
